"""The operator page and the live clusters at a glance: servers by status, jobs, decisions."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.db.models import Count, Max

from planner.clusters.models import Cluster, ClusterKind, Server, ServerStatus
from planner.live import selectors as live_selectors
from planner.live.models import ACTIVE_STATUSES, Decision, Job, JobStatus
from simulation.metrics import time_unit

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



LIVE_JOB_ROWS = 25
LIVE_DECISION_ROWS = 30


def cluster_live_jobs(*, cluster: Cluster, limit: int = LIVE_JOB_ROWS) -> dict[str, Any]:
    """Running jobs, then queued ones (each in submit order, `limit` of each), with their
    allocation, placement (server: GPUs) and remaining time, and how many there are."""
    jobs = live_selectors.job_list(cluster=cluster)
    rows = []
    for status in (JobStatus.RUNNING, JobStatus.QUEUED):
        for job in jobs.filter(status=status)[:limit]:
            placement = [f"{p.server.name}: {p.gpus}{' (flexible)' if p.flexible else ''}"
                         for p in job.placements.all()]
            unit, scale = time_unit(job.remaining_seconds)
            rows.append({"job": job, "gpus": sum(p.gpus for p in job.placements.all()),
                         "placement": placement,
                         "remaining": f"{job.remaining_seconds / scale:,.1f} {unit}"})
    counts = dict(jobs.filter(status__in=[JobStatus.RUNNING, JobStatus.QUEUED])
                  .order_by().values_list("status").annotate(n=Count("id")))
    return {"rows": rows, "running": counts.get(JobStatus.RUNNING, 0),
            "queued": counts.get(JobStatus.QUEUED, 0), "limit": limit}


def cluster_decisions(*, cluster: Cluster, limit: int = LIVE_DECISION_ROWS
                      ) -> list[dict[str, Any]]:
    """The newest decisions, each with a one-line account of what it did."""
    return [{"decision": d, "summary": decision_summary(kind=d.kind, response=d.response)}
            for d in live_selectors.decision_list(cluster=cluster)[:limit]]


def _names(items: Sequence[Any], *, shown: int = 6) -> str:
    """`a, b, c and 14 more`: a decision that moved many jobs stays one readable line."""
    names = [str(item) for item in items]
    more = len(names) - shown
    return ", ".join(names[:shown]) + (f" and {more} more" if more > 0 else "")


def decision_summary(*, kind: str, response: dict[str, Any]) -> str:
    """Loans, reclaims with the jobs they preempted, launches, scale-outs and scale-ins."""
    parts = []
    servers = response.get("servers") or []
    if kind == "loan":
        parts.append(f"lent {len(servers)} server(s): {_names(servers)}")
    if kind == "reclaim":
        parts.append(f"reclaimed {len(servers)} server(s): {_names(servers)}")
    for key, verb in (("preempted_jobs", "preempted"), ("preempt", "preempted")):
        if response.get(key):
            parts.append(f"{verb} {len(response[key])}: {_names(response[key])}")
    for key, verb in (("launch", "launched"), ("scale_out", "scaled out"),
                      ("scale_in", "scaled in"), ("scaled_in", "scaled in"),
                      ("migrate", "migrated")):
        entries = response.get(key) or []
        if entries:
            parts.append(f"{verb} {len(entries)}: "
                         f"{_names([e.get('job', e) for e in entries])}")
    if response.get("collateral_gpus"):
        parts.append(f"{response['collateral_gpus']} collateral GPU(s)")
    return "; ".join(parts) or "no change"


@dataclass(frozen=True, slots=True)
class LiveClusterState:
    """A live cluster at a glance: servers by status, active jobs, its last decision."""

    cluster: Cluster
    by_status: dict[str, int]
    queued: int
    running: int
    last_decision_at: datetime | None

    @property
    def servers(self) -> int:
        return sum(self.by_status.values())


def live_cluster_states() -> list[LiveClusterState]:
    """Every live cluster (what-if ones left out) in three grouped queries, whatever their
    number of servers, jobs and decisions."""
    clusters = list(Cluster.objects.filter(kind=ClusterKind.LIVE).order_by("name"))
    servers: dict[int, dict[str, int]] = {}
    for row in (Server.objects.filter(pool__cluster__kind=ClusterKind.LIVE)
                .values("pool__cluster_id", "status").annotate(n=Count("id")).order_by()):
        servers.setdefault(row["pool__cluster_id"], {})[row["status"]] = row["n"]
    jobs: dict[tuple[int, str], int] = {
        (row["cluster_id"], row["status"]): row["n"]
        for row in (Job.objects.filter(cluster__kind=ClusterKind.LIVE,
                                       status__in=ACTIVE_STATUSES)
                    .values("cluster_id", "status").annotate(n=Count("id")).order_by())}
    decided = dict(Decision.objects.filter(cluster__kind=ClusterKind.LIVE)
                   .values("cluster_id").annotate(last=Max("created_at"))
                   .values_list("cluster_id", "last").order_by())
    return [LiveClusterState(
        cluster=cluster,
        by_status={status: servers.get(cluster.pk, {}).get(status, 0)
                   for status in ServerStatus.values},
        queued=jobs.get((cluster.pk, JobStatus.QUEUED), 0),
        running=jobs.get((cluster.pk, JobStatus.RUNNING), 0),
        last_decision_at=decided.get(cluster.pk),
    ) for cluster in clusters]
