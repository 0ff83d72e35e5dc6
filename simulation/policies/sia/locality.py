"""Locality cells for the SIA policies (SIA §5.5, §6.4): every job on one server, in a
buddy cell of its width, and quota counted in cells.

`CellPlacer` is the policy side of `cells.BuddyCells`: it mirrors the engine's placements
as cells (the engine counts GPUs per server; which GPUs of a server form a cell is the
policy's bookkeeping), releases the cells of jobs that stopped, and turns cells into
launches.

Choices where SIA §5.5 is silent:
- A queue's quota is cells of its pool's server size (`cells.quota_cells`); a dedicated job
  is within quota when the queue's dedicated cells plus its own fit the quota cells
  (`cells.fits_in_cells`). A queue holding no dedicated cell may start any job, as in
  fcfs-pools. Quota cells are bound to the queue's own servers (HiveD binds a virtual
  cluster's cells to physical ones; here the pool is that binding), so dedicated cells
  and reservations are cut from them only: a queue never takes another's cells as its
  own, and without lending each queue runs exactly as alone on its servers.
- A reservation of r GPUs (r rounded up) is r's binary decomposition into cells no wider
  than the queue's largest quota cell (6 GPUs: a 4-GPU and a 2-GPU cell), held as
  dedicated cells without a job.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping

from simulation.decisions import Launch, Slot
from simulation.errors import InputError
from simulation.model import ClusterSpec, Workload
from simulation.policies.sia.cells import (
    OPPORTUNISTIC,
    RESERVED,
    BuddyCells,
    Holder,
    fits_in_cells,
    is_power_of_two,
    quota_cells,
)
from simulation.view import ClusterView, JobView

LOCALITY = ("none", "cells")


def check_cells(policy: str, cluster: ClusterSpec, workload: Workload,
                quotas: Mapping[str, int]) -> None:
    """Refuse servers and jobs that cells cannot describe (SIA §6.4: 1, 2, 4 or 8 GPUs)."""
    largest = 0
    for name in quotas:
        pool = cluster.pool(name)
        if not is_power_of_two(pool.gpus_per_server):
            raise InputError(f"{policy} with locality=cells needs servers of a power of two "
                             f"GPUs; pool {name} has {pool.gpus_per_server}", field="locality")
        largest = max(largest, pool.gpus_per_server)
    for spec in workload.jobs:
        if not is_power_of_two(spec.num_gpus) or spec.num_gpus > largest:
            raise InputError(f"{policy} with locality=cells runs jobs of a power of two GPUs "
                             f"up to one server ({largest}); job {spec.job_id} asks for "
                             f"{spec.num_gpus}", source=workload.source, field="locality")


class CellPlacer:
    """The cells of the queues' servers, kept in step with the engine's running jobs."""

    def __init__(self, cluster: ClusterSpec, quotas: Mapping[str, int],
                 servers: Callable[[str], tuple[str, ...]]) -> None:
        self.home = {name: servers(name) for name in quotas}
        self.cells = BuddyCells({sid: cluster.pool(name).gpus_per_server
                                 for name in quotas for sid in self.home[name]})
        self.quota_cells = {name: quota_cells(quotas[name], cluster.pool(name).gpus_per_server)
                            for name in quotas}
        self._reservations: list[str] = []

    def sync(self, view: ClusterView) -> None:
        """Release the cells of jobs no longer running (finished or preempted)."""
        for owner in self.cells.owners():
            if owner not in view.running:
                self.cells.release(owner)

    def within_quota(self, queue: str, dedicated: list[int], need: int) -> bool:
        return fits_in_cells(self.quota_cells[queue], [*dedicated, need])

    def place(self, job: JobView, queue: str, kind: str, *, guard: bool = True
              ) -> Launch | None:
        """Hold a cell of the job's width and launch the job on it, or None."""
        servers = None if kind == OPPORTUNISTIC else self.home[queue]
        cell = self.cells.allocate(job.spec.num_gpus, job.job_id, kind=kind, queue=queue,
                                   servers=servers, guard=guard)
        return None if cell is None else Launch(job.job_id, (Slot(cell.server, cell.size),))

    def reserve(self, amounts: Mapping[str, float]) -> bool:
        """Hold every queue's reservation as dedicated-like cells; False if one does not fit
        (then no opportunistic job may start until `clear_reservations`, SIA §5.5)."""
        for queue, amount in amounts.items():
            gpus = math.ceil(amount - 1e-9)
            if gpus <= 0:
                continue
            for size in quota_cells(gpus, max(self.quota_cells[queue])):
                owner = f"reservation:{queue}:{len(self._reservations)}"
                if self.cells.allocate(size, owner, kind=RESERVED, queue=queue,
                                       servers=self.home[queue]) is None:
                    return False
                self._reservations.append(owner)
        return True

    def clear_reservations(self) -> None:
        for owner in self._reservations:
            self.cells.release(owner)
        self._reservations.clear()

    def make_room(self, job: JobView, queue: str, evictable: Callable[[Holder], bool]
                  ) -> list[str] | None:
        """Jobs to preempt so `job` gets a cell on its queue's servers: those of the cell
        freed by evicting the fewest GPUs."""
        found = self.cells.clearable(job.spec.num_gpus, evictable, servers=self.home[queue])
        return None if found is None else found[1]
