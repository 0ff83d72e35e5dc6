"""Dashboard pages: thin views over the clusters/scenarios selectors and services.

Every page needs a role (`planner.core.roles`): any role reads, the scenario builder needs
`planner`. Anonymous visitors are sent to the sign-in page; a user without the role gets 403.

Figures come from `planner.dashboard.figures` (pure functions) and reach the page as JSON in
`json_script` tags; `static/js/charts.js` draws them and `static/js/live.js` keeps live parts
current by re-fetching their fragment views.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import plotly.io as pio
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse

from planner.clusters import selectors as cluster_selectors
from planner.clusters.models import Cluster
from planner.core.roles import PLAN, READ, role_required
from planner.dashboard import figures, selectors, services
from planner.dashboard.forms import ScenarioBuilderForm
from planner.dashboard.selectors import PoolState, cluster_pool_states
from planner.scenarios import selectors as scenario_selectors
from planner.scenarios.models import Scenario, Sweep
from planner.scenarios.services import SWEEP_METRICS
from simulation.errors import InputError
from simulation.metrics import time_unit

LIVE_REFRESH_SECONDS = 5
# (summary path, title, kind, main): a "time" column is shown in the unit its largest value
# reads best in (named in its title), a "share" in %, a "ratio" to two decimals; every cell's
# title holds the exact value, and the CSV and JSON downloads the raw seconds. The `main`
# columns make the compact table that fits the page; "All metrics" shows every column.
SUMMARY_COLUMNS = (
    ("jct.mean", "JCT mean", "time", True), ("jct.median", "JCT median", "time", False),
    ("jct.p95", "JCT p95", "time", True), ("jct.p99", "JCT p99", "time", False),
    ("queuing.mean", "queuing mean", "time", True), ("queuing.p95", "queuing p95", "time", True),
    ("makespan", "makespan", "time", False), ("preemptions", "preemptions", "count", False),
    ("preemption_ratio", "preemptions per job", "ratio", True),
    ("preempted_share", "jobs preempted", "share", False),
    ("scaling_ops", "scaling ops", "count", False),
    ("gpu_utilization.training", "training utilisation", "share", False),
    ("gpu_utilization.overall", "overall utilisation", "share", True),
    ("unfinished", "unfinished jobs", "count", False),
)


def summary_cells(summaries: Sequence[dict], *, ci95s: Sequence[dict] | None = None,
                  main_only: bool = False) -> tuple[list[str], list[list[dict]]]:
    """Column titles and, per summary, its cells as {"text", "ci", "exact"} for people.

    With `ci95s` (pooled over seeds: summary path -> half-width of the 95 % interval) each
    cell also gets "± half-width" in the column's unit.
    """
    titles, columns = [], []
    for path, title, kind, main in SUMMARY_COLUMNS:
        if main_only and not main:
            continue
        values = [_lookup(summary, path) for summary in summaries]
        halves = [(ci or {}).get(path) for ci in (ci95s or [{}] * len(summaries))]
        unit, scale = "", 1.0
        if kind == "time":
            unit, scale = time_unit(max((float(v) for v in values
                                         if isinstance(v, int | float)), default=0.0))
        titles.append(f"{title} ({unit})" if kind == "time" else title)
        cells = []
        for value, half in zip(values, halves, strict=True):
            if not isinstance(value, int | float):
                cells.append({"text": "—", "ci": "", "exact": ""})
                continue
            cells.append({"text": _number_text(value, kind=kind, scale=scale),
                          "ci": "" if half is None else
                          "± " + _number_text(half, kind=kind, scale=scale),
                          "exact": f"{value} s" if kind == "time" else str(value)})
        columns.append(cells)
    return titles, [list(row) for row in zip(*columns, strict=True)] if columns else []


def _number_text(value: float, *, kind: str, scale: float) -> str:
    if kind == "time":
        return f"{value / scale:,.1f}"
    if kind == "share":
        return f"{value:.1%}"
    if kind == "ratio" or not float(value).is_integer():
        return f"{value:,.2f}"
    return f"{int(value):,}"


@role_required(READ)
def cluster_list(request: HttpRequest) -> HttpResponse:
    return render(request, "dashboard/cluster_list.html",
                  {"clusters": cluster_selectors.cluster_list(), "nav": "clusters"})


@role_required(READ)
def cluster_detail(request: HttpRequest, cluster_id: int) -> HttpResponse:
    context = _cluster_live_context(cluster_id=cluster_id)
    context.update(refresh_seconds=_refresh_seconds(request), nav="clusters")
    return render(request, "dashboard/cluster_detail.html", context)


@role_required(READ)
def cluster_live(request: HttpRequest, cluster_id: int) -> HttpResponse:
    """The live part of the cluster page alone, re-fetched by live.js every few seconds."""
    return render(request, "dashboard/_cluster_live.html",
                  _cluster_live_context(cluster_id=cluster_id))


def _cluster_live_context(*, cluster_id: int) -> dict:
    try:
        cluster = cluster_selectors.cluster_get(cluster_id=cluster_id)
    except Cluster.DoesNotExist:
        raise Http404(f"There is no cluster {cluster_id}.") from None
    pools = cluster_pool_states(cluster=cluster)
    charts = []
    if pools:
        charts.append(figures.Chart(
            "server-states", "Servers by state",
            "Servers of each pool that are idle, busy, on loan, being reclaimed or offline.",
            figures.server_state_figure({p.name: p.by_status for p in pools}),
        ))
    return {"cluster": cluster, "pools": pools, "totals": _totals(pools),
            "jobs": selectors.cluster_live_jobs(cluster=cluster),
            "decisions": selectors.cluster_decisions(cluster=cluster),
            "charts": chart_payloads(charts), "filename_prefix": f"cluster-{cluster.name}"}


def _refresh_seconds(request: HttpRequest) -> int:
    """``?refresh=N`` (1 to 300 s) changes how often live parts refresh; default 5 s."""
    raw = request.GET.get("refresh", "")
    return min(max(int(raw), 1), 300) if raw.isdigit() else LIVE_REFRESH_SECONDS


def _totals(pools: Sequence[PoolState]) -> dict[str, float]:
    servers = sum(p.servers for p in pools)
    offline = sum(p.by_status.get("offline", 0) for p in pools)
    in_use = sum(p.in_use for p in pools)
    return {
        "servers": servers, "gpus": sum(p.gpus for p in pools),
        "idle": sum(p.by_status.get("idle", 0) for p in pools),
        "busy": sum(p.by_status.get("busy", 0) for p in pools),
        "on_loan": sum(p.by_status.get("on_loan", 0) for p in pools),
        "utilization": 100 * in_use / (servers - offline) if servers > offline else 0.0,
    }


def chart_payloads(charts: Sequence[figures.Chart]) -> list[dict]:
    """What `_charts.html` needs per chart: its text and the figure as plain JSON data."""
    return [
        {"slug": c.slug, "title": c.title, "description": c.description,
         "data_id": f"data-{c.slug}", "payload": json.loads(pio.to_json(c.figure, validate=False))}
        for c in charts
    ]


# --- Planner pages ----------------------------------------------------------------------------


@role_required(PLAN)
def scenario_new(request: HttpRequest) -> HttpResponse:
    """The scenario builder: on success the scenario runs and the run list shows progress."""
    form = ScenarioBuilderForm(request.POST or None, request.FILES or None)
    if request.method == "POST" and form.is_valid():
        try:
            scenario = services.scenario_build_and_launch(data=form.cleaned_data)
        except InputError as exc:
            field = exc.field if exc.field in form.fields else None
            form.add_error(field, exc.message if field else str(exc))
        else:
            return redirect(f"{reverse('dashboard:run-list')}?scenario={scenario.pk}")
    status = 400 if request.method == "POST" else 200
    return render(request, "dashboard/scenario_new.html", {"form": form, "nav": "new"},
                  status=status)


@role_required(READ)
def scenario_list(request: HttpRequest) -> HttpResponse:
    return render(request, "dashboard/scenario_list.html",
                  {"scenarios": scenario_selectors.scenario_list()[:200],
                   "sweeps": scenario_selectors.sweep_list()[:50], "nav": "scenarios"})


@role_required(READ)
def run_list(request: HttpRequest) -> HttpResponse:
    """Newest runs with progress bars that poll /api/v1/runs/<id>/ until each run ends."""
    scenario = None
    raw = request.GET.get("scenario", "")
    if raw:
        scenario = _scenario_or_404(raw)
    runs = selectors.run_recent(scenario_id=scenario.pk if scenario else None)
    return render(request, "dashboard/run_list.html",
                  {"runs": runs, "scenario": scenario, "nav": "runs"})


@role_required(READ)
def scenario_compare(request: HttpRequest, scenario_id: int) -> HttpResponse:
    """Every chart of a scenario's policies; the query string reopens the same view.

    With several seeds finished the page shows all of them by default: each number is the
    mean over seeds with its 95 % interval, and the CDFs pool the jobs of every seed;
    `?seed=N` shows one seed with its time series. A policy whose run failed is listed with
    its error in the summary and above the charts, which plot the finished runs only.
    """
    scenario = _scenario_or_404(scenario_id)
    notices: list[str] = []
    seeds = selectors.scenario_seeds_finished(scenario=scenario)
    raw_seed = request.GET.get("seed", "")
    across = len(seeds) > 1 and raw_seed in ("", "all")
    chosen_seeds = seeds if across else [s for s in [_choice_int(request, "seed", seeds,
                                                                 notices)] if s is not None]
    per_seed = {seed: selectors.scenario_comparison_runs(scenario=scenario, seed=seed)
                for seed in chosen_seeds}
    order = list(dict.fromkeys(c.label for runs in per_seed.values() for c in runs))
    finished = {label: {seed: c for seed, runs in per_seed.items() for c in runs
                        if c.label == label and not c.failed} for label in order}
    failed = [c for runs in per_seed.values() for c in runs if c.failed]
    labels = [label for label in order if finished[label]]
    wanted = request.GET.getlist("policy")
    unknown = [p for p in wanted if p not in labels]
    if unknown:
        notices.append(f"No finished run for {', '.join(unknown)}; "
                       "showing the policies that have one.")
    chosen = [label for label in labels if label in wanted] or labels
    baseline = request.GET.get("baseline") or _default_baseline(chosen)
    if chosen and baseline not in chosen:
        notices.append(f"Baseline {baseline!r} is not among the compared runs; "
                       f"using {_default_baseline(chosen)}.")
        baseline = _default_baseline(chosen)
    results = [_result(label, finished[label], pooled=across) for label in chosen]
    colors = figures.policy_colors(order)
    charts = figures.comparison_charts(results, baseline=baseline if len(results) > 1 else None,
                                       colors=colors)
    speedup = figures.speedup_table(results, baseline=baseline) if len(results) > 1 else {}
    summaries = [r.summary for r in results]
    ci95s = [r.ci95 for r in results] if across else None
    titles, cells = summary_cells(summaries, ci95s=ci95s, main_only=True)
    all_titles, all_cells = summary_cells(summaries, ci95s=ci95s)
    rows = [{"label": r.label, "color": colors[r.label], "cells": row_cells,
             "all_cells": full_cells, "speedup": speedup.get(r.label), "seeds": r.seeds,
             "run": None if across else finished[r.label][chosen_seeds[0]].run}
            for r, row_cells, full_cells in zip(results, cells or [[] for _ in results],
                                                all_cells or [[] for _ in results],
                                                strict=True)]
    rows += [{"label": c.label, "run": c.run, "color": colors[c.label],
              "error": f"seed {c.run.seed}: {c.error}" if across else c.error} for c in failed]
    active = scenario_selectors.scenario_list().filter(pk=scenario.pk).first()
    return render(request, "dashboard/compare.html", {
        "scenario": scenario, "seeds": seeds, "seed": None if across else
        (chosen_seeds[0] if chosen_seeds else None), "across": across, "labels": labels,
        "chosen": chosen, "baseline": baseline, "rows": rows, "columns": titles,
        "all_columns": all_titles, "colors": colors, "speedup": bool(speedup),
        "error_extra": 2 * bool(speedup) + (not across), "failed": failed,
        "settings": selectors.comparison_settings(summaries) if not across else
        selectors.comparison_settings([finished[label][min(finished[label])].run.result.summary
                                       for label in chosen]),
        "charts": chart_payloads(charts), "notices": notices,
        "runs_active": active.runs_active if active else 0,
        "filename_prefix": f"scenario-{scenario.pk}-"
                           + ("all-seeds" if across else f"seed-{chosen_seeds[0]}"
                              if chosen_seeds else "none"),
        "nav": "scenarios",
    })


def _default_baseline(labels: Sequence[str]) -> str | None:
    """FIFO when compared (the production scheduler the papers measure against), else the
    scenario's first policy."""
    return "fifo" if "fifo" in labels else (labels[0] if labels else None)


def _result(label: str, runs: dict[int, selectors.ComparedRun], *,
            pooled: bool) -> figures.PolicyResult:
    if not pooled:
        return _policy_result(next(iter(runs.values())))
    return figures.pooled_result(label=label, per_seed={
        seed: _policy_result(compared) for seed, compared in sorted(runs.items())})


@role_required(READ)
def sweep_detail(request: HttpRequest, sweep_id: int) -> HttpResponse:
    """Metric against one grid parameter with a 95 % band across seeds, per policy."""
    try:
        sweep = scenario_selectors.sweep_get(sweep_id=sweep_id)
    except Sweep.DoesNotExist:
        raise Http404(f"There is no sweep {sweep_id}.") from None
    notices: list[str] = []
    metric = request.GET.get("metric") or "jct_mean"
    if metric not in SWEEP_METRICS:
        notices.append(f"Unknown metric {metric!r}; showing jct_mean.")
        metric = "jct_mean"
    axes = sorted(sweep.grid)
    parameter = request.GET.get("parameter") or (axes[0] if axes else "")
    if axes and parameter not in axes:
        notices.append(f"The sweep has no parameter {parameter!r}; showing {axes[0]}.")
        parameter = axes[0]
    points = [
        {"label": " · ".join([p["policy"]] + [f"{k}={v}" for k, v in sorted(p["variant"].items())
                                               if k != parameter]),
         "value": p["variant"].get(parameter), "seed": p["seed"], metric: p["value"]}
        for p in selectors.sweep_points(sweep=sweep, metric=metric)
    ]
    chart = figures.Chart(
        "sweep", f"{metric} against {parameter}",
        "Mean over seeds per grid point; the band is the 95 % confidence interval (Student t).",
        figures.sweep_figure(points, parameter=parameter, metric=metric))
    return render(request, "dashboard/sweep.html", {
        "sweep": sweep, "metric": metric, "metrics": list(SWEEP_METRICS), "parameter": parameter,
        "axes": axes, "charts": chart_payloads([chart]) if points else [],
        "progress": scenario_selectors.sweep_progress(sweep=sweep),
        "aggregate": scenario_selectors.sweep_aggregate(sweep=sweep), "notices": notices,
        "filename_prefix": f"sweep-{sweep.pk}", "nav": "scenarios",
    })


def _scenario_or_404(raw: Any) -> Scenario:
    try:
        return scenario_selectors.scenario_get(scenario_id=int(raw))
    except (Scenario.DoesNotExist, ValueError):
        raise Http404(f"There is no scenario {raw}.") from None


def _choice_int(request: HttpRequest, name: str, choices: list[int],
                notices: list[str]) -> int | None:
    raw = request.GET.get(name, "")
    if raw.isdigit() and int(raw) in choices:
        return int(raw)
    if raw:
        notices.append(f"No finished runs for {name} {raw!r}; showing "
                       f"{choices[0] if choices else 'nothing'}.")
    return choices[0] if choices else None


def _policy_result(compared: selectors.ComparedRun) -> figures.PolicyResult:
    summary, jobs, timeseries = scenario_selectors.run_result_frames(run=compared.run)
    return figures.policy_result(label=compared.label, summary=summary, jobs=jobs,
                                 timeseries=timeseries)


def _lookup(summary: dict, path: str) -> Any:
    value: Any = summary
    for key in path.split("."):
        value = value.get(key) if isinstance(value, dict) else None
    return value
