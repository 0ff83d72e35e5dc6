"""The read-only view a policy decides from.

Views wrap the engine's live state without copying it (a copy per scheduling round would
cost O(jobs) each time): properties only, no setters. Because the engine applies each
decision as soon as a policy yields it, the view a policy reads always reflects the
decisions it has already made in the same round.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterator, Mapping
from types import MappingProxyType

from simulation.decisions import Placement
from simulation.model import ClusterSpec, JobSpec, PoolKind
from simulation.state import ClusterState, JobState, JobStatus, ServerState
from simulation.throughput import ThroughputModel

_RUNNING = JobStatus.RUNNING  # an enum member lookup costs ~0.1 µs; this is read per job


class JobView:
    __slots__ = ("_job", "_clock")

    def __init__(self, job: JobState, clock: Clock) -> None:
        self._job = job
        self._clock = clock

    def __repr__(self) -> str:
        return f"JobView({self._job.job_id}, {self._job.status}, gpus={self._job.gpus})"

    @property
    def job_id(self) -> str:
        return self._job.spec.job_id

    @property
    def spec(self) -> JobSpec:
        return self._job.spec

    @property
    def trace_index(self) -> int:
        """Position in the trace: the final tie-breaker of every priority order."""
        return self._job.index

    @property
    def status(self) -> JobStatus:
        return self._job.status

    @property
    def placement(self) -> Placement:
        return self._job.placement

    @property
    def gpus(self) -> int:
        return self._job.gpus

    @property
    def workers(self) -> int:
        return self._job.workers

    @property
    def share(self) -> float:
        """The fraction of its GPUs' time the job gets now."""
        job = self._job
        return job.share if job.cycle is None else job.cycle.share_at(self._clock.now)

    @property
    def submit_time(self) -> float:
        return self._job.spec.submit_time

    @property
    def queued_since(self) -> float:
        return self._job.queued_since

    @property
    def first_start(self) -> float | None:
        return self._job.first_start

    @property
    def running_order(self) -> int:
        """Sorts running jobs as `ClusterView.running` iterates them (by their last start)."""
        return self._job.run_seq

    @property
    def preemptions(self) -> int:
        return self._job.preemptions

    @property
    def predicted_duration(self) -> float:
        """The running time at the requested size the scheduler *believes* (may be wrong)."""
        return self._job.predicted_duration

    # The measures below are read for every running job in every round of the preemptive
    # policies, so they read the record directly instead of via other properties.

    @property
    def progress_line(self) -> tuple[float, float, float] | None:
        """(left, since, rate) such that `remaining_work` at any later time t is, to the bit,
        max(0, left - rate * max(0, t - since)), until the job's next progress reset
        (`ClusterView.progress_resets_since`); None while a stop-free scale-out's old workers
        train at their own rate, or while its share follows a cycle (the work is then
        piecewise)."""
        job = self._job
        if (job.join_at > job.last_update and job.join_rate > 0) or job.cycle is not None:
            return None
        return job.remaining_work, max(job.last_update, job.paused_until), job.rate

    @property
    def remaining_work(self) -> float:
        """Seconds of work left, measured at the requested size on the reference GPU."""
        job = self._job
        left = job.remaining_work
        if job.status is _RUNNING:
            now = self._clock.now
            if now > job.last_update:
                left -= job.work_between(job.last_update, now)
        return left if left > 0.0 else 0.0

    @property
    def attained_service(self) -> float:
        """GPU-seconds received so far (Tiresias' 2D-LAS attained service)."""
        job = self._job
        if job.status is _RUNNING:
            elapsed = self._clock.now - job.last_update
            if elapsed > 0.0:
                return job.attained_gpu_seconds + job.gpus * elapsed
        return job.attained_gpu_seconds

    @property
    def executed_seconds(self) -> float:
        job = self._job
        if job.status is _RUNNING:
            elapsed = self._clock.now - job.last_update
            if elapsed > 0.0:
                return job.run_seconds + elapsed
        return job.run_seconds


class ServerView:
    __slots__ = ("_server",)

    def __init__(self, server: ServerState) -> None:
        self._server = server

    def __repr__(self) -> str:
        s = self._server
        return f"ServerView({s.id}, used={s.used}/{s.gpus}, on_loan={s.on_loan})"

    @property
    def id(self) -> str:
        return self._server.id

    @property
    def pool(self) -> str:
        return self._server.pool

    @property
    def kind(self) -> PoolKind:
        return self._server.kind

    @property
    def gpus(self) -> int:
        return self._server.gpus

    @property
    def gpu_type(self) -> str:
        return self._server.gpu_type

    @property
    def speed(self) -> float:
        return self._server.speed

    @property
    def on_loan(self) -> bool:
        return self._server.on_loan

    @property
    def available(self) -> bool:
        return self._server.available

    @property
    def used(self) -> int:
        return self._server.used

    @property
    def free(self) -> int:
        return self._server.free

    @property
    def jobs(self) -> Mapping[str, int]:
        """Job id -> GPUs that job holds on this server."""
        return MappingProxyType(self._server.jobs)


class Clock:
    """The engine's current time, shared by reference with every view."""

    __slots__ = ("now",)

    def __init__(self, now: float = 0.0) -> None:
        self.now = now


class _ViewMapping(Mapping[str, JobView]):
    """A live, read-only mapping of job id -> JobView over one of the engine's job dicts."""

    __slots__ = ("_jobs", "_views")

    def __init__(self, jobs: dict[str, JobState], views: dict[str, JobView]) -> None:
        self._jobs = jobs
        self._views = views

    def __getitem__(self, job_id: str) -> JobView:
        if job_id not in self._jobs:
            raise KeyError(job_id)
        return self._views[job_id]

    def __contains__(self, job_id: object) -> bool:  # Mapping's goes through a KeyError
        return job_id in self._jobs

    def get(self, job_id: str, default: JobView | None = None) -> JobView | None:  # type: ignore[override]
        """Mapping's `get`, without its two Python-level calls: policies read this per job."""
        return self._views[job_id] if job_id in self._jobs else default

    def __iter__(self) -> Iterator[str]:
        return iter(self._jobs)

    def __len__(self) -> int:
        return len(self._jobs)

    def keys(self):  # type: ignore[override]
        """The engine dict's own read-only keys view: set operations on it run in C."""
        return self._jobs.keys()

    def values(self):  # type: ignore[override]
        views = self._views
        return [views[job_id] for job_id in self._jobs]


class _QueueMapping(_ViewMapping):
    """The queue's mapping: the engine's dict is put in queue order before the mapping or its
    `values()` are iterated (`ClusterState.settle_queue`). Lookups, length and `keys()` need
    no order: `keys()` is for membership and set operations (every caller's use), so a round
    that only asks who waits does not pay for the order; iterate the mapping for the order."""

    __slots__ = ("_settle",)

    def __init__(self, state: ClusterState, views: dict[str, JobView]) -> None:
        super().__init__(state.queue, views)
        self._settle = state.settle_queue

    def __iter__(self) -> Iterator[str]:
        self._settle()
        return iter(self._jobs)

    def values(self):  # type: ignore[override]
        self._settle()
        views = self._views
        return [views[job_id] for job_id in self._jobs]


class ClusterView:
    """Everything a policy may read: time, servers, queued and running jobs."""

    def __init__(
        self, state: ClusterState, clock: Clock, throughput: ThroughputModel | None = None
    ) -> None:
        self._state = state
        self._clock = clock
        self._job_views: dict[str, JobView] = {}
        self._server_views = {sid: ServerView(s) for sid, s in state.servers.items()}
        self.queue: Mapping[str, JobView] = _QueueMapping(state, self._job_views)
        self.running: Mapping[str, JobView] = _ViewMapping(state.running, self._job_views)
        self.servers: Mapping[str, ServerView] = MappingProxyType(self._server_views)
        # The run's scaling curves, for policies that weigh a GPU's marginal gain (EDL, Gandiva).
        self.throughput = throughput or ThroughputModel()
        self._upcoming: tuple[list[float], list[JobSpec]] | None = None

    def register(self, job: JobState) -> JobView:
        view = JobView(job, self._clock)
        self._job_views[job.job_id] = view
        return view

    @property
    def now(self) -> float:
        return self._clock.now

    @property
    def spec(self) -> ClusterSpec:
        return self._state.spec

    def job(self, job_id: str) -> JobView:
        return self._job_views[job_id]

    def pool_servers(self, pool: str) -> tuple[str, ...]:
        return self._state.pool_servers[pool]

    def servers_with_free(self, pool: str, free: int) -> Iterator[str]:
        """Available servers of `pool` with exactly `free` free GPUs, in a stable order."""
        buckets = self._state.free_index[pool]
        return iter(buckets[free]) if 0 <= free < len(buckets) else iter(())

    def free_gpus(self, pool: str) -> int:
        return self._state.pool_free[pool]

    def total_free_gpus(self) -> int:
        """`free_gpus` summed over every pool (a priority policy reads it every round)."""
        return sum(self._state.pool_free.values())

    def queued_since(self, mark: int) -> tuple[list[str], int]:
        """Ids of jobs put in the queue (arrived or requeued) since `mark`, oldest first,
        and the mark to pass next time (start from 0)."""
        log = self._state.queue_log
        return log[mark:], len(log)

    def queued_gpus(self) -> int:
        """GPUs the queued jobs ask for, all together."""
        return self._state.queued_gpus

    def smallest_queued_gpus(self) -> int:
        """The fewest GPUs any queued job asks for (0 with an empty queue)."""
        return min(self._state.queued_sizes, default=0)

    def queue_in_submit_order(self) -> bool:
        """Whether the queue holds its jobs exactly in (submit time, trace index) order. It may
        not while a requeued job that tied the last one's submit time waits behind it
        (`ClusterState.enqueue`), so a policy breaking ties by queue order checks here before
        breaking them by trace index instead."""
        return self._state.queue_in_submit_order

    def available_gpus(self) -> int:
        """GPUs that can host training now (inference servers count only while on loan)."""
        return self._state.available_gpus

    def allocations_since(self, mark: int) -> tuple[list[str], int]:
        """Ids of jobs whose GPUs changed (launched, stopped, resized, moved, finished)
        since `mark`, oldest first, and the mark to pass next time (start from 0)."""
        log = self._state.allocation_log
        return log[mark:], len(log)

    def progress_resets_since(self, mark: int) -> tuple[list[str], int]:
        """Ids of running jobs whose `JobView.progress_line` changed (launched, resized,
        moved, share changed) since `mark`, oldest first, and the mark to pass next."""
        log = self._state.progress_log
        return log[mark:], len(log)

    @property
    def shares_gpus(self) -> bool:
        return self._state.allow_oversubscription

    def upcoming_jobs(self, until: float = float("inf")) -> list[JobSpec]:
        """Jobs of the workload submitted in (now, until], in submit order.

        Only oracles may read the future: perfect-knowledge baselines and predictors (SIA's
        virtual clock, the perfect-predictor ablation). A realistic policy must not.
        """
        if self._upcoming is None or len(self._upcoming[1]) != len(self._state.jobs):
            ordered = sorted(self._state.jobs.values(),
                             key=lambda j: (j.spec.submit_time, j.index))
            self._upcoming = ([j.spec.submit_time for j in ordered], [j.spec for j in ordered])
        times, specs = self._upcoming
        return specs[bisect_right(times, self.now):bisect_right(times, until)]
