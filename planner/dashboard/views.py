"""Dashboard pages: thin views over the clusters/scenarios selectors and services.

Every page needs a role (`planner.core.roles`): any role reads, the scenario builder needs
`planner`. Anonymous visitors are sent to the sign-in page; a user without the role gets 403.

Figures come from `planner.dashboard.figures` (pure functions) and reach the page as JSON in
`json_script` tags; `static/js/charts.js` draws them and `static/js/live.js` keeps live parts
current by re-fetching their fragment views.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any
from urllib.parse import urlsplit

import plotly.io as pio
from django.contrib import messages
from django.core.paginator import Paginator
from django.http import Http404, HttpRequest, HttpResponse, QueryDict
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone
from django.utils.http import url_has_allowed_host_and_scheme, urlencode
from django.views.decorators.http import require_POST

from planner.clusters import selectors as cluster_selectors
from planner.clusters.models import Cluster, ClusterKind
from planner.clusters.services import cluster_to_spec
from planner.core.roles import PLAN, READ, role_required
from planner.dashboard import figures, readable, selectors, services
from planner.dashboard.forms import ScenarioBuilderForm, SweepForm, builder_initial
from planner.dashboard.selectors import PoolState, cluster_pool_states
from planner.scenarios import selectors as scenario_selectors
from planner.scenarios import services as scenario_services
from planner.scenarios.models import Run, RunStatus, Scenario, Sweep
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
    """Live clusters only: what-if ones (made for a scenario) are reached from their scenario."""
    return render(request, "dashboard/cluster_list.html",
                  {"clusters": cluster_selectors.cluster_list(kind=ClusterKind.LIVE),
                   "nav": "clusters"})


@role_required(READ)
def cluster_detail(request: HttpRequest, cluster_id: int) -> HttpResponse:
    context = _cluster_live_context(cluster_id=cluster_id)
    context.update(refresh_seconds=_refresh_seconds(request),
                   nav="clusters" if context["cluster"].kind == ClusterKind.LIVE else "scenarios")
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


RUNS_PER_PAGE = 50


@role_required(READ)
def run_list(request: HttpRequest) -> HttpResponse:
    """Runs filtered by status, policy and scenario, a page at a time, newest first; bars
    poll /api/v1/runs/<id>/ until each run ends, and planners cancel or re-run from here."""
    return render(request, "dashboard/run_list.html", _run_list_context(query=request.GET))


@role_required(PLAN)
@require_POST
def run_cancel(request: HttpRequest, run_id: int) -> HttpResponse:
    return _run_action(request, run_id=run_id, action=scenario_services.run_cancel,
                       done="Run {old} cancelled.")


@role_required(PLAN)
@require_POST
def run_rerun(request: HttpRequest, run_id: int) -> HttpResponse:
    return _run_action(request, run_id=run_id, action=scenario_services.run_rerun,
                       done="Run {old} started again as run {new}.")


def _run_action(request: HttpRequest, *, run_id: int, action: Callable[..., Run],
                done: str) -> HttpResponse:
    """Cancel or re-run, then back to the runs page the button was on (its filters and
    page); a run that cannot be is 400 on that page, with the reason."""
    back = request.POST.get("next", "")
    if not url_has_allowed_host_and_scheme(back, allowed_hosts={request.get_host()}) \
            or not back.startswith(reverse("dashboard:run-list")):
        back = reverse("dashboard:run-list")
    try:
        run = action(run_id=run_id)
    except Run.DoesNotExist:
        raise Http404(f"There is no run {run_id}.") from None
    except InputError as exc:
        context = _run_list_context(query=QueryDict(urlsplit(back).query))
        context["notices"].append(f"Run {run_id}: {exc.message}.")
        return render(request, "dashboard/run_list.html", context, status=400)
    messages.success(request, done.format(old=run_id, new=run.pk))
    return redirect(back)


def _run_list_context(*, query: QueryDict) -> dict[str, Any]:
    notices: list[str] = []
    scenario = _scenario_or_404(query["scenario"]) if query.get("scenario") else None
    status = query.get("status", "")
    if status and status not in RunStatus.values:
        notices.append(f"There is no run status {status!r}; showing every status.")
        status = ""
    policies = selectors.run_policies()
    policy = query.get("policy", "")
    if policy and policy not in policies:
        notices.append(f"No run used the policy {policy!r}; showing every policy.")
        policy = ""
    runs = selectors.run_filtered(scenario_id=scenario.pk if scenario else None,
                                  status=status or None, policy=policy or None)
    page = Paginator(runs, RUNS_PER_PAGE).get_page(query.get("page"))
    filters = {key: value for key, value in (("scenario", scenario.pk if scenario else ""),
                                             ("status", status), ("policy", policy)) if value}
    return {
        "rows": selectors.run_rows(runs=list(page), now=timezone.now()), "page": page,
        "scenario": scenario, "status": status, "policy": policy, "statuses": RunStatus.values,
        "policies": policies, "scenarios": scenario_selectors.scenario_list()[:200],
        "filters": urlencode(filters), "filtered": bool(filters), "notices": notices,
        "nav": "runs",
    }


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
def sweep_list(request: HttpRequest) -> HttpResponse:
    """Every sweep, newest first, with its grid and how far its runs are."""
    sweeps = selectors.sweep_recent(limit=200)
    return render(request, "dashboard/sweep_list.html", {
        "sweeps": [{"sweep": sweep, "grid": readable.grid_text(sweep.grid)} for sweep in sweeps],
        "nav": "sweeps"})


@role_required(READ)
def sweep_detail(request: HttpRequest, sweep_id: int) -> HttpResponse:
    """Metric against one grid parameter with a 95 % band across seeds, per policy.

    Durations read in the unit of the largest value shown (h, min or s, named in every
    title), shares in %; every table cell's title holds the exact value in seconds.
    """
    try:
        sweep = scenario_selectors.sweep_get(sweep_id=sweep_id)
    except Sweep.DoesNotExist:
        raise Http404(f"There is no sweep {sweep_id}.") from None
    notices: list[str] = []
    metric = request.GET.get("metric") or "jct_mean"
    if metric not in SWEEP_METRICS:
        notices.append(f"Unknown metric {metric!r}; showing "
                       f"{readable.SWEEP_METRIC_TITLES['jct_mean'][0]}.")
        metric = "jct_mean"
    axes = sorted(sweep.grid)
    parameter = request.GET.get("parameter") or (axes[0] if axes else "")
    if axes and parameter not in axes:
        notices.append(f"The sweep has no parameter {parameter!r}; showing {axes[0]}.")
        parameter = axes[0]
    raw_points = selectors.sweep_points(sweep=sweep, metric=metric)
    aggregate = scenario_selectors.sweep_aggregate(sweep=sweep)
    means = [row["metrics"].get(metric, {}).get("mean") for row in aggregate]
    unit, scale = readable.metric_unit(
        metric, [p["value"] for p in raw_points] + [m for m in means if m is not None])
    title = readable.metric_title(metric, unit)
    points = [
        {"label": " · ".join(filter(None, [p["policy"], readable.grid_point_text(
            p["variant"], leave_out=parameter)])),
         "policy": p["policy"], "value": p["variant"].get(parameter), "seed": p["seed"],
         metric: p["value"] / scale}
        for p in raw_points
    ]
    chart = figures.Chart(
        "sweep", f"{title} against {parameter}",
        "Mean over seeds per grid point; the band is the 95 % confidence interval (Student t).",
        figures.sweep_figure(points, parameter=parameter, metric=metric, metric_title=title,
                             parameter_title=readable.parameter_title(parameter), unit=unit,
                             colors=figures.policy_colors(
                                 entry["policy"] for entry in sweep.scenario.policies)))
    progress = scenario_selectors.sweep_progress(sweep=sweep)
    return render(request, "dashboard/sweep.html", {
        "sweep": sweep, "metric": metric, "metric_title": title, "unit": unit,
        "exact_in_seconds": readable.SWEEP_METRIC_TITLES[metric][1] == "time",
        "metrics": [(key, readable.SWEEP_METRIC_TITLES[key][0]) for key in SWEEP_METRICS],
        "parameter": parameter, "axes": axes, "grid": readable.grid_text(sweep.grid),
        "charts": chart_payloads([chart]) if points else [],
        "progress": ", ".join(f"{n} {status}" for status, n in progress.items() if n),
        "aggregate": [_aggregate_row(row, metric=metric, unit=unit, scale=scale)
                      for row in aggregate],
        "notices": notices, "filename_prefix": f"sweep-{sweep.pk}", "nav": "sweeps",
    })


def _aggregate_row(row: dict[str, Any], *, metric: str, unit: str,
                   scale: float) -> dict[str, Any]:
    """A row of the sweep's aggregate table: readable grid point, mean and CI half-width in
    the page's unit, the exact values for the cells' titles."""
    stats = row["metrics"].get(metric) or {}
    raw_unit = "s" if readable.SWEEP_METRIC_TITLES[metric][1] == "time" else ""

    def cell(value: float | None) -> dict[str, str]:
        if value is None:
            return {"text": "—", "exact": ""}
        return {"text": f"{value / scale:,.1f}" if unit else f"{value:,.2f}",
                "exact": f"{value} {raw_unit}".strip()}

    return {"point": readable.grid_point_text(row["variant"]) or "—", "policy": row["policy"],
            "runs": row["runs"], "succeeded": row["succeeded"],
            "mean": cell(stats.get("mean")), "ci95": cell(stats.get("ci95"))}


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
