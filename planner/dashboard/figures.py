"""Plotly figures of the comparison pages: pure functions from run results to `go.Figure`.

Every chart of a view gets a policy's colour from one `policy_colors` mapping, built from the
scenario's policy order, so a policy looks the same on every chart and table of a scenario
and no two policies of a view share a colour. Every series is downsampled here (a CDF needs a
few hundred points, not 50,000 jobs) so a page stays small however long the run was. Nothing
here touches Django: the views pass the figures to the page as JSON through `json_script`.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from simulation.metrics import mean_ci95, time_unit

CDF_POINTS = 300
SERIES_POINTS = 400
PERCENTILES = ("mean", "median", "p95", "p99")

# Colour-blind-safe, distinct on white: Okabe & Ito's palette without its yellow (too pale on
# white), then Paul Tol's "muted" colours that differ from those. Colours go to a view's
# policies in order, so the first 12 policies of a view never share one.
PALETTE = (
    "#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#000000",
    "#882255", "#999933", "#332288", "#44AA99", "#AA4499",
)

# Server states on the operator pages: idle grey, busy blue, on loan green, reclaiming amber.
STATE_COLORS = {"idle": "#9aa5b1", "busy": "#2457a6", "on_loan": "#1f7a3f",
                "reclaiming": "#b68100", "offline": "#b42318"}



@dataclass(frozen=True, slots=True)
class PolicyResult:
    """One run as the figures see it: its legend label and the three parts of its result."""

    label: str
    summary: Mapping[str, Any]
    jobs: pd.DataFrame
    timeseries: pd.DataFrame
    ci95: Mapping[str, float] = field(default_factory=dict)  # summary path -> half-width
    seeds: int = 1


@dataclass(frozen=True, slots=True)
class Chart:
    """A figure with the slug, title and one-line description a page shows around it."""

    slug: str
    title: str
    description: str
    figure: go.Figure


def policy_result(
    *,
    label: str,
    summary: Mapping[str, Any],
    jobs: pd.DataFrame | Sequence[Mapping[str, Any]],
    timeseries: pd.DataFrame | Sequence[Mapping[str, Any]],
) -> PolicyResult:
    """Wrap a run's result; rows read back from CSV become numbers (blank cells NaN)."""
    job_frame = pd.DataFrame(jobs).copy()
    for column in ("submit", "start", "end", "jct", "queuing", "preemptions"):
        if column in job_frame and not pd.api.types.is_numeric_dtype(job_frame[column]):
            job_frame[column] = pd.to_numeric(job_frame[column], errors="coerce")
    if "job_id" in job_frame and not pd.api.types.is_string_dtype(job_frame["job_id"]):
        job_frame["job_id"] = job_frame["job_id"].astype(str)
    series = pd.DataFrame(timeseries)
    if not all(pd.api.types.is_numeric_dtype(series[c]) for c in series):
        series = series.apply(pd.to_numeric, errors="coerce")
    return PolicyResult(label=label, summary=summary, jobs=job_frame, timeseries=series)


def policy_colors(labels: Iterable[str]) -> dict[str, str]:
    """A colour per label, by its place in `labels` (give every view of a scenario the same
    order, e.g. the scenario's policy list, and a policy keeps its colour across them)."""
    colors: dict[str, str] = {}
    for label in labels:
        if label not in colors:
            colors[label] = PALETTE[len(colors) % len(PALETTE)]
    return colors


# --- Downsampling -----------------------------------------------------------------------------


def cdf_points(values: Sequence[float] | np.ndarray, *, points: int = CDF_POINTS) -> tuple[
    np.ndarray, np.ndarray
]:
    """The empirical CDF at no more than `points` points, all lying on the exact curve.

    Keeps the first and last sample so the tails (p99, the maximum) survive downsampling.
    """
    data = np.sort(np.asarray(values, dtype=float))
    data = data[np.isfinite(data)]
    n = data.size
    if n == 0:
        return np.empty(0), np.empty(0)
    index = np.arange(n) if n <= points else np.unique(np.linspace(0, n - 1, points).round())
    index = index.astype(int)
    return data[index], (index + 1) / n


def downsample_series(frame: pd.DataFrame, *, points: int = SERIES_POINTS) -> pd.DataFrame:
    """Average consecutive rows into at most `points` rows.

    Rows are time averages over equal intervals, so the mean of a group is the time average
    over the group's span: utilisation keeps its area under the curve.
    """
    n = len(frame)
    if n <= points:
        return frame
    starts = np.searchsorted(np.arange(n) * points // n, np.arange(points))
    sizes = np.diff(np.append(starts, n))
    values = frame.to_numpy(dtype=float)
    means = np.add.reduceat(values, starts, axis=0) / sizes[:, None]
    return pd.DataFrame(means, columns=frame.columns)


# --- Figures ----------------------------------------------------------------------------------


def cdf_figure(results: Sequence[PolicyResult], *, column: str, name: str,
        colors: Mapping[str, str] | None = None) -> go.Figure:
    """CDF of a per-job duration (`jct` or `queuing`) over finished jobs, one trace per run."""
    colors = colors or policy_colors(r.label for r in results)
    samples = {r.label: _finished(r.jobs, column) for r in results}
    unit, scale = time_unit(max((_median(v) for v in samples.values()), default=0.0))
    fig = _figure(xaxis_title=f"{name} ({unit})", yaxis_title="share of jobs")
    for label, values in samples.items():
        x, y = cdf_points(values)
        fig.add_trace(go.Scatter(
            x=_compact(x / scale), y=_compact(y), name=label, mode="lines",
            line={"color": colors[label], "shape": "hv"},
            hovertemplate=f"%{{x:.3g}} {unit}: %{{y:.1%}}<extra>{label}</extra>",
        ))
    fig.update_yaxes(range=[0, 1.02], tickformat=".0%")
    return fig


def percentile_figure(results: Sequence[PolicyResult], *, metric: str, name: str,
        colors: Mapping[str, str] | None = None) -> go.Figure:
    """Mean, median, p95 and p99 of `summary[metric]` as grouped bars, one trace per run."""
    colors = colors or policy_colors(r.label for r in results)
    values = {r.label: [float(r.summary.get(metric, {}).get(k, 0.0)) for k in PERCENTILES]
              for r in results}
    unit, scale = time_unit(max((v[1] for v in values.values()), default=0.0))
    fig = _figure(xaxis_title="statistic", yaxis_title=f"{name} ({unit})", barmode="group")
    for r in results:
        row = values[r.label]
        fig.add_trace(go.Bar(
            x=list(PERCENTILES), y=[round(v / scale, 4) for v in row], name=r.label,
            marker_color=colors[r.label],
            error_y=_error_bars(r, [f"{metric}.{k}" for k in PERCENTILES], scale=scale),
            hovertemplate=f"%{{x}}: %{{y:.3g}} {unit}<extra>{r.label}</extra>",
        ))
    return fig


def series_figure(results: Sequence[PolicyResult], *, column: str, name: str,
        colors: Mapping[str, str] | None = None) -> go.Figure:
    """A time-series column (`util_<pool>`, `util_overall`, `on_loan_servers`) over time."""
    colors = colors or policy_colors(r.label for r in results)
    frames = {r.label: r.timeseries for r in results if column in r.timeseries}
    end = max((float(f["time"].max()) for f in frames.values() if len(f)), default=0.0)
    unit, scale = time_unit(end)
    share = column.startswith("util_")
    fig = _figure(xaxis_title=f"time ({unit})", yaxis_title=name, hovermode="x unified")
    for label, frame in frames.items():
        small = downsample_series(frame[["time", column]])
        fig.add_trace(go.Scatter(
            x=_compact(small["time"].to_numpy() / scale), y=_compact(small[column].to_numpy()),
            name=label, mode="lines", line={"color": colors[label]},
            hovertemplate=("%{y:.1%}" if share else "%{y:.3g}") + f"<extra>{label}</extra>",
        ))
    if share:
        fig.update_yaxes(tickformat=".0%", rangemode="tozero")
    else:  # a count of servers: whole-number ticks only
        top = max((float(f[column].max()) for f in frames.values() if len(f)), default=0.0)
        fig.update_yaxes(rangemode="tozero", tick0=0, dtick=max(1, math.ceil(top / 6)))
    return fig


def counts_figure(
    results: Sequence[PolicyResult], *, counters: Mapping[str, str], yaxis_title: str,
    colors: Mapping[str, str] | None = None,
) -> go.Figure:
    """Grouped bars of summary counters (dotted paths like ``loaning.collateral_gpus``)."""
    colors = colors or policy_colors(r.label for r in results)
    fig = _figure(xaxis_title="", yaxis_title=yaxis_title, barmode="group")
    for r in results:
        fig.add_trace(go.Bar(
            x=list(counters.values()), y=[_lookup(r.summary, path) for path in counters],
            name=r.label, marker_color=colors[r.label],
            error_y=_error_bars(r, list(counters), scale=1.0),
            hovertemplate=f"%{{x}}: %{{y:,.4~g}}<extra>{r.label}</extra>",
        ))
    return fig


def speedup_ratios(baseline: PolicyResult, result: PolicyResult) -> np.ndarray:
    """Per-job speedup, baseline JCT / JCT, over jobs finished in both runs (as SIA §6.1)."""
    both = _jct_pairs(baseline, result)
    return (both["jct_base"] / both["jct"]).to_numpy(dtype=float)


def _jct_pairs(baseline: PolicyResult, result: PolicyResult) -> pd.DataFrame:
    """JCT of each job in `result` (``jct``) and in `baseline` (``jct_base``), both finished."""
    mine_ids, base_ids = result.jobs["job_id"].to_numpy(), baseline.jobs["job_id"].to_numpy()
    if len(mine_ids) == len(base_ids) and (mine_ids == base_ids).all():
        # Same workload in the same row order (the usual case): align by position, no join.
        both = pd.DataFrame({"job_id": mine_ids, "jct": result.jobs["jct"].to_numpy(),
                             "jct_base": baseline.jobs["jct"].to_numpy()})
        return both.loc[(both["jct"] > 0) & both["jct_base"].notna()]
    base = baseline.jobs.loc[baseline.jobs["jct"].notna(), ["job_id", "jct"]]
    mine = result.jobs.loc[result.jobs["jct"] > 0, ["job_id", "jct"]]
    return mine.merge(base, on="job_id", suffixes=("", "_base"))


def speedup_figure(results: Sequence[PolicyResult], *, baseline: str,
                   colors: Mapping[str, str] | None = None) -> go.Figure:
    """CDF of per-job speedups against `baseline` on a log axis; left of 1 is a slowdown.

    The baseline's own trace is the vertical step at 1, so the chart keeps one trace per run.
    """
    colors = colors or policy_colors(r.label for r in results)
    reference = _by_label(results, baseline)
    fig = _figure(xaxis_title=f"speedup over {baseline} (baseline JCT / JCT)",
                  yaxis_title="share of jobs")
    low, high = 1.0, 1.0
    for r in results:
        x, y = cdf_points(speedup_ratios(reference, r))
        if x.size:
            low, high = min(low, float(x[0])), max(high, float(x[-1]))
        fig.add_trace(go.Scatter(
            x=_compact(x), y=_compact(y), name=r.label, mode="lines",
            line={"color": colors[r.label], "shape": "hv"},
            hovertemplate=f"×%{{x:.3g}}: %{{y:.1%}}<extra>{r.label}</extra>",
        ))
    ticks = log_ticks(low, high)
    fig.update_xaxes(type="log", tickvals=ticks, ticktext=[f"{t:g}×" for t in ticks])
    fig.update_yaxes(range=[0, 1.02], tickformat=".0%")
    fig.add_vline(x=1, line={"color": "#9aa5b1", "dash": "dot", "width": 1})
    return fig


def speedup_table(results: Sequence[PolicyResult], *, baseline: str) -> dict[str, dict]:
    """The statistics of `simulation.metrics.speedups` for every run against `baseline`.

    Computed with numpy from `speedup_ratios` because the simulator's function loops over
    dicts in Python (about 0.2 s per 50,000-job run); tests hold the two equal on real runs.
    """
    reference = _by_label(results, baseline)
    table = {}
    for r in results:
        both = _jct_pairs(reference, r)
        ratios = both["jct_base"].to_numpy(dtype=float) / both["jct"].to_numpy(dtype=float)
        table[r.label] = _speedup_stats(ratios, both)
    return table


def _speedup_stats(ratios: np.ndarray, both: pd.DataFrame) -> dict[str, float]:
    if not ratios.size:
        return {"jobs": 0, "geomean": 0.0, "p5": 0.0, "p95": 0.0, "slowed_share": 0.0,
                "slowdown_minutes_total": 0.0, "slowdown_minutes_max": 0.0}
    slow_minutes = np.maximum(0.0, both["jct"].to_numpy(dtype=float)
                              - both["jct_base"].to_numpy(dtype=float)) / 60.0
    p5, p95 = np.percentile(ratios, [5, 95])
    return {
        "jobs": int(ratios.size),
        "geomean": round(float(np.exp(np.log(ratios).mean())), 6),
        "p5": round(float(p5), 6),
        "p95": round(float(p95), 6),
        "slowed_share": round(float((ratios < 1 - 1e-9).mean()), 6),
        "slowdown_minutes_total": round(float(slow_minutes.sum()), 6),
        "slowdown_minutes_max": round(float(slow_minutes.max()), 6),
    }


SWEEP_DASHES = ("solid", "dash", "dot", "dashdot", "longdash", "longdashdot")


def sweep_figure(
    points: pd.DataFrame | Sequence[Mapping[str, Any]], *, parameter: str, metric: str,
    metric_title: str | None = None, parameter_title: str | None = None, unit: str = "",
    colors: Mapping[str, str] | None = None,
) -> go.Figure:
    """Mean of `metric` against a parameter's value, with a 95 % confidence band over seeds.

    `points` has one row per run: ``label``, ``value`` (the parameter), ``seed`` and the metric,
    already in `unit`, and may have ``policy``: the curve then takes that policy's colour (as
    on every chart) and a dash per other grid point, so one policy's curves read as one.
    The axes read the titles given (with their units), else the ids.
    The band is Student's t interval of the mean, so it widens honestly when there are few
    seeds and vanishes with one. It is a separate trace left out of the legend: the chart has
    one legend trace per policy.
    """
    frame = pd.DataFrame(points)
    fig = _figure(xaxis_title=parameter_title or parameter, yaxis_title=metric_title or metric,
                  hovermode="x unified")
    if not len(frame):
        return fig
    if "policy" not in frame:
        frame = frame.assign(policy=frame["label"])
    colors = colors or policy_colors(sorted(frame["policy"].unique()))
    rests = sorted({label[len(policy):]
                    for label, policy in zip(frame["label"], frame["policy"], strict=True)})
    suffix = f" {unit}" if unit else ""
    numeric = pd.to_numeric(frame["value"], errors="coerce").notna().all()
    frame = frame.assign(value=pd.to_numeric(frame["value"]) if numeric else frame["value"])
    for (label, policy), rows in frame.groupby(["label", "policy"], sort=True):
        color = colors[policy]
        dash = SWEEP_DASHES[rests.index(label[len(policy):]) % len(SWEEP_DASHES)]
        groups = rows.groupby("value", sort=True)[metric]
        x = list(groups.groups)
        cells = [mean_ci95(list(values.dropna())) for _, values in groups]
        mean = np.array([c["mean"] if c["mean"] is not None else np.nan for c in cells])
        count = np.array([c["n"] for c in cells])
        half = np.array([c["ci95"] or 0.0 for c in cells])
        fig.add_trace(go.Scatter(
            x=x + x[::-1], y=_compact(np.concatenate([mean + half, (mean - half)[::-1]])),
            fill="toself", fillcolor=_tint(color, alpha=0.08), line={"width": 0},
            name=f"{label} 95% CI", legendgroup=label, showlegend=False, hoverinfo="skip",
        ))
        fig.add_trace(go.Scatter(
            x=x, y=_compact(mean), name=label, legendgroup=label, mode="lines+markers",
            line={"color": color, "dash": dash}, customdata=np.column_stack([half, count]),
            hovertemplate=(f"%{{y:,.1f}} ± %{{customdata[0]:,.1f}}{suffix} "
                           f"(%{{customdata[1]}} seeds)<extra>{label}</extra>"),
        ))
    return fig


def comparison_charts(results: Sequence[PolicyResult], *, baseline: str | None,
                      colors: Mapping[str, str] | None = None) -> list[Chart]:
    """Every chart of a scenario's comparison page, in page order.

    Results pooled over seeds (`pooled_result`) get 95 % interval bars on their statistics
    and have no time series."""
    colors = colors or policy_colors(r.label for r in results)
    charts = [
        Chart("jct-cdf", "Job completion time, CDF",
              "Share of finished jobs completed within a time.",
              cdf_figure(results, column="jct", name="JCT", colors=colors)),
        Chart("queuing-cdf", "Queuing delay, CDF",
              "Share of finished jobs that waited at most a time before running.",
              cdf_figure(results, column="queuing", name="queuing delay", colors=colors)),
        Chart("jct-percentiles", "JCT percentiles",
              "Mean, median, p95 and p99 job completion time.",
              percentile_figure(results, metric="jct", name="JCT", colors=colors)),
        Chart("queuing-percentiles", "Queuing percentiles",
              "Mean, median, p95 and p99 queuing delay.",
              percentile_figure(results, metric="queuing", name="queuing delay",
                                colors=colors)),
    ]
    for column in _series_columns(results):
        title, description = _series_text(column)
        charts.append(Chart(f"series-{column.replace('_', '-')}", title, description,
                            series_figure(results, column=column, name=title, colors=colors)))
    charts += [
        Chart("preemptions", "Preemptions and collateral damage",
              "Jobs preempted by the scheduler and by reclaims, and GPUs lost as collateral.",
              counts_figure(results, counters={
                  "preemptions": "preemptions",
                  "loaning.reclaim_preemptions": "reclaim preemptions",
                  "loaning.collateral_gpus": "collateral GPUs",
                  "loaning.servers_freed_by_scale_in": "servers freed by scale-in",
              }, yaxis_title="count", colors=colors)),
        Chart("scaling", "Scaling operations and loans",
              "Elastic scale-outs and scale-ins, migrations, servers lent and reclaimed.",
              counts_figure(results, counters={
                  "scaling_ops": "scaling operations",
                  "migrations": "migrations",
                  "loaning.servers_lent": "servers lent",
                  "loaning.servers_reclaimed": "servers reclaimed",
              }, yaxis_title="count", colors=colors)),
    ]
    if baseline is not None:
        charts.append(Chart(
            "speedups", f"Speedup and slowdown against {baseline}",
            f"Per-job {baseline} JCT / JCT; left of the dotted line a job was slowed down.",
            speedup_figure(results, baseline=baseline, colors=colors)))
    return charts


def server_state_figure(pools: Mapping[str, Mapping[str, int]]) -> go.Figure:
    """Servers of each pool by state, as stacked horizontal bars (one trace per state)."""
    names = list(pools)
    fig = _figure(xaxis_title="servers", yaxis_title="", barmode="stack",
                  height=max(160, 70 + 44 * len(names)))
    for state, color in STATE_COLORS.items():
        fig.add_trace(go.Bar(
            y=names, x=[pools[name].get(state, 0) for name in names], orientation="h",
            name=state.replace("_", " "), marker_color=color,
            hovertemplate=f"%{{y}}: %{{x}} {state.replace('_', ' ')}<extra></extra>",
        ))
    fig.update_yaxes(autorange="reversed")
    largest = max((sum(counts.values()) for counts in pools.values()), default=0)
    fig.update_xaxes(tick0=0, dtick=max(1, math.ceil(largest / 8)))
    return fig


# Verdicts of `simulation.reproductions.report.verdict`: green, amber, red (Okabe-Ito).
VERDICT_COLORS = {"reproduced": "#009E73", "direction reproduced, size outside tolerance":
                  "#E69F00", "deviates": "#D55E00"}
RATIO_AXIS = (-1.0, 3.0)  # ratios beyond are drawn at the edge, their value in the label


def reproduction_ratio_figure(rows: Sequence[Mapping[str, Any]], *, tolerance: float
                              ) -> go.Figure:
    """Ours / paper per row that has a paper figure, one bar each, coloured by verdict.

    The band 1 ± `tolerance` is where the size counts as reproduced; a negative ratio is
    the opposite direction; a claim stated as a range is held to its nearest point (1.00
    inside it). Ratios beyond RATIO_AXIS are clipped to its edge (the text on the bar and
    the hover give the value), so one far-off row does not flatten the others; the value
    is written inside a bar that holds it, beside it otherwise.
    """
    shown = [row for row in rows if row.get("ratio") is not None]
    labels = [f"{row['experiment']} · {row['metric']}" for row in shown]
    lo, hi = RATIO_AXIS
    fig = _figure(xaxis_title="ours / paper", yaxis_title="",
                  height=max(200, 80 + 26 * len(shown)), showlegend=False)
    fig.add_vrect(x0=1 - tolerance, x1=1 + tolerance, fillcolor="#009E73", opacity=0.12,
                  line_width=0, layer="below")
    fig.add_vline(x=1.0, line_dash="dot", line_color="#555")
    fig.add_trace(go.Bar(
        y=labels, x=[min(max(row["ratio"], lo), hi) for row in shown], orientation="h",
        marker_color=[VERDICT_COLORS.get(row["verdict"], "#777") for row in shown],
        text=[f"{row['ratio']:.2f}" for row in shown], textposition="auto",
        customdata=[[row["ratio"], row["verdict"]] for row in shown],
        hovertemplate="%{y}<br>ours / paper %{customdata[0]:.3f}<br>%{customdata[1]}"
                      "<extra></extra>",
    ))
    fig.update_yaxes(autorange="reversed")
    fig.update_xaxes(range=[lo - 0.1, hi + 0.4], zeroline=True)
    return fig


# --- Helpers ----------------------------------------------------------------------------------


def log_ticks(low: float, high: float) -> list[float]:
    """1-2-5 ticks (decades only over more than three decades) from below `low` to above
    `high`: a log axis labelled in plain numbers, not Plotly's default "2 3 ... 9 1" between
    decades or SI prefixes such as "100μ"."""
    low, high = max(low, 1e-6), max(high, low)
    first, last = math.floor(math.log10(low / 2.5)), math.ceil(math.log10(high * 2.5))
    mantissas = (1, 2, 5) if last - first <= 3 else (1,)  # wide ranges: decades only
    ticks = []
    for exponent in range(first, last + 1):
        for mantissa in mantissas:
            tick = mantissa * 10.0 ** exponent
            if low / 2.5 <= tick <= high * 2.5:
                ticks.append(float(f"{tick:.6g}"))
    return ticks


def _error_bars(result: PolicyResult, paths: Sequence[str], *, scale: float) -> dict[str, Any]:
    """95 % interval half-widths of a pooled result's summary values, else no bars."""
    if not result.ci95:
        return {"visible": False}
    return {"type": "data", "array": [result.ci95.get(path, 0.0) / scale for path in paths],
            "thickness": 1.2, "width": 3, "color": "#333"}


def pooled_result(*, label: str, per_seed: Mapping[int, PolicyResult]) -> PolicyResult:
    """One policy over several seeds: every summary number's mean and the half-width of its
    95 % Student-t interval (`ci95`), and the jobs of all seeds (ids prefixed by the seed, so
    speedups pair a job with the same seed's baseline) for the CDFs. Time series differ in
    length between seeds and are left out; a single seed shows them."""
    summaries = [r.summary for r in per_seed.values()]
    means: dict[str, Any] = {}
    ci95: dict[str, float] = {}
    for path in _numeric_paths(summaries[0]):
        values = [v for v in (_path_value(s, path) for s in summaries) if v is not None]
        stat = mean_ci95(values)
        _path_set(means, path, stat["mean"])
        if stat["ci95"] is not None:
            ci95[path] = stat["ci95"]
    jobs = pd.concat([r.jobs.assign(job_id=f"{seed}:" + r.jobs["job_id"].astype(str))
                      for seed, r in per_seed.items()], ignore_index=True)
    return PolicyResult(label=label, summary=means, jobs=jobs, timeseries=pd.DataFrame(),
                        ci95=ci95, seeds=len(per_seed))


def _numeric_paths(summary: Mapping[str, Any], prefix: str = "") -> list[str]:
    paths = []
    for key, value in summary.items():
        if isinstance(value, Mapping):
            paths += _numeric_paths(value, f"{prefix}{key}.")
        elif isinstance(value, int | float) and not isinstance(value, bool):
            paths.append(prefix + key)
    return paths


def _path_value(summary: Mapping[str, Any], path: str) -> float | None:
    value: Any = summary
    for key in path.split("."):
        value = value.get(key) if isinstance(value, Mapping) else None
    return float(value) if isinstance(value, int | float) and math.isfinite(value) else None


def _path_set(target: dict[str, Any], path: str, value: Any) -> None:
    *parents, last = path.split(".")
    for key in parents:
        target = target.setdefault(key, {})
    target[last] = value


def _figure(**layout: Any) -> go.Figure:
    """An empty figure with the pages' shared layout (the bare template keeps JSON small)."""
    fig = go.Figure()
    fig.update_layout(
        template="none", height=340, margin={"l": 64, "r": 16, "t": 36, "b": 48},
        legend={"orientation": "h", "y": 1.02, "yanchor": "bottom", "x": 0,
                "traceorder": "normal"},
        font={"family": "system-ui, sans-serif"},
    )
    fig.update_layout(**{k: v for k, v in layout.items() if not k.endswith("_title")})
    fig.update_xaxes(title_text=layout.get("xaxis_title", ""), automargin=True)
    fig.update_yaxes(title_text=layout.get("yaxis_title", ""), automargin=True)
    return fig


def _finished(jobs: pd.DataFrame, column: str) -> np.ndarray:
    if column not in jobs or "jct" not in jobs:
        return np.empty(0)
    return jobs.loc[jobs["jct"].notna(), column].to_numpy(dtype=float)


def _median(values: np.ndarray) -> float:
    return float(np.median(values)) if values.size else 0.0


def _compact(values: np.ndarray | Sequence[float]) -> np.ndarray:
    """float32 halves the size of the base64 arrays Plotly sends; 7 digits are plenty here."""
    return np.asarray(values, dtype=np.float32)


def _lookup(summary: Mapping[str, Any], path: str) -> float:
    value: Any = summary
    for key in path.split("."):
        value = value.get(key, 0) if isinstance(value, Mapping) else 0
    return value if isinstance(value, int | float) else 0


def _by_label(results: Sequence[PolicyResult], label: str) -> PolicyResult:
    for r in results:
        if r.label == label:
            return r
    raise ValueError(f"baseline {label!r} is not one of the runs compared")


def _series_columns(results: Sequence[PolicyResult]) -> list[str]:
    """Utilisation per pool, overall, then servers on loan, as far as any run recorded them."""
    present: set[str] = set()
    for r in results:
        present.update(r.timeseries.columns)
    pools = sorted(c for c in present if c.startswith("util_") and c != "util_overall")
    tail = [c for c in ("util_overall", "on_loan_servers") if c in present]
    return pools + tail


def _series_text(column: str) -> tuple[str, str]:
    if column == "util_overall":
        return "Overall GPU utilisation", "Busy share of every GPU in the cluster over time."
    if column == "on_loan_servers":
        return "Servers on loan", "Inference servers lent to training over time."
    pool = column.removeprefix("util_")
    return (f"Utilisation of pool {pool}",
            f"Busy share of the GPUs of pool {pool} over time.")


def _tint(hex_color: str, alpha: float = 0.18) -> str:
    red, green, blue = (int(hex_color[i:i + 2], 16) for i in (1, 3, 5))
    return f"rgba({red},{green},{blue},{alpha})"


def capacity_frontier_figure(policies: Sequence[Mapping[str, Any]], *, metric: str,
                             bound: float, colors: Mapping[str, str] | None = None
                             ) -> go.Figure:
    """A capacity search's frontier for one target: every evaluated level of each policy,
    cost per hour against the metric's mean over seeds (95 % interval bars), filled markers
    where the level met every target, open where it missed one, the bound as a dashed line.

    `policies` is `simulation.capacity.answer`'s list; times read in one unit (h, min, s).
    """
    from simulation.capacity import TIME_METRICS

    colors = colors or policy_colors(p["policy"] for p in policies)
    values = [pt["metrics"][metric]["mean"] for p in policies for pt in p["points"]]
    unit, scale = (time_unit(max([bound, *values])) if metric in TIME_METRICS else ("", 1.0))
    suffix = f" ({unit})" if unit else ""
    fig = _figure(xaxis_title="cost per hour", yaxis_title=f"{metric}{suffix}")
    for entry in policies:
        points = sorted(entry["points"], key=lambda pt: pt["cost_per_hour"])
        if not points:
            continue
        color = colors[entry["policy"]]
        mean = [pt["metrics"][metric]["mean"] / scale for pt in points]
        half = [(pt["metrics"][metric]["ci95"] or 0.0) / scale for pt in points]
        fig.add_trace(go.Scatter(
            x=[pt["cost_per_hour"] for pt in points], y=mean, name=entry["policy"],
            mode="lines+markers", line={"color": color, "width": 1},
            error_y={"type": "data", "array": half, "visible": True, "thickness": 1},
            marker={"color": color, "line": {"color": color, "width": 2}, "size": 10,
                    "symbol": ["circle" if pt["feasible"] else "circle-open" for pt in points]},
            customdata=[[pt["size"], "meets" if pt["feasible"] else "misses"]
                        for pt in points],
            hovertemplate=("%{customdata[0]}: %{y:,.3g}" + (f" {unit}" if unit else "")
                           + ", %{x:,.2f}/h, %{customdata[1]} the targets"
                           f"<extra>{entry['policy']}</extra>"),
        ))
    fig.add_hline(y=bound / scale, line={"dash": "dash", "color": "#555", "width": 1},
                  annotation_text=f"bound {bound / scale:,.3g}{(' ' + unit) if unit else ''}",
                  annotation_position="top left")
    fig.update_yaxes(rangemode="nonnegative")
    return fig
