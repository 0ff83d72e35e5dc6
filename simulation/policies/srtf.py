"""SRTF and SRSF: preemptive shortest-remaining-time (or remaining *service*, time × GPUs,
as in Tiresias' and Muri's comparisons) first, with perfect knowledge of the remaining time
scaled by the job's predicted duration."""

from __future__ import annotations

from collections.abc import Iterator

from simulation.decisions import Decision
from simulation.policies.base import Policy, register
from simulation.policies.ordering import schedule_by_priority
from simulation.view import ClusterView, JobView


def remaining_seconds(job: JobView) -> float:
    """Predicted remaining running time at the requested size."""
    spec = job.spec
    scale = job.predicted_duration / spec.duration if spec.duration > 0 else 1.0
    return job.remaining_work * scale


@register
class ShortestRemainingTime(Policy):
    name = "srtf"
    description = "Shortest remaining time first; preemptive."

    def schedule(self, view: ClusterView) -> Iterator[Decision]:
        return schedule_by_priority(view, lambda j: (remaining_seconds(j), j.submit_time))


@register
class ShortestRemainingService(Policy):
    name = "srsf"
    description = "Shortest remaining service (time × GPUs) first; preemptive."

    def schedule(self, view: ClusterView) -> Iterator[Decision]:
        return schedule_by_priority(
            view, lambda j: (remaining_seconds(j) * j.spec.num_gpus, j.submit_time)
        )
