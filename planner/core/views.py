"""Pages of the core app."""

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from planner.core.services import health_report


def home(request: HttpRequest) -> HttpResponse:
    health = health_report(
        connect_timeout=settings.HEALTH_CONNECT_TIMEOUT,
        worker_timeout=settings.HEALTH_WORKER_TIMEOUT,
    )
    return render(request, "core/home.html", {"health": health})
