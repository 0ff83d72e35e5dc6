"""Muri-S and Muri-L: multi-resource interleaving with Blossom grouping (Muri SIGCOMM'22 §4).

**Rounds.** Muri's scheduler is "invoked on events like job arrival and job completion" (§3)
yet "runs the scheduling algorithm at a fixed time interval to reduce the overhead of
preemption and restart" (§5; six minutes, `interval`). The engine runs the policy at every
event and every `interval`; two kinds of round reconcile the two sentences:

- a **full regroup** (steps 1–4 below over running and queued jobs; it may preempt, move and
  regroup running jobs) at most once per `interval`: the first round at or after the last
  full regroup + `interval`. A round with nothing to regroup (no queue, every job alone)
  runs none and does not count;
- every other round is an **event round**: steps 1–4 over the queued jobs only, with the GPUs
  no group holds as the cluster, so arrivals start at once on free GPUs, alone or grouped
  among themselves. It preempts nothing, moves nothing and leaves running jobs' shares alone.

Regrouping the whole cluster at every event (as Muri's own simulator does) restarted jobs
constantly here (~118 restarts per job on muri_trace4); waiting for the next six-minute
round left free GPUs idle for minutes after each arrival.

**Churn** (issue #16). `regroup=full` (default, the paper's behaviour): every full regroup
re-matches every job from scratch, as Algorithm 1 reads and as Muri's simulator does.
`regroup=sticky` (an option, not the paper's): a full regroup starts Blossom from the
running groups, each cut to its members that are still selected, instead of from single
jobs, so a group may gain members but does not split while its members stay selected and
grouping is still needed — a long-running interleaved group keeps running, as it would in
practice. Under `grouping=demand` only as many formed groups are kept, best-ranked first, as
cover the GPUs the selected jobs want beyond the cluster; the others split, so jobs run
alone at full speed once there is room. Measured on muri_trace3 (muri-s, 8 × 8): sticky
cuts restarts per job from 6.4 to 1.8 but raises mean JCT from 22.2 to 27.8 h, since
frozen pairs interleave worse than a fresh matching (`benchmarks/README.md`); a comparison
of policies keeps each paper's own rule, so `full` stays the default.
`restart=group` (default): Muri's executor starts a changed group afresh (§5: "terminates
old jobs and starts new jobs according to the plan") and the authors' simulator charges
every member of a group its start-up time (Rivendile/Muri@4e69a78
`simulator/run_sim.py:1482-1488`), so every running member of a group that a job joins
restarts (one preemption and the engine's `restart_overhead` each); `restart=moved`
restarts only the jobs whose GPUs change.

A full regroup:

1. orders running and queued jobs by priority — SRSF (remaining time × GPUs, `muri-s`) or
   Tiresias' discretised 2D-LAS (`muri-l`, the same queue logic and queue defaults as
   `tiresias`);
2. picks the first n jobs "that can be fully grouped and fully utilise the cluster"
   (Algorithm 1, lines 1–7): walking the order with the cluster's GPUs as a budget, each job
   that still fits takes its GPUs and claims itself plus the next k − 1 jobs of its bucket
   (same GPU count), so at most k jobs can end up on each GPU set (Muri's simulator does
   the same);
3. groups them with `simulation.interleaving.multi_round_grouping` (Blossom matching,
   ⌈log2 k⌉ rounds, buckets by GPU count and GPU-type/pool constraints). With
   `grouping=demand` (default, as Muri's simulator) matched pairs merge only while the
   selected jobs want more GPUs than the cluster has: grouping slows each member, so jobs
   that fit alone run alone. `grouping=always` merges every matched pair as Algorithm 1 reads;
4. keeps the groups that fit in priority order, re-uses the GPUs a group's best-ranked
   running member already holds, places the others best-fit in descending GPU count (§5:
   "avoids fragmentation"), preempts what no longer runs, moves or (see **Churn**) sees a
   job join its group (a restart, as Muri's executor kills and restarts jobs), launches, and
   sets each member's share.

**Rates.** Members of a group share one placement and each completes one iteration per group
iteration, so a member runs at ``share = min(1, solo iteration time / (T_group × o_n))``
where T_group is the group's iteration time under the chosen ordering on the *true* profile
(Eq. 3, or for three-stage profiles over four resource types, as in Muri's traces, the
pipeline model of Muri's simulator; see `simulation.interleaving`) and o_n the
interleaving overhead of an n-job group. The ordering and the grouping use profiles with
`profiling_noise`. A job alone gets share 1.

**Interleaving overhead** (`group_overhead`, default 1.33, 1.5, 1.37 for groups of 2, 3, 4):
the factors Muri's simulator puts on a group's iteration time (Rivendile/Muri@4e69a78
`simulator/jobs.py:209`, applied in `simulator/matching.py:169-174`); Table 2 likewise
measured four interleaved jobs at 2×, not 4×, summed normalised throughput. That simulator
splits each factor x as 1.015 on every job's own iteration time and x / 1.015 on a group's;
here a group carries x and a job alone none, so a job alone runs at its trace speed as under
every other policy. `group_overhead=none` is the zero-overhead ablation.

Jobs with no profile (neither in the trace nor a model of the table in
`simulation.interleaving`) and non-preemptible running jobs are never grouped.
"""

from __future__ import annotations

import heapq
import math
import random
from bisect import bisect_left, insort
from collections.abc import Iterator
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from simulation.decisions import Decision, Launch, Placement, Preempt, SetShare
from simulation.errors import InputError
from simulation.interleaving import (
    Bucket,
    GroupingConfig,
    MatchingMemo,
    group_iteration_time,
    iteration_time_for_ordering,
    job_profile,
    multi_round_grouping,
    noisy_stages,
    pad_stages,
    solo_iteration_seconds,
)
from simulation.policies.base import Param, Policy, register
from simulation.policies.ordering import pool_preference, training_capacity
from simulation.policies.srtf import prediction_scale, remaining_seconds
from simulation.policies.tiresias import LAS_QUEUE_PARAMS, Tiresias
from simulation.shared_placement import (
    PhysicalFree,
    fit_placement,
    physical_free,
    share_changed,
)
from simulation.state import JobStatus
from simulation.view import ClusterView, JobView

BucketKey = tuple[int, int, str, str]
# A job's place in the round's order: (not pinned, priority, 0 running / 1 queued, position
# among the running jobs / trace index, job id); sorting these sorts as `_regroup` reads.
Entry = tuple[bool, tuple[float, ...], int, int, str]
_RUNNING = JobStatus.RUNNING


def bucket_key(job: JobView) -> BucketKey:
    """Jobs may share GPUs only with jobs of equal GPU count and placement constraints."""
    spec = job.spec
    return (spec.num_gpus, spec.gpus_per_worker, spec.gpu_type or "", spec.pool or "")


def group_overhead_factors(setting: str) -> tuple[float, ...]:
    """`group_overhead` as iteration-time factors for groups of 2, 3, ... jobs; `none` = ()."""
    if setting.strip().lower() == "none":
        return ()
    try:
        factors = tuple(float(x) for x in setting.split(","))
        if all(0 < f < math.inf for f in factors):
            return factors
    except ValueError:
        pass
    raise InputError(f"expected 'none' or comma-separated positive factors, got {setting!r}",
                     source="settings", field="group_overhead")


class _Stream:
    """One bucket's jobs in the round's order, read lazily: its running jobs (sorted this
    round) merged with its queued jobs (kept sorted across rounds)."""

    __slots__ = ("entries", "_source")

    def __init__(self, running: list[Entry], queued: list[Entry]) -> None:
        self._source = heapq.merge(running, queued) if running else iter(queued)
        self.entries: list[Entry] = []

    def at(self, index: int) -> Entry | None:
        entries = self.entries
        while len(entries) <= index:
            entry = next(self._source, None)
            if entry is None:
                return None
            entries.append(entry)
        return entries[index]


@dataclass(slots=True)
class _KeptSelection:
    """A full regroup's selection and what it was computed from (`_kept_running_selection`)."""

    marks: tuple[int, int, int]  # allocation, queue and progress logs read
    capacity: int
    lent: tuple[str, ...]
    at: float
    running: dict[BucketKey, list[Entry]]  # the running jobs' entries, per bucket
    selected: list[JobView]
    horizon: float | None = None  # `selection_horizon`, once asked


class Muri(Policy):
    """Shared mechanics of Muri-S and Muri-L; subclasses define `priority`.

    A round reads only what it needs (issue #22): the queued jobs of each bucket stay sorted
    across rounds (a queued job's priority cannot change while it waits), each round sorts
    the running jobs afresh and walks buckets lazily, in the order one sort of every job
    would give, until the cluster is claimed; the physically free GPUs are recounted only on
    servers whose jobs changed (`PhysicalFree`), and Blossom matchings are remembered
    (`MatchingMemo`). A queue out of trace order (`ClusterView.queue_in_submit_order`) or
    Muri-L with promotion, whose keys change while jobs wait, sort every job as written.

    Work in proportion to what changed (issue #16), each giving the answer recomputing
    gives: a full regroup whose selection (in order, with pinned flags), capacity and loaned
    servers equal the last regroup's, with no job started, stopped or ended since its
    decisions, is skipped, as it would decide nothing (`_settled_inputs`; about 70 % of
    regroups on muri_trace2, whose running jobs reorder without changing the selection);
    merge periods are remembered by the pair of stage blocks merged (`MergePeriods`), so
    a matching's γ matrix is look-ups once its profiles have met.
    """

    shares_gpus = True
    interval: ClassVar[float] = 360.0  # §5: six minutes between full regroups
    paper = "Muri SIGCOMM'22 §4 (Algorithm 1, Eqs. 1–4), §5, §6.4"
    params: tuple[Param, ...] = (
        Param("max_group_size", int, 4, "k: at most this many jobs share one GPU set",
              bounds=(1, 8)),
        Param("resource_types", int, 4, "resource types interleaved (storage, CPU, GPU, net)",
              bounds=(1, 8)),
        Param("profiling_noise", float, 0.0, "profiler error n: stages × U[1-n, 1+n] (Fig. 14)",
              bounds=(0.0, 0.99)),
        Param("grouping", str, "demand", "merge only while demand exceeds the cluster, or "
              "always", choices=("demand", "always")),
        Param("ordering", str, "best", "stage ordering inside a group (Fig. 11 ablation)",
              choices=("best", "worst")),
        Param("matching", str, "blossom", "how groups form: blossom (Algorithm 1), or "
              "priority: jobs of one GPU size packed in priority order (Fig. 11's "
              "\"without Blossom\")", choices=("blossom", "priority")),
        Param("group_overhead", str, "1.33,1.5,1.37", "iteration-time factors for groups of "
              "2,3,4 jobs (Muri's simulator); none = no overhead (ablation)"),
        Param("weight_floor", float, 0.0, "edge needs γ > floor × group size / k",
              bounds=(0.0, 1.0)),
        Param("exact_matching_limit", int, 64, "buckets up to this size match exactly",
              bounds=(2, 4_096)),
        Param("sparse_degree", int, 2, "partners per class of similar jobs above the limit",
              bounds=(1, 64)),
        Param("regroup", str, "full", "full: regroup every job afresh (the paper and Muri's "
              "simulator); sticky: a running group's selected members stay together (they "
              "may gain members)", choices=("full", "sticky")),
        Param("restart", str, "group", "group: every member of a group that gains a job "
              "restarts (Muri's executor and simulator); moved: only jobs that change GPUs",
              choices=("group", "moved")),
    )
    max_group_size: int
    resource_types: int
    profiling_noise: float
    grouping: str
    ordering: str
    matching: str
    group_overhead: str
    weight_floor: float
    exact_matching_limit: int
    sparse_degree: int
    regroup: str
    restart: str

    def __init__(self, **values: object) -> None:
        super().__init__(**values)
        if not 1 <= self.max_group_size <= self.resource_types:
            raise InputError(f"max_group_size must lie between 1 and resource_types "
                             f"({self.resource_types})", source="settings",
                             field="max_group_size")
        self.config = GroupingConfig(
            max_group=self.max_group_size,
            weight_floor=self.weight_floor,
            overhead=group_overhead_factors(str(self.group_overhead)),
            exact_limit=self.exact_matching_limit,
            sparse_degree=self.sparse_degree,
            worst_ordering=self.ordering == "worst",
            blossom=self.matching == "blossom",
        )
        self._noise_seed = self.rng.getrandbits(64)
        self._profiles: dict[str, tuple[tuple[float, ...], tuple[float, ...], float] | None] = {}
        self._plans: dict[object, list[list[list[int]]]] = {}
        self._shares: dict[tuple[str, ...], dict[str, float]] = {}
        self._memo = MatchingMemo()
        self._group_of: dict[str, int] = {}  # running job -> token of the group it runs in
        self._next_token = 0
        self._last_regroup = -math.inf  # when the last full regroup ran
        self._view: ClusterView | None = None

    def priority(self, view: ClusterView, job: JobView) -> tuple[float, ...]:
        raise NotImplementedError

    def priority_frozen_while_queued(self) -> bool:
        """Whether a queued job's `priority` stays as it was when it entered the queue."""
        return True

    # -- profiles ----------------------------------------------------------------------------

    def profile(self, job: JobView) -> tuple[tuple[float, ...], tuple[float, ...], float] | None:
        """(true stages, believed stages, solo iteration time); None = ungroupable."""
        if job.job_id not in self._profiles:
            profile = job_profile(job.spec)
            if profile is None or len(profile.stage_seconds) > self.resource_types:
                self._profiles[job.job_id] = None
            else:
                true = tuple(profile.stage_seconds)
                rng = random.Random(f"{self._noise_seed}:{job.job_id}")
                believed = noisy_stages(true, self.profiling_noise, rng)
                solo = solo_iteration_seconds(job.spec, profile)
                self._profiles[job.job_id] = (true, believed, solo)
        return self._profiles[job.job_id]

    def group_share(self, members: list[JobView]) -> dict[str, float]:
        """Each member's rate factor: solo iteration time over the group's true period."""
        if len(members) == 1:
            return {members[0].job_id: 1.0}
        key = tuple(m.job_id for m in members)
        cached = self._shares.get(key)
        if cached is None:
            if len(self._shares) >= 4096:
                self._shares.clear()
            cached = self._shares[key] = self._compute_shares(members)
        return cached

    def _compute_shares(self, members: list[JobView]) -> dict[str, float]:
        profiles = [self.profile(m) for m in members]
        believed = [p[1] for p in profiles if p is not None]
        _, ordering = group_iteration_time(believed, worst=self.config.worst_ordering,
                                           resource_types=self.resource_types)
        true = [p[0] for p in profiles if p is not None]
        period = iteration_time_for_ordering(true, ordering, resource_types=self.resource_types)
        period *= self.config.overhead_for(len(members))
        return {
            m.job_id: min(1.0, p[2] / period) if period > 0 else 1.0
            for m, p in zip(members, profiles, strict=True) if p is not None
        }

    # -- what the policy keeps between rounds ------------------------------------------------

    def _reset(self, view: ClusterView) -> None:
        """Index `view` from scratch (a new run or a snapshot)."""
        self._view = view
        _, self._alloc_mark = view.allocations_since(0)
        _, self._queue_mark = view.queued_since(0)
        _, self._progress_mark = view.progress_resets_since(0)
        self._waiting: dict[BucketKey, list[Entry]] = {}  # queued jobs per bucket, sorted
        self._entry: dict[str, tuple[BucketKey, Entry]] = {}  # queued job -> its entry
        self._queued_order: list[Entry] = []  # every queued job's entry, sorted
        self._group_key: dict[str, tuple[Placement, int]] = {}  # running job -> its group
        self._members: dict[tuple[Placement, int], int] = {}  # group -> running members
        self._riders: dict[str, int] = {}  # server -> GPUs of members beyond each group's first
        self._slowed: set[str] = set()  # running jobs that may run at a share below 1
        self._dirty: set[str] = set()  # servers whose free GPUs need recounting
        for job in view.running.values():
            self._track(job.job_id, job.placement)
            if job.share < 1.0:
                self._slowed.add(job.job_id)
        self._free = PhysicalFree(view, self._riders)
        self._dirty.clear()
        for job in view.queue.values():
            self._wait(view, job)
        self._settled: tuple[object, ...] | None = None  # see `_settled_inputs`
        self._kept_selection: _KeptSelection | None = None  # see `_kept_running_selection`

    def _wait(self, view: ClusterView, job: JobView) -> None:
        """Index queued `job` under its bucket, replacing an entry from an earlier wait."""
        self._unwait(job.job_id)
        key = bucket_key(job)
        entry = (True, self.priority(view, job), 1, job.trace_index, job.job_id)
        insort(self._waiting.setdefault(key, []), entry)
        insort(self._queued_order, entry)
        self._entry[job.job_id] = (key, entry)

    def _unwait(self, job_id: str) -> None:
        found = self._entry.pop(job_id, None)
        if found is not None:
            waiting = self._waiting[found[0]]
            del waiting[bisect_left(waiting, found[1])]
            del self._queued_order[bisect_left(self._queued_order, found[1])]

    def _track(self, job_id: str, placement: Placement) -> None:
        """Count running `job_id` in its group (placement and token): members beyond the
        first hold no GPUs of their own."""
        key = (placement, self._group_of.get(job_id, -1))
        if self._group_key.get(job_id) == key:
            return
        self._untrack(job_id)
        self._group_key[job_id] = key
        count = self._members[key] = self._members.get(key, 0) + 1
        for slot in placement:
            self._dirty.add(slot.server)
            if count > 1:
                self._riders[slot.server] = self._riders.get(slot.server, 0) + slot.gpus

    def _untrack(self, job_id: str) -> None:
        key = self._group_key.pop(job_id, None)
        if key is None:
            return
        count = self._members[key] = self._members[key] - 1
        if not count:
            del self._members[key]
        for slot in key[0]:
            self._dirty.add(slot.server)
            if count:
                self._riders[slot.server] -= slot.gpus

    def _sync(self, view: ClusterView) -> None:
        """Catch up with the jobs that arrived, ended, started or stopped since last round."""
        if view is not self._view:
            self._reset(view)
        changed, self._alloc_mark = view.allocations_since(self._alloc_mark)
        for job_id in dict.fromkeys(changed):
            job = view.job(job_id)
            self._unwait(job_id)  # a job stopped since is in the queue log too
            if job.status == _RUNNING:
                self._track(job_id, job.placement)
            else:
                self._untrack(job_id)
                self._slowed.discard(job_id)
                if job.status == JobStatus.DONE:
                    self._group_of.pop(job_id, None)
        self._free.refresh(view, self._dirty, self._riders)  # servers lent or returned too
        self._dirty.clear()
        queued, self._queue_mark = view.queued_since(self._queue_mark)
        _, self._progress_mark = view.progress_resets_since(self._progress_mark)
        queue = view.queue
        for job_id in dict.fromkeys(queued):
            if job_id in queue:
                self._wait(view, queue[job_id])

    # -- the round ---------------------------------------------------------------------------

    def schedule(self, view: ClusterView) -> Iterator[Decision]:
        """A full regroup when `interval` has passed since the last one, else an event round."""
        self._sync(view)
        if view.now >= self._last_regroup + self.interval:
            if not view.queue and not self._any_slowed(view):
                return iter(())
            self._last_regroup = view.now
            return self._regroup(view)
        if not view.queue:
            return iter(())
        return self._launch_on_free_gpus(view)

    def _any_slowed(self, view: ClusterView) -> bool:
        """Whether a running job runs at a share below 1."""
        running = view.running
        for job_id in list(self._slowed):
            if job_id in running and running[job_id].share < 1.0:
                return True
            self._slowed.discard(job_id)
        return False

    def _sorted_walk(self, view: ClusterView) -> bool:
        """Whether the kept queue order is the one a fresh sort gives (see the class)."""
        return self.priority_frozen_while_queued() and view.queue_in_submit_order()

    def _reach(self, view: ClusterView, running: dict[BucketKey, list[Entry]], capacity: int
               ) -> list[Entry]:
        """The entries `select` claims or passes over, in order, walking the buckets lazily.

        `select` skips a job larger than its remaining budget and claims, with each leader,
        the next k - 1 groupable jobs of its bucket; a bucket whose jobs no longer fit the
        budget is done, so only the heads of the buckets still in play are compared.
        """
        streams: dict[BucketKey, _Stream] = {}
        heads: list[tuple[Entry, int, BucketKey]] = []
        for key in {*running, *self._waiting}:
            if key[0] <= capacity:
                stream = _Stream(running.get(key, []), self._waiting.get(key, []))
                first = stream.at(0)
                if first is not None:
                    streams[key] = stream
                    heads.append((first, 0, key))
        heapq.heapify(heads)
        claimed: set[str] = set()
        reached: list[Entry] = []
        budget = capacity
        while heads and budget > 0:
            entry, index, key = heapq.heappop(heads)
            stream = streams[key]
            job_id = entry[-1]
            if job_id not in claimed:
                if key[0] > budget:
                    continue  # no job of this bucket fits any more
                budget -= key[0]
                claimed.add(job_id)
                reached.append(entry)
                if self._entry_groupable(view, entry):
                    room, ahead = self.max_group_size - 1, index + 1
                    while room and (other := stream.at(ahead)) is not None:
                        if other[-1] not in claimed and self._entry_groupable(view, other):
                            claimed.add(other[-1])
                            reached.append(other)
                            room -= 1
                        ahead += 1
            following = stream.at(index + 1)
            if following is not None:
                heapq.heappush(heads, (following, index + 1, key))
        reached.sort()
        return reached

    def select(self, view: ClusterView, ordered: list[JobView], capacity: int) -> list[JobView]:
        """Algorithm 1 lines 1–7: the first jobs that can fill the cluster in k-job groups."""
        per_bucket: dict[BucketKey, list[JobView]] = {}
        position: dict[str, int] = {}
        for job in ordered:
            members = per_bucket.setdefault(bucket_key(job), [])
            position[job.job_id] = len(members)
            members.append(job)
        claimed: set[str] = set()
        budget = capacity
        for job in ordered:
            if job.job_id in claimed or job.spec.num_gpus > budget:
                continue
            budget -= job.spec.num_gpus
            claimed.add(job.job_id)
            if self._groupable(job):
                room = self.max_group_size - 1
                for other in per_bucket[bucket_key(job)][position[job.job_id] + 1:]:
                    if room == 0:
                        break
                    if other.job_id not in claimed and self._groupable(other):
                        claimed.add(other.job_id)
                        room -= 1
            if budget <= 0:
                break
        return [job for job in ordered if job.job_id in claimed]

    def _selected(self, view: ClusterView, with_running: bool, capacity: int) -> list[JobView]:
        """Algorithm 1's selection (`select`) over the queued jobs, and the running ones
        with `with_running`, in the order of `priority` (running jobs first on ties, pinned
        running jobs before all)."""
        if self._sorted_walk(view):
            if with_running and (kept := self._kept_running_selection(capacity)) is not None:
                return kept
            running: dict[BucketKey, list[Entry]] = {}
            if with_running:
                for position, job in enumerate(view.running.values()):
                    entry = (job.spec.preemptible, self.priority(view, job), 0, position,
                             job.job_id)
                    running.setdefault(bucket_key(job), []).append(entry)
                for entries in running.values():
                    entries.sort()
            selected = [view.job(entry[-1]) for entry in self._reach(view, running, capacity)]
            if with_running:
                self._kept_selection = _KeptSelection(
                    (self._alloc_mark, self._queue_mark, self._progress_mark), capacity,
                    self._free.lent, view.now, running, selected)
            return selected
        if not with_running:
            ordered = sorted(view.queue.values(), key=lambda j: self.priority(view, j))
        else:
            ordered = [*view.running.values(), *view.queue.values()]
            ordered.sort(key=lambda j: (
                not (j.status == _RUNNING and not j.spec.preemptible), self.priority(view, j),
            ))
        return self.select(view, ordered, capacity)

    def _kept_running_selection(self, capacity: int) -> list[JobView] | None:
        """The last full selection, if nothing it depends on can have changed since: no
        job started, stopped, ended, was queued or changed speed, the same capacity and
        servers on loan, and `now` before the `selection_horizon` of its running entries
        (computed at the first such re-use; most regroups on muri_trace2 select as the last
        one did)."""
        kept = self._kept_selection
        view = self._view
        if (kept is None or view is None or kept.capacity != capacity
                or kept.marks != (self._alloc_mark, self._queue_mark, self._progress_mark)
                or kept.lent != self._free.lent):
            return None
        if kept.horizon is None:
            running = sorted(entry for entries in kept.running.values() for entry in entries)
            kept.horizon = self.selection_horizon(view, running, kept.at)
        return kept.selected if view.now < kept.horizon else None

    def selection_horizon(self, view: ClusterView, running: list[Entry], at: float) -> float:
        """A time before which the order of the running and queued entries cannot change
        while no job starts, stops, is queued or changes speed (`running`: the running
        jobs' entries, sorted, with their priorities at time `at`); `at` when the policy
        cannot tell."""
        return at

    def _groupable(self, job: JobView) -> bool:
        pinned = job.status == _RUNNING and not job.spec.preemptible
        return not pinned and self.profile(job) is not None

    def _entry_groupable(self, view: ClusterView, entry: Entry) -> bool:
        """`_groupable` of an entry's job: not pinned (`entry[0]`) and with a profile."""
        if not entry[0]:
            return False
        found = self._profiles.get(entry[-1], False)
        if found is False:
            found = self.profile(view.job(entry[-1]))
        return found is not None

    def plan_groups(self, view: ClusterView, selected: list[JobView], capacity: int,
                    formed: list[list[str]] | None = None) -> list[list[JobView]]:
        """Groups of selected jobs (best-ranked member first), in priority order.

        The grouping depends only on which jobs are selected (inside a bucket jobs are
        matched in submit order, so rank changes alone do not regroup them): a round with
        the same selection as an earlier one re-uses its plan, which keeps groups stable
        between rounds and spares the matching. `formed` lists groups of selected jobs that
        stay together (sticky regrouping): the matching starts from them, and each counts
        its GPUs once towards the demand. When no selected job can be grouped (no profiles,
        as on Philly), every job is a group of its own, in the selection's priority order.
        """
        if not any(self._groupable(job) for job in selected):
            return [[job] for job in selected]
        by_bucket: dict[BucketKey, list[JobView]] = {}
        for job in sorted(selected, key=lambda j: (j.submit_time, j.job_id)):
            by_bucket.setdefault(bucket_key(job), []).append(job)
        keys = sorted(by_bucket)
        demand = sum(job.spec.num_gpus for job in selected)
        if formed and self.grouping == "demand":
            formed = self._still_needed(view, selected, formed, demand - capacity)
        initial = self._initial_groups(view, by_bucket, keys, formed) if formed else None
        if initial is not None:
            demand = sum(key[0] * len(groups) for key, groups in zip(keys, initial, strict=True))
        excess = math.inf if self.grouping == "always" else demand - capacity
        cache_key = (excess, tuple(
            (key, tuple((j.job_id, self._groupable(j)) for j in by_bucket[key])) for key in keys
        ), None if initial is None else tuple(tuple(map(tuple, g)) for g in initial))
        grouped = self._plans.get(cache_key)
        if grouped is None:
            grouped = multi_round_grouping(
                [self._bucket(key, by_bucket[key]) for key in keys], self.config,
                excess_gpus=excess, memo=self._memo, initial=initial,
            )
            if len(self._plans) >= 256:
                self._plans.clear()
            self._plans[cache_key] = grouped
        rank = {job.job_id: i for i, job in enumerate(selected)}
        groups = [
            sorted((by_bucket[key][i] for i in members), key=lambda j: rank[j.job_id])
            for key, bucket_groups in zip(keys, grouped, strict=True)
            for members in bucket_groups
        ]
        groups.sort(key=lambda g: rank[g[0].job_id])
        return groups

    @staticmethod
    def _still_needed(view: ClusterView, selected: list[JobView], formed: list[list[str]],
                      excess: int) -> list[list[str]]:
        """The formed groups worth keeping while the selected jobs, alone, want `excess` GPUs
        more than the cluster has: best-ranked first, until their merges cover the excess.
        The others split, so jobs run alone (unslowed) once there is room again."""
        rank = {job.job_id: i for i, job in enumerate(selected)}
        kept = []
        for group in sorted(formed, key=lambda g: min(rank[j] for j in g)):
            if excess <= 0:
                break
            kept.append(group)
            excess -= (len(group) - 1) * view.job(group[0]).spec.num_gpus
        return kept

    @staticmethod
    def _initial_groups(view: ClusterView, by_bucket: dict[BucketKey, list[JobView]],
                        keys: list[BucketKey], formed: list[list[str]]
                        ) -> list[list[list[int]]]:
        """Per bucket, the `formed` groups and every other job alone, as indices into
        `by_bucket` (a group's members share its bucket: only such jobs are ever grouped)."""
        index = {job.job_id: i for jobs in by_bucket.values() for i, job in enumerate(jobs)}
        together: dict[BucketKey, list[list[int]]] = {key: [] for key in keys}
        in_group: set[str] = set()
        for job_ids in formed:
            together[bucket_key(view.job(job_ids[0]))].append(sorted(index[j] for j in job_ids))
            in_group.update(job_ids)
        for key in keys:
            together[key].extend([i] for i, job in enumerate(by_bucket[key])
                                 if job.job_id not in in_group)
            together[key].sort()
        return [together[key] for key in keys]

    def _bucket(self, key: BucketKey, jobs: list[JobView]) -> Bucket:
        rows = []
        solo = []
        counts = []
        for job in jobs:
            profile = self.profile(job)
            believed = profile[1] if profile else ()
            rows.append(pad_stages(believed, self.resource_types))
            solo.append(profile[2] if profile else 0.0)
            counts.append(len(believed) if profile else self.resource_types)
        return Bucket(
            gpus=key[0],
            stages=np.array(rows, dtype=float),
            solo=np.array(solo, dtype=float),
            ranks=list(range(len(jobs))),
            groupable=[self._groupable(j) for j in jobs],
            stage_counts=counts,
        )

    def _regroup(self, view: ClusterView) -> Iterator[Decision]:
        """A full regroup: steps 1–4 over running and queued jobs; may preempt and move.

        A regroup that selects what the last one selected, with no job started, stopped or
        ended and no server lent or returned since that one's decisions, is skipped: it
        would yield nothing (see `_settled_inputs`)."""
        capacity = training_capacity(view)
        selected = self._selected(view, True, capacity)
        inputs = self._settled_inputs(view, selected, capacity)
        if inputs == self._settled:
            return
        formed = self._formed_groups(view, selected) if self.regroup == "sticky" else None
        kept = self._fitting_groups(view, selected, capacity, formed)
        claimed: dict[int, tuple[Placement, int]] = {}
        taken: set[tuple[Placement, int]] = set()
        for index, group in enumerate(kept):
            for job in group:
                slot = (job.placement, self._group_of.get(job.job_id, -1))
                if (job.status == _RUNNING and slot not in taken
                        and job.gpus == job.spec.num_gpus):
                    claimed[index] = slot
                    taken.add(slot)
                    break
        free = physical_free(view, [placement for placement, _ in claimed.values()])
        self._place(view, kept, claimed, free)
        target = self._targets(kept, claimed)
        gaining = self._gaining_slots(target) if self.restart == "group" else set()
        if gaining or any(target.get(job_id, (None,))[0] != slot
                          for job_id, slot in self._group_key.items()):
            for slot, job_ids in self._groups_in_use(view).items():
                for job_id in job_ids:
                    goal = target.get(job_id)
                    if goal is None or goal[0] != slot or slot in gaining:
                        if view.job(job_id).spec.preemptible:
                            self._group_of.pop(job_id, None)
                            yield Preempt(job_id)
        yield from self._start(view, target)
        if self.regroup == "full":  # the inputs as they were, after this regroup's changes
            self._settled = (view.allocations_since(self._alloc_mark)[1], *inputs[1:])

    def _settled_inputs(self, view: ClusterView, selected: list[JobView], capacity: int
                        ) -> tuple[object, ...]:
        """What a full regroup's decisions depend on besides the running jobs' allocations,
        with a mark of those: the allocation log, the servers on loan, the capacity and the
        selection in order, each job with whether it was pinned when selected.

        Right after a regroup under `regroup=full` these are its own *fixed point*: with the
        same selection (hence the same plan: it depends on the selected jobs, their ranks
        and pinned flags only) every group it placed now runs in its slot and is claimed
        there, every group it could not place finds at most the GPUs it found then (best
        fit fails monotonically), every share is already set; so a regroup with equal
        inputs preempts, launches and re-shares nothing. (Under `sticky` the plan also
        depends on the groups running, which the regroup itself changed: never skipped.)
        Queued jobs the selection passes over and the time itself enter only through the
        selection, which is recomputed."""
        _, mark = view.allocations_since(self._alloc_mark)
        pinned = tuple((job.job_id, job.status == _RUNNING and not job.spec.preemptible)
                       for job in selected)
        return mark, self._free.lent, capacity, pinned

    def _formed_groups(self, view: ClusterView, selected: list[JobView]) -> list[list[str]]:
        """The selected members of each running group of two or more: sticky regrouping
        keeps them together, as a long-running interleaved group keeps running in practice
        (Muri §5 regroups every six minutes to limit restarts)."""
        chosen = {job.job_id for job in selected}
        formed = []
        for job_ids in self._groups_in_use(view).values():
            members = [job_id for job_id in job_ids if job_id in chosen]
            if len(members) > 1:
                formed.append(members)
        return formed

    def _gaining_slots(self, target: dict[str, tuple[tuple[Placement, int], float]]
                       ) -> set[tuple[Placement, int]]:
        """Running groups (placement, token) that a job not running in them joins: Muri's
        executor starts a changed group afresh, so every member restarts (the authors'
        simulator charges every member of a group its start-up time, `run_sim.py`)."""
        return {slot for job_id, (slot, _) in target.items()
                if self._group_key.get(job_id) != slot and slot in self._members}

    def _launch_on_free_gpus(self, view: ClusterView) -> Iterator[Decision]:
        """An event round: steps 1–4 over queued jobs on the GPUs no group holds."""
        free = self._free.free
        capacity = sum(free.values())
        if capacity <= 0:
            return
        kept = self._fitting_groups(view, self._selected(view, False, capacity), capacity)
        claimed: dict[int, tuple[Placement, int]] = {}
        for placement in self._place(view, kept, claimed, free):
            self._free.taken(placement)
        yield from self._start(view, self._targets(kept, claimed))

    def _fitting_groups(self, view: ClusterView, selected: list[JobView], capacity: int,
                        formed: list[list[str]] | None = None) -> list[list[JobView]]:
        """Step 3 over the selected jobs (starting from the `formed` groups) and the groups
        that fit `capacity` GPUs, in priority order."""
        groups = self.plan_groups(view, selected, capacity, formed)
        kept: list[list[JobView]] = []
        budget = capacity
        for group in groups:
            gpus = group[0].spec.num_gpus
            pinned = any(j.status == _RUNNING and not j.spec.preemptible for j in group)
            if gpus <= budget or pinned:
                budget -= gpus
                kept.append(group)
        return kept

    def _groups_in_use(self, view: ClusterView) -> dict[tuple[Placement, int], list[str]]:
        """Running jobs by group. Two groups may hold identical slot tuples on one server
        (slots name no GPU indices), so a group is its placement plus the token it was given."""
        in_use: dict[tuple[Placement, int], list[str]] = {}
        for job in view.running.values():
            token = self._group_of.get(job.job_id, -1)
            in_use.setdefault((job.placement, token), []).append(job.job_id)
        return in_use

    def _place(self, view: ClusterView, kept: list[list[JobView]],
               claimed: dict[int, tuple[Placement, int]], free: dict[str, int]
               ) -> list[Placement]:
        """Place the groups not in `claimed` best-fit into `free`, largest first (§5), and
        add them to `claimed` with a new token; those that do not fit wait. Returns the
        placements taken from `free`."""
        placed: list[Placement] = []
        for index in sorted(range(len(kept)), key=lambda i: -kept[i][0].spec.num_gpus):
            if index in claimed:
                continue
            spec = kept[index][0].spec
            placement = fit_placement(
                view, free, spec.num_gpus, gpus_per_worker=spec.gpus_per_worker,
                pools=pool_preference(view, spec),
            )
            if placement is not None:
                self._next_token += 1
                claimed[index] = (placement, self._next_token)
                placed.append(placement)
        return placed

    def _targets(self, kept: list[list[JobView]], claimed: dict[int, tuple[Placement, int]]
                 ) -> dict[str, tuple[tuple[Placement, int], float]]:
        """Each member of a placed group: its (placement, token) and share."""
        target: dict[str, tuple[tuple[Placement, int], float]] = {}
        for index, group in enumerate(kept):
            if index in claimed:
                for job_id, share in self.group_share(group).items():
                    target[job_id] = (claimed[index], share)
        return target

    def _start(self, view: ClusterView, target: dict[str, tuple[tuple[Placement, int], float]]
               ) -> Iterator[Decision]:
        """Launch the queued members of `target` and set every member's share."""
        for job_id, ((placement, token), share) in target.items():
            job = view.job(job_id)
            self._group_of[job_id] = token
            if job.status == _RUNNING:
                self._track(job_id, job.placement)  # its token may be new
            else:
                yield Launch(job_id, placement)
                self._track(job_id, placement)
            if share_changed(job, share):
                yield SetShare(job_id, share)
            if share < 1.0:
                self._slowed.add(job_id)


@register
class MuriS(Muri):
    name = "muri-s"
    description = "Muri with SRSF priority (job durations known): interleaves jobs on GPUs."

    def priority(self, view: ClusterView, job: JobView) -> tuple[float, ...]:
        return (remaining_seconds(job) * job.spec.num_gpus, job.submit_time)

    def selection_horizon(self, view: ClusterView, running: list[Entry], at: float) -> float:
        """SRSF keys of running jobs fall along lines (`JobView.progress_line`), queued
        ones stand still, so the order first changes when a running entry reaches the entry
        before it: the running one before it (same pinned flag) or the queued one. Each
        crossing is bounded from below (the one behind falls from now at its full slope,
        the one ahead falls only if not paused) and keys closer than a billionth count as
        crossed, so float rounding cannot reorder them earlier."""
        jobs = view.running
        queued = self._queued_order
        horizon = math.inf
        ahead: tuple[bool, float, float] | None = None  # (flag, key, slope) of the last one
        for entry in running:
            job = jobs[entry[-1]]
            line = job.progress_line
            if line is None:
                return at
            slope = line[2] * prediction_scale(job) * job.spec.num_gpus
            key = entry[1][0]
            margin = 1e-9 * max(abs(key), 1.0)
            if ahead is not None and ahead[0] == entry[0]:
                gap = key - ahead[1] - margin
                if gap <= 0:
                    return at
                if slope > ahead[2]:
                    horizon = min(horizon, at + gap / (slope - ahead[2]))
            if entry[0]:
                before = bisect_left(queued, entry) - 1
                if before >= 0:
                    gap = key - queued[before][1][0] - margin
                    if gap <= 0:
                        return at
                    if slope > 0:
                        horizon = min(horizon, at + gap / slope)
            ahead = (entry[0], key, slope if line[1] <= at else 0.0)
        return horizon


@register
class MuriL(Muri):
    name = "muri-l"
    description = "Muri with 2D-LAS priority (durations unknown): interleaves jobs on GPUs."
    params = (*Muri.params, *LAS_QUEUE_PARAMS)  # Tiresias' queue defaults, one definition
    thresholds: str
    promote_knob: float

    def __init__(self, **values: object) -> None:
        super().__init__(**values)
        self._las = Tiresias(thresholds=self.thresholds, promote_knob=self.promote_knob)

    def priority(self, view: ClusterView, job: JobView) -> tuple[float, ...]:
        return (self._las.queue_index(view, job), job.submit_time)

    def selection_horizon(self, view: ClusterView, running: list[Entry], at: float) -> float:
        """A running job's 2D-LAS queue changes only when its attained service crosses a
        threshold: the horizon is a second before the first crossing after `at` (`at` if
        one came already)."""
        jobs = view.running
        horizon = math.inf
        for entry in running:
            job = jobs[entry[-1]]
            if self._las.queue_index(view, job) != entry[1][0]:
                return at
            horizon = min(horizon, self._las.demotion_time(view, job) - 1.0)
        return horizon

    def priority_frozen_while_queued(self) -> bool:
        return self.promote_knob <= 0  # promotion changes a waiting job's queue
