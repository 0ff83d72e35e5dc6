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
`ties=keep` (default): among the Blossom matchings of maximum weight, the one keeping
most running pairs together wins (`simulation.interleaving_grouping.max_weight_pairs`). Algorithm 1
maximises total γ and says nothing of ties, which are frequent (jobs of one model have one
profile); picking among them at random swapped partners between alike jobs at every
regroup, and each swap restarts two groups. Measured (`benchmarks/README.md`): restarts per
job fall by 21-38 % on muri_trace1-4 (e.g. muri-l trace2 34.6 to 21.3) and mean JCT by
0.1-2.9 %. `ties=any` gives the earlier answers. A bucket above `exact_matching_limit`
matches over a sparse graph, to which the edges between jobs running in one group are
added, so that this tie-break can keep them (else most of a big bucket's running pairs
were no edge once a job joined or left it, and split at no gain).
`restart=group` (default): Muri's executor starts a changed group afresh (§5: "terminates
old jobs and starts new jobs according to the plan") and the authors' simulator charges
every member of a group its start-up time (Rivendile/Muri@4e69a78
`simulator/run_sim.py:1482-1488`), so every running member of a group that a job joins
restarts (one preemption and the engine's `restart_overhead` each); `restart=moved`
restarts only the jobs whose GPUs change.

A round's steps, one module each:

1–2. `simulation.policies.muri_selection`: order running and queued jobs by priority (SRSF
     for `muri-s`, 2D-LAS for `muri-l`) and pick the first that can fill the cluster in
     k-job groups (Algorithm 1, lines 1–7);
3.   `simulation.policies.muri_grouping`: group them with Blossom (Algorithm 1), keep the
     groups that fit, and set each member's rate from its group's iteration time;
4.   `simulation.policies.muri_placement`: place the kept groups, preempt, restart, launch
     and set shares.
"""

from __future__ import annotations

import math
from bisect import bisect_left
from collections.abc import Iterator, Mapping
from itertools import chain
from typing import ClassVar

from simulation.decisions import Decision, Placement, Preempt
from simulation.errors import InputError
from simulation.interleaving_grouping import GroupingConfig
from simulation.policies.base import Param, Policy, register
from simulation.policies.muri_grouping import MuriGrouping, group_overhead_factors
from simulation.policies.muri_placement import MuriPlacement, Slot
from simulation.policies.muri_selection import Entry, MuriSelection
from simulation.policies.ordering import training_capacity
from simulation.policies.srtf import prediction_scale, remaining_seconds
from simulation.policies.tiresias import LAS_QUEUE_PARAMS, Tiresias
from simulation.shared_placement import PhysicalFree, physical_free
from simulation.state import JobStatus
from simulation.view import ClusterView, JobView

_RUNNING = JobStatus.RUNNING


class Muri(MuriSelection, MuriGrouping, MuriPlacement, Policy):
    """Shared mechanics of Muri-S and Muri-L; subclasses define `priority`.

    Work in proportion to what changed (issue #16), each giving the answer recomputing
    gives: a full regroup whose selection (in order, with pinned flags), capacity and loaned
    servers equal the last regroup's, with no job started, stopped or ended since its
    decisions, is skipped, as it would decide nothing (`_settled_inputs`; about 70 % of
    regroups on muri_trace2, whose running jobs reorder without changing the selection);
    so is one whose kept groups are the last one's though the selection's order is not
    (`_settled_outcome`; another 18 % there, after the selection and a remembered plan);
    the selection itself is re-used while the priority order cannot have changed
    (`MuriSelection._kept_running_selection`, bounded by each policy's
    `selection_horizon`).
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
        Param("ties", str, "keep", "keep: among equally good Blossom matchings the one "
              "keeping running groups together wins; any: whichever Blossom finds",
              choices=("keep", "any")),
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
    ties: str
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
        self._init_grouping(self.rng.getrandbits(64))
        self._group_of: dict[str, int] = {}  # running job -> token of the group it runs in
        # placement -> the negative token of the jobs found running there without one (kept
        # across snapshots: a token stays with its job, see `MuriPlacement._track`)
        self._untokened: dict[Placement, int] = {}
        self._next_token = 0
        self._last_regroup = -math.inf  # when the last full regroup ran
        self._view: ClusterView | None = None

    # -- what the policy keeps between rounds ------------------------------------------------

    def _reset(self, view: ClusterView) -> None:
        """Index `view` from scratch (a new run or a snapshot)."""
        self._view = view
        _, self._alloc_mark = view.allocations_since(0)
        _, self._queue_mark = view.queued_since(0)
        _, self._progress_mark = view.progress_resets_since(0)
        self._reset_selection()
        self._reset_placement()
        # Every job found running that may not be preempted: while there is none, no
        # selection holds a pinned job (`_settled_inputs`).
        self._unpreemptible: set[str] = set()
        for job in view.running.values():
            self._seen_running(job)
            self._track(job.job_id, job.placement)
            if job.share < 1.0:
                self._slowed.add(job.job_id)
        self._free = PhysicalFree(view, self._riders)
        self._dirty.clear()
        for job in view.queue.values():
            self._wait(view, job)
        self._settled: tuple[object, ...] | None = None  # see `_settled_inputs`
        self._settled_kept: tuple[object, ...] | None = None  # see `_settled_outcome`

    def _sync(self, view: ClusterView) -> None:
        """Catch up with the jobs that arrived, ended, started or stopped since last round."""
        if view is not self._view:
            self._reset(view)
        changed, self._alloc_mark = view.allocations_since(self._alloc_mark)
        for job_id in dict.fromkeys(changed):
            job = view.job(job_id)
            self._unwait(job_id)  # a job stopped since is in the queue log too
            if job.status == _RUNNING:
                self._seen_running(job)
                self._track(job_id, job.placement)
            else:
                self._untrack(job_id)
                self._slowed.discard(job_id)
                if job.status == JobStatus.DONE:
                    self._group_of.pop(job_id, None)
        self._free.refresh(view, self._dirty, self._riders)  # servers lent or returned too
        self._dirty.clear()
        queued, self._queue_mark = view.queued_since(self._queue_mark)
        reset, self._progress_mark = view.progress_resets_since(self._progress_mark)
        self._forget_lines(changed)
        self._forget_lines(reset)
        queue = view.queue
        for job_id in dict.fromkeys(queued):
            if job_id in queue:
                self._wait(view, queue[job_id])

    def _seen_running(self, job: JobView) -> None:
        """Note a running job (each is seen at a reset or in the allocation log)."""
        if not job.spec.preemptible:
            self._unpreemptible.add(job.job_id)

    def _plan_epoch(self, view: ClusterView) -> tuple[ClusterView, int, int]:
        """What plans read of the state besides the selected jobs: the view, its allocation
        log (every job started, stopped or ended) and the count of group changes (a pinned
        job may change group in place)."""
        return view, view.allocations_since(self._alloc_mark)[1], self._retokened

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
        outcome = self._settled_outcome(inputs, kept)
        if outcome is not None and outcome == self._settled_kept:
            self._settled = inputs  # this regroup decides nothing either: a fixed point too
            return
        claimed: dict[int, Slot] = {}
        taken: set[int] = set()  # tokens of the running groups claimed
        group_key = self._group_key
        for index, group in enumerate(kept):
            for job in group:
                if job.status == _RUNNING and job.gpus == job.spec.num_gpus:
                    token = group_key[job.job_id]
                    if token not in taken:
                        claimed[index] = (job.placement, token)
                        taken.add(token)
                        break
        free = physical_free(view, [placement for placement, _ in claimed.values()])
        self._place(view, kept, claimed, free)
        target = self._targets(kept, claimed)
        gaining = self._gaining_groups(target) if self.restart == "group" else set()
        if gaining or any((goal := target.get(job_id)) is None or goal[0][1] != token
                          for job_id, token in group_key.items()):
            for token, job_ids in self._groups_in_use(view).items():
                for job_id in job_ids:
                    goal = target.get(job_id)
                    if goal is None or goal[0][1] != token or token in gaining:
                        if view.job(job_id).spec.preemptible:
                            self._group_of.pop(job_id, None)
                            yield Preempt(job_id)
        yield from self._start(view, target)
        if self.regroup == "full":  # the inputs as they were, after this regroup's changes
            mark = view.allocations_since(self._alloc_mark)[1]
            self._settled = (mark, *inputs[1:])
            self._settled_kept = None if outcome is None else (mark, *outcome[1:])

    def _settled_inputs(self, view: ClusterView, selected: list[JobView], capacity: int
                        ) -> tuple[object, ...]:
        """What a full regroup's decisions depend on besides the running jobs' allocations,
        with a mark of those: the allocation log, the servers on loan, the capacity, the
        selection in order and its pinned jobs (views compare by identity: one per job).

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
        pinned = tuple(job for job in selected if not job.spec.preemptible
                       and job.status == _RUNNING) if self._unpreemptible else ()
        return mark, self._free.lent, capacity, tuple(selected), pinned

    def _settled_outcome(self, inputs: tuple[object, ...], kept: list[list[JobView]]
                         ) -> tuple[object, ...] | None:
        """The allocation mark, servers on loan, capacity and kept groups (each with its
        members in order; the groups in any order) of a full regroup under
        `regroup=full` with no pinned job selected; None otherwise.

        A regroup with the outcome of the last one (the selection may differ: running jobs
        reordered, most often) decides nothing either, as step 4 reads only the kept
        groups and the state: every group the last one placed runs whole in its own token,
        so it claims its placement whichever member or group comes first; those it could
        not place find at most the GPUs they found then; a group's members in the same
        order get the same shares. (A pinned job may keep running outside its group, so
        group order could decide claims: then only `_settled_inputs` skips.)"""
        if self.regroup != "full" or inputs[4]:
            return None
        return (inputs[0], inputs[1], inputs[2], frozenset(map(tuple, kept)))

    def _launch_on_free_gpus(self, view: ClusterView) -> Iterator[Decision]:
        """An event round: steps 1–4 over queued jobs on the GPUs no group holds."""
        free = self._free.free
        capacity = sum(free.values())
        if capacity <= 0:
            return
        kept = self._fitting_groups(view, self._selected(view, False, capacity), capacity)
        claimed: dict[int, Slot] = {}
        for placement in self._place(view, kept, claimed, free):
            self._free.taken(placement)
        yield from self._start(view, self._targets(kept, claimed))


@register
class MuriS(Muri):
    name = "muri-s"
    description = "Muri with SRSF priority (job durations known): interleaves jobs on GPUs."

    def priority(self, view: ClusterView, job: JobView) -> tuple[float, ...]:
        return (remaining_seconds(job) * job.spec.num_gpus, job.submit_time)

    def running_priorities(self, view: ClusterView) -> list[tuple[float, ...]]:
        """`priority` from each job's `JobView.progress_line`, kept until its next progress
        reset: (remaining work × prediction scale) × GPUs as `remaining_seconds` computes
        it, to the bit, without reading the job each round."""
        now = view.now
        lines = self._priority_lines
        jobs = view.running
        keys = []
        for job_id in jobs.keys():
            line = lines.get(job_id) or self._line(jobs, job_id)
            if line is None:
                keys.append(self.priority(view, jobs[job_id]))
                continue
            left, since, rate, scale, gpus, submit = line
            if now > since and rate > 0:
                left -= rate * (now - since)
            keys.append(((left if left > 0.0 else 0.0) * scale * gpus, submit))
        return keys

    def _line(self, jobs: Mapping[str, JobView], job_id: str
              ) -> tuple[float, float, float, float, int, float] | None:
        """Running `job_id`'s kept (left, since, rate, prediction scale, GPUs, submit time),
        read from its `JobView.progress_line` if not kept yet; None while it has none."""
        line = self._priority_lines.get(job_id)
        if line is None:
            job = jobs[job_id]
            progress = job.progress_line
            if progress is None:
                return None
            line = self._priority_lines[job_id] = (
                *progress, prediction_scale(job), job.spec.num_gpus, job.submit_time)
        return line

    def selection_horizon(self, view: ClusterView, running: list[Entry], at: float) -> float:
        """SRSF keys of running jobs fall along lines (`JobView.progress_line`), queued
        ones stand still, so the order first changes when a running entry reaches the entry
        before it: the running one before it (same pinned flag) or the queued one. Each
        crossing is bounded from below (the one behind falls from now at its full slope,
        the one ahead falls only if not paused) and keys closer than a billionth count as
        crossed, so float rounding cannot reorder them earlier."""
        jobs = view.running
        if not running:
            return math.inf
        # The queued entries that may come just before a preemptible running one (pinned
        # ones sort first and are never passed by a queued one): per bucket, from the last
        # one before the first such entry to the last running one, in one sorted list (a
        # sort of sorted runs, in C), instead of a bisection of every bucket per entry.
        first = next((entry for entry in running if entry[0]), running[-1])
        # Their priorities alone: a queued entry precedes a running one of the same pinned
        # flag exactly when its priority is lower (on a tie the running one comes first).
        waiting = [entry[1] for entry in sorted(chain.from_iterable(
            entries[max(0, bisect_left(entries, first) - 1):bisect_left(entries, running[-1])]
            for entries in self._waiting.values()))]
        horizon = math.inf
        lines = self._priority_lines
        ahead = None  # the pinned flag, key and slope of the entry before, once there is one
        ahead_key = ahead_slope = 0.0
        index = 0  # where the entry would go among `waiting` (entries rise: so does it)
        for entry in running:
            line = lines.get(entry[-1]) or self._line(jobs, entry[-1])
            if line is None:
                return at
            slope = line[2] * line[3] * line[4]  # rate × prediction scale × GPUs
            key = entry[1][0]
            size = key if key >= 0.0 else -key
            margin = 1e-9 * (size if size > 1.0 else 1.0)
            flag = entry[0]
            if ahead is not None and ahead == flag:
                gap = key - ahead_key - margin
                if gap <= 0:
                    return at
                if slope > ahead_slope and (until := at + gap / (slope - ahead_slope)) < horizon:
                    horizon = until
            if flag and (index := bisect_left(waiting, entry[1], index)):  # the queued one before
                gap = key - waiting[index - 1][0] - margin
                if gap <= 0:
                    return at
                if slope > 0 and (until := at + gap / slope) < horizon:
                    horizon = until
            ahead, ahead_key, ahead_slope = flag, key, slope if line[1] <= at else 0.0
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

    def running_priorities(self, view: ClusterView) -> list[tuple[float, ...]]:
        """`priority` with each job's queue kept until a second before its next demotion
        (as `selection_horizon` bounds it) or its next progress reset. Only asked while
        promotion is off (`_sorted_walk`), when a running job's queue follows its attained
        service alone."""
        now = view.now
        lines = self._priority_lines
        jobs = view.running
        keys = []
        for job_id in jobs.keys():
            line = lines.get(job_id)
            if line is None or now >= line[1]:
                job = jobs[job_id]
                line = lines[job_id] = (self.priority(view, job),
                                        self._las.demotion_time(view, job) - 1.0)
            keys.append(line[0])
        return keys

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
