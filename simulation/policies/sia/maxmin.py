"""maxmin: instantaneous max-min fair sharing between the pools with pending jobs
(SIA §4.1 "MMFS"; weighted by quota).

Free GPUs go, one job at a time, to the queue with the smallest allocation / quota among
those whose FCFS head fits the idle GPUs; a queue may exceed its quota while others have
nothing waiting. Non-preemptive, like every SIA scheduler: an idle pool's GPUs lent this
way come back only as the borrowers finish, which is how max-min slows donors down.
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
from simulation.view import ClusterView


@register
class MaxMinFair(QueuePolicy):
    name = "maxmin"
    description = "Instantaneous max-min fair sharing of idle GPUs between quota pools."
    paper = "SIA §4.1 (MMFS)"
    interval = None  # decides only at events: a round without one starts nothing

    def schedule(self, view: ClusterView) -> Iterator[Decision]:
        quotas = queue_quotas(view.spec)
        usage = self.queue_usage(view, quotas)
        idle = idle_gpus(view, quotas)
        while idle > 0:
            for queue in usage.by_share(quotas):
                pending = usage.pending[queue]
                if not pending or pending[0].spec.num_gpus > idle:
                    continue
                launch = place_shared(view, pending[0], quotas)
                if launch is None:
                    continue
                job = pending.pop(0)
                usage.allocation[queue] += job.spec.num_gpus
                idle -= job.spec.num_gpus
                yield launch
                break
            else:
                return
