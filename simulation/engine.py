"""The discrete-event engine: it owns time, events, state and invariants.

Events sit in a heap keyed `(time, priority, sequence)` so ties resolve the same way on every
machine: completions first (they free GPUs), then the inference side's loan/reclaim, then
arrivals, then scheduling ticks. Arrivals are read from the sorted trace rather than pushed
into the heap. After the events of one instant the policy runs once (if anything it cares
about happened) and every decision it yields is checked and applied at once.

Progress is settled lazily: a running job's `remaining_work` is brought up to date only when
its allocation changes, and its completion event carries a version so a stale one is
skipped. A job whose share follows a cycle is timed lazily too: a time-slicing policy re-tells
a crowded server's jobs their cycles every few quanta, and most are re-told long before they
could finish, so its completion goes into the heap as an `UNTIMED` entry at a cheap lower
bound and is timed exactly only if that entry comes up first (same time, same tie order).
Utilisation is integrated between events, never by scanning servers.
"""

from __future__ import annotations

import heapq
import math
import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from simulation.composition import stage_label
from simulation.decisions import (
    Decision,
    Launch,
    Migrate,
    Placement,
    Preempt,
    ReclaimPlan,
    Resize,
    SetShare,
)
from simulation.engine_config import (
    SCALING_MODES,
    EngineConfig,
    default_engine_config,
    throughput_model,
)
from simulation.errors import InputError, InvalidDecision, InvariantViolation
from simulation.metrics import RunRecord, RunResult, build_result
from simulation.model import ClusterSpec, InferenceLoad, PoolKind, Workload
from simulation.overhead import pause, resize_overhead
from simulation.policies.base import Policy
from simulation.reclaim import ReclaimStrategy, get_reclaim_strategy
from simulation.state import WORK_TOLERANCE, ClusterState, JobState, JobStatus
from simulation.throughput import (
    ThroughputModel,
    imperfect_scaling,
    placement_speed,
)
from simulation.view import Clock, ClusterView

COMPLETION, LOAN, TICK = 0, 1, 3
# A completion not yet timed: pushed at a lower bound of its time, timed exactly (and pushed
# as a COMPLETION with the same sequence number) when it reaches the top of the heap.
UNTIMED = -1
_MIN_WAKEUP = 1e-3  # a policy wakeup is never at the current instant (that would spin)
# Rounds in a row that decide nothing, with every job arrived, before the engine asks
# whether any job can still progress (`_check_stalled`).
STALL_ROUNDS = 10_000
_PROGRESS_CHECK_LOOPS = 1024  # how often the loop looks at the wall clock
_PROGRESS_QUIET_SECONDS = 2.0  # longest wall time between two progress calls
# Enum members read once per decision: a class attribute lookup costs ~0.1 µs each.
_QUEUED, _RUNNING = JobStatus.QUEUED, JobStatus.RUNNING


@dataclass(slots=True)
class Counters:
    reclaims: int = 0
    servers_reclaimed: int = 0
    gpus_reclaimed: int = 0
    servers_lent: int = 0
    reclaim_preemptions: int = 0
    collateral_gpus: int = 0
    servers_freed_by_scale_in: int = 0
    scale_ins_on_reclaim: int = 0
    decisions: int = 0
    events: int = 0
    schedule_rounds: int = 0


@dataclass(slots=True)
class Sampler:
    """Integrates busy GPUs per pool between events and emits time-averaged rows."""

    interval: float
    pools: tuple[str, ...]
    start: float = 0.0  # the first submission: the measured window starts here
    last_time: float = 0.0
    next_sample: float = 0.0
    busy: dict[str, float] = field(default_factory=dict)  # GPU-seconds in current row
    total_busy: dict[str, float] = field(default_factory=dict)  # GPU-seconds in the run
    inference_busy: float = 0.0
    total_inference_busy: float = 0.0
    on_loan: float = 0.0
    total_queued: float = 0.0  # job-seconds spent queued in the run
    rows: list[dict[str, float]] = field(default_factory=list)

    def start_at(self, t: float) -> None:
        self.start = self.last_time = t
        self.next_sample = t + self.interval

    @property
    def window(self) -> float:
        """Seconds integrated so far: from the first submission to the last event."""
        return self.last_time - self.start


class Simulation:
    """One run of `policy` over `workload` on `cluster`; call `run()` once."""

    def __init__(
        self,
        cluster: ClusterSpec,
        workload: Workload,
        policy: Policy,
        *,
        config: EngineConfig | None = None,
        inference_load: InferenceLoad | None = None,
        throughput: ThroughputModel | None = None,
        progress: Callable[[float], None] | None = None,
    ) -> None:
        self.cluster = cluster
        self.workload = workload
        self.policy = policy
        self.config = config or default_engine_config(policy)
        self.inference_load = inference_load
        self.throughput = throughput or throughput_model(self.config.scaling)
        self.progress = progress
        self._progress_at = time.perf_counter()
        self.state = ClusterState(cluster, allow_oversubscription=policy.shares_gpus)
        self.clock = Clock(0.0)
        self.view = ClusterView(self.state, self.clock, self.throughput)
        self.counters = Counters()
        self.reclaim_strategy: ReclaimStrategy = get_reclaim_strategy(self.config.reclaim_strategy)
        self._reclaim_rng = random.Random(f"reclaim:{self.config.seed}")
        self._heap: list[tuple[float, int, int, str, int]] = []
        self._seq = 0
        self._tick_pending = False
        self._tick_version = 0
        self._wakeup_at: float | None = None
        self._finished = 0
        self._next_percent = 1
        self._interval, self._event_driven = self._cadence(policy)
        self._inference_pool = next(
            (p for p in cluster.pools if p.kind == PoolKind.INFERENCE), None
        )
        self._inference_busy_servers = 0
        self._blocking_sums: list[float] = [0.0, 0.0, 0]  # see _blocking_index
        self._rates: dict[str, tuple[Placement, float]] = {}  # see _placement_rate
        self.loan_log: list[dict[str, object]] = []
        if self.config.scaling_mode not in SCALING_MODES:
            raise InputError(
                f"scaling_mode {self.config.scaling_mode!r} is not one of "
                f"{', '.join(SCALING_MODES)}", field="scaling_mode"
            )
        self._check_fits()
        last_submit = workload.jobs[-1].submit_time if workload.jobs else 0.0
        sample = self.config.sample_interval or max(60.0, last_submit / 2000.0)
        self.sampler = Sampler(sample, tuple(p.name for p in cluster.pools))
        self.sampler.start_at(0.0)
        for pool in self.sampler.pools:
            self.sampler.busy[pool] = 0.0
            self.sampler.total_busy[pool] = 0.0

    # -- setup ------------------------------------------------------------------------------

    def _check_fits(self) -> None:
        """Refuse a job no allocation could ever hold, instead of letting it wait forever."""
        capacity: dict[str | None, int] = {None: 0}
        for pool in self.cluster.pools:
            capacity[None] += pool.gpus
            capacity[pool.gpu_type] = capacity.get(pool.gpu_type, 0) + pool.gpus
        for spec in self.workload.jobs:
            have = capacity.get(spec.gpu_type, 0)
            if spec.min_gpus > have:
                kind = f"{spec.gpu_type} " if spec.gpu_type else ""
                raise InputError(
                    f"job {spec.job_id} needs at least {spec.min_gpus} GPUs but the cluster "
                    f"has {have} {kind}GPUs",
                    source=self.workload.source,
                    field="num_gpus",
                )

    def _cadence(self, policy: Policy) -> tuple[float | None, bool]:
        """(tick interval or None, whether events run the policy) for `config.cadence`."""
        cadence = self.config.cadence
        if cadence == "event":
            return policy.interval, True
        try:
            every = float(cadence)
        except ValueError:
            every = math.nan
        if not 0 < every < math.inf:
            raise InputError(f"cadence must be 'event' or a positive number of seconds, got "
                             f"{cadence!r}", field="cadence")
        return every, False

    def _predictions(self) -> None:
        share = self.config.prediction_error_share
        if share <= 0:
            return
        rng = random.Random(f"prediction:{self.config.seed}")
        spread = self.config.prediction_error_range
        for job in self.state.jobs.values():
            if rng.random() < share:
                job.predicted_duration = job.spec.duration * (1 + rng.uniform(-spread, spread))

    # -- main loop --------------------------------------------------------------------------

    def run(self) -> RunResult:
        """Process events until every job has finished (or `max_time`); the run, and the
        window its utilisation is measured over, ends at the last completion."""
        started = time.perf_counter()
        jobs = self.workload.jobs
        for spec in jobs:
            job = self.state.add_job(spec)
            self.view.register(job)
        self._predictions()
        if jobs:
            self.sampler.start_at(jobs[0].submit_time)
        if self._inference_pool is not None and self.inference_load is not None:
            self._push(0.0, LOAN, "", 0)
        n = len(jobs)
        i = 0
        heap = self._heap
        state = self.state
        max_time = self.config.max_time
        event_driven = self._event_driven
        unscheduled = False
        loops = 0
        idle_rounds = 0  # rounds in a row that decided nothing, after the last arrival
        while i < n or state.queue or state.running:
            loops += 1
            if self.progress is not None and not loops % _PROGRESS_CHECK_LOOPS:
                self._report_progress_if_quiet()
            self._drop_stale_events()
            t_heap = heap[0][0] if heap else math.inf
            t_arrival = jobs[i].submit_time if i < n else math.inf
            now = min(t_heap, t_arrival)
            if now == math.inf or now > max_time:
                break
            self._advance(now)
            dirty = ticked = False
            while heap and heap[0][0] == now and heap[0][1] < TICK:
                entry = heapq.heappop(heap)
                if self._is_stale(entry):
                    continue
                if entry[1] == UNTIMED:
                    self._time_completion(entry)
                    continue
                self.counters.events += 1
                if entry[1] == COMPLETION:
                    dirty |= self._complete(state.jobs[entry[3]]) and event_driven
                else:
                    self._loan_tick()
                    dirty |= event_driven
            while i < n and jobs[i].submit_time == now:
                self._arrive(jobs[i].job_id)
                self.counters.events += 1
                dirty |= event_driven
                unscheduled = not event_driven  # a periodic round must still see it once
                i += 1
            while heap and heap[0][0] == now:
                if not self._is_stale(heapq.heappop(heap)):
                    self.counters.events += 1
                    self._tick_pending = False
                    ticked = True
            if dirty or ticked:
                decided = self.counters.decisions
                # a tick alone, with events running rounds, whose round the policy shows
                # would decide nothing is an idle round (`Policy.quiet_tick`)
                if (dirty or unscheduled or not event_driven
                        or not self.policy.quiet_tick(self.view)):
                    self._schedule_round()
                    unscheduled = False
                if i < n or self.counters.decisions != decided:
                    idle_rounds = 0
                else:
                    idle_rounds += 1
                    if idle_rounds >= STALL_ROUNDS:
                        self._check_stalled(idle_rounds)
                        idle_rounds = 0
                if self._interval is None:
                    self._arm_wakeup(now)
            if self._interval is None:
                continue
            if not self._tick_pending and (state.queue or state.running):
                if state.running or i < n or self._has_loan_events() or unscheduled:
                    self._push(now + self._interval, TICK, "", self._tick_version)
                    self._tick_pending = True
        self._advance(self.clock.now, final=True)
        sampler = self.sampler
        record = RunRecord(
            jobs=list(state.jobs.values()), policy=self.policy, config=self.config,
            cluster=self.cluster, trace=self.workload.source, counters=self.counters,
            timeseries=sampler.rows, window=sampler.window, total_busy=sampler.total_busy,
            total_inference_busy=sampler.total_inference_busy,
            total_queued=sampler.total_queued, loan_log=self.loan_log)
        return build_result(record, wall_seconds=time.perf_counter() - started)

    def _check_stalled(self, rounds: int) -> None:
        """Raise `InvariantViolation` if no job can ever progress: every job has arrived, no
        job's completion is pending (running jobs hold their GPUs at a share of 0), nothing
        is lent, and the policy decided nothing in the last `rounds` rounds. Only the
        policy's own clock would be left, and the run would never end (a livelock of the
        policy, as Gandiva's spread jobs once were: issue #22)."""
        if self._has_loan_events() or any(
                entry[1] <= COMPLETION and not self._is_stale(entry) for entry in self._heap):
            return
        state = self.state
        held = sorted(state.running, key=lambda job_id: state.jobs[job_id].spec.submit_time)
        raise InvariantViolation(
            f"run of {self.policy.name} stalls at t={self.clock.now:.0f} s: "
            f"{len(held)} running jobs can never progress ({', '.join(held[:5])}"
            f"{', …' if len(held) > 5 else ''}), {len(state.queue)} queued, and the policy "
            f"decided nothing in {rounds:,} rounds")

    def _is_stale(self, entry: tuple[float, int, int, str, int]) -> bool:
        """A completion whose job was resized, preempted or re-timed since it was pushed, or
        a wakeup replaced by a later one: it changes nothing and must not move the clock."""
        _, kind, _, job_id, version = entry
        if kind <= COMPLETION:
            job = self.state.jobs[job_id]
            return job.version != version or job.status != JobStatus.RUNNING
        return kind == TICK and version != self._tick_version

    def _drop_stale_events(self) -> None:
        """Pop stale entries and time the untimed completions at the top of the heap."""
        heap = self._heap
        while heap:
            if self._is_stale(heap[0]):
                heapq.heappop(heap)
            elif heap[0][1] == UNTIMED:
                self._time_completion(heapq.heappop(heap))
            else:
                break

    def _time_completion(self, entry: tuple[float, int, int, str, int]) -> None:
        """Push the exact completion of an `UNTIMED` entry, with its sequence number: the
        time `_reschedule_completion` would have pushed, from the same job state."""
        bound, _, seq, job_id, version = entry
        job = self.state.jobs[job_id]
        at = job.time_to_work(job.last_update, max(job.remaining_work, 0.0))
        if at < bound:
            raise AssertionError(f"completion of {job_id} at {at} before its bound {bound}")
        if at < math.inf:
            heapq.heappush(self._heap, (at, COMPLETION, seq, job_id, version))

    def _arm_wakeup(self, now: float) -> None:
        """Keep one pending tick at the policy's `next_wakeup`, dropping a stale one."""
        wake = self.policy.next_wakeup(self.view)
        if wake == self._wakeup_at:
            return
        self._tick_version += 1  # any earlier wakeup in the heap is now stale
        self._wakeup_at = wake
        if wake is not None:
            self._push(max(wake, now + _MIN_WAKEUP), TICK, "", self._tick_version)

    def _has_loan_events(self) -> bool:
        return any(kind == LOAN for _, kind, _, _, _ in self._heap)

    def _push(self, at: float, kind: int, job_id: str, version: int) -> None:
        self._seq += 1
        heapq.heappush(self._heap, (at, kind, self._seq, job_id, version))

    def _advance(self, now: float, *, final: bool = False) -> None:
        """Integrate utilisation from the last event to `now`, emitting sample rows."""
        s = self.sampler
        while s.next_sample <= now:
            self._integrate(s.next_sample)
            self._emit_row(s.next_sample, s.interval)
            s.next_sample += s.interval
        self._integrate(now)
        if final and now > s.next_sample - s.interval:
            self._emit_row(now, now - (s.next_sample - s.interval))
        self.clock.now = now

    def _integrate(self, to: float) -> None:
        s = self.sampler
        dt = to - s.last_time
        if dt <= 0:
            return
        for pool in s.pools:
            gpu_seconds = self.state.pool_busy[pool] * dt
            s.busy[pool] += gpu_seconds
            s.total_busy[pool] += gpu_seconds
        if self._inference_pool is not None:
            inference = self._inference_busy_servers * self._inference_pool.gpus_per_server * dt
            s.inference_busy += inference
            s.total_inference_busy += inference
        s.on_loan += (self.counters.servers_lent - self.counters.servers_reclaimed) * dt
        s.total_queued += len(self.state.queue) * dt
        s.last_time = to

    def _emit_row(self, at: float, width: float) -> None:
        s = self.sampler
        row: dict[str, float] = {"time": at}
        total_busy = 0.0
        for pool in self.cluster.pools:
            busy = s.busy[pool.name]
            if pool.kind == PoolKind.INFERENCE:
                busy += s.inference_busy
            total_busy += busy
            row[f"util_{pool.name}"] = busy / (pool.gpus * width) if width > 0 else 0.0
            s.busy[pool.name] = 0.0
        row["util_overall"] = total_busy / (self.cluster.total_gpus * width) if width else 0.0
        row["on_loan_servers"] = s.on_loan / width if width > 0 else 0.0
        row["queue_length"] = len(self.state.queue)
        row["running_jobs"] = len(self.state.running)
        row["blocking_index"] = self._blocking_index(at)
        s.inference_busy = 0.0
        s.on_loan = 0.0
        s.rows.append(row)

    def _blocking_index(self, now: float) -> float:
        """Mean ratio of time waited to work remaining over queued jobs (Muri §6.1).

        A waiting job's ratio is (a + now) / r with a = queued_seconds - queued_since and r its
        remaining work, both frozen while it waits, so sums of a/r and 1/r kept as jobs enter
        and leave the queue give the mean without scanning a long queue for every row.
        """
        sums = self._blocking_sums
        return (sums[0] + now * sums[1]) / sums[2] if sums[2] else 0.0

    def _enqueue(self, job: JobState) -> None:
        self.state.enqueue(job, self.clock.now)
        self._track_waiting(job, 1)

    def _dequeue(self, job: JobState) -> None:
        self._track_waiting(job, -1)
        self.state.dequeue(job)
        job.queued_seconds += self.clock.now - job.queued_since

    def _track_waiting(self, job: JobState, sign: int) -> None:
        sums = self._blocking_sums
        if job.remaining_work > 0:
            sums[0] += sign * (job.queued_seconds - job.queued_since) / job.remaining_work
            sums[1] += sign / job.remaining_work
            sums[2] += sign
        if sums[2] == 0:
            sums[0] = sums[1] = 0.0  # drop rounding residue whenever the queue empties

    # -- events -----------------------------------------------------------------------------

    def _arrive(self, job_id: str) -> None:
        job = self.state.jobs[job_id]
        job.last_update = self.clock.now
        self._enqueue(job)

    def _complete(self, job: JobState) -> bool:
        """Finish `job` at its (current) completion event; False if float drift left work."""
        job_id = job.job_id
        now = self.clock.now
        self._settle(job, now)
        if job.remaining_work > WORK_TOLERANCE * max(1.0, job.spec.duration):
            self._reschedule_completion(job)  # float drift: not quite done yet
            return False
        job.remaining_work = 0.0
        self.state.release(job)
        del self.state.running[job_id]
        job.status = JobStatus.DONE
        job.end_time = now
        self._finished += 1
        percent = self._finished * 100 // len(self.workload.jobs)
        if self.progress is not None and percent >= self._next_percent:
            self._report_progress()
            self._next_percent = percent + 1
        return True

    def _report_progress(self) -> None:
        self._progress_at = time.perf_counter()
        self.progress(self._finished / len(self.workload.jobs))

    def _report_progress_if_quiet(self) -> None:
        """Call `progress` when it has not been called for `_PROGRESS_QUIET_SECONDS`, so a
        caller that cancels by raising from it is heard within seconds even while no job
        finishes (one very long job, a queue that only reshuffles)."""
        if time.perf_counter() - self._progress_at >= _PROGRESS_QUIET_SECONDS:
            self._report_progress()

    def _schedule_round(self) -> None:
        self.counters.schedule_rounds += 1
        decisions = self.policy.schedule(self.view)
        if decisions is None:
            return
        try:
            for decision in decisions:
                self.apply(decision)
        except InvalidDecision as exc:
            label = stage_label(type(self.policy), self.policy.deciding_layer)
            raise InvalidDecision(f"{label}: {exc}") from exc

    # -- decisions --------------------------------------------------------------------------

    def apply(self, decision: Decision, *, forced: bool = False) -> None:
        """Check `decision` against the state and apply it, or raise `InvalidDecision`.

        `forced` is set for the inference side's reclaims, which may stop jobs a policy
        itself may not preempt.
        """
        self.counters.decisions += 1
        now = self.clock.now
        state = self.state
        if isinstance(decision, SetShare):  # first: time-slicing yields them by the thousand
            job = state.jobs.get(decision.job_id)
            if job is None or job.status is not JobStatus.RUNNING:
                job = state.job(decision.job_id, status=JobStatus.RUNNING)
            if not 0 <= decision.share <= 1:
                raise InvalidDecision(f"share {decision.share} of {job.job_id} not in [0, 1]")
            cycle = decision.cycle
            if cycle is not None:
                problem = cycle.problem(now)
                if problem is None and cycle.first != decision.share:
                    problem = f"first share {cycle.first} is not the share {decision.share}"
                if problem is not None:
                    raise InvalidDecision(f"share cycle of {job.job_id}: {problem}")
            self._settle(job, now)
            job.share = 1.0 if cycle is not None else decision.share
            job.cycle = cycle
            self._reschedule_completion(job)
        elif isinstance(decision, Launch):
            job = state.jobs.get(decision.job_id)
            if job is None or job.status is not _QUEUED:  # `state.job` says what is wrong
                job = state.job(decision.job_id, status=_QUEUED)
            state.check_placement(job, decision.placement)
            self._dequeue(job)
            state.occupy(job, decision.placement)
            state.start_running(job)
            job.status = _RUNNING
            job.last_update = now
            if job.first_start is None:
                job.first_start = now
            elif self.config.restart_overhead > 0:
                pause(job, now, now + self.config.restart_overhead)
            self._reschedule_completion(job)
        elif isinstance(decision, Preempt):
            job = state.jobs.get(decision.job_id)
            if job is None or job.status is not _RUNNING:
                job = state.job(decision.job_id, status=_RUNNING)
            if not job.spec.preemptible and not forced:
                raise InvalidDecision(f"job {job.job_id} is not preemptible")
            self._settle(job, now)
            state.release(job)
            del state.running[job.job_id]
            job.preemptions += 1
            job.version += 1
            job.rate = 0.0
            job.share = 1.0
            job.cycle = None
            job.join_at = 0.0
            if not job.spec.checkpoint:
                job.remaining_work = job.spec.duration
            self._enqueue(job)
        elif isinstance(decision, Resize | Migrate):
            job = state.job(decision.job_id, status=JobStatus.RUNNING)
            new_gpus = sum(slot.gpus for slot in decision.placement)
            if isinstance(decision, Migrate) and new_gpus != job.gpus:
                raise InvalidDecision(f"migration of {job.job_id} changes its GPU count")
            if isinstance(decision, Resize) and not job.spec.elastic:
                raise InvalidDecision(f"job {job.job_id} is not elastic")
            self._settle(job, now)
            old = job.placement
            old_gpus = job.gpus
            training_rate = self._training_rate(job, now)
            state.release(job)
            try:
                state.check_placement(job, decision.placement)
            except InvalidDecision:
                state.occupy(job, old)
                raise
            state.occupy(job, decision.placement)
            if isinstance(decision, Migrate):
                job.migrations += 1
                if self.config.migration_pause > 0:
                    pause(job, now, now + self.config.migration_pause)
            else:
                job.scaling_ops += 1
                resize_overhead(job, self.config, now, grew=new_gpus > old_gpus, old_gpus=old_gpus,
                                training_rate=training_rate)
            self._reschedule_completion(job)
        else:
            raise InvalidDecision(f"unknown decision {decision!r}")

    def _training_rate(self, job: JobState, now: float) -> float:
        """The rate `job` is actually training at, at `now` (old workers, paused, or full)."""
        if job.join_at > now:
            return job.join_rate
        if now < job.paused_until:
            return 0.0
        return job.rate if job.cycle is None else job.rate * job.cycle.share_at(now)

    def _settle(self, job: JobState, now: float) -> None:
        dt = now - job.last_update
        if dt <= 0:
            return
        job.attained_gpu_seconds += job.gpus * dt
        job.run_seconds += dt
        if job.join_at > job.last_update:  # new workers still preparing: their GPUs idle
            idle = min(now, job.join_at) - job.last_update
            job.overhead_gpu_seconds += max(0, job.gpus - job.join_gpus) * idle
        cycle = job.cycle
        if (cycle is not None and now < cycle.silent_until()
                and job.join_at <= job.last_update):
            done = 0.0  # suspended throughout: `work_between` would add exactly 0.0
        else:
            done = job.work_between(job.last_update, now)
        if done > 0:
            before = job.spec.duration - job.remaining_work
            job.remaining_work -= done
            if job.early_feedback_time is None and job.spec.iterations:
                target = job.spec.duration * min(
                    1.0, self.config.early_feedback_iterations / job.spec.iterations
                )
                if before + done >= target:
                    job.early_feedback_time = job.time_to_work(
                        job.last_update, max(0.0, target - before)
                    )
        job.last_update = now

    def _reschedule_completion(self, job: JobState) -> None:
        job.last_update = self.clock.now
        self.state.progress_log.append(job.job_id)
        job.rate = self._placement_rate(job) * job.share
        if self.config.elastic_step_loss > 0 and job.spec.elastic:
            job.rate *= imperfect_scaling(job.spec, job.workers, self.config.elastic_step_loss)
        job.version += 1
        work = max(job.remaining_work, 0.0)
        if job.cycle is None:
            at = job.time_to_work(self.clock.now, work)
            if at < math.inf:
                self._push(at, COMPLETION, job.job_id, job.version)
            return
        bound = job.completion_bound(self.clock.now, work)
        if bound < math.inf:
            self._push(bound, UNTIMED, job.job_id, job.version)

    def _placement_rate(self, job: JobState) -> float:
        """The job's rate at share 1 on its placement, kept per placement (a share changes
        far more often than the GPUs under it; the tuple is held, so `is` names it)."""
        kept = self._rates.get(job.job_id)
        if kept is not None and kept[0] is job.placement:
            return kept[1]
        servers = self.state.servers
        efficiency = self.config.heterogeneous_efficiency
        if efficiency is None:  # `placement_speed`'s slowest GPU, without its list
            speed = min([servers[slot.server].speed for slot in job.placement])
        else:
            speed = placement_speed(
                [(servers[slot.server].speed, slot.gpus) for slot in job.placement],
                efficiency,
                spans_types=len({servers[slot.server].gpu_type for slot in job.placement}) > 1,
            )
        rate = self.throughput.rate(job.spec.model, job.spec.num_gpus, job.gpus, speed)
        self._rates[job.job_id] = (job.placement, rate)
        return rate

    # -- inference side ---------------------------------------------------------------------

    def _loan_tick(self) -> None:
        """Lend idle inference servers beyond the headroom; reclaim when demand rises."""
        pool = self._inference_pool
        load = self.inference_load
        assert pool is not None and load is not None
        now = self.clock.now
        busy = min(load.busy_at(now), pool.servers)
        self._inference_busy_servers = busy
        limit = pool.servers if pool.lending_limit is None else pool.lending_limit
        if not self.config.lending:
            limit = 0  # the load is still followed: inference-busy GPUs count in utilisation
        lendable = max(0, min(limit, pool.servers - busy - self.config.loan_headroom))
        on_loan = [sid for sid in self.state.pool_servers[pool.name]
                   if self.state.servers[sid].on_loan]
        if lendable > len(on_loan):
            idle = [sid for sid in self.state.pool_servers[pool.name]
                    if not self.state.servers[sid].on_loan]
            lent = idle[: lendable - len(on_loan)]
            for sid in lent:
                self.state.set_on_loan(sid, True)
            self.counters.servers_lent += len(lent)
            self.loan_log.append({"time": now, "action": "loan", "servers": len(lent)})
        elif lendable < len(on_loan):
            self.reclaim(len(on_loan) - lendable)
        if now < load.times[-1]:  # after the last change the loans stay as they are
            self._push(now + self.config.loan_interval, LOAN, "", 0)

    def reclaim(self, count: int) -> ReclaimPlan:
        """Ask the policy (or the run's strategy) for `count` servers and apply the plan."""
        plan = self.policy.select_reclaim(self.view, count)
        if plan is None:
            plan = self.reclaim_strategy(self.view, count, self._reclaim_rng)
        try:
            self.apply_reclaim(plan, count)
        except InvalidDecision as exc:
            raise InvalidDecision(f"{stage_label(type(self.policy), 'capacity')}: {exc}") from exc
        return plan

    def apply_reclaim(self, plan: ReclaimPlan, count: int) -> None:
        if len(set(plan.servers)) != count:
            raise InvalidDecision(f"reclaim plan returns {len(set(plan.servers))} servers, "
                                  f"asked for {count}")
        returned = set(plan.servers)
        for sid in plan.servers:
            if sid not in self.state.servers or not self.state.servers[sid].on_loan:
                raise InvalidDecision(f"reclaim plan names {sid!r}, which is not on loan")
        occupied = {sid for sid in plan.servers if self.state.servers[sid].jobs}
        for resize in plan.scale_in:
            self.apply(resize, forced=True)
        self.counters.scale_ins_on_reclaim += len(plan.scale_in)
        vacated_by_scale_in = sum(1 for sid in occupied if not self.state.servers[sid].jobs)
        for job_id in plan.preempt:
            job = self.state.job(job_id, status=JobStatus.RUNNING)
            self.counters.collateral_gpus += sum(
                slot.gpus for slot in job.placement if slot.server not in returned
            )
            self.apply(Preempt(job_id), forced=True)
        for sid in plan.servers:
            self.state.set_on_loan(sid, False)
        self.counters.reclaims += 1
        self.counters.servers_reclaimed += count
        self.counters.gpus_reclaimed += sum(self.state.servers[sid].gpus for sid in plan.servers)
        self.counters.reclaim_preemptions += len(plan.preempt)
        self.counters.servers_freed_by_scale_in += vacated_by_scale_in
        self.loan_log.append({
            "time": self.clock.now, "action": "reclaim", "servers": count,
            "preempted": len(plan.preempt), "scaled_in": len(plan.scale_in),
        })
