"""fcfs-pools: every queue runs first-come-first-served on its own quota, no sharing
(SIA §4.1 "FCFS", CloudML's production scheduler and the reference for speedups).

Strict FCFS: a queue's head blocks the jobs behind it. A queue never holds more than its
quota, except that a job wider than the quota starts once its queue is empty (so it is
not stuck forever). With quotas summing to at most the cluster's GPUs, free GPUs always
cover a queue's unused quota, so placing anywhere (own servers first) equals isolation.
"""

from __future__ import annotations

from collections.abc import Iterator

from simulation.decisions import Decision
from simulation.policies.base import register
from simulation.policies.sia.common import QueuePolicy, QueueUsage, place_shared, queue_quotas
from simulation.view import ClusterView


@register
class FcfsPools(QueuePolicy):
    name = "fcfs-pools"
    description = "FCFS inside each quota pool, no sharing between pools (SIA's reference)."
    paper = "SIA §4.1 (FCFS baseline)"

    def schedule(self, view: ClusterView) -> Iterator[Decision]:
        quotas = queue_quotas(view.spec)
        usage = QueueUsage.of(view, quotas)
        for queue, pending in usage.pending.items():
            for job in pending:
                need = job.spec.num_gpus
                within = usage.allocation[queue] + need <= quotas[queue]
                if not within and usage.allocation[queue] > 0:
                    break
                launch = place_shared(view, job, quotas)
                if launch is None:
                    break
                usage.allocation[queue] += need
                yield launch
