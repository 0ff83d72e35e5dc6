"""Dashboard pages: thin views over the clusters/scenarios selectors and services.

Figures come from `planner.dashboard.figures` (pure functions) and reach the page as JSON in
`json_script` tags; `static/js/charts.js` draws them and `static/js/live.js` keeps live parts
current by re-fetching their fragment views.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

import plotly.io as pio
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render

from planner.clusters import selectors as cluster_selectors
from planner.clusters.models import Cluster
from planner.dashboard import figures
from planner.dashboard.selectors import PoolState, cluster_pool_states

LIVE_REFRESH_SECONDS = 5


def cluster_list(request: HttpRequest) -> HttpResponse:
    return render(request, "dashboard/cluster_list.html",
                  {"clusters": cluster_selectors.cluster_list(), "nav": "clusters"})


def cluster_detail(request: HttpRequest, cluster_id: int) -> HttpResponse:
    context = _cluster_live_context(cluster_id=cluster_id)
    context.update(refresh_seconds=_refresh_seconds(request), nav="clusters")
    return render(request, "dashboard/cluster_detail.html", context)


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
