"""Shared mechanics of queue-ordering policies, so each policy module is only its order.

`launch_in_order` serves non-preemptive policies (FIFO, SJF): walk the queue in priority
order and launch what fits. `preemptive_schedule` serves preemptive ones (SRTF, SRSF,
Tiresias): choose the highest-priority set of jobs whose GPUs fit the cluster, preempt the
running jobs outside it, launch the queued jobs inside it. `schedule_by_priority` makes the
same decisions with work that follows what changed rather than how many jobs run or wait:
`QueueOrder` keeps the queue sorted, `RunningOrder` the running jobs when their keys change
only at known times, `RemainingTimeOrder` evaluates remaining-time keys for all running jobs
at once (tests/simulation/test_priority_order_equivalence.py checks all three).
"""

from __future__ import annotations

import heapq
import math
from bisect import bisect_left, insort
from collections.abc import Callable, Iterable, Iterator, Sequence
from itertools import accumulate
from typing import Any

import numpy as np

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
    """Launch queued jobs in `ordered`; with `blocking`, stop at the first that does not fit.

    The walk also stops once the free GPUs are fewer than any queued job asks for: no job
    further on could be launched."""
    free = sum(view.free_gpus(p.name) for p in view.spec.pools)
    smallest = view.smallest_queued_gpus()  # changes only when a launch leaves the queue
    for job in ordered:
        if free <= 0 or free < smallest:
            return
        launch = place_requested(view, job) if job.spec.num_gpus <= free else None
        if launch is None:
            if blocking:
                return
            continue
        free -= job.spec.num_gpus
        yield launch
        smallest = view.smallest_queued_gpus()


def training_capacity(view: ClusterView) -> int:
    """GPUs that can host training now (inference servers count only while on loan)."""
    return view.available_gpus()


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
QueueEntry = tuple[SortKey, int, str, JobView]  # (sort key, sequence number, job id, job)


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
        self._view: ClusterView | None = None
        self._mark = 0  # position in the view's log of queued jobs
        self._entries: list[QueueEntry] = []
        self._by_size: dict[int, list[QueueEntry]] = {}  # the same entries, per GPUs asked
        self._live: dict[str, QueueEntry] = {}  # job id -> its current entry
        self._forgotten: list[QueueEntry] = []
        self._seq = 0

    def forget(self, job_id: str) -> None:
        """`job_id` left the queue (the policy launched it). Its entry is removed at the next
        `entries` (not now: a walk over them may be under way), so the front of the order,
        where launched jobs were, holds no dead entries to step over."""
        entry = self._live.pop(job_id, None)
        if entry is not None:
            self._forgotten.append(entry)

    def _sync(self, view: ClusterView) -> None:
        """Drop forgotten entries, enter the jobs queued since the last call (the view's log
        names them), and compact once dead entries outnumber live ones."""
        if view is not self._view:  # another run or snapshot: start afresh
            self._view, self._mark, self._entries, self._live = view, 0, [], {}
            self._by_size, self._forgotten = {}, []
        for entry in self._forgotten:
            for entries in (self._entries, self._by_size[entry[3].spec.num_gpus]):
                at = bisect_left(entries, entry)
                if at < len(entries) and entries[at] is entry:
                    del entries[at]
        self._forgotten.clear()
        queue = view.queue
        waiting = queue.keys()
        live = self._live
        queued, self._mark = view.queued_since(self._mark)
        for job_id in dict.fromkeys(queued):
            if job_id in waiting:
                job = queue[job_id]
                self._seq += 1
                entry = ((self._key(job), job.trace_index), self._seq, job_id, job)
                insort(self._entries, entry)
                insort(self._by_size.setdefault(job.spec.num_gpus, []), entry)
                live[job_id] = entry
        if len(self._entries) > 2 * len(live) + 64:
            for job_id in live.keys() - waiting:
                del live[job_id]
            self._entries = [e for e in self._entries if live.get(e[2]) is e]
            self._by_size = {size: [e for e in entries if live.get(e[2]) is e]
                             for size, entries in self._by_size.items()}

    def entries(self, view: ClusterView) -> Iterator[tuple[SortKey, JobView]]:
        """(sort key, job) for every waiting job, best first; a job that left the queue
        some other way than `forget` is dropped when met."""
        self._sync(view)
        waiting = view.queue.keys()
        live = self._live
        for entry in self._entries:
            job_id = entry[2]
            if live.get(job_id) is entry:
                if job_id in waiting:
                    yield entry[0], entry[3]
                else:
                    del live[job_id]

    def jobs(self, view: ClusterView) -> Iterator[JobView]:
        return (job for _, job in self.entries(view))

    def fitting(self, view: ClusterView) -> FittingWalk:
        """The waiting jobs as a walk that passes over those larger than a budget."""
        self._sync(view)
        waiting, live = view.queue.keys(), self._live
        return FittingWalk(self._by_size,
                           lambda entry: live.get(entry[2]) is entry and entry[2] in waiting)


class FittingWalk:
    """Queued jobs best first, each asking for at most the budget given, for a greedy walk
    whose budget only shrinks: one sorted run per job size, merged on demand, so the jobs
    too large for the budget are never stepped over one by one."""

    def __init__(
        self, runs: dict[int, list[QueueEntry]], alive: Callable[[QueueEntry], bool]
    ) -> None:
        self._runs = sorted(runs.items())  # (size, entries), smallest size first
        self._alive = alive  # constant during a walk: the queue changes after it
        self._at = [0] * len(self._runs)
        self._checked = [-1] * len(self._runs)  # the position in each run last found alive

    @classmethod
    def of(cls, queued: Iterable[tuple[SortKey, JobView]]) -> FittingWalk:
        """A walk over (sort key, job) pairs given in priority order."""
        runs: dict[int, list[QueueEntry]] = {}
        for seq, (sort_key, job) in enumerate(queued):
            runs.setdefault(job.spec.num_gpus, []).append((sort_key, seq, job.job_id, job))
        return cls(runs, lambda entry: True)

    def first_key(self) -> SortKey | None:
        """The sort key of the best queued job not yet given, whatever its size."""
        run = self._best(math.inf)
        return None if run < 0 else self._runs[run][1][self._at[run]][0]

    def next_within(self, budget: float) -> tuple[SortKey, JobView] | None:
        """The best queued job not yet given that asks for at most `budget` GPUs."""
        run = self._best(budget)
        if run < 0:
            return None
        entry = self._runs[run][1][self._at[run]]
        self._at[run] += 1
        return entry[0], entry[3]

    def _best(self, budget: float) -> int:
        """The run whose next live entry is the best of the runs of sizes within `budget`
        (-1: none); dead entries met on the way are stepped over for good."""
        best: QueueEntry | None = None
        best_run = -1
        alive, at, checked = self._alive, self._at, self._checked
        for run, (size, entries) in enumerate(self._runs):
            if size > budget:
                break
            i = at[run]
            if checked[run] != i:
                while i < len(entries) and not alive(entries[i]):
                    i += 1
                at[run] = checked[run] = i
            if i < len(entries) and (best is None or entries[i] < best):
                best, best_run = entries[i], run
        return best_run


class RunningOrder:
    """Running jobs kept in priority order across rounds, for keys that change only at
    times the policy can name (Tiresias' queue changes when attained service crosses a
    threshold) or when the job's GPUs change.

    Each round `sync` re-keys only the jobs the engine's allocation log names (launched,
    stopped, resized, moved, finished) and those whose key-change time, less `slack`, has
    passed; such a job is re-keyed every round until its key has changed. So a round costs
    what changed, not the number of running jobs, and the order is exactly the one a fresh
    sort by `key` gives.
    """

    def __init__(
        self,
        key: Callable[[JobView], Any],
        changes_at: Callable[[ClusterView, JobView], float],
        *,
        slack: float,
    ) -> None:
        """`changes_at(view, job)` is when the running job's key next changes (inf: never);
        `slack` bounds how far float rounding can move that time between two rounds."""
        self._key = key
        self._changes_at = changes_at
        self._slack = slack
        self._reset(None)

    def _reset(self, view: ClusterView | None) -> None:
        self._view = view
        self._mark = 0
        self._keys: list[SortKey] = []  # of the preemptible running jobs, sorted
        self._ids: list[str] = []  # their ids, in the same order
        self._gpus: list[int] = []  # their GPUs, in the same order
        self._entry: dict[str, SortKey] = {}
        self._pinned: dict[str, int] = {}  # non-preemptible running jobs (not in `_entries`)
        self._pinned_gpus = 0
        self._due: list[tuple[float, int, str]] = []  # (re-key from, stamp, job id)
        self._stamp: dict[str, int] = {}
        self._seq = 0
        # GPUs of the last k jobs of `_ids` at position k, right for k <= `_behind_valid`
        # (a launched job enters near the front of the order, so these sums stay right)
        self._behind = [0]
        self._behind_valid = 0

    def sync(self, view: ClusterView) -> None:
        """Bring the order up to date with `view` (a new view starts from scratch)."""
        if view is not self._view:
            self._reset(view)
        changed, self._mark = view.allocations_since(self._mark)
        running = view.running
        live = running.keys()
        for job_id in dict.fromkeys(changed):
            self._drop(job_id)
            if job_id in live:
                self._add(view, running[job_id])
        now, due, again = view.now, self._due, []
        while due and due[0][0] <= now:
            _, stamp, job_id = heapq.heappop(due)
            if self._stamp.get(job_id) == stamp:
                self._drop(job_id)
                again.append(running[job_id])
        for job in again:
            self._add(view, job)

    def next_change(self, view: ClusterView) -> float | None:
        """The earliest `changes_at` over the running jobs, as a fresh scan computes it now:
        evaluated afresh for the jobs whose last computed time is within twice the slack of
        the earliest one, so rounding cannot pick another job's time."""
        self.sync(view)
        due, popped = self._due, []
        while due and self._stamp.get(due[0][2]) != due[0][1]:
            heapq.heappop(due)
        if not due:
            return None
        horizon = due[0][0] + 2 * self._slack
        while due and due[0][0] <= horizon:
            entry = heapq.heappop(due)
            if self._stamp.get(entry[2]) == entry[1]:
                popped.append(entry)
        for entry in popped:
            heapq.heappush(due, entry)
        running = view.running
        return min(self._changes_at(view, running[job_id]) for _, _, job_id in popped)

    def _add(self, view: ClusterView, job: JobView) -> None:
        job_id = job.job_id
        if not job.spec.preemptible:
            self._pinned[job_id] = job.gpus
            self._pinned_gpus += job.gpus
            return
        sort_key = (self._key(job), job.trace_index)
        at = bisect_left(self._keys, sort_key)
        self._keys.insert(at, sort_key)
        self._ids.insert(at, job_id)
        self._gpus.insert(at, job.gpus)
        self._entry[job_id] = sort_key
        self._behind_valid = min(self._behind_valid, len(self._ids) - at - 1)
        changes_at = self._changes_at(view, job)
        if changes_at < math.inf:
            self._seq += 1
            self._stamp[job_id] = self._seq
            heapq.heappush(self._due, (changes_at - self._slack, self._seq, job_id))

    def _drop(self, job_id: str) -> None:
        pinned = self._pinned.pop(job_id, None)
        if pinned is not None:
            self._pinned_gpus -= pinned
            return
        sort_key = self._entry.pop(job_id, None)
        if sort_key is None:
            return
        at = bisect_left(self._keys, sort_key)
        del self._keys[at]
        del self._ids[at]
        del self._gpus[at]
        self._stamp.pop(job_id, None)
        self._behind_valid = min(self._behind_valid, len(self._ids) - at)

    def preemptible(self) -> tuple[list[SortKey], list[str], list[int]]:
        """(sort keys, job ids, GPUs behind) of the preemptible running jobs, the GPUs of
        the last k jobs at position k; recomputed back to the last position that changed."""
        valid, ids, behind = self._behind_valid, self._ids, self._behind
        if valid < len(ids) or len(behind) != len(ids) + 1:
            base = behind[valid]
            del behind[valid:]
            behind.extend(accumulate(reversed(self._gpus[: len(ids) - valid]), initial=base))
            self._behind_valid = len(ids)
        return self._keys, ids, behind

    @property
    def pinned_gpus(self) -> int:
        return self._pinned_gpus


class RemainingTimeOrder:
    """Running jobs for keys of the form remaining work × scale × weight (SRTF's remaining
    time, SRSF's remaining service), every key evaluated each round at once with numpy.

    Between two of the engine's progress resets, a running job's remaining work is a line
    in time (`JobView.progress_line`). The order keeps each preemptible running job's line,
    scale, weight, GPUs and trace index in arrays, updated from the allocation and progress
    logs, and evaluates the keys with the float operations of `JobView.remaining_work` and
    the policy's key, so each equals the policy's key to the bit and the tail it returns is
    in exactly a fresh sort's order. A job whose work is piecewise (a stop-free scale-out
    under way) takes the policy's key itself. The greedy walk of `_preempt_in_priority_order`
    keeps every running job below the best queued job's key whenever their GPUs fit, so only
    the jobs at or above it (the tail) are sorted and handed over; the rest count by GPUs.
    """

    def __init__(
        self,
        key: Callable[[JobView], float],
        factors: Callable[[JobView], tuple[float, float]],
    ) -> None:
        """`factors(job)` is (scale, weight) with key(job) == remaining_work * scale * weight,
        multiplied in that order."""
        self._key = key
        self._factors = factors
        self._reset(None)

    def _reset(self, view: ClusterView | None) -> None:
        self._view = view
        self._allocation_mark = self._progress_mark = 0
        self._row: dict[str, int] = {}  # preemptible running job -> its row
        self._ids: list[str] = []  # by row, as the arrays' columns
        self._lines = np.zeros((5, 64))  # left, since, rate, scale, weight
        self._ints = np.zeros((2, 64), dtype=np.int64)  # GPUs, trace index
        self._gpus_total = 0
        self._piecewise: set[str] = set()
        self._pinned: dict[str, int] = {}  # non-preemptible running jobs -> GPUs
        self._pinned_gpus = 0

    def _sync(self, view: ClusterView) -> None:
        if view is not self._view:
            self._reset(view)
        moved, self._allocation_mark = view.allocations_since(self._allocation_mark)
        reset, self._progress_mark = view.progress_resets_since(self._progress_mark)
        running = view.running
        for job_id in dict.fromkeys(moved + reset):
            self._pinned_gpus -= self._pinned.pop(job_id, 0)
            job = running.get(job_id)
            if job is None or not job.spec.preemptible:
                self._drop(job_id)
                if job is not None:
                    self._pinned[job_id] = job.gpus
                    self._pinned_gpus += job.gpus
            else:
                self._put(job_id, job)

    def _put(self, job_id: str, job: JobView) -> None:
        row = self._row.get(job_id)
        if row is None:
            row = len(self._ids)
            if row == self._lines.shape[1]:
                self._lines = np.concatenate([self._lines, np.zeros_like(self._lines)], 1)
                self._ints = np.concatenate([self._ints, np.zeros_like(self._ints)], 1)
            self._row[job_id] = row
            self._ids.append(job_id)
        else:
            self._gpus_total -= int(self._ints[0, row])
        self._gpus_total += job.gpus
        line = job.progress_line
        if line is None:
            self._piecewise.add(job_id)
            line = (0.0, 0.0, 0.0)
        else:
            self._piecewise.discard(job_id)
        self._lines[:, row] = (*line, *self._factors(job))
        self._ints[:, row] = (job.gpus, job.trace_index)

    def _drop(self, job_id: str) -> None:
        row = self._row.pop(job_id, None)
        if row is None:
            return
        self._piecewise.discard(job_id)
        self._gpus_total -= int(self._ints[0, row])
        ids = self._ids
        last = len(ids) - 1
        if row != last:  # the last row fills the hole
            self._lines[:, row] = self._lines[:, last]
            self._ints[:, row] = self._ints[:, last]
            ids[row] = ids[last]
            self._row[ids[row]] = row
        del ids[last]

    def tail(
        self, view: ClusterView, threshold: SortKey
    ) -> tuple[Sequence[SortKey], list[str], list[int], int, int]:
        """(sort keys, ids, GPUs behind) of the preemptible running jobs whose sort
        key now is at least `threshold`, in order; the GPUs of the preemptible ones below it;
        the GPUs of the non-preemptible ones."""
        self._sync(view)
        count = len(self._ids)
        left, since, rate, scale, weight = self._lines[:, :count]
        keys = np.maximum(view.now - since, 0.0)  # as JobView.remaining_work, op for op
        keys *= rate
        np.subtract(left, keys, out=keys)
        np.maximum(keys, 0.0, out=keys)
        keys *= scale
        keys *= weight
        if self._piecewise:
            running, row = view.running, self._row
            for job_id in self._piecewise:
                keys[row[job_id]] = self._key(running[job_id])
        least_key, least_index = threshold
        rows = np.flatnonzero(keys >= least_key)
        gpus, index = self._ints[:, :count]
        tail_keys, tail_index = keys[rows], index[rows]
        order = np.lexsort((tail_index, tail_keys))
        key_list, index_list = tail_keys[order].tolist(), tail_index[order].tolist()
        ties = 0  # keys equal to the threshold's reach it only from a later trace index
        while ties < len(key_list) and key_list[ties] == least_key \
                and index_list[ties] <= least_index:
            ties += 1
        rows = rows[order[ties:]]
        behind = [0, *np.cumsum(gpus[rows[::-1]]).tolist()]
        ids = self._ids
        return (_SortKeys(key_list[ties:], index_list[ties:]), [ids[r] for r in rows.tolist()],
                behind, self._gpus_total - behind[-1], self._pinned_gpus)


class _SortKeys(Sequence[SortKey]):
    """(key, trace index) pairs made only when read: the greedy walk bisects them."""

    __slots__ = ("_keys", "_index")

    def __init__(self, keys: list[float], index: list[int]) -> None:
        self._keys = keys
        self._index = index

    def __len__(self) -> int:
        return len(self._keys)

    def __getitem__(self, i):  # type: ignore[override]  # the walk reads single items
        return self._keys[i], self._index[i]


def schedule_by_priority(
    view: ClusterView,
    key: Callable[[JobView], Any],
    order: QueueOrder | None = None,
    running: RunningOrder | RemainingTimeOrder | None = None,
) -> Iterator[Decision]:
    """A preemptive priority policy: `key` orders jobs, lowest first (ties: trace order).

    `order`, when the policy's key of a waiting job is frozen, keeps the queue sorted across
    rounds; `running` keeps the running jobs sorted when their keys change only at known
    times (`RunningOrder`), or evaluates them all at once when they are remaining time
    (`RemainingTimeOrder`). When the whole queue fits in the free GPUs, the global order
    would keep every running job and start every queued one, so the queued jobs are simply
    launched (the common, uncontended case). Otherwise, or when fragmentation defeats a
    placement, the decisions of `preemptive_schedule` over the running jobs merged with the
    queue in priority order are made by `_preempt_in_priority_order`.
    """
    if not view.queue:
        return
    free = sum(view.free_gpus(p.name) for p in view.spec.pools)
    walk: FittingWalk
    if view.queued_gpus() <= free:  # the whole queue fits
        queued = _queue_in_order(view, key, order)
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
        walk = FittingWalk.of((k, job) for k, job in queued if job.status == JobStatus.QUEUED)
    elif order is None:
        walk = FittingWalk.of(_queue_in_order(view, key, order))
    else:
        walk = order.fitting(view)
    if isinstance(running, RunningOrder):
        running.sync(view)
        keys, ids, behind = running.preemptible()
        pinned = running.pinned_gpus
    elif isinstance(running, RemainingTimeOrder):
        first = walk.first_key()
        if first is None:
            return
        keys, ids, behind, below, pinned = running.tail(view, first)
        if below <= training_capacity(view) - pinned:
            pinned += below  # the walk keeps them all before it meets the first queued job
        else:  # capacity shrank under the running jobs: the walk stops among them
            keys, ids, behind, pinned = _running_in_order(view, key)
    else:
        keys, ids, behind, pinned = _running_in_order(view, key)
    decisions = _preempt_in_priority_order(view, keys, ids, behind, pinned, walk)
    for decision in decisions:
        if order is not None and isinstance(decision, Launch):
            order.forget(decision.job_id)
        yield decision


def _queue_in_order(
    view: ClusterView, key: Callable[[JobView], Any], order: QueueOrder | None
) -> list[tuple[SortKey, JobView]]:
    """(sort key, job) of every queued job, best first."""
    if order is not None:
        return list(order.entries(view))
    return sorted(((key(j), j.trace_index), j) for j in view.queue.values())


def _running_in_order(
    view: ClusterView, key: Callable[[JobView], Any]
) -> tuple[list[SortKey], list[str], list[int], int]:
    """What `RunningOrder.preemptible` gives, and the pinned GPUs, sorted afresh."""
    keys: list[SortKey] = []
    ids: list[str] = []
    gpus: list[int] = []
    pinned = 0
    for sort_key, job in sorted(((key(j), j.trace_index), j) for j in view.running.values()):
        if job.spec.preemptible:
            keys.append(sort_key)
            ids.append(job.job_id)
            gpus.append(job.gpus)
        else:
            pinned += job.gpus
    return keys, ids, [0, *accumulate(reversed(gpus))], pinned


def _preempt_in_priority_order(
    view: ClusterView,
    keys: Sequence[SortKey],
    ids: list[str],
    behind: list[int],
    pinned_gpus: int,
    walk: FittingWalk,
) -> Iterator[Decision]:
    """`preemptive_schedule` over the running jobs (`ids`, sorted by `keys`; `behind[k]`
    the GPUs of the last k) merged with the queued jobs of `walk`: the same decisions in
    the same order, without a Python step per running job kept.

    A queued job asking for more than the budget left is passed over without a step: the
    budget only shrinks along the walk, so it could not be kept further on either; and once
    the budget is below every queued job's size, only the running jobs remain to be passed.

    Until the greedy walk keeps a queued job, every running job it passes is kept (they all
    fit together), and a run of running jobs between two queued ones is kept whole whenever
    its GPUs fit the budget, so the walk finds such runs by bisection over their keys, and
    inside a run the longest stretch that fits by bisection over their GPUs
    (`_keep_running`): it steps only at the running jobs it evicts.
    """
    budget = training_capacity(view) - pinned_gpus
    evicted: list[str] = []
    waiting: list[JobView] = []
    pos, stopped = 0, budget <= 0
    smallest = view.smallest_queued_gpus()  # the walk launches nothing, so this holds
    while not stopped:
        candidate = walk.next_within(budget)
        if candidate is None:
            break
        sort_key, job = candidate
        end = bisect_left(keys, sort_key, pos)
        pos, budget, stopped = _keep_running(ids, behind, pos, end, budget, evicted)
        if stopped or budget <= 0:
            stopped = True
            break
        need = job.spec.num_gpus
        if need <= budget:
            budget -= need
            waiting.append(job)
        if budget < smallest:
            break  # no queued job fits what is left; the running jobs are passed below
    if not waiting:
        return
    if not stopped:
        pos, budget, stopped = _keep_running(ids, behind, pos, len(ids), budget, evicted)
    if stopped:
        evicted.extend(ids[pos:])
    if evicted:
        gone = set(evicted)
        for job_id in [job_id for job_id in view.running.keys() if job_id in gone]:
            yield Preempt(job_id)
    for job in waiting:
        launch = place_requested(view, job)
        if launch is not None:
            yield launch


def _keep_running(
    ids: list[str], behind: list[int], lo: int, hi: int, budget: int, evicted: list[str]
) -> tuple[int, int, bool]:
    """The greedy walk over running `ids[lo:hi]`: (where it stopped, budget left, whether
    the budget ran out before `hi`); jobs that do not fit go to `evicted`.

    The greedy keeps jobs one after another while each fits, that is the longest run whose
    GPUs fit the budget, found by bisection over the sums `behind` (they grow by at least
    one GPU per job); then the job after the run does not fit and is evicted."""
    count = len(ids)
    i = lo
    while i < hi:
        if budget <= 0:
            return i, budget, True
        # the smallest k with behind[k] >= behind[count - i] - budget ends the longest run
        k = bisect_left(behind, behind[count - i] - budget, count - hi, count - i)
        budget -= behind[count - i] - behind[k]
        i = count - k
        if i < hi:  # ids[i] does not fit what is left
            if budget <= 0:
                return i, budget, True
            evicted.append(ids[i])
            i += 1
    return hi, budget, False
