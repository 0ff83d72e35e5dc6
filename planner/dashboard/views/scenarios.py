"""The scenario builder and a scenario's pages: list, detail, launch again, delete, new sweep."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse

from planner.clusters.services import cluster_to_spec
from planner.core.roles import PLAN, READ, role_required
from planner.dashboard import services
from planner.dashboard.forms import ScenarioBuilderForm, SweepForm, builder_initial
from planner.dashboard.views.common import scenario_or_404
from planner.scenarios import selectors as scenario_selectors
from planner.scenarios.models import Scenario
from planner.scenarios.services import (
    scenario_delete,
    scenario_launch,
    sweep_create,
)
from simulation.composition import describe_stages, resolve_policy
from simulation.errors import InputError
from simulation.metrics import time_unit


@role_required(PLAN)
def scenario_new(request: HttpRequest) -> HttpResponse:
    """The scenario builder; ``?from=<id>`` opens it filled with that scenario's inputs.

    One submit checks everything (form, spec, trace, load, policies) and shows every error;
    uploads are kept for the next submit; warnings ask for a confirmation. On success the
    scenario runs and the run list shows progress.
    """
    if request.method != "POST":
        source = scenario_or_404(request.GET["from"]) if request.GET.get("from") else None
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
                  _scenario_detail_context(scenario=scenario_or_404(scenario_id)))


def _scenario_detail_context(*, scenario: Scenario) -> dict[str, Any]:
    spec = cluster_to_spec(cluster=scenario.cluster)
    return {
        "scenario": scenario, "pools": spec.pools, "gpu_types": spec.gpu_types.values(),
        "cluster_gpus": sum(pool.gpus for pool in spec.pools),
        "policies": [{"name": entry["policy"], "params": entry["params"],
                      "description": resolve_policy(entry["policy"]).description,
                      "paper": resolve_policy(entry["policy"]).paper,
                      "stages": describe_stages(resolve_policy(entry["policy"]))}
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
    scenario = scenario_or_404(scenario_id)
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
    scenario = scenario_or_404(scenario_id)
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
    scenario = scenario_or_404(scenario_id)
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
