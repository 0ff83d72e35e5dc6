"""Shared mechanics of the SIA policies: queues and quotas, placement anywhere in the
shared cluster, the no-sharing virtual clock and the logical resource-time plan (SIA §5.1).

Queues are the cluster's `quota` pools (or, when it has none, every non-inference pool;
a cluster with neither is refused before the run); a job belongs to the queue its `pool`
names, and a job naming no queue belongs to the first one. GPUs are fungible across the
physical cluster (SIA §5.1–5.3 assume so): a job may run on any server, its own queue's
servers first. Durations are read at the reference speed; these policies assume one GPU
type, as SIA's setup does.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from itertools import islice

import numpy as np

from simulation.decisions import Launch
from simulation.errors import InputError
from simulation.model import ClusterSpec, JobSpec, PoolKind, Workload
from simulation.placement import best_fit, eligible_pools
from simulation.policies.base import Policy
from simulation.view import ClusterView, JobView


def queue_quotas(cluster: ClusterSpec) -> dict[str, int]:
    """Queue name -> quota GPUs, in cluster order."""
    pools = cluster.pools_of_kind(PoolKind.QUOTA) or tuple(
        p for p in cluster.pools if p.kind != PoolKind.INFERENCE
    )
    return {p.name: p.quota_gpus if p.quota_gpus is not None else p.gpus for p in pools}


class QueuePolicy(Policy):
    """A policy that schedules the cluster's queues: it cannot run on a cluster without one.
    Its jobs run at their requested size (allocation stage `requested`, or `edl-expand`)."""

    layers = ("ordering", "placement")

    def __init__(self, **values: object) -> None:
        super().__init__(**values)
        self._pending_by_queue = PendingByQueue()

    def queue_usage(self, view: ClusterView, quotas: Mapping[str, int]) -> QueueUsage:
        """Each queue's allocation and waiting jobs this round (`QueueUsage.of`)."""
        return self._pending_by_queue.usage(view, quotas)

    def check_inputs(self, cluster: ClusterSpec, workload: Workload) -> None:
        if not queue_quotas(cluster):
            kinds = ", ".join(sorted({pool.kind.value for pool in cluster.pools})) or "none"
            raise InputError(
                f"{self.name} cannot run on cluster '{cluster.name}': it schedules one queue "
                f"per quota or training pool (SIA §5.1) and the cluster has none (its pools "
                f"are {kinds})", field="policy")


def queue_of(spec: JobSpec, quotas: Mapping[str, int]) -> str:
    return spec.pool if spec.pool in quotas else next(iter(quotas))


def cluster_capacity(cluster: ClusterSpec, quotas: Mapping[str, int]) -> int:
    """Physical GPUs of the queues' servers: what the queues share."""
    return sum(cluster.pool(name).gpus for name in quotas)


def idle_gpus(view: ClusterView, quotas: Mapping[str, int]) -> int:
    return sum(view.free_gpus(name) for name in quotas)


def place_shared(view: ClusterView, job: JobView, quotas: Mapping[str, int]) -> Launch | None:
    """Launch `job` on free GPUs anywhere in the shared cluster, its own queue's first."""
    spec = job.spec
    own = queue_of(spec, quotas)
    pools = eligible_pools(view, spec, [own, *(q for q in quotas if q != own)])
    placement = best_fit(view, spec.num_gpus, gpus_per_worker=spec.gpus_per_worker, pools=pools)
    return Launch(job.job_id, placement) if placement is not None else None


class WaitingJobs:
    """One queue's waiting jobs in order, as a round sees them: the kept queue itself (not a
    copy: thousands wait on Muri's traces, and a round reads a few heads) less the jobs the
    round has taken. A list's reads and `remove`/`pop`; a policy stops iterating once it
    takes a job (every caller does). `gpus` is their GPUs, all together (`gpus` of the
    kept queue is given, so that the sum costs nothing either)."""

    __slots__ = ("_jobs", "_taken", "gpus")

    def __init__(self, jobs: Mapping[str, JobView], gpus: int | None = None) -> None:
        self._jobs = jobs
        self._taken: set[str] = set()
        self.gpus = sum(job.spec.num_gpus for job in jobs.values()) if gpus is None else gpus

    def __iter__(self) -> Iterator[JobView]:
        taken = self._taken
        if not taken:
            return iter(self._jobs.values())
        return (job for job in self._jobs.values() if job.job_id not in taken)

    def __len__(self) -> int:
        return len(self._jobs) - len(self._taken)

    def __getitem__(self, index: int) -> JobView:
        if index < 0:
            index += len(self)
        job = next(islice(iter(self), index, None), None) if index >= 0 else None
        if job is None:
            raise IndexError(index)
        return job

    def remove(self, job: JobView) -> None:
        if job.job_id not in self._jobs or job.job_id in self._taken:
            raise ValueError(f"{job.job_id} is not waiting")
        self._taken.add(job.job_id)
        self.gpus -= job.spec.num_gpus

    def pop(self, index: int = -1) -> JobView:
        job = self[index]
        self._taken.add(job.job_id)
        self.gpus -= job.spec.num_gpus
        return job


@dataclass(slots=True)
class QueueUsage:
    """Per-queue allocation (GPUs of running jobs) and pending jobs in FCFS order."""

    allocation: dict[str, int]
    pending: dict[str, WaitingJobs]

    @classmethod
    def of(cls, view: ClusterView, quotas: Mapping[str, int]) -> QueueUsage:
        """The definition, by a pass over the queue; policies read `PendingByQueue`'s
        kept copy (tests compare the two)."""
        allocation = dict.fromkeys(quotas, 0)
        pending: dict[str, dict[str, JobView]] = {q: {} for q in quotas}
        for job in view.running.values():
            allocation[queue_of(job.spec, quotas)] += job.gpus
        for job in view.queue.values():
            pending[queue_of(job.spec, quotas)][job.job_id] = job
        return cls(allocation, {q: WaitingJobs(jobs) for q, jobs in pending.items()})

    def by_share(self, quotas: Mapping[str, int]) -> list[str]:
        """Queues in increasing CurrentAllocation / Quota (SIA Figures 7–8), ties by name."""
        return sorted(quotas, key=lambda q: (self.allocation[q] / max(quotas[q], 1), q))


class PendingByQueue:
    """Each queue's waiting jobs in the engine's queue order, kept across rounds from the
    engine's queue and allocation logs, so a round's `usage` costs the jobs that came or
    went, not a pass over the whole queue with a `queue_of` per job (issue #22: thousands
    wait on Muri's traces, and the queue policies ran a round per arrival and completion).

    The queue is in submit order (`ClusterState.enqueue`): an arrival goes at its queue's
    end; a job that comes back (preempted) puts its queue back in (submit time, trace
    order)."""

    def __init__(self) -> None:
        self._view: ClusterView | None = None

    def _reset(self, view: ClusterView, quotas: Mapping[str, int]) -> None:
        self._view = view
        self._queued_mark = self._moved_mark = 0
        self._jobs: dict[str, dict[str, JobView]] = {q: {} for q in quotas}
        self._gpus = dict.fromkeys(quotas, 0)  # GPUs of each queue's waiting jobs
        self._queue_of: dict[str, str] = {}  # every job seen waiting -> its queue
        self._held: dict[str, tuple[str, int]] = {}  # running job -> (queue, GPUs)
        self._allocation = dict.fromkeys(quotas, 0)  # GPUs of each queue's running jobs

    def usage(self, view: ClusterView, quotas: Mapping[str, int]) -> QueueUsage:
        """`QueueUsage.of(view, quotas)`, from the kept queues."""
        if view is not self._view:
            self._reset(view, quotas)
        queued, self._queued_mark = view.queued_since(self._queued_mark)
        moved, self._moved_mark = view.allocations_since(self._moved_mark)
        waiting = view.queue.keys()
        jobs, queue_name = self._jobs, self._queue_of
        resort: set[str] = set()
        for job_id in queued:
            if job_id not in waiting:
                continue  # launched since, as the allocation log says
            job = view.queue[job_id]
            queue = queue_name.get(job_id)
            if queue is None:
                queue = queue_name[job_id] = queue_of(job.spec, quotas)
            elif job_id not in jobs[queue]:
                resort.add(queue)  # back in the queue: not necessarily at its end
            if job_id not in jobs[queue]:
                self._gpus[queue] += job.spec.num_gpus
            jobs[queue][job_id] = job
        running, held = view.running, self._held
        for job_id in moved:
            if job_id not in waiting:
                queue = queue_name.get(job_id)
                if queue is not None and (gone := jobs[queue].pop(job_id, None)) is not None:
                    self._gpus[queue] -= gone.spec.num_gpus
            old = held.pop(job_id, None)
            if old is not None:
                self._allocation[old[0]] -= old[1]
            job = running.get(job_id)
            if job is not None:
                queue = queue_name.get(job_id) or queue_of(job.spec, quotas)
                held[job_id] = (queue, job.gpus)
                self._allocation[queue] += job.gpus
        for queue in sorted(resort):
            order = sorted(jobs[queue].values(), key=lambda j: (j.spec.submit_time, j.trace_index))
            jobs[queue] = {job.job_id: job for job in order}
        return QueueUsage(dict(self._allocation),
                          {q: WaitingJobs(jobs[q], self._gpus[q]) for q in quotas})


def virtual_start_times(jobs: Iterable[JobSpec], quotas: Mapping[str, int]) -> dict[str, float]:
    """Start time of every job when each queue runs FCFS on its quota alone (no sharing).

    This is SIA's virtual clock (§5.1) and the appendix's cutoff start times: strict FCFS
    in submit order, a job starts once its predecessor has started and enough of the
    quota is free (a job wider than its quota starts once its queue is empty). It
    reproduces `fcfs-pools` exactly, which is what makes sia-vc's
    no-slowdown guarantee (Theorem 1) checkable.
    """
    by_queue: dict[str, list[JobSpec]] = {q: [] for q in quotas}
    for spec in jobs:
        by_queue[queue_of(spec, quotas)].append(spec)
    starts: dict[str, float] = {}
    for queue, specs in by_queue.items():
        quota = quotas[queue]
        running: list[tuple[float, int]] = []  # (end, gpus) heap
        used = 0
        last_start = -np.inf
        for spec in sorted(specs, key=lambda s: s.submit_time):
            t = max(spec.submit_time, last_start)
            while running and running[0][0] <= t:
                used -= heapq.heappop(running)[1]
            while used + spec.num_gpus > quota and running:
                end, gpus = heapq.heappop(running)
                used -= gpus
                t = max(t, end)
            while running and running[0][0] <= t:
                used -= heapq.heappop(running)[1]
            starts[spec.job_id] = t
            last_start = t
            used += spec.num_gpus
            heapq.heappush(running, (t + spec.duration, spec.num_gpus))
    return starts


class ResourceTimePlan:
    """SIA's logical resource-time plan (§5.1): GPUs reserved over time.

    Reserve(r, t, d) marks r GPUs busy for [t, t+d); MaxReservation(t, d) is the peak over
    [t, t+d), found at t or at a reservation's start inside (t, t+d).

    A round's plan begins at its `origin` (now): sia-vc reserves nothing before it and checks
    every job from it. For such checks `fits` reads, from one sweep over the reservations,
    the first moment after which r more GPUs would exceed the capacity (`_full_from`), and
    keeps it until a reservation starts before it (issue #16: hundreds of reservations and
    thousands of checks a round on Muri's traces, each a pass over the whole plan).
    """

    __slots__ = ("capacity", "origin", "held_at_origin", "_starts", "_ends", "_gpus",
                 "_sweep")

    def __init__(self, capacity: int, origin: float = 0.0) -> None:
        self.capacity = capacity
        self.origin = origin
        self.held_at_origin = 0
        self._starts: list[float] = []
        self._ends: list[float] = []
        self._gpus: list[int] = []
        self._sweep: tuple[np.ndarray, np.ndarray, dict[int, float]] | None = None

    def reserve(self, gpus: int, start: float, duration: float) -> None:
        if start < self.origin:
            raise ValueError(f"reservation at {start} before the plan's origin {self.origin}")
        end = start + duration
        self._starts.append(start)
        self._ends.append(end)
        self._gpus.append(gpus)
        if start < end:
            if start == self.origin:
                self.held_at_origin += gpus
            if self._sweep is not None and start < self._full_from(1):
                self._sweep = None  # the peak before the first full moment may have risen

    @property
    def full_at_origin(self) -> bool:
        """Whether no GPU is left at the origin, so no check from it can pass."""
        return self.held_at_origin >= self.capacity

    def max_reservation(self, start: float, duration: float) -> int:
        if not self._starts:
            return 0
        starts = np.asarray(self._starts)
        ends = np.asarray(self._ends)
        gpus = np.asarray(self._gpus)
        end = start + duration
        inside = starts[(starts > start) & (starts < end)]
        points = np.concatenate(([start], inside))[:, None]
        covering = (starts[None, :] <= points) & (ends[None, :] > points)
        return int((covering * gpus[None, :]).sum(axis=1).max())

    def fits(self, gpus: int, start: float, duration: float) -> bool:
        """MaxReservation(start, duration) + gpus <= capacity."""
        if start != self.origin:
            return self.max_reservation(start, duration) + gpus <= self.capacity
        full = self._full_from(gpus)
        return full != start and not full < start + duration

    def _full_from(self, gpus: int) -> float:
        """The first point (the origin or a reservation's start) where the plan holds more
        than `capacity - gpus` GPUs; infinity if there is none."""
        if self._sweep is None:
            starts, ends, widths = (np.asarray(self._starts), np.asarray(self._ends),
                                    np.asarray(self._gpus))
            by_start, by_end = np.argsort(starts), np.argsort(ends)
            starts, gpus_by_start = starts[by_start], widths[by_start]
            ends, gpus_by_end = ends[by_end], widths[by_end]
            points = np.unique(np.concatenate(([self.origin], starts)))
            began = np.concatenate(([0], np.cumsum(gpus_by_start)))
            ended = np.concatenate(([0], np.cumsum(gpus_by_end)))
            held = (began[np.searchsorted(starts, points, side="right")]
                    - ended[np.searchsorted(ends, points, side="right")])
            self._sweep = (points, np.maximum.accumulate(held), {})
        points, peak, known = self._sweep
        full = known.get(gpus)
        if full is None:
            first = int(np.searchsorted(peak, self.capacity - gpus, side="right"))
            full = known[gpus] = float(points[first]) if first < len(points) else float("inf")
        return full
