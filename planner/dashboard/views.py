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
from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse

from planner.clusters import selectors as cluster_selectors
from planner.clusters.models import Cluster
from planner.clusters.services import cluster_to_spec
from planner.core.roles import PLAN, READ, role_required
from planner.dashboard import figures, selectors, services
from planner.dashboard.forms import ScenarioBuilderForm, SweepForm, builder_initial
from planner.dashboard.selectors import PoolState, cluster_pool_states
from planner.scenarios import selectors as scenario_selectors
from planner.scenarios.models import Scenario, Sweep
from planner.scenarios.services import (
    SWEEP_METRICS,
    scenario_delete,
    scenario_launch,
    sweep_create,
)
from simulation.errors import InputError
from simulation.metrics import time_unit
from simulation.policies import registry

LIVE_REFRESH_SECONDS = 5
# (summary path, title, kind): a "time" column is shown in the unit its largest value reads
# best in (named in its title), a "share" in %, a "ratio" to two decimals; every cell's
# title holds the exact value, and the CSV and JSON downloads the raw seconds.
SUMMARY_COLUMNS = (
    ("jct.mean", "JCT mean", "time"), ("jct.median", "JCT median", "time"),
    ("jct.p95", "JCT p95", "time"), ("jct.p99", "JCT p99", "time"),
    ("queuing.mean", "queuing mean", "time"), ("queuing.p95", "queuing p95", "time"),
    ("makespan", "makespan", "time"), ("preemptions", "preemptions", "count"),
    ("preemption_ratio", "preemptions per job", "ratio"),
    ("preempted_share", "jobs preempted", "share"), ("scaling_ops", "scaling ops", "count"),
    ("gpu_utilization.training", "training utilisation", "share"),
    ("gpu_utilization.overall", "overall utilisation", "share"),
    ("unfinished", "unfinished jobs", "count"),
)


def summary_cells(summaries: Sequence[dict]) -> tuple[list[str], list[list[dict]]]:
    """Column titles and, per summary, its cells as {"text", "exact"} for people."""
    titles, columns = [], []
    for path, title, kind in SUMMARY_COLUMNS:
        values = [_lookup(summary, path) for summary in summaries]
        unit, scale = "", 1.0
        if kind == "time":
            unit, scale = time_unit(max((float(v) for v in values
                                         if isinstance(v, int | float)), default=0.0))
        titles.append(f"{title} ({unit})" if kind == "time" else title)
        cells = []
        for value in values:
            if not isinstance(value, int | float):
                cells.append({"text": "—", "exact": ""})
                continue
            text = {"time": f"{value / scale:,.1f}", "share": f"{value:.1%}",
                    "ratio": f"{value:.2f}"}.get(kind, f"{value:,}")
            cells.append({"text": text, "exact": f"{value} s" if kind == "time" else str(value)})
        columns.append(cells)
    return titles, [list(row) for row in zip(*columns, strict=True)] if columns else []


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
    """The scenario builder; ``?from=<id>`` opens it filled with that scenario's inputs.

    One submit checks everything (form, spec, trace, load, policies) and shows every error;
    uploads are kept for the next submit; warnings ask for a confirmation. On success the
    scenario runs and the run list shows progress.
    """
    if request.method != "POST":
        source = _scenario_or_404(request.GET["from"]) if request.GET.get("from") else None
        form = ScenarioBuilderForm(initial=builder_initial(scenario=source) if source else None)
        return render(request, "dashboard/scenario_new.html",
                      {"form": form, "clone_of": source, "nav": "new"})
    form = ScenarioBuilderForm(request.POST, request.FILES)
    form.is_valid()
    outcome = services.scenario_build_and_launch(
        data=form.cleaned_data, invalid=set(form.errors),
        accepted_warnings=request.POST.get("accept_warnings", ""))
    if outcome.scenario is not None:
        return redirect(f"{reverse('dashboard:run-list')}?scenario={outcome.scenario.pk}")
    for field, messages_ in outcome.errors.items():
        for message in messages_:
            form.add_error(field if field in form.fields else None, message)
    return render(request, "dashboard/scenario_new.html", {
        "form": form, "kept_uploads": outcome.kept, "warnings": outcome.warnings,
        "warnings_key": outcome.warnings_key, "nav": "new",
    }, status=400 if form.errors else 200)


@role_required(READ)
def scenario_detail(request: HttpRequest, scenario_id: int) -> HttpResponse:
    """Every input of a scenario, its runs and sweeps, and what to do with it next."""
    return render(request, "dashboard/scenario_detail.html",
                  _scenario_detail_context(scenario=_scenario_or_404(scenario_id)))


def _scenario_detail_context(*, scenario: Scenario) -> dict[str, Any]:
    policies = registry()
    spec = cluster_to_spec(cluster=scenario.cluster)
    return {
        "scenario": scenario, "pools": spec.pools, "gpu_types": spec.gpu_types.values(),
        "cluster_gpus": sum(pool.gpus for pool in spec.pools),
        "policies": [{"name": entry["policy"], "params": entry["params"],
                      "description": getattr(policies.get(entry["policy"]), "description", ""),
                      "paper": getattr(policies.get(entry["policy"]), "paper", "")}
                     for entry in scenario.policies],
        "workload_facts": _workload_facts(summary=scenario.workload.summary),
        "counts": scenario_selectors.scenario_list().filter(pk=scenario.pk).first(),
        "sweeps": scenario_selectors.sweep_list(scenario_id=scenario.pk),
        "nav": "scenarios",
    }


def _workload_facts(*, summary: dict[str, Any]) -> list[tuple[str, str]]:
    """The workload summary as (label, text) pairs a person reads; absent keys are skipped."""
    facts = []
    if "span_hours" in summary:
        span = float(summary["span_hours"]) * 3600
        unit, scale = ("days", 86400.0) if span >= 2 * 86400 else time_unit(span)
        facts.append(("arrivals span", f"{span / scale:,.1f} {unit}"))
    if "duration_median_s" in summary:
        median = float(summary["duration_median_s"])
        unit, scale = time_unit(median)
        facts.append(("median duration", f"{median / scale:,.1f} {unit}"))
    if "gpu_hours" in summary:
        facts.append(("GPU demand", f"{float(summary['gpu_hours']):,.1f} GPU-hours"))
    if "max_gpus" in summary:
        facts.append(("largest job", f"{summary['max_gpus']:,} GPUs"))
    for key, label in (("multi_gpu_share", "multi-GPU jobs"), ("elastic_share", "elastic jobs")):
        if key in summary:
            facts.append((label, f"{float(summary[key]):.0%}"))
    return facts


@role_required(PLAN)
def scenario_launch_again(request: HttpRequest, scenario_id: int) -> HttpResponse:
    """POST: one more run per policy x seed (identical finished runs are reused)."""
    scenario = _scenario_or_404(scenario_id)
    if request.method != "POST":
        return redirect("dashboard:scenario-detail", scenario.pk)
    try:
        scenario_launch(scenario=scenario)
    except InputError as exc:
        context = _scenario_detail_context(scenario=scenario)
        context["action_error"] = f"Not launched: {exc}"
        return render(request, "dashboard/scenario_detail.html", context, status=400)
    return redirect(f"{reverse('dashboard:run-list')}?scenario={scenario.pk}")


@role_required(PLAN)
def scenario_delete_confirm(request: HttpRequest, scenario_id: int) -> HttpResponse:
    """GET asks, POST deletes the scenario with its runs, results and sweeps."""
    scenario = _scenario_or_404(scenario_id)
    if request.method == "POST":
        name = scenario.name
        scenario_delete(scenario=scenario)
        messages.success(request, f"Deleted the scenario “{name}” with its runs and sweeps.")
        return redirect("dashboard:scenario-list")
    return render(request, "dashboard/scenario_delete.html", {
        "scenario": scenario, "counts": scenario_selectors.scenario_list().filter(
            pk=scenario.pk).first(),
        "sweeps": scenario_selectors.sweep_list(scenario_id=scenario.pk).count(),
        "nav": "scenarios"})


@role_required(PLAN)
def sweep_new(request: HttpRequest, scenario_id: int) -> HttpResponse:
    """A parameter grid over the scenario; on success the sweep page shows its progress."""
    scenario = _scenario_or_404(scenario_id)
    form = SweepForm(request.POST or None, scenario=scenario)
    if request.method == "POST" and form.is_valid():
        try:
            sweep = sweep_create(scenario=scenario, grid=form.cleaned_data["grid"],
                                 name=form.cleaned_data["name"])
        except InputError as exc:
            field = form.field_of(exc.field)
            form.add_error(field, exc.message if field else str(exc))
        else:
            return redirect("dashboard:sweep-detail", sweep.pk)
    return render(request, "dashboard/sweep_new.html", {
        "form": form, "scenario": scenario, "nav": "scenarios",
        "runs_per_point": len(scenario.policies) * len(scenario.seeds),
    }, status=400 if form.errors else 200)


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
    """Every chart for one seed of a scenario; the query string reopens the same view.

    A policy whose run failed is listed with its error in the summary and above the charts,
    which plot the finished runs only.
    """
    scenario = _scenario_or_404(scenario_id)
    notices: list[str] = []
    seeds = selectors.scenario_seeds_finished(scenario=scenario)
    seed = _choice_int(request, "seed", seeds, notices)
    outcomes = selectors.scenario_comparison_runs(scenario=scenario, seed=seed) \
        if seed is not None else []
    compared = [c for c in outcomes if not c.failed]
    failed = [c for c in outcomes if c.failed]
    labels = [c.label for c in compared]
    wanted = request.GET.getlist("policy")
    unknown = [p for p in wanted if p not in labels]
    if unknown:
        notices.append(f"No finished run for {', '.join(unknown)} with seed {seed}; "
                       "showing the policies that have one.")
    chosen = [c for c in compared if c.label in wanted] or compared if wanted else compared
    baseline = request.GET.get("baseline") or (chosen[0].label if chosen else None)
    if chosen and baseline not in [c.label for c in chosen]:
        notices.append(f"Baseline {baseline!r} is not among the compared runs; "
                       f"using {chosen[0].label}.")
        baseline = chosen[0].label
    results = [_policy_result(c) for c in chosen]
    charts = figures.comparison_charts(results, baseline=baseline if len(results) > 1 else None)
    colors = figures.policy_colors([c.label for c in outcomes])
    speedup = figures.speedup_table(results, baseline=baseline) if len(results) > 1 else {}
    titles, cells = summary_cells([r.summary for r in results])
    rows = [{"label": c.label, "run": c.run, "color": colors[c.label], "cells": row_cells,
             "speedup": speedup.get(c.label)}
            for c, row_cells in zip(chosen, cells or [[] for _ in chosen], strict=True)]
    rows += [{"label": c.label, "run": c.run, "color": colors[c.label], "error": c.error}
             for c in failed]
    active = scenario_selectors.scenario_list().filter(pk=scenario.pk).first()
    return render(request, "dashboard/compare.html", {
        "scenario": scenario, "seeds": seeds, "seed": seed, "labels": labels,
        "chosen": [c.label for c in chosen], "baseline": baseline, "rows": rows,
        "columns": titles, "colors": colors,
        "speedup": bool(speedup), "error_span": len(SUMMARY_COLUMNS) + 2 * bool(speedup),
        "failed": failed,
        "settings": selectors.comparison_settings([r.summary for r in results]),
        "charts": chart_payloads(charts), "notices": notices,
        "runs_active": active.runs_active if active else 0,
        "filename_prefix": f"scenario-{scenario.pk}-seed-{seed}", "nav": "scenarios",
    })


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
