"""ssf and gssf: shortest service first (SIA §4.1).

Service is GPUs × running time, and both get accurate durations, as in the paper. `ssf`
orders each queue's pending jobs by service and keeps each queue within its quota (no
sharing); `gssf` treats the whole cluster as one global pool and orders every pending job
by service. Both are non-preemptive and greedy: a job that does not fit is skipped so a
smaller one behind it can start (the paper does not say; blocking would let one wide job
idle the pool, which defeats the point of preferring short jobs).
"""

from __future__ import annotations

from collections.abc import Iterator

from simulation.decisions import Decision
from simulation.policies.base import register
from simulation.policies.sia.common import (
    QueuePolicy,
    idle_gpus,
    place_shared,
    queue_quotas,
)
from simulation.view import ClusterView, JobView


def service(job: JobView) -> tuple[float, float]:
    """Shortest service first key: GPU-seconds, then submit time."""
    return (job.spec.num_gpus * job.spec.duration, job.submit_time)


@register
class ShortestServiceFirst(QueuePolicy):
    name = "ssf"
    description = "Shortest service (GPUs × duration) first inside each quota pool; no sharing."
    paper = "SIA §4.1 (SSF)"

    def schedule(self, view: ClusterView) -> Iterator[Decision]:
        quotas = queue_quotas(view.spec)
        usage = self.queue_usage(view, quotas)
        for queue, pending in usage.pending.items():
            for job in sorted(pending, key=service):
                need = job.spec.num_gpus
                within = usage.allocation[queue] + need <= quotas[queue]
                if not within and usage.allocation[queue] > 0:
                    continue  # wider than the quota: starts once its queue is empty (fcfs-pools)
                launch = place_shared(view, job, quotas)
                if launch is None:
                    continue
                usage.allocation[queue] += need
                yield launch


@register
class GlobalShortestServiceFirst(QueuePolicy):
    name = "gssf"
    description = "Shortest service first over all pools as one global pool (shares quota)."
    paper = "SIA §4.1 (gSSF)"

    def schedule(self, view: ClusterView) -> Iterator[Decision]:
        quotas = queue_quotas(view.spec)
        idle = idle_gpus(view, quotas)
        for job in sorted(view.queue.values(), key=service):
            if idle <= 0:
                return
            if job.spec.num_gpus > idle:
                continue
            launch = place_shared(view, job, quotas)
            if launch is not None:
                idle -= job.spec.num_gpus
                yield launch
