"""Pages of the core app."""

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from planner.core.roles import READ, user_can
from planner.core.services import health_public, health_report_cached
from planner.dashboard import selectors


def home(request: HttpRequest) -> HttpResponse:
    """The front page: for a role, the live clusters now and the recent studies, under one
    line of health; for anyone else, that line alone (each service's detail needs a role)."""
    report = health_report_cached(max_age=settings.HEALTH_CACHE_SECONDS)
    detailed = user_can(request.user, READ)
    context = {"health": report if detailed else health_public(report=report),
               "detailed": detailed}
    if detailed:
        context.update(
            clusters=selectors.live_cluster_states(), scenarios=selectors.scenario_recent(),
            sweeps=selectors.sweep_recent(), reproductions=selectors.reproduction_recent())
    return render(request, "core/home.html", context)
