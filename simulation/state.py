"""Mutable cluster state owned by the engine: servers, jobs, and the indexes over them.

`ClusterState` keeps placement bookkeeping and its invariants (no GPU over-committed unless
the policy shares GPUs, worker counts within range, GPU-type constraints). It knows nothing
of time; the engine (`engine.py`) settles progress around every change. The live decision
API builds one from a snapshot and applies a policy's decisions to it the same way.
"""

from __future__ import annotations

import math
from bisect import bisect_left
from collections.abc import Sequence
from enum import StrEnum

from simulation.decisions import Placement
from simulation.errors import InvalidDecision
from simulation.model import ClusterSpec, JobSpec, PoolKind
from simulation.share_cycle import ShareCycle

# Looking an enum member up (`PoolKind.INFERENCE`) costs ~0.1 µs, and these are read for every
# placement check, free-GPU index move and new job.
_INFERENCE = PoolKind.INFERENCE


class PlacementRefused(InvalidDecision):
    """`ClusterState.occupy_many` refused `pairs[index]`, the first refusal in order."""

    def __init__(self, message: str, index: int) -> None:
        super().__init__(message)
        self.index = index


class JobStatus(StrEnum):
    PENDING = "pending"  # not yet submitted
    QUEUED = "queued"
    RUNNING = "running"
    DONE = "done"


_PENDING = JobStatus.PENDING  # see _INFERENCE
# Work left below this fraction of a job's duration (at least 1 s) is float drift: done.
WORK_TOLERANCE = 1e-6
# ... and below this one, when a share cycle suspends the job, done at its quantum's end:
# sums over quanta round at ~1e-16 of the work; real work this small (a 1e5 s job's last
# 0.1 ms) is a chance of ~1e-6 per job.
ROUNDING = 1e-9


class ServerState:
    """One server. Inference servers serve training only while `on_loan`."""

    __slots__ = ("id", "pool", "kind", "gpus", "gpu_type", "speed", "on_loan", "used", "jobs")

    def __init__(
        self, id: str, pool: str, kind: PoolKind, gpus: int, gpu_type: str, speed: float
    ) -> None:
        self.id = id
        self.pool = pool
        self.kind = kind
        self.gpus = gpus
        self.gpu_type = gpu_type
        self.speed = speed
        self.on_loan = False
        self.used = 0  # GPUs held by training jobs; may exceed `gpus` when shared
        self.jobs: dict[str, int] = {}  # job id -> GPUs it holds here

    @property
    def available(self) -> bool:
        return self.kind != _INFERENCE or self.on_loan

    @property
    def free(self) -> int:
        return max(0, self.gpus - self.used) if self.available else 0


class JobState:
    """A job's runtime record. `remaining_work` is in seconds at the requested size."""

    __slots__ = (
        "spec", "status", "placement", "gpus", "share", "rate", "remaining_work",
        "last_update", "paused_until", "attained_gpu_seconds", "run_seconds",
        "first_start", "end_time", "queued_since", "queued_seconds", "preemptions",
        "scaling_ops", "migrations", "overhead_gpu_seconds", "version", "early_feedback_time",
        "predicted_duration", "index", "join_at", "join_rate", "join_gpus", "cycle",
        "run_seq", "job_id",
    )

    def __init__(self, spec: JobSpec, index: int = 0) -> None:
        self.spec = spec
        self.job_id = spec.job_id  # read for every decision and event: a slot, not a property
        self.index = index  # position in the trace: the tie-breaker for equal submit times
        self.status = _PENDING
        self.placement: Placement = ()
        self.gpus = 0
        self.share = 1.0
        self.rate = 0.0
        self.remaining_work = spec.duration
        self.last_update = spec.submit_time
        self.paused_until = 0.0
        self.attained_gpu_seconds = 0.0
        self.run_seconds = 0.0
        self.first_start: float | None = None
        self.end_time: float | None = None
        self.queued_since = spec.submit_time
        self.queued_seconds = 0.0
        self.preemptions = 0
        self.scaling_ops = 0
        self.migrations = 0
        self.overhead_gpu_seconds = 0.0
        self.version = 0  # bumped whenever the completion time changes
        self.early_feedback_time: float | None = None
        self.predicted_duration = spec.duration
        # Stop-free scale-out (EDL §4.2): until `join_at` only the `join_gpus` old workers
        # train, at `join_rate`; `rate` applies once `paused_until` has passed.
        self.join_at = 0.0
        self.join_rate = 0.0
        self.join_gpus = 0
        # A share that steps at known times (time-slicing in quanta): `share` is then 1 and
        # the cycle scales `rate` over time.
        self.cycle: ShareCycle | None = None
        self.run_seq = 0  # see `ClusterState.start_running`

    @property
    def workers(self) -> int:
        return self.gpus // self.spec.gpus_per_worker

    def work_between(self, t0: float, t1: float) -> float:
        """Work done in [t0, t1] for t0 >= last_update: the old workers' rate until
        `join_at`, nothing while paused, then `rate`."""
        work = 0.0
        if self.join_at > t0 and self.join_rate > 0:
            work += self.join_rate * (min(t1, self.join_at) - t0)
        start = max(t0, self.paused_until)
        if t1 > start and self.rate > 0:
            cycle = self.cycle
            work += self.rate * (t1 - start if cycle is None else cycle.integral(start, t1))
        return work

    def time_to_work(self, t0: float, work: float) -> float:
        """The time at which `work` more work-seconds are done, counting from t0."""
        if self.join_at > t0 and self.join_rate > 0:
            before_join = self.join_rate * (self.join_at - t0)
            if work <= before_join:
                return t0 + work / self.join_rate
            work -= before_join
        if self.rate <= 0:
            return math.inf
        start = max(t0, self.paused_until)
        if self.cycle is not None:
            slack = ROUNDING * max(1.0, self.spec.duration) / self.rate
            return self.cycle.time_to(start, work / self.rate, slack)
        return start + work / self.rate


    def completion_bound(self, t0: float, work: float) -> float:
        """A time no later than `time_to_work(t0, work)`, inf only when that is inf: cheap
        for a job whose share follows a cycle (`ShareCycle.reach_bound`), exact otherwise."""
        if self.cycle is None or (self.join_at > t0 and self.join_rate > 0):
            return self.time_to_work(t0, work)
        if self.rate <= 0:
            return math.inf
        slack = ROUNDING * max(1.0, self.spec.duration) / self.rate
        return self.cycle.reach_bound(max(t0, self.paused_until), work / self.rate, slack)


class ClusterState:
    """Servers and jobs, with a free-GPU index per pool for best-fit placement.

    `free_index[pool][f]` holds the available servers of `pool` with exactly `f` free GPUs,
    in a dict used as an insertion-ordered set so iteration order is deterministic.
    """

    def __init__(self, spec: ClusterSpec, *, allow_oversubscription: bool = False) -> None:
        self.spec = spec
        self.allow_oversubscription = allow_oversubscription
        self.servers: dict[str, ServerState] = {}
        self.pool_servers: dict[str, tuple[str, ...]] = {}
        self.free_index: dict[str, list[dict[str, None]]] = {}
        self.pool_busy: dict[str, int] = {}  # GPUs in use per pool, capped at capacity
        self.pool_free: dict[str, int] = {}  # free GPUs of available servers per pool
        self.available_gpus = 0  # GPUs of servers that may host training now
        # Ids of jobs whose GPUs changed (placed, released), in order: lets a policy keep an
        # index over running jobs up to date without rescanning them every round.
        self.allocation_log: list[str] = []
        # Ids of running jobs whose progress record (remaining work, rate, pause) the engine
        # reset, in order: with `allocation_log`, what a policy caching remaining work needs.
        self.progress_log: list[str] = []
        self.jobs: dict[str, JobState] = {}
        self.queue: dict[str, JobState] = {}
        self.queued_gpus = 0  # GPUs the queued jobs ask for
        self.queued_sizes: dict[int, int] = {}  # GPUs asked -> queued jobs asking that many
        self.queue_log: list[str] = []  # ids of jobs as they entered the queue, in order
        self._queue_holes = 0  # jobs deleted from the queue dict since it was last rebuilt
        # (submit time, trace index) of the queued jobs in queue order while that order is
        # sorted by the pair, and their ids in the same order; None once a tie went in out of
        # trace order (see `enqueue`).
        self._queue_keys: list[tuple[float, int]] | None = []
        self._queue_ids: list[str] | None = []
        self._queue_stale = False  # the dict's order lags `_queue_ids` (`settle_queue`)
        self.running: dict[str, JobState] = {}
        self._started = 0  # jobs put in `running`, counted
        for pool in spec.pools:
            speed = spec.speed_of(pool)
            ids = pool.server_ids()
            self.pool_servers[pool.name] = tuple(ids)
            self.free_index[pool.name] = [{} for _ in range(pool.gpus_per_server + 1)]
            self.pool_busy[pool.name] = 0
            self.pool_free[pool.name] = 0
            for sid in ids:
                server = ServerState(
                    sid, pool.name, pool.kind, pool.gpus_per_server, pool.gpu_type, speed
                )
                self.servers[sid] = server
                self._index(server)
                if server.available:
                    self.available_gpus += server.gpus

    # -- jobs -------------------------------------------------------------------------------

    def add_job(self, spec: JobSpec) -> JobState:
        if spec.job_id in self.jobs:
            raise InvalidDecision(f"job {spec.job_id} added twice")
        job = JobState(spec, len(self.jobs))
        self.jobs[spec.job_id] = job
        return job

    def enqueue(self, job: JobState, now: float) -> None:
        """Queue `job`, keeping the queue in submit order.

        Arrivals append (a job submitted at the same time as the last one goes after it); a
        job submitted earlier than the last one (a preempted job) is put where (submit time,
        trace order) puts it: by bisection while the queue is sorted by that pair, else by
        sorting the whole queue, which leaves it sorted.

        While sorted, the order is kept in `_queue_ids` and a job put in the middle goes at
        the dict's end: moving the jobs behind it, one preemption at a time, cost a fifth of
        Muri-L's and Themis' runs on long queues (issue #22). The dict takes the order again
        in `settle_queue`, once, before anything reads it in order (the view does); its
        length and members are right all along.
        """
        job.status = JobStatus.QUEUED
        job.queued_since = now
        queue, keys, ids = self.queue, self._queue_keys, self._queue_ids
        key = (job.spec.submit_time, job.index)
        self.queued_gpus += job.spec.num_gpus
        sizes = self.queued_sizes
        sizes[job.spec.num_gpus] = sizes.get(job.spec.num_gpus, 0) + 1
        self.queue_log.append(job.job_id)
        if keys is not None and ids is not None:
            if not keys or job.spec.submit_time >= keys[-1][0]:
                if keys and key < keys[-1]:  # a tie out of trace order: no longer sorted
                    self.settle_queue()
                    self._queue_keys = self._queue_ids = None
                else:
                    keys.append(key)
                    ids.append(job.job_id)
                queue[job.job_id] = job
                return
            at = bisect_left(keys, key)
            keys.insert(at, key)
            ids.insert(at, job.job_id)
            queue[job.job_id] = job
            self._queue_stale = True
            return
        last = next(reversed(queue.values()), None) if queue else None
        queue[job.job_id] = job
        if last is None or job.spec.submit_time >= last.spec.submit_time:
            return
        items = sorted(queue.items(), key=lambda item: (item[1].spec.submit_time,
                                                        item[1].index))
        self._queue_keys = [(j.spec.submit_time, j.index) for _, j in items]
        self._queue_ids = [job_id for job_id, _ in items]
        queue.clear()
        queue.update(items)
        self._queue_holes = 0

    def settle_queue(self) -> None:
        """Put the queue dict in queue order (`enqueue`); every in-order read calls this."""
        if not self._queue_stale:
            return
        ids = self._queue_ids
        assert ids is not None
        queue = self.queue
        queue.clear()
        queue.update(zip(ids, map(self.jobs.__getitem__, ids), strict=True))
        self._queue_holes = 0
        self._queue_stale = False

    @property
    def queue_in_submit_order(self) -> bool:
        """Whether the queue's order is exactly (submit time, trace index); see `enqueue`."""
        return self._queue_keys is not None

    def dequeue(self, job: JobState) -> None:
        """Take `job` out of the queue. A dict keeps a hole where a key was deleted until it
        grows, and iteration steps over holes one by one: with launches at the front of a
        long queue, finding its head (FIFO) would cost the holes before it. So the dict is
        rebuilt in place, in order, once the holes outnumber its jobs (amortised O(1))."""
        keys, ids = self._queue_keys, self._queue_ids
        if keys is not None and ids is not None:
            at = bisect_left(keys, (job.spec.submit_time, job.index))
            del keys[at], ids[at]
        queue = self.queue
        del queue[job.job_id]
        self._queue_holes += 1
        if self._queue_holes > len(queue) + 64:
            if self._queue_stale:
                self.settle_queue()
            else:
                items = list(queue.items())
                queue.clear()
                queue.update(items)
                self._queue_holes = 0
        self.queued_gpus -= job.spec.num_gpus
        sizes = self.queued_sizes
        if sizes[job.spec.num_gpus] == 1:
            del sizes[job.spec.num_gpus]
        else:
            sizes[job.spec.num_gpus] -= 1

    def start_running(self, job: JobState) -> None:
        """Put `job` at the end of `running`. Its `run_seq` then sorts the running jobs as
        `running` iterates them, so a policy can order a few of them without a scan."""
        self._started += 1
        job.run_seq = self._started
        self.running[job.spec.job_id] = job

    def job(self, job_id: str, *, status: JobStatus | None = None) -> JobState:
        job = self.jobs.get(job_id)
        if job is None:
            raise InvalidDecision(f"unknown job {job_id!r}")
        if status is not None and job.status != status:
            raise InvalidDecision(f"job {job_id} is {job.status}, not {status}")
        return job

    # -- placement --------------------------------------------------------------------------

    def check_placement(self, job: JobState, placement: Placement) -> None:
        """Raise `InvalidDecision` unless `job` may hold exactly `placement` right now."""
        spec = job.spec
        per_server: dict[str, int] = {}
        total, flexible = self._check_slots(spec, placement, per_server)
        if not self.allow_oversubscription:
            for server_id, gpus in per_server.items():
                server = self.servers[server_id]
                in_use = server.used - server.jobs.get(spec.job_id, 0)
                if in_use + gpus > server.gpus:
                    raise InvalidDecision(
                        f"job {spec.job_id}: {gpus} GPUs on {server_id} would over-commit it "
                        f"({in_use} of {server.gpus} in use)"
                    )
        self._check_size(spec, total, flexible)

    def _check_slots(
        self, spec: JobSpec, placement: Placement, per_server: dict[str, int]
    ) -> tuple[int, int]:
        """The checks of `check_placement` that come before the over-commit one (none reads
        GPUs in use): adds each slot's GPUs to `per_server`, returns all and flexible GPUs."""
        if not placement:
            raise InvalidDecision(f"job {spec.job_id}: empty placement")
        servers = self.servers
        per_worker = spec.gpus_per_worker
        gpu_type = spec.gpu_type
        total = 0
        flexible = 0
        seen: set[tuple[str, bool]] = set()
        for slot in placement:
            server_id, gpus = slot.server, slot.gpus
            server = servers.get(server_id)
            if server is None:
                raise InvalidDecision(f"job {spec.job_id}: unknown server {server_id!r}")
            key = (server_id, slot.flexible)
            if key in seen:
                raise InvalidDecision(f"job {spec.job_id}: server {server_id} listed twice")
            seen.add(key)
            if not server.available:
                raise InvalidDecision(
                    f"job {spec.job_id}: server {server_id} is not available to training"
                )
            if gpus <= 0 or gpus % per_worker:
                raise InvalidDecision(
                    f"job {spec.job_id}: {gpus} GPUs on {server_id} is not a whole "
                    f"number of {per_worker}-GPU workers"
                )
            if gpu_type is not None and server.gpu_type != gpu_type:
                raise InvalidDecision(
                    f"job {spec.job_id} needs {gpu_type}, server {server_id} has "
                    f"{server.gpu_type}"
                )
            per_server[server_id] = per_server.get(server_id, 0) + gpus
            total += gpus
            if slot.flexible:
                flexible += gpus
        return total, flexible

    @staticmethod
    def _check_size(spec: JobSpec, total: int, flexible: int) -> None:
        """The checks of `check_placement` made after the over-commit one."""
        workers = total // spec.gpus_per_worker
        if not spec.min_workers <= workers <= spec.max_workers:
            raise InvalidDecision(
                f"job {spec.job_id}: {workers} workers outside "
                f"[{spec.min_workers}, {spec.max_workers}]"
            )
        if total - flexible < spec.min_gpus:
            raise InvalidDecision(
                f"job {spec.job_id}: only {total - flexible} base GPUs, minimum {spec.min_gpus}"
            )

    def occupy(self, job: JobState, placement: Placement) -> None:
        servers, job_id, total = self.servers, job.spec.job_id, 0
        for slot in placement:
            server = servers[slot.server]
            gpus = slot.gpus
            self._change_used(server, gpus)
            held = server.jobs
            held[job_id] = held.get(job_id, 0) + gpus
            total += gpus
        job.placement = placement
        job.gpus = total
        self.allocation_log.append(job_id)

    def occupy_many(self, pairs: Sequence[tuple[JobState, Placement]]) -> None:
        """`check_placement` then `occupy` for each pair in order, with the free-GPU index
        moved once per server instead of once per slot (a snapshot places ~2,000 jobs).

        The state left is the sequential one, index order included: each change moves a server
        to the end of its new bucket, so a touched server ends in its final bucket, after the
        untouched ones, in order of its last change. Occupying only adds GPUs, so the
        sequential path refuses nothing iff every placement passes the checks that ignore GPUs
        in use and no server is over-committed by the final totals; otherwise the pairs are
        placed one by one and the first refusal raises `PlacementRefused` with its index.
        """
        if not self._fit_together(pairs):
            self._occupy_one_by_one(pairs)
            return
        servers = self.servers
        busy = self.pool_busy
        touched: dict[str, ServerState] = {}  # in order of last change
        for job, placement in pairs:
            job_id = job.spec.job_id
            total = 0
            for slot in placement:
                server = servers[slot.server]
                if touched.pop(slot.server, None) is None:
                    self._unindex(server)
                    busy[server.pool] -= min(server.used, server.gpus)
                touched[slot.server] = server
                server.used += slot.gpus
                server.jobs[job_id] = server.jobs.get(job_id, 0) + slot.gpus
                total += slot.gpus
            job.placement = placement
            job.gpus = total
            self.allocation_log.append(job_id)
        for server in touched.values():
            self._index(server)
            busy[server.pool] += min(server.used, server.gpus)

    def _fit_together(self, pairs: Sequence[tuple[JobState, Placement]]) -> bool:
        """Whether placing `pairs` one by one refuses none of them (see `occupy_many`)."""
        added: dict[str, int] = {}
        check_slots, check_size = self._check_slots, self._check_size
        try:
            for job, placement in pairs:
                spec = job.spec
                total, flexible = check_slots(spec, placement, added)
                check_size(spec, total, flexible)
        except InvalidDecision:
            return False
        if self.allow_oversubscription:
            return True
        servers = self.servers
        for server_id, gpus in added.items():
            server = servers[server_id]
            if server.used + gpus > server.gpus:
                return False
        return True

    def _occupy_one_by_one(self, pairs: Sequence[tuple[JobState, Placement]]) -> None:
        for index, (job, placement) in enumerate(pairs):
            try:
                self.check_placement(job, placement)
            except InvalidDecision as exc:
                raise PlacementRefused(str(exc), index) from None
            self.occupy(job, placement)

    def release(self, job: JobState) -> None:
        servers, job_id = self.servers, job.spec.job_id
        for slot in job.placement:
            server = servers[slot.server]
            server.jobs.pop(job_id, None)
            self._change_used(server, -slot.gpus)
        job.placement = ()
        job.gpus = 0
        self.allocation_log.append(job_id)

    def set_on_loan(self, server_id: str, on_loan: bool) -> None:
        server = self.servers[server_id]
        if server.kind != _INFERENCE:
            raise InvalidDecision(f"server {server_id} is not an inference server")
        if server.on_loan == on_loan:
            raise InvalidDecision(f"server {server_id} on_loan is already {on_loan}")
        if not on_loan and server.jobs:
            raise InvalidDecision(
                f"server {server_id} still hosts {sorted(server.jobs)} and cannot be returned"
            )
        self._unindex(server)
        server.on_loan = on_loan
        self.available_gpus += server.gpus if on_loan else -server.gpus
        self._index(server)

    def _change_used(self, server: ServerState, delta: int) -> None:
        """`_unindex`, the change, `_index` (the server moves to the end of its new bucket,
        even an unchanged one), inlined: this runs for every slot of every decision."""
        gpus, used, pool = server.gpus, server.used, server.pool
        after = used + delta
        server.used = after
        if server.kind != _INFERENCE or server.on_loan:
            free = gpus - used if used < gpus else 0
            free_after = gpus - after if after < gpus else 0
            buckets = self.free_index[pool]
            del buckets[free][server.id]
            buckets[free_after][server.id] = None
            self.pool_free[pool] += free_after - free
        self.pool_busy[pool] += (after if after < gpus else gpus) - (used if used < gpus else gpus)

    def _unindex(self, server: ServerState) -> None:
        if server.available:
            free = server.free
            del self.free_index[server.pool][free][server.id]
            self.pool_free[server.pool] -= free

    def _index(self, server: ServerState) -> None:
        if server.available:
            free = server.free
            self.free_index[server.pool][free][server.id] = None
            self.pool_free[server.pool] += free
