"""A Pollux-like goodput scheduler (Pollux, OSDI'21) as a baseline of Aryl §7.1.

What is kept: allocations maximise the fairness-weighted objective of Pollux's scheduler,
the generalised mean (p = −1) of each job's *speedup* (goodput at its allocation over goodput
at its base demand), and a job may hold at most twice the most workers it ever held.
Goodput is throughput times statistical efficiency; efficiency falls as the total batch
grows with the workers, `1 / (1 + (w / w_min − 1) · σ)` with a per-model noise factor σ
(0.05 to 0.3, fixed by a hash of the model name: the stand-in for Pollux's model table).

Simplified: no genetic algorithm (allocation grows one worker at a time where the objective
gains most, which is what the GA converges to for this separable objective), no batch-size
or learning-rate tuning (Aryl+TunedJobs is out of scope), base demand served FIFO, and
placement, non-preemption and reclaim shared with the `aryl` policy.
"""

from __future__ import annotations

import heapq
import zlib

from simulation.policies.aryl import Aryl
from simulation.policies.aryl_knapsack import FlexibleGroup
from simulation.policies.base import register
from simulation.view import ClusterView, JobView

FAIRNESS_P = -1.0


def noise_factor(model: str) -> float:
    """σ of a model: a stable stand-in for Pollux's per-model gradient-noise statistics."""
    return 0.05 + 0.25 * (zlib.crc32(model.encode()) % 1000) / 999


@register
class PolluxLite(Aryl):
    name = "pollux-lite"
    description = "Pollux-like: greedy goodput speedup under a p=-1 fairness mean."
    paper = "Aryl §7.1 (Pollux, OSDI'21), simplified"

    def __init__(self, **values: object) -> None:
        super().__init__(**values)
        self._peak: dict[str, int] = {}

    def phase_one_order(self, view: ClusterView) -> list[JobView]:
        return list(view.queue.values())

    def split_flexible(
        self, view: ClusterView, groups: list[FlexibleGroup], rates: dict[str, list[float]],
        capacity: int,
    ) -> dict[str, int]:
        chosen = {g.job_id: 0 for g in groups}
        speedups: dict[str, list[float]] = {}
        limit: dict[str, int] = {}
        for group in groups:
            job = view.job(group.job_id)
            sigma = noise_factor(job.spec.model)
            base = job.spec.min_workers
            goodput = [r / (1 + (w / base) * sigma) for w, r in enumerate(rates[group.job_id])]
            speedups[group.job_id] = [g / goodput[0] for g in goodput]
            peak = max(self._peak.get(group.job_id, 0), job.workers, base)
            limit[group.job_id] = min(len(group.weights), 2 * peak - base)
        heap: list[tuple[float, int, str]] = []
        order = {g.job_id: k for k, g in enumerate(groups)}
        per_worker = {g.job_id: (g.weights[0] if g.weights else 0) for g in groups}
        for job_id in chosen:
            _push(heap, job_id, order[job_id], 0, speedups[job_id], limit[job_id],
                  per_worker[job_id])
        while heap and capacity > 0:
            _, _, job_id = heapq.heappop(heap)
            if per_worker[job_id] > capacity:
                continue
            chosen[job_id] += 1
            capacity -= per_worker[job_id]
            _push(heap, job_id, order[job_id], chosen[job_id], speedups[job_id],
                  limit[job_id], per_worker[job_id])
        for job_id, extra in chosen.items():
            workers = view.job(job_id).spec.min_workers + extra
            self._peak[job_id] = max(self._peak.get(job_id, 0), workers)
        return chosen


def _push(heap: list[tuple[float, int, str]], job_id: str, order: int, w: int,
          speedup: list[float], limit: int, d: int) -> None:
    """Queue the next worker of a job by its gain in Σ speedup^p (p = −1: harmonic)."""
    if w < limit and d > 0:
        gain = (speedup[w] ** FAIRNESS_P - speedup[w + 1] ** FAIRNESS_P) / d
        if gain > 0:
            heapq.heappush(heap, (-gain, order, job_id))
