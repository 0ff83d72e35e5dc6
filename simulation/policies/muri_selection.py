"""Muri's selection (Algorithm 1, lines 1–7): which running and queued jobs a round groups.

1. Running and queued jobs are ordered by priority: SRSF (remaining time × GPUs, `muri-s`)
   or Tiresias' discretised 2D-LAS (`muri-l`, the same queue logic and queue defaults as
   `tiresias`); running jobs come first on ties, pinned (non-preemptible) running jobs
   before all.
2. The first n jobs "that can be fully grouped and fully utilise the cluster" are picked:
   walking the order with the cluster's GPUs as a budget, each job that still fits takes
   its GPUs and claims itself plus the next k − 1 jobs of its bucket (same GPU count and
   constraints), so at most k jobs can end up on each GPU set (Muri's simulator does the
   same).

A round reads only what it needs (issue #22): the queued jobs of each bucket stay sorted
across rounds (a queued job's priority cannot change while it waits), each round sorts the
running jobs afresh, merges them with as much of each bucket's queue as the walk can read,
and walks the buckets' leaders in the order one sort of every job would give, until the
cluster is claimed. A queue out of trace order
(`ClusterView.queue_in_submit_order`) or Muri-L with promotion, whose keys change while
jobs wait, sort every job as written (`select`).

A full regroup re-uses the last full selection while nothing it depends on changed (no
job started, stopped, ended, was queued or changed speed; the same capacity and servers on
loan) and the priority order cannot have changed yet (`selection_horizon`, per priority);
the answer is the one recomputing gives (issue #16).
"""

from __future__ import annotations

import heapq
from bisect import bisect_left, insort
from dataclasses import dataclass
from itertools import chain

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


class _Stream:
    """One bucket's jobs in the round's order: its running jobs (sorted this round) merged
    with its queued jobs (kept sorted across rounds), as far as the walk can read.

    A walk gives a bucket of g-GPU jobs at most capacity // g leaders, each claiming itself
    and the next k - 1 entries while they are groupable, so it reads at most
    (capacity // g) · k + 1 entries: only that prefix of the queue is merged (one sort of
    two sorted runs, in C), and of it only the queued entries before the last running one
    are sorted in (a sort compares every entry it is given; those after follow as they
    are). A walk reading further (past ungroupable entries) merges the rest (`grow`)."""

    __slots__ = ("gpus", "running", "queued", "entries", "whole", "head", "reached")

    def __init__(self, gpus: int, running: list[Entry], queued: list[Entry], needed: int
                 ) -> None:
        self.gpus = gpus
        self.running = running
        self.queued = queued
        self.whole = not running or len(queued) <= needed
        if not running:
            self.entries = queued  # read only
        else:  # the first `needed` of both merged: no later queued entry comes before them
            after = bisect_left(queued, running[-1])  # queued entries after every running one
            if self.whole:
                self.entries = sorted(running + queued[:after]) + queued[after:]
            else:
                entries = sorted(running + queued[:min(after, needed)])
                self.entries = (entries[:needed] if len(entries) >= needed else
                                entries + queued[after:after + needed - len(entries)])
        self.head = 0  # index of the bucket's first unclaimed entry, once it leads
        self.reached: list[Entry] = []  # its claimed entries, in order

    def grow(self) -> list[Entry]:
        """Every entry of the bucket, merged."""
        if not self.whole:
            self.whole = True
            self.entries = sorted(self.running + self.queued)
        return self.entries


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


class MuriSelection:
    """The selection's state and steps, mixed into `Muri` (which sets `max_group_size`,
    `profile`, the log marks and `_free`)."""

    max_group_size: int

    def _reset_selection(self) -> None:
        self._waiting: dict[BucketKey, list[Entry]] = {}  # queued jobs per bucket, sorted
        self._entry: dict[str, tuple[BucketKey, Entry]] = {}  # queued job -> its entry
        self._kept_selection: _KeptSelection | None = None  # see `_kept_running_selection`
        # running job -> what `running_priorities` keeps of it until its progress resets
        self._priority_lines: dict[str, tuple] = {}
        self._running_kinds: dict[str, tuple[BucketKey, bool]] = {}  # job -> bucket, preemptible

    def _forget_lines(self, job_ids: list[str]) -> None:
        """Drop the kept priority lines of jobs whose progress reset or that stopped."""
        lines = self._priority_lines
        for job_id in job_ids:
            lines.pop(job_id, None)

    def priority(self, view: ClusterView, job: JobView) -> tuple[float, ...]:
        raise NotImplementedError

    def priority_frozen_while_queued(self) -> bool:
        """Whether a queued job's `priority` stays as it was when it entered the queue."""
        return True

    def running_priorities(self, view: ClusterView) -> list[tuple[float, ...]]:
        """`priority` of every running job, in `view.running`'s order. A policy whose
        running keys follow lines between progress resets may keep the lines in
        `_priority_lines` (dropped at each reset) instead of reading every job afresh."""
        return [self.priority(view, job) for job in view.running.values()]

    def selection_horizon(self, view: ClusterView, running: list[Entry], at: float) -> float:
        """A time before which the order of the running and queued entries cannot change
        while no job starts, stops, is queued or changes speed (`running`: the running
        jobs' entries, sorted, with their priorities at time `at`); `at` when the policy
        cannot tell."""
        return at

    def _wait(self, view: ClusterView, job: JobView) -> None:
        """Index queued `job` under its bucket, replacing an entry from an earlier wait."""
        self._unwait(job.job_id)
        key = bucket_key(job)
        entry = (True, self.priority(view, job), 1, job.trace_index, job.job_id)
        insort(self._waiting.setdefault(key, []), entry)
        self._entry[job.job_id] = (key, entry)

    def _unwait(self, job_id: str) -> None:
        found = self._entry.pop(job_id, None)
        if found is not None:
            waiting = self._waiting[found[0]]
            del waiting[bisect_left(waiting, found[1])]

    def _sorted_walk(self, view: ClusterView) -> bool:
        """Whether the kept queue order is the one a fresh sort gives (see the class)."""
        return self.priority_frozen_while_queued() and view.queue_in_submit_order()

    def _reach(self, view: ClusterView, running: dict[BucketKey, list[Entry]], capacity: int
               ) -> list[Entry]:
        """The entries `select` claims, in order, walking the buckets lazily.

        `select` skips a job larger than its remaining budget and claims, with each leader,
        the next k - 1 groupable jobs of its bucket; a bucket whose jobs no longer fit the
        budget is done. Claims stay inside a bucket, so each bucket's next leader is its
        first unclaimed entry: only the buckets' leaders are compared, in a heap.
        """
        k = self.max_group_size
        streams: list[_Stream] = []
        heads: list[tuple[Entry, int]] = []
        for key in {*running, *self._waiting}:
            if key[0] <= capacity:
                stream = _Stream(key[0], running.get(key, []), self._waiting.get(key, []),
                                 capacity // key[0] * k + 1)
                if stream.entries:
                    heads.append((stream.entries[0], len(streams)))
                    streams.append(stream)
        heapq.heapify(heads)  # entries are unique: the stream index never breaks a tie
        claimed: set[str] = set()
        # `_entry_groupable` inlined (a call per entry read): a profile (a tuple) is
        # truthy, None is not, and False means not looked up yet.
        profiles = self._profiles
        groupable = self._entry_groupable
        budget = capacity
        while heads and budget > 0:
            entry, at = heads[0]
            stream = streams[at]
            if stream.gpus > budget:
                heapq.heappop(heads)
                continue  # no job of this bucket fits any more
            budget -= stream.gpus
            claimed.add(entry[-1])
            reached = stream.reached
            reached.append(entry)
            entries = stream.entries
            index = stream.head
            if entry[0] and ((found := profiles.get(entry[-1], False))
                             or (found is False and groupable(view, entry))):
                room, ahead = k - 1, index + 1
                while room:
                    if ahead >= len(entries) and ahead >= len(entries := stream.grow()):
                        break
                    other = entries[ahead]
                    if other[-1] not in claimed and other[0] and (
                            (found := profiles.get(other[-1], False))
                            or (found is False and groupable(view, other))):
                        claimed.add(other[-1])
                        reached.append(other)
                        room -= 1
                    ahead += 1
            index += 1
            while True:  # the bucket's next leader: its first unclaimed entry
                if index >= len(entries) and index >= len(entries := stream.grow()):
                    heapq.heappop(heads)
                    break
                if entries[index][-1] not in claimed:
                    stream.head = index
                    heapq.heapreplace(heads, (entries[index], at))  # one sift, not two
                    break
                index += 1
        return sorted(chain.from_iterable(stream.reached for stream in streams))

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
                self._running_entries(view, running)
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

    def _running_entries(self, view: ClusterView, running: dict[BucketKey, list[Entry]]
                         ) -> None:
        """Fill `running` with the running jobs' entries per bucket, each bucket sorted."""
        kinds = self._running_kinds
        jobs = view.running
        for position, (job_id, priority) in enumerate(
                zip(jobs.keys(), self.running_priorities(view), strict=True)):
            kind = kinds.get(job_id)
            if kind is None:
                job = jobs[job_id]
                kind = kinds[job_id] = (bucket_key(job), job.spec.preemptible)
            running.setdefault(kind[0], []).append((kind[1], priority, 0, position, job_id))
        for entries in running.values():
            entries.sort()

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
            running = sorted(chain.from_iterable(kept.running.values()))  # sorted runs
            kept.horizon = self.selection_horizon(view, running, kept.at)
        return kept.selected if view.now < kept.horizon else None

    def _groupable(self, job: JobView) -> bool:
        """Whether `job` may share GPUs: it has a profile and is not pinned (a running job
        that may not be preempted)."""
        return self.profile(job) is not None and (job.spec.preemptible
                                                  or job.status != _RUNNING)

    def _entry_groupable(self, view: ClusterView, entry: Entry) -> bool:
        """`_groupable` of an entry's job: not pinned (`entry[0]`) and with a profile."""
        if not entry[0]:
            return False
        found = self._profiles.get(entry[-1], False)
        if found is False:
            found = self.profile(view.job(entry[-1]))
        return found is not None
