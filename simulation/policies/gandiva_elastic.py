"""Gandiva's opportunistic grow-shrink as Aryl §7.1 compares against it (Gandiva §3.2).

A job grows only while the cluster is under-utilised, i.e. there are idle GPUs and *no
pending job*; as soon as a job waits, grown jobs shrink back to their base demand to make
room. Simplifications: base demand is served FIFO (skipping what does not fit, as Gandiva's
queue); growth fills jobs one at a time in arrival order up to their maximum, ignoring how
well they scale (Appendix F: "it neglects the scalability of the jobs"); placement and
non-preemption are shared with the `aryl` policy. The full Gandiva policy (time-slicing,
migration, packing) is a separate policy, `gandiva`.
"""

from __future__ import annotations

from simulation.policies.aryl import Allocation, Aryl
from simulation.policies.aryl_knapsack import FlexibleGroup
from simulation.policies.base import register
from simulation.view import ClusterView, JobView


@register
class GandivaElastic(Aryl):
    name = "gandiva-elastic"
    description = "Gandiva-style opportunistic growth: grow only when nothing waits."
    paper = "Aryl §7.1 (Gandiva, OSDI'18)"

    def phase_one_order(self, view: ClusterView) -> list[JobView]:
        return list(view.queue.values())

    def allocate(self, view: ClusterView) -> Allocation:
        allocation = super().allocate(view)
        if len(allocation.admitted) < len(view.queue):  # someone waits: no growth
            allocation.flexible = dict.fromkeys(allocation.flexible, 0)
        return allocation

    def split_flexible(
        self, view: ClusterView, groups: list[FlexibleGroup], rates: dict[str, list[float]],
        capacity: int,
    ) -> dict[str, int]:
        chosen: dict[str, int] = {}
        for group in groups:
            take = 0
            for k, weight in enumerate(group.weights, 1):
                if weight <= capacity:
                    take = k
            chosen[group.job_id] = take
            capacity -= group.weights[take - 1] if take else 0
        return chosen
