"""Tiresias discretised 2D-LAS (Gu et al., NSDI'19 §4.2), as EDL §6 configures it.

A job's priority queue is set by its attained service (GPU-seconds): below the first
threshold it is in queue 0 (highest), and so on; EDL used three queues split at 500 and
10,000 GPU·s. Within a queue jobs go in submit order. A queued job that has waited longer
than `promote_knob` times its executed time is promoted back to queue 0 (starvation
avoidance; Tiresias' PROMOTE_KNOB). Preemptive: lower queues yield to higher ones.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterator

from simulation.decisions import Decision
from simulation.policies.base import Param, Policy, register
from simulation.policies.ordering import schedule_by_priority
from simulation.state import JobStatus
from simulation.view import ClusterView, JobView


@register
class Tiresias(Policy):
    name = "tiresias"
    description = "Discretised two-dimensional least-attained-service (2D-LAS); preemptive."
    paper = "Tiresias NSDI'19 §4.2; EDL §6.1 parameters"
    params = (
        Param("thresholds", str, "500,10000", "queue boundaries in GPU-seconds, ascending"),
        Param("promote_knob", float, 8.0, "promote when wait > knob × run time; 0 = off"),
    )
    thresholds: str
    promote_knob: float

    def __init__(self, **values: object) -> None:
        super().__init__(**values)
        self._bounds = [float(x) for x in str(self.thresholds).split(",") if x.strip()]

    def queue_index(self, view: ClusterView, job: JobView) -> int:
        if (
            self.promote_knob > 0
            and job.status == JobStatus.QUEUED
            and job.executed_seconds > 0
            and view.now - job.queued_since > self.promote_knob * job.executed_seconds
        ):
            return 0
        return bisect_right(self._bounds, job.attained_service)

    def schedule(self, view: ClusterView) -> Iterator[Decision]:
        return schedule_by_priority(view, lambda j: (self.queue_index(view, j), j.submit_time))
