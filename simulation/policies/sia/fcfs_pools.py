"""fcfs-pools: every queue runs first-come-first-served on its own quota, no sharing
(SIA §4.1 "FCFS", CloudML's production scheduler and the reference for speedups).

Strict FCFS: a queue's head blocks the jobs behind it. A queue never holds more than its
quota, except that a job wider than the quota starts once its queue is empty (so it is
not stuck forever). With quotas summing to at most the cluster's GPUs, free GPUs always
cover a queue's unused quota, so placing anywhere (own servers first) equals isolation.

`locality=cells` is the reference of SIA §6.4: each job on one server in a buddy cell of
its width, quota counted in cells (`locality.CellPlacer`), every cell a dedicated one.
"""

from __future__ import annotations

from collections.abc import Iterator

from simulation.decisions import Decision
from simulation.model import ClusterSpec, Workload
from simulation.policies.base import Param, register
from simulation.policies.sia.cells import DEDICATED
from simulation.policies.sia.common import (
    QueuePolicy,
    place_shared,
    queue_of,
    queue_quotas,
)
from simulation.policies.sia.locality import LOCALITY, CellPlacer, check_cells
from simulation.view import ClusterView


@register
class FcfsPools(QueuePolicy):
    name = "fcfs-pools"
    description = "FCFS inside each quota pool, no sharing between pools (SIA's reference)."
    paper = "SIA §4.1 (FCFS baseline)"
    interval = None  # decides only at events: a round without one starts nothing
    params = (
        Param("locality", str, "none",
              "cells: each job on one server in a buddy cell of its width (SIA §5.5)",
              choices=LOCALITY),
    )
    locality: str

    def __init__(self, **values: object) -> None:
        super().__init__(**values)
        self._cells: CellPlacer | None = None

    def check_inputs(self, cluster: ClusterSpec, workload: Workload) -> None:
        super().check_inputs(cluster, workload)
        if self.locality == "cells":
            check_cells(self.name, cluster, workload, queue_quotas(cluster))

    def schedule(self, view: ClusterView) -> Iterator[Decision]:
        quotas = queue_quotas(view.spec)
        if self.locality == "cells" and self._cells is None:
            self._cells = CellPlacer(view.spec, quotas, view.pool_servers)
        cells = self._cells
        if cells is not None:
            cells.sync(view)
        usage = self.queue_usage(view, quotas)
        for queue, pending in usage.pending.items():
            held = [] if cells is None else [
                j.gpus for j in view.running.values() if queue_of(j.spec, quotas) == queue]
            for job in pending:
                need = job.spec.num_gpus
                if cells is None:
                    within = usage.allocation[queue] + need <= quotas[queue]
                else:
                    within = cells.within_quota(queue, held, need)
                if not within and usage.allocation[queue] > 0:
                    break
                if cells is None:
                    launch = place_shared(view, job, quotas)
                else:
                    launch = cells.place(job, queue, DEDICATED)
                if launch is None:
                    break
                usage.allocation[queue] += need
                held.append(need)
                yield launch
