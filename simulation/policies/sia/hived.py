"""hived: HiveD* (SIA §6.1, §6.4; HiveD, OSDI'20): quota as buddy cells, idle cells lent at
once to any pending job, and, as SIA's * says, no preemption.

Each round (on arrivals and completions):
1. Dedicated: visiting queues in increasing allocation / quota, start the FCFS head if it
   fits the queue's quota cells (or the queue holds no dedicated cell) and a free cell, own
   servers first (`locality.CellPlacer`); repeat until no head starts.
2. Opportunistic: visiting queues in the same order, start the first pending job (FCFS)
   that a free cell holds; repeat until none fits. No reservations and no duration
   predictions, and lent jobs may take buddy cells of dedicated ones: HiveD reclaims those
   by preemption, which HiveD* may not do, so a queue whose quota is lent waits.

`preemption=true` is HiveD itself: a dedicated head that finds no free cell evicts the
preemptible lent jobs of the cell freed by evicting the fewest GPUs.
"""

from __future__ import annotations

from collections.abc import Iterator

from simulation.decisions import Decision, Preempt
from simulation.model import ClusterSpec, Workload
from simulation.policies.base import Param, register
from simulation.policies.sia.cells import DEDICATED, OPPORTUNISTIC
from simulation.policies.sia.common import QueuePolicy, queue_of, queue_quotas
from simulation.policies.sia.locality import CellPlacer, check_cells
from simulation.view import ClusterView


@register
class HiveD(QueuePolicy):
    name = "hived"
    layers = ("ordering", "allocation", "placement")  # buddy cells hold a job's requested width
    description = "HiveD*: buddy cells, quota as cells, idle cells lent greedily, no preemption."
    paper = "SIA §6.1, §6.4 (HiveD*); HiveD OSDI'20"
    interval = None
    params = (
        Param("preemption", bool, False,
              "HiveD proper: evict preemptible lent jobs for a dedicated head"),
    )
    preemption: bool

    def __init__(self, **values: object) -> None:
        super().__init__(**values)
        self._cells: CellPlacer | None = None
        self._dedicated: set[str] = set()

    def check_inputs(self, cluster: ClusterSpec, workload: Workload) -> None:
        super().check_inputs(cluster, workload)
        check_cells(self.name, cluster, workload, queue_quotas(cluster))

    def schedule(self, view: ClusterView) -> Iterator[Decision]:
        quotas = queue_quotas(view.spec)
        if self._cells is None:
            self._cells = CellPlacer(view.spec, quotas, view.pool_servers)
        cells = self._cells
        cells.sync(view)
        self._dedicated &= set(view.running)
        usage = self.queue_usage(view, quotas)
        held: dict[str, list[int]] = {q: [] for q in quotas}
        for job_id in self._dedicated:
            job = view.running[job_id]
            held[queue_of(job.spec, quotas)].append(job.gpus)
        started = True
        while started:  # 1. dedicated heads
            started = False
            for queue in usage.by_share(quotas):
                pending = usage.pending[queue]
                if not pending:
                    continue
                head = pending[0]
                need = head.spec.num_gpus
                if held[queue] and not cells.within_quota(queue, held[queue], need):
                    continue
                launch = cells.place(head, queue, DEDICATED)
                if launch is None and self.preemption:
                    victims = cells.make_room(head, queue, lambda h: (
                        h.kind == OPPORTUNISTIC and view.running[h.owner].spec.preemptible))
                    for job_id in victims or ():
                        usage.allocation[queue_of(view.running[job_id].spec, quotas)] -= (
                            view.running[job_id].gpus)
                        cells.cells.release(job_id)
                        yield Preempt(job_id)
                    if victims:
                        launch = cells.place(head, queue, DEDICATED)
                if launch is None:
                    continue
                pending.pop(0)
                usage.allocation[queue] += need
                held[queue].append(need)
                self._dedicated.add(head.job_id)
                yield launch
                started = True
                break
        failed = view.spec.total_gpus + 1  # no free cell holds this width, nor any wider
        started = True
        while started:  # 2. lend idle cells to any pending job
            started = False
            for queue in usage.by_share(quotas):
                for job in usage.pending[queue]:
                    if job.spec.num_gpus >= failed:
                        continue
                    launch = cells.place(job, queue, OPPORTUNISTIC, guard=False)
                    if launch is None:
                        failed = job.spec.num_gpus
                        continue
                    usage.pending[queue].remove(job)
                    usage.allocation[queue] += job.spec.num_gpus
                    yield launch
                    started = True
                    break
                if started:
                    break
