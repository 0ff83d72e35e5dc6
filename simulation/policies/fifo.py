"""FIFO: jobs start in arrival order at their requested size; the head of the queue blocks
those behind it unless `backfill` lets smaller jobs start in the gaps (no reservation)."""

from __future__ import annotations

from collections.abc import Iterator

from simulation.decisions import Decision
from simulation.policies.base import Param, Policy, register
from simulation.policies.ordering import launch_in_order
from simulation.view import ClusterView


@register
class Fifo(Policy):
    interval = None
    name = "fifo"
    description = "First in, first out; non-preemptive; optional backfilling."
    params = (Param("backfill", bool, False, "let later jobs start when the head does not fit"),)
    backfill: bool

    def schedule(self, view: ClusterView) -> Iterator[Decision]:
        return launch_in_order(view, view.queue.values(), blocking=not self.backfill)
