"""AFS as Aryl §7.1 implements it: base demand first, then one worker at a time to the job
with the largest throughput gain per GPU (Hwang et al., NSDI'21, adapted to worker ranges).

Simplifications (documented, as the issue asks): jobs get their base demand in arrival order
(FIFO, skipping what does not fit), and placement, GPU-type handling, non-preemption and the
reclaim of flexible workers are shared with the `aryl` policy so only the allocation rule
differs. The gain of a worker is `(rate(w + 1) − rate(w)) / D_j` from the job's scaling
curve (plus imperfect scaling and GPU speed); ties go to the earlier job.
"""

from __future__ import annotations

import heapq

from simulation.policies.aryl import Aryl
from simulation.policies.aryl_knapsack import FlexibleGroup
from simulation.policies.base import register
from simulation.view import ClusterView, JobView


@register
class ElasticAFS(Aryl):
    name = "afs"
    description = "AFS: base demand FIFO, then greedy one worker to the largest gain per GPU."
    paper = "Aryl §7.1 (AFS, NSDI'21)"

    def phase_one_order(self, view: ClusterView) -> list[JobView]:
        return list(view.queue.values())

    def split_flexible(
        self, view: ClusterView, groups: list[FlexibleGroup], rates: dict[str, list[float]],
        capacity: int,
    ) -> dict[str, int]:
        chosen = {g.job_id: 0 for g in groups}
        per_worker = {g.job_id: (g.weights[0] if g.weights else 0) for g in groups}
        heap: list[tuple[float, int, str]] = []
        for order, group in enumerate(groups):
            _push(heap, group.job_id, order, 0, rates[group.job_id], per_worker[group.job_id])
        order_of = {g.job_id: k for k, g in enumerate(groups)}
        while heap and capacity > 0:
            _, _, job_id = heapq.heappop(heap)
            d = per_worker[job_id]
            if d > capacity:
                continue
            chosen[job_id] += 1
            capacity -= d
            _push(heap, job_id, order_of[job_id], chosen[job_id], rates[job_id], d)
        return chosen


def _push(heap: list[tuple[float, int, str]], job_id: str, order: int, w: int,
          rates: list[float], d: int) -> None:
    if w + 1 < len(rates) and d > 0:
        gain = (rates[w + 1] - rates[w]) / d
        if gain > 0:
            heapq.heappush(heap, (-gain, order, job_id))
