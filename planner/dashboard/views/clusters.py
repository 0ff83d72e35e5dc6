"""The live clusters' pages: the list and the operator page, whose live part refreshes
itself (`static/js/live.js` re-fetches `cluster_live`)."""

from __future__ import annotations

from collections.abc import Sequence

from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render

from planner.clusters import selectors as cluster_selectors
from planner.clusters.models import Cluster, ClusterKind
from planner.core.roles import READ, role_required
from planner.dashboard import figures, selectors
from planner.dashboard.selectors import PoolState, cluster_pool_states
from planner.dashboard.views.common import chart_payloads

LIVE_REFRESH_SECONDS = 5
# (summary path, title, kind, main): a "time" column is shown in the unit its largest value

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
