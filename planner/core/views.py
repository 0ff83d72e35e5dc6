"""Pages of the core app, and the Prometheus scrape endpoint."""

import hmac

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET
from prometheus_client.exposition import choose_encoder

from planner.core.metrics import REGISTRY
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


def _metrics_allowed(request: HttpRequest) -> bool:
    token = settings.PLANNER_METRICS_TOKEN
    if not token:
        return not settings.IS_PRODUCTION
    sent = request.headers.get("Authorization", "")
    return hmac.compare_digest(sent.encode(), f"Bearer {token}".encode())


@require_GET
def metrics(request: HttpRequest) -> HttpResponse:
    """Prometheus' text format, or OpenMetrics when the scraper asks for it
    (`planner.core.metrics`). With PLANNER_METRICS_TOKEN set, only
    for `Authorization: Bearer <token>`; unset, open, except in production (403)."""
    if not _metrics_allowed(request):
        return HttpResponse("metrics need Authorization: Bearer <PLANNER_METRICS_TOKEN>\n",
                            status=403, content_type="text/plain; charset=utf-8")
    encode, content_type = choose_encoder(request.headers.get("Accept", ""))
    return HttpResponse(encode(REGISTRY), content_type=content_type)
