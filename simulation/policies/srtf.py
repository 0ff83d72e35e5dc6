"""SRTF and SRSF: preemptive shortest-remaining-time (or remaining *service*, time × GPUs,
as in Tiresias' and Muri's comparisons) first, with perfect knowledge of the remaining time
scaled by the job's predicted duration."""

from __future__ import annotations

from collections.abc import Iterator

from simulation.decisions import Decision
from simulation.policies.base import Policy, register
from simulation.policies.priority_schedule import schedule_by_priority
from simulation.policies.queue_order import QueueOrder
from simulation.policies.remaining_time_order import RemainingTimeOrder
from simulation.view import ClusterView, JobView


def prediction_scale(job: JobView) -> float:
    """Predicted over actual duration: the remaining work as the scheduler believes it."""
    spec = job.spec
    return job.predicted_duration / spec.duration if spec.duration > 0 else 1.0


def remaining_seconds(job: JobView) -> float:
    """Predicted remaining running time at the requested size."""
    return job.remaining_work * prediction_scale(job)


def srtf_key(job: JobView) -> float:
    return remaining_seconds(job)


def srsf_key(job: JobView) -> float:
    return remaining_seconds(job) * job.spec.num_gpus


def srtf_factors(job: JobView) -> tuple[float, float]:
    """(scale, weight) of `srtf_key` for `RemainingTimeOrder` (x * 1.0 is x, to the bit)."""
    return prediction_scale(job), 1.0


def srsf_factors(job: JobView) -> tuple[float, float]:
    return prediction_scale(job), float(job.spec.num_gpus)


@register
class ShortestRemainingTime(Policy):
    interval = None  # the order between running and queued jobs only changes at events
    name = "srtf"
    layers = ("ordering",)  # allocation `requested`, placement `best-fit` or a stage
    description = "Shortest remaining time first; preemptive."

    def __init__(self, **values: object) -> None:
        super().__init__(**values)
        self._order = QueueOrder(srtf_key)
        self._running = RemainingTimeOrder(srtf_key, srtf_factors)

    def priority_key(self, view: ClusterView, job: JobView) -> float:
        """The ordering a placement stage follows: lowest first."""
        return srtf_key(job)

    def schedule(self, view: ClusterView) -> Iterator[Decision]:
        return schedule_by_priority(view, srtf_key, self._order, self._running)


@register
class ShortestRemainingService(Policy):
    interval = None
    name = "srsf"
    layers = ("ordering",)  # allocation `requested`, placement `best-fit` or a stage
    description = "Shortest remaining service (time × GPUs) first; preemptive."

    def __init__(self, **values: object) -> None:
        super().__init__(**values)
        self._order = QueueOrder(srsf_key)
        self._running = RemainingTimeOrder(srsf_key, srsf_factors)

    def priority_key(self, view: ClusterView, job: JobView) -> float:
        """The ordering a placement stage follows: lowest first."""
        return srsf_key(job)

    def schedule(self, view: ClusterView) -> Iterator[Decision]:
        return schedule_by_priority(view, srsf_key, self._order, self._running)
