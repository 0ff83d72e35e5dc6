"""The runs page: filters, paging, times and ETA, cancel and re-run."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

from django.contrib import messages
from django.core.paginator import Paginator
from django.http import Http404, HttpRequest, HttpResponse, QueryDict
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone
from django.utils.http import url_has_allowed_host_and_scheme, urlencode
from django.views.decorators.http import require_POST

from planner.core.roles import PLAN, READ, role_required
from planner.dashboard import selectors
from planner.dashboard.views.common import scenario_or_404
from planner.scenarios import selectors as scenario_selectors
from planner.scenarios import services as scenario_services
from planner.scenarios.models import Run, RunStatus
from simulation.errors import InputError

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
    scenario = scenario_or_404(query["scenario"]) if query.get("scenario") else None
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
