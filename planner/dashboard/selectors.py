"""Reads the dashboard needs that the clusters and scenarios apps do not offer themselves."""

from __future__ import annotations

from dataclasses import dataclass, field

from django.db.models import Count

from planner.clusters.models import Cluster, ServerStatus

IN_USE = (ServerStatus.BUSY, ServerStatus.ON_LOAN, ServerStatus.RECLAIMING)


@dataclass(frozen=True, slots=True)
class PoolState:
    """A pool as the operator sees it now: its servers counted by status."""

    name: str
    kind: str
    gpu_type: str
    gpus_per_server: int
    servers: int
    by_status: dict[str, int] = field(default_factory=dict)

    @property
    def gpus(self) -> int:
        return self.servers * self.gpus_per_server

    @property
    def in_use(self) -> int:
        return sum(self.by_status.get(status, 0) for status in IN_USE)

    @property
    def utilization(self) -> float:
        """Share of the pool's online servers that are busy, on loan or being reclaimed."""
        online = self.servers - self.by_status.get(ServerStatus.OFFLINE, 0)
        return self.in_use / online if online else 0.0

    @property
    def utilization_percent(self) -> int:
        return round(100 * self.utilization)


def cluster_pool_states(*, cluster: Cluster) -> list[PoolState]:
    """Every pool of `cluster` with its servers counted per status, in one grouped query."""
    counts: dict[int, dict[str, int]] = {}
    rows = (cluster.pools.values("id", "servers__status")
            .annotate(count=Count("servers")).order_by())
    for row in rows:
        if row["servers__status"] is not None:
            counts.setdefault(row["id"], {})[row["servers__status"]] = row["count"]
    states = []
    for pool in cluster.pools.select_related("gpu_type").order_by("name"):
        by_status = {status: counts.get(pool.id, {}).get(status, 0)
                     for status in ServerStatus.values}
        states.append(PoolState(
            name=pool.name, kind=pool.kind, gpu_type=pool.gpu_type.name,
            gpus_per_server=pool.gpus_per_server, servers=sum(by_status.values()),
            by_status=by_status,
        ))
    return states
