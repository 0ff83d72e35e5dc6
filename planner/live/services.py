"""Writes of live state: jobs, stateful and stateless decisions, replays, idempotent POSTs.

Every write to a cluster's live state first locks that cluster's row (`select_for_update`),
always before anything else, so concurrent reclaim, schedule and job requests on one
cluster run one after another on the same, current state: none can assign a GPU another
has just taken or lose a job another has just moved. The answer is computed by
`simulation.decide` on the snapshot read under the lock and applied in the same
transaction, so it is all or nothing.

Every such write also bumps the cluster's `LiveStateVersion` in the same transaction (model
saves through `planner.live.signals`; a decision, which writes in bulk, bumps it itself),
which is what lets a process decide on its cached copy of the state (`state_cache`) when
nothing has changed since.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.db import IntegrityError, transaction
from django.db.models import Count, Exists, F, OuterRef, Q
from django.utils import timezone

from planner.clusters.models import Cluster, ClusterKind, PoolKind, Server, ServerStatus
from planner.live.models import (
    ACTIVE_STATUSES,
    Decision,
    DecisionKind,
    IdempotencyRecord,
    Job,
    JobStatus,
    Placement,
)
from planner.live.selectors import (
    cluster_jobs_read,
    cluster_now,
    cluster_state_read,
    servers_on_loan_read,
)
from planner.live.signals import version_bumped_by_caller
from planner.live.state_cache import LIVE_STATES, CachedState
from planner.live.versions import (
    state_changes_log,
    state_changes_since,
    state_jobs_changed,
    state_version_bump,
)
from simulation.decide import DECIDERS
from simulation.errors import InputError


class IdempotencyConflict(Exception):
    """The key was used before with a different request."""


def _cluster_lock(*, cluster_id: int) -> Cluster:
    """The live cluster's row, locked; a what-if cluster (a scenario's template, whose servers
    never run) is no live cluster: `Cluster.DoesNotExist`."""
    return Cluster.objects.select_for_update().get(pk=cluster_id, kind=ClusterKind.LIVE)


# --- jobs ------------------------------------------------------------------------------------


@transaction.atomic
def job_submit(*, cluster: Cluster, name: str, num_gpus: int, duration_seconds: float,
               gpus_per_worker: int = 1, min_workers: int | None = None,
               max_workers: int | None = None, remaining_seconds: float | None = None,
               model: str = "generic", gpu_type: str = "", preemptible: bool = True,
               priority: int = 0) -> Job:
    """Queue a job; refuse one that no state of the cluster could ever run."""
    cluster = _cluster_lock(cluster_id=cluster.pk)
    if num_gpus % gpus_per_worker:
        raise InputError(f"{num_gpus} GPUs is not a whole number of {gpus_per_worker}-GPU "
                         "workers", field="num_gpus")
    requested = num_gpus // gpus_per_worker
    min_workers = min_workers or requested
    max_workers = max_workers or max(requested, min_workers)
    if not min_workers <= requested <= max_workers:
        raise InputError(f"{requested} workers is outside [{min_workers}, {max_workers}]",
                         field="num_gpus")
    pools = cluster.pools.select_related("gpu_type").annotate(
        online=Count("servers", filter=~Q(servers__status=ServerStatus.OFFLINE)))
    capacity = sum(p.online * p.gpus_per_server for p in pools
                   if not gpu_type or p.gpu_type.name == gpu_type)
    if min_workers * gpus_per_worker > capacity:
        kind = f"{gpu_type} " if gpu_type else ""
        raise InputError(f"needs at least {min_workers * gpus_per_worker} GPUs; cluster "
                         f"{cluster.name} has {capacity} {kind}GPUs online", field="min_workers")
    if Job.objects.filter(cluster=cluster, name=name).exists():
        raise InputError(f"cluster {cluster.name} already has a job {name!r}", field="name")
    return Job.objects.create(
        cluster=cluster, name=name, num_gpus=num_gpus, duration_seconds=duration_seconds,
        remaining_seconds=duration_seconds if remaining_seconds is None else remaining_seconds,
        gpus_per_worker=gpus_per_worker, min_workers=min_workers, max_workers=max_workers,
        model=model, gpu_type=gpu_type, preemptible=preemptible, priority=priority,
    )


@transaction.atomic
def job_cancel(*, job: Job) -> Job:
    """Stop a queued or running job for good and free its GPUs."""
    _cluster_lock(cluster_id=job.cluster_id)
    job = Job.objects.get(pk=job.pk)
    if job.status not in ACTIVE_STATUSES:
        raise InputError(f"job {job.name} is {job.status}", field="status")
    return _job_end(job=job, status=JobStatus.CANCELLED)


@transaction.atomic
def job_report(*, job: Job, remaining_seconds: float | None = None,
               progress: float | None = None, finished: bool = False) -> Job:
    """A running job's own progress report; `finished` ends it and frees its GPUs."""
    _cluster_lock(cluster_id=job.cluster_id)
    job = Job.objects.get(pk=job.pk)
    if job.status not in ACTIVE_STATUSES:
        raise InputError(f"job {job.name} is {job.status}", field="status")
    if remaining_seconds is not None:
        job.remaining_seconds = remaining_seconds
        if progress is None and job.duration_seconds > 0:
            progress = max(0.0, min(1.0, 1 - remaining_seconds / job.duration_seconds))
    if progress is not None:
        job.progress = progress
    if finished:
        job.remaining_seconds, job.progress = 0.0, 1.0
        return _job_end(job=job, status=JobStatus.FINISHED)
    job.save()
    return job


def _job_end(*, job: Job, status: str) -> Job:
    job.status = status
    job.finished_at = timezone.now()
    with version_bumped_by_caller():  # one version for the job and all its placements
        job.save()
        held = list(job.placements.values_list("server_id", flat=True))
        job.placements.all().delete()
    state_jobs_changed(cluster_id=job.cluster_id, job_ids=[job.pk])
    _server_statuses_refresh(server_ids=held)
    return job


# --- decisions -------------------------------------------------------------------------------


def decision_stateless(*, kind: str, request: Any, actor: AbstractBaseUser | None) -> Decision:
    """Decide on the snapshot in the request; only the decision log changes."""
    started = time.perf_counter()
    response = DECIDERS[kind](request)
    return Decision.objects.create(kind=kind, stateful=False, actor=actor, request=request,
                                   response=response,
                                   duration_seconds=time.perf_counter() - started)


@transaction.atomic
def decision_stateful(*, cluster_id: int, kind: str, body: dict[str, Any],
                      actor: AbstractBaseUser | None) -> Decision:
    """Decide on the cluster's live state and apply the answer, all under the cluster lock
    (`Cluster.DoesNotExist` if there is no such cluster).

    `body` is the request without `state`; the snapshot read under the lock is added, and
    the full request is what the decision log keeps for replay. The snapshot comes from this
    process's cached copy when the cluster's state version still matches it (`state_cache`),
    else from the database. Its `duration_seconds` runs from here, lock wait included.
    """
    started = time.perf_counter()
    cluster = _cluster_lock(cluster_id=cluster_id)
    for field, why in (("state", "send the snapshot to the stateless endpoint instead"),
                       ("queue", "submit the jobs first, then schedule")):
        if field in body:
            raise InputError(f"a stateful decision uses the cluster's own state; {why}",
                             field=field)
    version = state_version_bump(cluster_id=cluster.pk, create=True)  # undone on failure
    key = (cluster.pk, cluster.created_at)
    cached = _live_state(cluster=cluster, key=key, version=version - 1)
    now = cluster_now(cluster=cluster, latest_submit=cached.latest_submit)
    request = {**body, "state": {"now": now, **cached.state}}
    response = DECIDERS[kind](request, snapshot=replace(cached.snapshot, now=now))
    with version_bumped_by_caller():
        _apply(cluster_id=cluster.pk, kind=kind, response=response, cached=cached,
               version=version)
    following = cached.after(version, kind, response)
    transaction.on_commit(lambda: LIVE_STATES.put(key, following))
    return Decision.objects.create(cluster=cluster, kind=kind, stateful=True, actor=actor,
                                   request=request, response=response,
                                   duration_seconds=time.perf_counter() - started)


def _live_state(*, cluster: Cluster, key: tuple[Any, ...], version: int) -> CachedState:
    """The cluster's live state at `version`, read under its lock: this process's copy if it
    is that version; else its older copy with just the rows changed since read again, if the
    change log names them all; else the whole state from the database."""
    cached = LIVE_STATES.get(key, version)
    if cached is not None:
        return cached
    stale = LIVE_STATES.latest(key)
    if stale is not None and stale.version < version:
        changes = state_changes_since(cluster_id=cluster.pk, since=stale.version, upto=version)
        if changes is not None:
            refreshed = stale.refreshed(
                version, changes.job_ids,
                cluster_jobs_read(cluster=cluster, job_ids=changes.job_ids)
                if changes.job_ids else (),
                changes.server_ids,
                servers_on_loan_read(cluster=cluster, server_ids=changes.server_ids)
                if changes.server_ids else {})
            if refreshed is not None:
                return refreshed
    return CachedState.from_state(version, *cluster_state_read(cluster=cluster))


@dataclass(frozen=True, slots=True)
class Replay:
    decision: Decision
    response: dict[str, Any]

    @property
    def same(self) -> bool:
        return self.response == self.decision.response


def decision_replay(*, decision: Decision) -> Replay:
    """Recompute a logged decision from its stored request (nothing is applied)."""
    return Replay(decision, DECIDERS[decision.kind](decision.request))


def _apply(*, cluster_id: int, kind: str, response: dict[str, Any], cached: CachedState,
           version: int) -> None:
    """Write an answer decided on `cached` (whose snapshot names where the moved jobs ran
    before, and whose id maps save looking the named rows up) to the live state, and log the
    jobs and servers it changed as `version`'s changes."""
    now = timezone.now()
    server_ids, job_ids = cached.server_ids, cached.job_ids
    lent = [server_ids[name] for name in response.get("servers", ())]
    if kind == DecisionKind.LOAN:
        Server.objects.filter(id__in=lent).update(status=ServerStatus.ON_LOAN, updated_at=now)
        state_changes_log(cluster_id=cluster_id, version=version, server_ids=lent)
        return
    placements: dict[str, list[dict[str, Any]]] = {}
    stopped = response.get("preempted_jobs", []) + response.get("preempt", [])
    for entry in (response.get("scaled_in", []) + response.get("scale_in", [])
                  + response.get("scale_out", []) + response.get("migrate", [])):
        placements[entry["job"]] = entry["placement"]
    launched = {entry["job"]: entry["placement"] for entry in response.get("launch", [])}
    placements.update(launched)
    touched = {slot["server"] for slots in placements.values() for slot in slots}
    moving = set(placements).union(stopped)
    touched.update(slot["server"] for job in cached.state["jobs"] if job["id"] in moving
                   for slot in job["placement"])
    moved = [job_ids[name] for name in list(placements) + stopped]
    Placement.objects.filter(job_id__in=moved).delete()
    if stopped:
        Job.objects.filter(id__in=[job_ids[name] for name in stopped]).update(
            status=JobStatus.QUEUED, preemptions=F("preemptions") + 1, updated_at=now)
    if launched:
        ids = [job_ids[name] for name in launched]
        Job.objects.filter(id__in=ids).update(status=JobStatus.RUNNING, updated_at=now)
        Job.objects.filter(id__in=ids, started_at__isnull=True).update(started_at=now)
    Placement.objects.bulk_create([
        Placement(job_id=job_ids[name], server_id=server_ids[slot["server"]], gpus=slot["gpus"],
                  flexible=slot["flexible"])
        for name, slots in placements.items() for slot in slots
    ])
    if kind == DecisionKind.RECLAIM:
        Server.objects.filter(id__in=lent).update(status=ServerStatus.IDLE, updated_at=now)
    state_changes_log(cluster_id=cluster_id, version=version, job_ids=moved, server_ids=lent)
    own = {server["id"] for server in cached.state["servers"]
           if server["kind"] != PoolKind.INFERENCE}
    _server_statuses_refresh(server_ids=[server_ids[name] for name in touched & own])


def _server_statuses_refresh(*, server_ids: list[int]) -> None:
    """Training and quota servers are busy while they host a job, idle otherwise (inference
    servers are on loan or not); only the servers a change touched can have moved."""
    if not server_ids:
        return
    hosting = Exists(Placement.objects.filter(server=OuterRef("pk")))
    own = Server.objects.filter(id__in=server_ids).exclude(
        pool__kind=PoolKind.INFERENCE).exclude(status=ServerStatus.OFFLINE)
    own.filter(hosting).exclude(status=ServerStatus.BUSY).update(status=ServerStatus.BUSY)
    own.filter(~hosting).exclude(status=ServerStatus.IDLE).update(status=ServerStatus.IDLE)


# --- idempotency -----------------------------------------------------------------------------


def request_fingerprint(*, method: str, path: str, body: Any) -> str:
    text = json.dumps([method, path, body], sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()


def idempotent_call(*, user: AbstractBaseUser, key: str | None, fingerprint: str,
                    action: Callable[[], tuple[int, Any]]) -> tuple[int, Any, bool]:
    """Run `action` once per (user, key): a replay with the same request gets the first
    (status, body) back and `True`; a different request under the key raises
    `IdempotencyConflict`. Without a key the action simply runs.

    The record is written in the action's transaction, so a concurrent duplicate either
    waits and finds it or loses the unique race and rolls its own work back.
    """
    if not key:
        status, body = action()
        return status, body, False
    record = IdempotencyRecord.objects.filter(user=user, key=key).first()
    if record is None:
        try:
            with transaction.atomic():
                status, body = action()
                IdempotencyRecord.objects.create(user=user, key=key, request_hash=fingerprint,
                                                 status_code=status, response=body)
            return status, body, False
        except IntegrityError:
            record = IdempotencyRecord.objects.filter(user=user, key=key).first()
            if record is None:
                raise
    if record.request_hash != fingerprint:
        raise IdempotencyConflict(key)
    return record.status_code, record.response, True


# --- the demo's live cluster -----------------------------------------------------------------

LIVE_DEMO_CLUSTER = "demo-live"
LIVE_DEMO_SPEC = f"""\
name: {LIVE_DEMO_CLUSTER}
gpu_types: {{V100: {{speed: 1.0, memory_gb: 32}}, T4x4: {{speed: 1.0, memory_gb: 64}}}}
pools:
  - {{name: training,  kind: training,  gpu_type: V100, servers: 6, gpus_per_server: 8}}
  - {{name: inference, kind: inference, gpu_type: T4x4, servers: 12, gpus_per_server: 2,
     lending_limit: 10}}
"""


def live_demo_cluster_ensure() -> Cluster:
    """The live cluster the demo replay drives (`manage.py live_demo`), created once.

    6 x 8 V100 training servers and 12 inference servers whose 8 T4s count as 2
    V100-equivalents each (Aryl §5.2's normalised capacity), up to 10 of them lent: the
    replayed Philly day needs about 71 GPUs on average, so queues form and loans matter.
    """
    from planner.clusters.services import cluster_create_from_spec

    return Cluster.objects.filter(name=LIVE_DEMO_CLUSTER).first() or cluster_create_from_spec(
        spec_text=LIVE_DEMO_SPEC, source="live demo",
        description="Live demo: a Philly day replayed through the live API (manage.py "
                    "live_demo)")
