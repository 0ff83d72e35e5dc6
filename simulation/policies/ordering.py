"""Shared mechanics of queue-ordering policies, so each policy module is only its order.

`launch_in_order` serves non-preemptive policies (FIFO, SJF): walk the queue in priority
order and launch what fits. `preemptive_schedule` is the rule of preemptive ones (SRTF,
SRSF, Tiresias): choose the highest-priority set of jobs whose GPUs fit the cluster, preempt
the running jobs outside it, launch the queued jobs inside it. `priority_schedule.py` makes
the same decisions with work that follows what changed, from the orders kept across rounds
in `queue_order.py`, `running_order.py` and `remaining_time_order.py`.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from functools import lru_cache

from simulation.decisions import Decision, Launch, Preempt
from simulation.model import JobSpec, PoolKind, PoolSpec
from simulation.placement import best_fit
from simulation.state import JobStatus
from simulation.view import ClusterView, JobView


def pool_preference(view: ClusterView, spec: JobSpec) -> list[str]:
    """The job's own pool first, then training and quota pools, then on-loan inference."""
    return list(_pool_preference(view.spec.pools, spec.pool, spec.gpu_type))


@lru_cache(maxsize=256)
def _pool_preference(
    pools: tuple[PoolSpec, ...], own: str | None, gpu_type: str | None
) -> tuple[str, ...]:
    """`pool_preference` from what it depends on, computed once per cluster and job class
    (it was sorted afresh for every placement)."""
    ordered = sorted(pools, key=lambda p: (p.name != own, p.kind == PoolKind.INFERENCE))
    return tuple(p.name for p in ordered if gpu_type is None or p.gpu_type == gpu_type)


def place_requested(view: ClusterView, job: JobView) -> Launch | None:
    """A launch of `job` at its requested size by best fit, or None if it does not fit."""
    spec = job.spec
    placement = best_fit(
        view, spec.num_gpus, gpus_per_worker=spec.gpus_per_worker,
        pools=pool_preference(view, spec),
    )
    return Launch(job.job_id, placement) if placement is not None else None


def launch_in_order(
    view: ClusterView, ordered: Iterable[JobView], *, blocking: bool
) -> Iterator[Decision]:
    """Launch queued jobs in `ordered`; with `blocking`, stop at the first that does not fit.

    The walk also stops once the free GPUs are fewer than any queued job asks for: no job
    further on could be launched."""
    free = view.total_free_gpus()
    smallest = view.smallest_queued_gpus()  # changes only when a launch leaves the queue
    for job in ordered:
        if free <= 0 or free < smallest:
            return
        launch = place_requested(view, job) if job.spec.num_gpus <= free else None
        if launch is None:
            if blocking:
                return
            continue
        free -= job.spec.num_gpus
        yield launch
        smallest = view.smallest_queued_gpus()


def training_capacity(view: ClusterView) -> int:
    """GPUs that can host training now (inference servers count only while on loan)."""
    return view.available_gpus()


def preemptive_schedule(view: ClusterView, ordered: Iterable[JobView]) -> Iterator[Decision]:
    """Run the highest-priority jobs that fit; `ordered` holds running and queued jobs.

    Non-preemptible running jobs keep their GPUs whatever their priority.
    """
    budget = training_capacity(view)
    keep: set[str] = set()
    for job in view.running.values():
        if not job.spec.preemptible:
            keep.add(job.job_id)
            budget -= job.gpus
    waiting: list[JobView] = []  # queued jobs inside the chosen set
    for job in ordered:
        if budget <= 0:
            break  # nothing further can fit
        job_id = job.job_id
        if job_id in keep:
            continue
        running = job.status == JobStatus.RUNNING
        need = job.gpus if running else job.spec.num_gpus
        if need <= budget:
            budget -= need
            keep.add(job_id)
            if not running:
                waiting.append(job)
    if not waiting:
        return
    for job in list(view.running.values()):
        if job.job_id not in keep:
            yield Preempt(job.job_id)
    for job in waiting:
        launch = place_requested(view, job)
        if launch is not None:
            yield launch
