"""SJF: non-preemptive shortest-job-first by predicted running time; a job that does not
fit is skipped so shorter-but-larger jobs do not idle the cluster (greedy)."""

from __future__ import annotations

from collections.abc import Iterator

from simulation.decisions import Decision
from simulation.policies.base import Policy, register
from simulation.policies.ordering import launch_in_order
from simulation.policies.queue_order import QueueOrder
from simulation.view import ClusterView


@register
class ShortestJobFirst(Policy):
    interval = None
    name = "sjf"
    layers = ("ordering", "placement")  # allocation: every job at its requested size
    description = "Shortest job first by predicted duration; non-preemptive."

    def __init__(self, **values: object) -> None:
        super().__init__(**values)
        self._order = QueueOrder(lambda j: (j.predicted_duration, j.submit_time))

    def schedule(self, view: ClusterView) -> Iterator[Decision]:
        for launch in launch_in_order(view, self._order.jobs(view), blocking=False):
            self._order.forget(launch.job_id)
            yield launch
