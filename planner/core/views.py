"""Pages of the core app."""

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from planner.core.roles import READ, user_can
from planner.core.services import health_public, health_report_cached


def home(request: HttpRequest) -> HttpResponse:
    """The front page: the health status for anyone, each service's detail for a role."""
    report = health_report_cached(max_age=settings.HEALTH_CACHE_SECONDS)
    detailed = user_can(request.user, READ)
    health = report if detailed else health_public(report=report)
    return render(request, "core/home.html", {"health": health, "detailed": detailed})
