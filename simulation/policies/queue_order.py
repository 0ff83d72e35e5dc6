"""The waiting jobs of a priority policy, kept in order across rounds (issue #22).

`QueueOrder` keeps the queue sorted by a key that cannot change while a job waits, from the
engine's queue log; `FittingWalk` hands its jobs to a greedy walk whose budget only shrinks,
one sorted run per job size, so jobs too large for the budget are never stepped over.
"""

from __future__ import annotations

import heapq
import math
from bisect import bisect_left, insort
from collections.abc import Callable, Iterable, Iterator, KeysView
from functools import partial
from itertools import chain
from typing import Any

from simulation.view import ClusterView, JobView

SortKey = tuple[Any, int]  # (policy key, trace index)
QueueEntry = tuple[SortKey, int, str, JobView]  # (sort key, sequence number, job id, job)
_Head = tuple[QueueEntry, int, int, list[QueueEntry]]  # (entry, its position, size, run)


class QueueOrder:
    """Waiting jobs kept in priority order across rounds.

    For policies whose key of a waiting job cannot change while it waits (SRTF's remaining
    time, SJF's predicted duration, LAS service without promotion): arrivals are inserted by
    bisection and launched jobs dropped, so a long queue is neither re-keyed nor re-sorted
    on every round. A job that is launched and later requeued gets a fresh entry (its key
    may have changed while it ran); the old one is skipped as stale. The entries are kept
    in one sorted run per job size (`fitting`), and in one merged list as well only once
    `entries` is read (SJF's walk over the whole queue): the preemptive policies merge the
    runs on demand, and a second list cost them a second bisection per job queued and
    launched.
    """

    def __init__(self, key: Callable[[JobView], Any]) -> None:
        self._key = key
        self._view: ClusterView | None = None
        self._mark = 0  # position in the view's log of queued jobs
        self._entries: list[QueueEntry] | None = None  # the runs merged, once `entries` is read
        self._by_size: dict[int, list[QueueEntry]] = {}  # sorted entries, per GPUs asked
        self._count = 0  # entries in `_by_size`, live or dead
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
            self._view, self._mark, self._live = view, 0, {}
            self._entries = [] if self._entries is not None else None
            self._by_size, self._count, self._forgotten = {}, 0, []
        merged = self._entries
        for entry in self._forgotten:
            self._count -= _remove(self._by_size[entry[3].spec.num_gpus], entry)
            if merged is not None:
                _remove(merged, entry)
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
                insort(self._by_size.setdefault(job.spec.num_gpus, []), entry)
                self._count += 1
                if merged is not None:
                    insort(merged, entry)
                live[job_id] = entry
        if self._count > 2 * len(live) + 64:
            for job_id in live.keys() - waiting:
                del live[job_id]
            self._by_size = {size: [e for e in entries if live.get(e[2]) is e]
                             for size, entries in self._by_size.items()}
            if merged is not None:
                self._entries = [e for e in merged if live.get(e[2]) is e]
            self._count = len(live)

    def entries(self, view: ClusterView) -> Iterator[tuple[SortKey, JobView]]:
        """(sort key, job) for every waiting job, best first, from the merged list (made
        from the runs at the first call, kept from then on); a job that left the queue
        some other way than `forget` is dropped when met."""
        self._sync(view)
        if self._entries is None:
            self._entries = sorted(chain.from_iterable(self._by_size.values()))
        waiting = view.queue.keys()
        live = self._live
        for entry in self._entries:
            job_id = entry[2]
            if live.get(job_id) is entry:
                if job_id in waiting:
                    yield entry[0], entry[3]
                else:
                    del live[job_id]

    def in_order(self, view: ClusterView) -> list[tuple[SortKey, JobView]]:
        """(sort key, job) for every waiting job, best first, merged from the runs (no
        merged list is kept for it)."""
        return list(iter(partial(self.fitting(view).next_within, math.inf), None))

    def jobs(self, view: ClusterView) -> Iterator[JobView]:
        return (job for _, job in self.entries(view))

    def fitting(self, view: ClusterView) -> FittingWalk:
        """The waiting jobs as a walk that passes over those larger than a budget."""
        self._sync(view)
        return FittingWalk(self._by_size, self._live, view.queue.keys())


def _remove(entries: list[QueueEntry], entry: QueueEntry) -> bool:
    """Delete `entry` from sorted `entries` if there; a launched job is most often the
    first of its run, so that is looked at before bisecting."""
    at = 0 if entries and entries[0] is entry else bisect_left(entries, entry)
    if at < len(entries) and entries[at] is entry:
        del entries[at]
        return True
    return False


class FittingWalk:
    """Queued jobs best first, each asking for at most the budget given, for a greedy walk
    whose budget only shrinks: one sorted run per job size, each run's next entry in a
    heap, so the jobs too large for the budget are never stepped over one by one and a
    run too large for it leaves the heap for good once it comes to the top."""

    def __init__(
        self,
        runs: dict[int, list[QueueEntry]],
        live: dict[str, QueueEntry] | None = None,
        waiting: KeysView[str] | None = None,
    ) -> None:
        """An entry is alive when `live` holds it for its job and the job is `waiting`
        (both constant during a walk: the queue changes after it); without them, all are.
        A dead entry is stepped over when it comes to the top of the heap."""
        self._live, self._waiting = live, waiting
        # (entry, its position, size, run): entries never tie, so the rest is not compared
        self._heads = [(entries[0], 0, size, entries) for size, entries in runs.items()
                       if entries]
        heapq.heapify(self._heads)

    @classmethod
    def of(cls, queued: Iterable[tuple[SortKey, JobView]]) -> FittingWalk:
        """A walk over (sort key, job) pairs given in priority order."""
        runs: dict[int, list[QueueEntry]] = {}
        for seq, (sort_key, job) in enumerate(queued):
            runs.setdefault(job.spec.num_gpus, []).append((sort_key, seq, job.job_id, job))
        return cls(runs)

    def _top(self) -> _Head | None:
        """The heap's top once it is alive (None: no entry left)."""
        heads, live, waiting = self._heads, self._live, self._waiting
        while heads:
            head = heads[0]
            entry = head[0]
            if live is None or waiting is None or (
                    live.get(entry[2]) is entry and entry[2] in waiting):
                return head
            self._advance(head)
        return None

    def _advance(self, head: _Head) -> None:
        """Replace the top `head` by the next entry of its run, or drop the run."""
        _, i, size, entries = head
        i += 1
        if i < len(entries):
            heapq.heapreplace(self._heads, (entries[i], i, size, entries))
        else:
            heapq.heappop(self._heads)

    def first_key(self) -> SortKey | None:
        """The sort key of the best queued job not yet given, whatever its size (read before
        `next_within`, which drops the runs too large for its budget)."""
        head = self._top()
        return None if head is None else head[0][0]

    def next_within(self, budget: float) -> tuple[SortKey, JobView] | None:
        """The best queued job not yet given that asks for at most `budget` GPUs; `budget`
        must not grow from one call to the next."""
        while (head := self._top()) is not None:
            if head[2] > budget:  # nothing of this run fits this budget or a smaller one
                heapq.heappop(self._heads)
                continue
            self._advance(head)
            entry = head[0]
            return entry[0], entry[3]
        return None
