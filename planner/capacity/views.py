"""The capacity pages: the list, the form that starts a search, one search's answer (per
policy size and cost, the cost-versus-target frontier, the saving) and its exports.

Any role reads; starting a search (runs on the workers) needs `planner`.
"""

from __future__ import annotations

import csv
import io

from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render

from planner.capacity import selectors, services
from planner.capacity.forms import CapacitySearchForm
from planner.capacity.models import CapacitySearch
from planner.core.roles import PLAN, READ, role_required
from planner.dashboard import figures
from planner.dashboard.views import chart_payloads
from planner.scenarios.models import Scenario
from simulation import capacity
from simulation.cli import size_rows
from simulation.errors import InputError

REFRESH_SECONDS = 5


def _search_or_404(search_id: int) -> CapacitySearch:
    try:
        return selectors.capacity_search_get(search_id=search_id)
    except CapacitySearch.DoesNotExist:
        raise Http404(f"There is no capacity search {search_id}.") from None


@role_required(READ)
def capacity_list(request: HttpRequest) -> HttpResponse:
    searches = list(selectors.capacity_search_list()[:100])
    return render(request, "capacity/list.html", {
        "searches": [{"search": s, "progress": selectors.capacity_search_progress(search=s),
                      "targets": _target_texts(s)} for s in searches],
        "refresh_seconds": REFRESH_SECONDS if any(s.active for s in searches) else 0,
        "nav": "capacity"})


def _target_texts(search: CapacitySearch) -> list[str]:
    return [str(capacity.Target(t["metric"], t["bound"])) for t in search.targets]


@role_required(PLAN)
def capacity_new(request: HttpRequest, scenario_id: int) -> HttpResponse:
    scenario = Scenario.objects.filter(pk=scenario_id).select_related("cluster").first()
    if scenario is None:
        raise Http404(f"There is no scenario {scenario_id}.")
    if request.method != "POST":
        form = CapacitySearchForm(scenario=scenario, initial={"pools": _first_training_pool(
            scenario)})
        return render(request, "capacity/new.html", {"form": form, "scenario": scenario,
                                                     "nav": "capacity"})
    form = CapacitySearchForm(request.POST, scenario=scenario)
    if form.is_valid():
        try:
            search = services.capacity_search_start(scenario=scenario,
                                                    **form.service_arguments())
        except InputError as error:
            form.add_input_error(error)
        else:
            return redirect("capacity:detail", search_id=search.pk)
    return render(request, "capacity/new.html", {"form": form, "scenario": scenario,
                                                 "nav": "capacity"}, status=400)


def _first_training_pool(scenario: Scenario) -> str:
    pool = scenario.cluster.pools.filter(kind="training").order_by("id").first()
    return pool.name if pool else ""


@role_required(READ)
def capacity_detail(request: HttpRequest, search_id: int) -> HttpResponse:
    search = _search_or_404(search_id)
    result = search.result or {}
    policies = result.get("policies", [])
    # Each policy keeps the colour it has on the scenario's other charts.
    colors = figures.policy_colors(e["policy"] for e in search.scenario.policies)
    charts = [figures.Chart(
        f"frontier-{i}", f"Cost against {target['text']}",
        "Every level evaluated, its cost per hour against the mean over the seeds (bars: 95 % "
        "interval). Filled: the level met every target; open: it missed one.",
        figures.capacity_frontier_figure(policies, metric=target["metric"],
                                         bound=target["bound"], colors=colors))
        for i, target in enumerate(result.get("targets", [])) if policies]
    rows = [{**p, "metric_cells": [_metric_cell(p, t) for t in result.get("targets", [])]}
            for p in policies]
    return render(request, "capacity/detail.html", {
        "search": search, "result": result, "rows": rows,
        "targets": _target_texts(search),
        "progress": selectors.capacity_search_progress(search=search),
        "charts": chart_payloads(charts), "filename_prefix": f"capacity-{search.pk}",
        "refresh_seconds": REFRESH_SECONDS if search.active else 0, "nav": "capacity"})


def _metric_cell(entry: dict, target: dict) -> str:
    """The answer's (or, when nothing met the targets, the largest level's) mean ± 95 %."""
    stats = entry.get("metrics") or entry.get("closest", {}).get("metrics", {})
    cell = stats.get(target["metric"])
    return "–" if cell is None else capacity.format_mean_ci(target["metric"], cell)


@role_required(READ)
def capacity_export(request: HttpRequest, search_id: int, fmt: str) -> HttpResponse:
    """The answer as JSON (everything, every evaluated level) or CSV (a row per policy)."""
    search = _search_or_404(search_id)
    if not search.result:
        raise Http404("No answer yet: the first round has not ended.")
    filename = f"capacity-{search.pk}.{fmt}"
    if fmt == "json":
        response = JsonResponse(search.result, json_dumps_params={"indent": 2})
    else:
        rows = size_rows(search.result)
        out = io.StringIO()
        writer = csv.DictWriter(out, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
        response = HttpResponse(out.getvalue(), content_type="text/csv")
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response

