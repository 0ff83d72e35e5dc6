"""Beyond the paper: the JCT-optimal split of a cluster among elastic jobs, for small
instances, and the two-phase heuristic's gap to it on the paper's two-job examples.

Model of §5.1 / Appendix C: linear scaling, every job queued at time 0, a job's workload is
`max_workers · min_running_time` worker-seconds. Once a job finishes its workers are handed
out again (Table 3: "the other is immediately allocated more resources as much as
possible"). `optimal_allocation` searches every initial split *and* every re-split at each
completion (exhaustive, memoised), so it is exact for this model; it refuses more than
`EXACT_JOB_LIMIT` jobs. `heuristic_allocation` is Aryl's Algorithm 2 (SJF on base demand,
then the knapsack) applied at time 0 and again at each completion.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cache

from simulation.policies.aryl_knapsack import flexible_group, solve_multiple_choice_knapsack

EXACT_JOB_LIMIT = 6


@dataclass(frozen=True, slots=True)
class ElasticExample:
    """A job of the §5.1 examples: runs `min_running_time` s at `max_workers` workers."""

    name: str
    min_workers: int
    max_workers: int
    min_running_time: float

    @property
    def work(self) -> float:
        return self.max_workers * self.min_running_time


Split = tuple[int, ...]
Chooser = Callable[[tuple[float, ...], int], Split]


def average_jct(jobs: Sequence[ElasticExample], workers: int, first: Split,
                chooser: Chooser) -> tuple[float, ...]:
    """JCTs when `first` is the initial split and `chooser` re-splits at each completion."""
    left = [j.work for j in jobs]
    jct = [0.0] * len(jobs)
    now = 0.0
    split = first
    while any(w > 1e-9 for w in left):
        running = [i for i, w in enumerate(left) if w > 1e-9 and split[i] > 0]
        if not running:
            raise ValueError("a split leaves unfinished jobs without workers")
        step = min(left[i] / split[i] for i in running)
        now += step
        for i in running:
            left[i] -= step * split[i]
            if left[i] <= 1e-9:
                left[i] = 0.0
                jct[i] = now
        split = chooser(tuple(left), workers)
    return tuple(jct)


def _splits(jobs: Sequence[ElasticExample], left: tuple[float, ...], workers: int):
    ranges = [range(j.min_workers, j.max_workers + 1) if w > 0 else range(0, 1)
              for j, w in zip(jobs, left, strict=True)]
    ranges = [list(r) + ([0] if w > 0 else []) for r, w in zip(ranges, left, strict=True)]
    for split in itertools.product(*ranges):
        if sum(split) <= workers and any(s > 0 for s in split):
            yield split


def optimal_allocation(jobs: Sequence[ElasticExample], workers: int) -> tuple[Split, float]:
    """The initial split with the least average JCT (re-splitting optimally afterwards)."""
    if len(jobs) > EXACT_JOB_LIMIT:
        raise ValueError(f"exact allocation is limited to {EXACT_JOB_LIMIT} jobs")

    @cache
    def best(left: tuple[float, ...]) -> tuple[float, Split]:
        """Least sum of remaining completion times (from now) and the split achieving it."""
        outcome: tuple[float, Split] | None = None
        for split in _splits(jobs, left, workers):
            running = [i for i, w in enumerate(left) if w > 0 and split[i] > 0]
            step = min(left[i] / split[i] for i in running)
            after = tuple(0.0 if w <= 0 or (split[i] and w - step * split[i] <= 1e-9)
                          else round(w - step * split[i], 9) for i, w in enumerate(left))
            unfinished = sum(1 for w in left if w > 0)
            total = step * unfinished + (best(after)[0] if any(after) else 0.0)
            if outcome is None or total < outcome[0] - 1e-9:
                outcome = (total, split)
        assert outcome is not None
        return outcome

    start = tuple(j.work for j in jobs)
    total, split = best(start)
    return split, total / len(jobs)


def heuristic_split(jobs: Sequence[ElasticExample], left: tuple[float, ...],
                    workers: int) -> Split:
    """Algorithm 2 on the unfinished jobs: SJF over base demand, knapsack over the rest."""
    order = sorted((i for i, w in enumerate(left) if w > 0),
                   key=lambda i: left[i] / jobs[i].min_workers)
    split = [0] * len(jobs)
    free = workers
    for i in order:
        if jobs[i].min_workers <= free:
            split[i] = jobs[i].min_workers
            free -= jobs[i].min_workers
    groups = [
        flexible_group(str(i), left[i] / split[i],
                       [split[i] + w for w in range(jobs[i].max_workers - split[i] + 1)], 1)
        for i in order if split[i]
    ]
    for job_id, extra in solve_multiple_choice_knapsack(groups, free).items():
        split[int(job_id)] += extra
    return tuple(split)


def jct_of_split(jobs: Sequence[ElasticExample], workers: int, split: Split) -> tuple[float, ...]:
    """JCTs of a fixed initial split where finished jobs' workers go to the others (Table 3)."""
    def greedy(left: tuple[float, ...], total: int) -> Split:
        out = [0] * len(jobs)
        free = total
        for i, w in enumerate(left):
            if w > 0:
                out[i] = jobs[i].min_workers
                free -= out[i]
        for i, w in enumerate(left):
            if w > 0:
                extra = min(free, jobs[i].max_workers - out[i])
                out[i] += extra
                free -= extra
        return tuple(out)

    return average_jct(jobs, workers, split, greedy)


def heuristic_allocation(jobs: Sequence[ElasticExample], workers: int) -> tuple[Split, float]:
    """Aryl's initial split and the average JCT when it re-plans at each completion."""
    def chooser(left: tuple[float, ...], total: int) -> Split:
        return heuristic_split(jobs, left, total)

    first = chooser(tuple(j.work for j in jobs), workers)
    jcts = average_jct(jobs, workers, first, chooser)
    return first, sum(jcts) / len(jobs)


TABLE_2 = (ElasticExample("A", 2, 6, 50.0), ElasticExample("B", 2, 6, 20.0))
TABLE_4 = (ElasticExample("A", 2, 3, 100.0), ElasticExample("B", 2, 6, 20.0))
EXAMPLE_WORKERS = 8
