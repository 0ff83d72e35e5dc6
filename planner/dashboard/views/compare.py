"""A scenario's comparison: every chart of its policies, across seeds or for one."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from planner.core.roles import READ, role_required
from planner.dashboard import figures, selectors
from planner.dashboard.views.common import chart_payloads, scenario_or_404
from planner.scenarios import selectors as scenario_selectors
from simulation.metrics import time_unit

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
def scenario_compare(request: HttpRequest, scenario_id: int) -> HttpResponse:
    """Every chart of a scenario's policies; the query string reopens the same view.

    With several seeds finished the page shows all of them by default: each number is the
    mean over seeds with its 95 % interval, and the CDFs pool the jobs of every seed;
    `?seed=N` shows one seed with its time series. A policy whose run failed is listed with
    its error in the summary and above the charts, which plot the finished runs only.
    """
    scenario = scenario_or_404(scenario_id)
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
