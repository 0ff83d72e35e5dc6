"""Running jobs of SRTF and SRSF, their remaining-time keys evaluated each round at once."""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable, Sequence

import numpy as np

from simulation.policies.queue_order import SortKey
from simulation.view import ClusterView, JobView


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
        self._used = 0  # rows ever taken: each holds a job or is spare
        self._spare: list[int] = []  # rows below `_used` freed by `_drop`, to reuse
        self._allocate(64)
        self._gpus_total = 0
        self._scaled = self._weighted = 0  # rows whose scale, weight is not 1.0
        self._piecewise: set[str] = set()
        self._pinned: dict[str, int] = {}  # non-preemptible running jobs -> GPUs
        self._pinned_gpus = 0

    def _allocate(self, capacity: int) -> None:
        """Arrays of `capacity` rows, the used ones copied. A round evaluates every row, used
        or not (slicing to the used ones costs more than the spare rows): a spare row's
        `since` is NaN, so its key is NaN and never reaches a threshold. Rows are not
        compacted (a job's row is freed and reused): the tail's order is that of the keys
        and trace indexes, whatever rows hold them."""
        lines = np.full((5, capacity), np.nan)  # left, since, rate, scale, weight
        ints = np.zeros((2, capacity), dtype=np.int64)  # GPUs, trace index
        ids = np.full(capacity, "", dtype=object)  # job ids ("" on a spare row)
        used = self._used
        if used:
            lines[:, :used] = self._lines[:, :used]
            ints[:, :used] = self._ints[:, :used]
            ids[:used] = self._ids[:used]
        self._lines, self._ints = lines, ints
        self._left, self._since, self._rate, self._scale, self._weight = lines
        self._gpus, self._index = ints
        self._ids = ids  # an array, so the tail's ids are taken in C
        self._keys = np.empty(capacity)

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
        gpus = job.gpus
        if row is None:
            if self._spare:
                row = self._spare.pop()
            else:
                row = self._used
                if row == len(self._keys):
                    self._allocate(2 * row)
                self._used += 1
            self._ids[row] = job_id
            self._row[job_id] = row
        else:
            self._gpus_total -= int(self._gpus[row])
            self._scaled -= int(self._scale[row] != 1.0)
            self._weighted -= int(self._weight[row] != 1.0)
        self._gpus_total += gpus
        line = job.progress_line
        if line is None:
            self._piecewise.add(job_id)
            line = (0.0, 0.0, 0.0)
        else:
            self._piecewise.discard(job_id)
        self._left[row], self._since[row], self._rate[row] = line
        scale, weight = self._factors(job)
        self._scale[row], self._weight[row] = scale, weight
        self._scaled += scale != 1.0
        self._weighted += weight != 1.0
        self._gpus[row] = gpus
        self._index[row] = job.trace_index

    def _drop(self, job_id: str) -> None:
        row = self._row.pop(job_id, None)
        if row is None:
            return
        self._piecewise.discard(job_id)
        self._gpus_total -= int(self._gpus[row])
        self._scaled -= int(self._scale[row] != 1.0)
        self._weighted -= int(self._weight[row] != 1.0)
        self._since[row] = np.nan  # a spare row again
        self._ids[row] = ""
        self._spare.append(row)

    def tail(
        self, view: ClusterView, threshold: SortKey
    ) -> tuple[Sequence[SortKey], list[str], list[int], int, int]:
        """(sort keys, ids, GPUs behind) of the preemptible running jobs whose sort
        key now is at least `threshold`, in order; the GPUs of the preemptible ones below it;
        the GPUs of the non-preemptible ones."""
        self._sync(view)
        keys = self._keys  # as JobView.remaining_work and the key, op for op:
        np.subtract(view.now, self._since, out=keys)
        np.maximum(keys, 0.0, out=keys)
        np.multiply(keys, self._rate, out=keys)
        np.subtract(self._left, keys, out=keys)
        np.maximum(keys, 0.0, out=keys)
        if self._scaled:  # x * 1.0 is x to the bit: unit factors need no pass
            np.multiply(keys, self._scale, out=keys)
        if self._weighted:
            np.multiply(keys, self._weight, out=keys)
        if self._piecewise:
            running, row = view.running, self._row
            for job_id in self._piecewise:
                keys[row[job_id]] = self._key(running[job_id])
        least_key, least_index = threshold
        rows = (keys >= least_key).nonzero()[0]
        tail_keys, tail_index = keys[rows], self._index[rows]
        order = np.lexsort((tail_index, tail_keys))
        key_list, index_list = tail_keys[order].tolist(), tail_index[order].tolist()
        ties = 0  # keys equal to the threshold's reach it only from a later trace index
        while ties < len(key_list) and key_list[ties] == least_key \
                and index_list[ties] <= least_index:
            ties += 1
        if ties:
            del key_list[:ties], index_list[:ties]
            order = order[ties:]
        rows = rows[order]
        behind = [0, *self._gpus[rows[::-1]].cumsum().tolist()]
        return (TailKeys(key_list, index_list), self._ids[rows].tolist(),
                behind, self._gpus_total - behind[-1], self._pinned_gpus)


class TailKeys(Sequence[SortKey]):
    """(key, trace index) pairs made only when read; the greedy walk bisects them by their
    keys alone (`bisect_left`), in C."""

    __slots__ = ("_keys", "_index")

    def __init__(self, keys: list[float], index: list[int]) -> None:
        self._keys = keys
        self._index = index

    def __len__(self) -> int:
        return len(self._keys)

    def __getitem__(self, i):  # type: ignore[override]  # the walk reads single items
        return self._keys[i], self._index[i]

    def bisect_left(self, sort_key: SortKey, lo: int) -> int:
        """`bisect.bisect_left(self, sort_key, lo)`: by key, then past the equal keys of
        earlier trace indexes."""
        key, index = sort_key
        keys = self._keys
        at = bisect_left(keys, key, lo)
        while at < len(keys) and keys[at] == key and self._index[at] < index:
            at += 1
        return at
