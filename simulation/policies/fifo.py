"""FIFO: jobs start in arrival order at their requested size; the head of the queue blocks
those behind it unless `backfill` lets smaller jobs start in the gaps (no reservation)."""

from __future__ import annotations

from collections.abc import Iterator

from simulation.decisions import Decision
from simulation.policies.base import Param, Policy, register
from simulation.policies.ordering import launch_in_order, place_requested
from simulation.view import ClusterView


@register
class Fifo(Policy):
    interval = None
    name = "fifo"
    layers = ("ordering", "placement")  # allocation: every job at its requested size
    description = "First in, first out; non-preemptive; optional backfilling."
    params = (Param("backfill", bool, False, "let later jobs start when the head does not fit"),)
    backfill: bool

    def schedule(self, view: ClusterView) -> Iterator[Decision]:
        if self.backfill:
            return launch_in_order(view, view.queue.values(), blocking=False)
        return self._launch_head(view)

    @staticmethod
    def _launch_head(view: ClusterView) -> Iterator[Decision]:
        """Start the head of the queue while it fits; never look past it (O(1) per launch,
        where copying a long queue every round would be O(queue))."""
        queue = view.queue
        while queue:
            launch = place_requested(view, queue[next(iter(queue))])
            if launch is None:
                return
            yield launch
