"""Running jobs of a priority policy kept in order across rounds, for keys that change only
at times the policy can name (Tiresias' thresholds) or when a job's GPUs change."""

from __future__ import annotations

import heapq
import math
from bisect import bisect_left
from collections.abc import Callable
from itertools import accumulate
from typing import Any

from simulation.policies.queue_order import SortKey
from simulation.view import ClusterView, JobView


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
        self._gpus_total = 0  # the sum of `_gpus`
        self._entry: dict[str, SortKey] = {}
        self._pinned: dict[str, int] = {}  # non-preemptible running jobs (not in `_entries`)
        self._pinned_gpus = 0
        self._due: list[tuple[float, int, str]] = []  # (re-key from, stamp, job id)
        self._stamp: dict[str, int] = {}
        self._seq = 0
        # GPUs of the last k jobs of `_ids` at position k, right for k <= `_behind_valid`
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
        running = view.running
        count = len(due)
        if (count < 2 or due[1][0] > horizon) and (count < 3 or due[2][0] > horizon):
            # only the top is that close (every other entry is past one of its children)
            return self._changes_at(view, running[due[0][2]])
        while due and due[0][0] <= horizon:
            entry = heapq.heappop(due)
            if self._stamp.get(entry[2]) == entry[1]:
                popped.append(entry)
        for entry in popped:
            heapq.heappush(due, entry)
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
        self._gpus_total += job.gpus
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
        self._gpus_total -= self._gpus.pop(at)
        self._stamp.pop(job_id, None)
        self._behind_valid = min(self._behind_valid, len(self._ids) - at)

    def tail(
        self, view: ClusterView, threshold: SortKey
    ) -> tuple[list[SortKey], list[str], list[int], int, int]:
        """As `RemainingTimeOrder.tail`: (sort keys, ids, GPUs behind) of the preemptible
        running jobs ranked after `threshold`, in order, the GPUs of the last k at position
        k; the GPUs of the preemptible ones ranked before it; the GPUs of the
        non-preemptible ones. The sums behind are recomputed only over the tail, back to
        the last position that changed: jobs join and leave at both ends of the order
        (launches near the front, preemptions at the back), so sums over the whole order
        were recomputed nearly whole every round."""
        self.sync(view)
        keys, ids, behind = self._keys, self._ids, self._behind
        start = bisect_left(keys, threshold)
        count = len(ids) - start
        valid = self._behind_valid
        if valid < count:
            base = behind[valid]
            del behind[valid:]
            behind.extend(accumulate(reversed(self._gpus[start: len(ids) - valid]),
                                     initial=base))
        else:
            del behind[count + 1:]
        self._behind_valid = count
        return (keys[start:], ids[start:], behind, self._gpus_total - behind[count],
                self._pinned_gpus)

