"""Shared mechanics of queue-ordering policies, so each policy module is only its order.

`launch_in_order` serves non-preemptive policies (FIFO, SJF): walk the queue in priority
order and launch what fits. `preemptive_schedule` serves preemptive ones (SRTF, SRSF,
Tiresias): choose the highest-priority set of jobs whose GPUs fit the cluster, preempt the
running jobs outside it, launch the queued jobs inside it.
"""

from __future__ import annotations

import heapq
from bisect import insort
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from simulation.decisions import Decision, Launch, Preempt
from simulation.model import JobSpec, PoolKind
from simulation.placement import best_fit, eligible_pools
from simulation.state import JobStatus
from simulation.view import ClusterView, JobView


def pool_preference(view: ClusterView, spec: JobSpec) -> list[str]:
    """The job's own pool first, then training and quota pools, then on-loan inference."""
    pools = sorted(
        view.spec.pools,
        key=lambda p: (p.name != spec.pool, p.kind == PoolKind.INFERENCE),
    )
    return eligible_pools(view, spec, [p.name for p in pools])


def place_requested(view: ClusterView, job: JobView) -> Launch | None:
    """A launch of `job` at its requested size by best fit, or None if it does not fit."""
    spec = job.spec
    placement = best_fit(
        view, spec.num_gpus, gpus_per_worker=spec.gpus_per_worker,
        pools=pool_preference(view, spec),
    )
    return Launch(job.job_id, placement) if placement is not None else None


def launch_in_order(
    view: ClusterView, ordered: Iterable[JobView], *, blocking: bool
) -> Iterator[Decision]:
    """Launch queued jobs in `ordered`; with `blocking`, stop at the first that does not fit."""
    free = sum(view.free_gpus(p.name) for p in view.spec.pools)
    for job in ordered:
        if free <= 0:
            return
        launch = place_requested(view, job) if job.spec.num_gpus <= free else None
        if launch is None:
            if blocking:
                return
            continue
        free -= job.spec.num_gpus
        yield launch


def training_capacity(view: ClusterView) -> int:
    """GPUs that can host training now (inference servers count only while on loan)."""
    return sum(s.gpus for s in view.servers.values() if s.available)


def preemptive_schedule(view: ClusterView, ordered: Iterable[JobView]) -> Iterator[Decision]:
    """Run the highest-priority jobs that fit; `ordered` holds running and queued jobs.

    Non-preemptible running jobs keep their GPUs whatever their priority.
    """
    budget = training_capacity(view)
    keep: set[str] = set()
    for job in view.running.values():
        if not job.spec.preemptible:
            keep.add(job.job_id)
            budget -= job.gpus
    waiting: list[JobView] = []  # queued jobs inside the chosen set
    for job in ordered:
        if budget <= 0:
            break  # nothing further can fit
        job_id = job.job_id
        if job_id in keep:
            continue
        running = job.status == JobStatus.RUNNING
        need = job.gpus if running else job.spec.num_gpus
        if need <= budget:
            budget -= need
            keep.add(job_id)
            if not running:
                waiting.append(job)
    if not waiting:
        return
    for job in list(view.running.values()):
        if job.job_id not in keep:
            yield Preempt(job.job_id)
    for job in waiting:
        launch = place_requested(view, job)
        if launch is not None:
            yield launch


SortKey = tuple[Any, int]  # (policy key, trace index)


class QueueOrder:
    """Waiting jobs kept in priority order across rounds.

    For policies whose key of a waiting job cannot change while it waits (SRTF's remaining
    time, SJF's predicted duration, LAS service without promotion): arrivals are inserted by
    bisection and launched jobs dropped, so a long queue is neither re-keyed nor re-sorted
    on every round. A job that is launched and later requeued gets a fresh entry (its key
    may have changed while it ran); the old one is skipped as stale.
    """

    def __init__(self, key: Callable[[JobView], Any]) -> None:
        self._key = key
        self._entries: list[tuple[SortKey, int, str]] = []
        self._live: dict[str, int] = {}  # job id -> sequence number of its current entry
        self._seq = 0

    def forget(self, job_id: str) -> None:
        """`job_id` left the queue (the policy launched it)."""
        self._live.pop(job_id, None)

    def entries(self, view: ClusterView) -> Iterator[tuple[SortKey, JobView]]:
        """(sort key, job) for every waiting job, best first."""
        queue = view.queue
        for job_id in self._live.keys() - queue.keys():
            del self._live[job_id]
        for job_id in queue.keys() - self._live.keys():
            job = queue[job_id]
            self._seq += 1
            insort(self._entries, ((self._key(job), job.trace_index), self._seq, job_id))
            self._live[job_id] = self._seq
        if len(self._entries) > 2 * len(self._live) + 64:
            self._entries = [e for e in self._entries if self._live.get(e[2]) == e[1]]
        live = self._live
        for sort_key, seq, job_id in self._entries:
            if live.get(job_id) == seq:
                yield sort_key, queue[job_id]

    def jobs(self, view: ClusterView) -> Iterator[JobView]:
        return (job for _, job in self.entries(view))


def _queue_fits(view: ClusterView, free: int) -> bool:
    """Whether every waiting job's requested GPUs together fit in `free` (stops early)."""
    total = 0
    for job in view.queue.values():
        total += job.spec.num_gpus
        if total > free:
            return False
    return True


def schedule_by_priority(
    view: ClusterView, key: Callable[[JobView], Any], order: QueueOrder | None = None
) -> Iterator[Decision]:
    """A preemptive priority policy: `key` orders jobs, lowest first (ties: trace order).

    `order`, when the policy's key of a waiting job is frozen, keeps the queue sorted across
    rounds. When the whole queue fits in the free GPUs, the global order would keep every
    running job and start every queued one, so the queued jobs are simply launched (the
    common, uncontended case). Otherwise, or when fragmentation defeats a placement, the
    full `preemptive_schedule` runs on the state as it now is, over the running jobs merged
    with the queue in priority order.
    """
    if not view.queue:
        return
    if order is None:
        queued = sorted(((key(j), j.trace_index), j) for j in view.queue.values())
    else:
        queued = list(order.entries(view))
    free = sum(view.free_gpus(p.name) for p in view.spec.pools)
    if _queue_fits(view, free):
        placed_all = True
        for _, job in queued:
            launch = place_requested(view, job)
            if launch is None:
                placed_all = False
                continue
            if order is not None:
                order.forget(job.job_id)
            yield launch
        if placed_all:
            return
        queued = [(k, job) for k, job in queued if job.status == JobStatus.QUEUED]
    running = sorted(((key(j), j.trace_index), j) for j in view.running.values())
    merged = heapq.merge(running, queued, key=lambda entry: entry[0])
    for decision in preemptive_schedule(view, (job for _, job in merged)):
        if order is not None and isinstance(decision, Launch):
            order.forget(decision.job_id)
        yield decision
