"""SJF: non-preemptive shortest-job-first by predicted running time; a job that does not
fit is skipped so shorter-but-larger jobs do not idle the cluster (greedy)."""

from __future__ import annotations

from collections.abc import Iterator

from simulation.decisions import Decision
from simulation.policies.base import Policy, register
from simulation.policies.ordering import launch_in_order
from simulation.view import ClusterView


@register
class ShortestJobFirst(Policy):
    interval = None
    name = "sjf"
    description = "Shortest job first by predicted duration; non-preemptive."

    def schedule(self, view: ClusterView) -> Iterator[Decision]:
        ordered = sorted(view.queue.values(), key=lambda j: (j.predicted_duration, j.submit_time))
        return launch_in_order(view, ordered, blocking=False)
