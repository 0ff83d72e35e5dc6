"""SRTF and SRSF: preemptive shortest-remaining-time (or remaining *service*, time × GPUs,
as in Tiresias' and Muri's comparisons) first, with perfect knowledge of the remaining time
scaled by the job's predicted duration."""

from __future__ import annotations

from collections.abc import Iterator

from simulation.decisions import Decision
from simulation.policies.base import Policy, register
from simulation.policies.ordering import QueueOrder, ShrinkingRunningOrder, schedule_by_priority
from simulation.view import ClusterView, JobView


def remaining_seconds(job: JobView) -> float:
    """Predicted remaining running time at the requested size."""
    spec = job.spec
    scale = job.predicted_duration / spec.duration if spec.duration > 0 else 1.0
    return job.remaining_work * scale


def srtf_key(job: JobView) -> float:
    return remaining_seconds(job)


def srsf_key(job: JobView) -> float:
    return remaining_seconds(job) * job.spec.num_gpus


@register
class ShortestRemainingTime(Policy):
    interval = None  # the order between running and queued jobs only changes at events
    name = "srtf"
    description = "Shortest remaining time first; preemptive."

    def __init__(self, **values: object) -> None:
        super().__init__(**values)
        self._order = QueueOrder(srtf_key)
        self._running = ShrinkingRunningOrder(remaining_seconds)

    def schedule(self, view: ClusterView) -> Iterator[Decision]:
        return schedule_by_priority(view, srtf_key, self._order, self._running)


@register
class ShortestRemainingService(Policy):
    interval = None
    name = "srsf"
    description = "Shortest remaining service (time × GPUs) first; preemptive."

    def __init__(self, **values: object) -> None:
        super().__init__(**values)
        self._order = QueueOrder(srsf_key)
        self._running = ShrinkingRunningOrder(srsf_key)

    def schedule(self, view: ClusterView) -> Iterator[Decision]:
        return schedule_by_priority(view, srsf_key, self._order, self._running)
