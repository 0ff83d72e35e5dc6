"""Reads of live jobs and decisions, and the snapshot a stateful decision starts from.

The dashboard uses `job_list` and `decision_list`. `cluster_snapshot` writes the database's
live state in DESIGN.md's snapshot JSON; the decision services read it (without `now`, with
the rows' ids) through `cluster_state_read`, or only the changed jobs and servers through
`cluster_jobs_read` and `servers_on_loan_read`, so the stateful and stateless forms run the
very same `simulation.decide` code.
"""

from __future__ import annotations

from collections.abc import Collection
from datetime import datetime
from typing import Any, NamedTuple

from django.db.models import F, FloatField, Func, Prefetch, QuerySet, Value
from django.utils import timezone

from planner.clusters.models import Cluster, Pool, Server, ServerStatus
from planner.live.models import ACTIVE_STATUSES, Decision, Job, JobStatus, Placement

ON_LOAN_STATUSES = (ServerStatus.ON_LOAN, ServerStatus.RECLAIMING)


class _SecondsSince(Func):
    """Seconds from `origin` to a datetime column, computed by the database: turning 2,000
    timestamps into Python datetimes took a third of reading a cluster's state."""

    output_field = FloatField()

    def __init__(self, column: str, origin: datetime) -> None:
        super().__init__(F(column), Value(origin))

    def as_postgresql(self, compiler, connection, **extra):
        return self.as_sql(compiler, connection, template="EXTRACT(EPOCH FROM (%(expressions)s))",
                           arg_joiner=" - ", **extra)

    def as_sqlite(self, compiler, connection, **extra):
        # SQLite keeps datetimes as text, "YYYY-MM-DD HH:MM:SS[.ffffff]": whole seconds by
        # strftime, the fraction from the text (julianday would round both to milliseconds).
        (later, later_params), (origin, origin_params) = (
            compiler.compile(expression) for expression in self.get_source_expressions())
        sql = (f"((strftime('%%s', {later}) - strftime('%%s', {origin})) + "
               f"(CAST(substr({later}, 20) AS REAL) - CAST(substr({origin}, 20) AS REAL)))")
        return sql, (*later_params, *origin_params, *later_params, *origin_params)


def job_list(*, cluster: Cluster | None = None, status: str | None = None,
             active: bool | None = None) -> QuerySet[Job]:
    """Live jobs in submit order with their placements (and servers) prefetched."""
    jobs = Job.objects.select_related("cluster").prefetch_related(
        Prefetch("placements", queryset=Placement.objects.select_related("server"))
    )
    if cluster is not None:
        jobs = jobs.filter(cluster=cluster)
    if status is not None:
        jobs = jobs.filter(status=status)
    if active is not None:
        jobs = jobs.filter(status__in=ACTIVE_STATUSES) if active else \
            jobs.exclude(status__in=ACTIVE_STATUSES)
    return jobs.order_by("submitted_at", "id")


def job_get(*, job_id: int) -> Job:
    return job_list().get(pk=job_id)


def decision_list(*, cluster: Cluster | None = None, kind: str | None = None,
                  stateful: bool | None = None) -> QuerySet[Decision]:
    """Logged decisions, newest first, without their (possibly large) stored requests."""
    decisions = Decision.objects.select_related("cluster", "actor").defer("request")
    if cluster is not None:
        decisions = decisions.filter(cluster=cluster)
    if kind is not None:
        decisions = decisions.filter(kind=kind)
    if stateful is not None:
        decisions = decisions.filter(stateful=stateful)
    return decisions.order_by("-created_at", "-id")


def job_hosts(*, job: Job) -> list[tuple[str, int]]:
    """(hostname, slots) per server a job runs on: Horovod's host discovery lines."""
    hosts: dict[str, int] = {}
    for placement in job.placements.all():
        hosts[placement.server.name] = hosts.get(placement.server.name, 0) + placement.gpus
    return sorted(hosts.items())


def cluster_snapshot(*, cluster: Cluster) -> dict[str, Any]:
    """The cluster's live state as DESIGN.md's snapshot: online servers in pool order, then
    queued and running jobs with their placements. Times are seconds since the cluster was
    created, so FIFO-like policies see the true submit order."""
    state = cluster_state(cluster=cluster)
    latest = max((job["submit_time"] for job in state["jobs"]), default=0.0)
    return {"now": cluster_now(cluster=cluster, latest_submit=latest), **state}


def cluster_now(*, cluster: Cluster, latest_submit: float) -> float:
    """A snapshot's `now`: seconds since the cluster was created, and never before a job's
    submit time (the clocks of the database and this process may differ a little)."""
    return max(round((timezone.now() - cluster.created_at).total_seconds(), 3), latest_submit)


def cluster_state(*, cluster: Cluster) -> dict[str, Any]:
    """`cluster_snapshot` without `now`: what a write to the live state changes."""
    return cluster_state_read(cluster=cluster).state


class StateRead(NamedTuple):
    """`cluster_state` and what a process's copy of it needs besides (`state_cache`)."""

    state: dict[str, Any]
    server_ids: dict[str, int]  # database ids by name: applying an answer, which names them
    job_ids: dict[str, int]
    submitted: dict[str, Any]  # exact seconds from the cluster's creation to each job's submit


def cluster_state_read(*, cluster: Cluster) -> StateRead:
    """The cluster's live state, with its servers' and jobs' ids and exact submit times."""
    pools = list(Pool.objects.filter(cluster=cluster).select_related("gpu_type").order_by("id"))
    servers = []
    server_ids: dict[str, int] = {}
    server_rows = Server.objects.filter(pool__cluster=cluster).exclude(
        status=ServerStatus.OFFLINE).order_by("pool_id", "id").values_list(
        "id", "pool_id", "name", "status")
    by_id = {pool.id: pool for pool in pools}
    for pk, pool_id, name, status in server_rows:
        server_ids[name] = pk
        pool = by_id[pool_id]
        servers.append({"id": name, "pool": pool.name, "kind": pool.kind,
                        "gpus": pool.gpus_per_server, "gpu_type": pool.gpu_type.name,
                        "on_loan": status in ON_LOAN_STATUSES})
    jobs, job_ids, submitted = [], {}, {}
    for pk, exact, entry in cluster_jobs_read(cluster=cluster):
        jobs.append(entry)
        job_ids[entry["id"]] = pk
        submitted[entry["id"]] = exact
    state = {
        "gpu_types": {pool.gpu_type.name: {"speed": pool.gpu_type.speed,
                                           "memory_gb": pool.gpu_type.memory_gb}
                      for pool in pools},
        "pools": [{"name": pool.name, "kind": pool.kind, "lending_limit": pool.lending_limit}
                  for pool in pools],
        "servers": servers,
        "jobs": jobs,
    }
    return StateRead(state, server_ids, job_ids, submitted)


def cluster_jobs_read(*, cluster: Cluster, job_ids: Collection[int] | None = None,
                      ) -> list[tuple[int, Any, dict[str, Any]]]:
    """(id, exact seconds from the cluster's creation to its submit, snapshot entry) of the
    cluster's queued and running jobs (of `job_ids` only, if given), in submit order.

    A job stamped before its cluster (web hosts whose clocks differ, an admin's edit) is
    submitted at 0 in the snapshot, which takes no negative times; it still sorts by its
    stamp."""
    jobs = Job.objects.filter(cluster=cluster, status__in=ACTIVE_STATUSES)
    placements = Placement.objects.filter(job__cluster=cluster, job__status=JobStatus.RUNNING)
    if job_ids is not None:
        jobs, placements = jobs.filter(id__in=job_ids), placements.filter(job_id__in=job_ids)
    slots: dict[int, list[dict[str, Any]]] = {}
    for job_id, server, gpus, flexible in placements.order_by("job_id", "id").values_list(
            "job_id", "server__name", "gpus", "flexible"):
        slots.setdefault(job_id, []).append({"server": server, "gpus": gpus,
                                             "flexible": flexible})
    rows = []
    running = JobStatus.RUNNING
    for (pk, name, status, per_worker, min_workers, max_workers, num_gpus, duration,
         remaining, model, preemptible, priority, submitted, gpu_type) in jobs.order_by(
            "submitted_at", "id").values_list(
            "id", "name", "status", "gpus_per_worker", "min_workers", "max_workers",
            "num_gpus", "duration_seconds", "remaining_seconds", "model", "preemptible",
            "priority", _SecondsSince("submitted_at", cluster.created_at), "gpu_type"):
        entry: dict[str, Any] = {
            "id": name, "status": status, "gpus_per_worker": per_worker,
            "min_workers": min_workers, "max_workers": max_workers,
            "num_gpus": num_gpus, "duration": duration,
            "remaining_seconds": remaining, "model": model,
            "preemptible": preemptible, "priority": priority,
            "submit_time": max(0.0, round(float(submitted), 3)),
            "placement": slots.get(pk, []) if status == running else [],
        }
        if gpu_type:
            entry["gpu_type"] = gpu_type
        rows.append((pk, submitted, entry))
    return rows


def servers_on_loan_read(*, cluster: Cluster, server_ids: Collection[int],
                         ) -> dict[int, tuple[str, bool]]:
    """Id -> (name, whether on loan) of those of `server_ids` that are online in the cluster."""
    return {pk: (name, status in ON_LOAN_STATUSES) for pk, name, status in
            Server.objects.filter(pool__cluster=cluster, id__in=server_ids).exclude(
                status=ServerStatus.OFFLINE).values_list("id", "name", "status")}
