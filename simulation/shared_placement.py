"""Placement bookkeeping for policies that put several jobs on the same GPUs.

With `shares_gpus` the engine lets jobs over-commit servers, so its free-GPU index counts a
GPU once per job. Sharing policies (Muri, AntMan) keep an invariant instead: jobs that share
GPUs hold the identical placement, and the policy knows which jobs form a group (slots name
no GPU indices, so two groups may hold equal slot tuples), so a server's physically used GPUs
are the sum over its groups' placements. These helpers fit new placements into what is
physically free.
"""

from __future__ import annotations

from collections.abc import Iterable

from simulation.decisions import Placement, Slot
from simulation.view import ClusterView, JobView


def physical_free(view: ClusterView, occupied: Iterable[Placement]) -> dict[str, int]:
    """Free GPUs per available server when exactly the placements in `occupied` are held."""
    free = {sid: s.gpus for sid, s in view.servers.items() if s.available}
    for placement in occupied:
        for slot in placement:
            if slot.server in free:
                free[slot.server] -= slot.gpus
    return free


def fit_placement(
    view: ClusterView,
    free: dict[str, int],
    gpus: int,
    *,
    gpus_per_worker: int,
    pools: Iterable[str],
) -> Placement | None:
    """Best-fit `gpus` GPUs into `free` (updated in place) on servers of `pools`.

    One server with the fewest free GPUs that still holds the job wins; otherwise the
    emptiest servers are combined, whole workers per server, spanning as few as possible.
    """
    servers = [sid for pool in pools for sid in view.pool_servers(pool) if free.get(sid, 0) > 0]
    single = [sid for sid in servers if free[sid] >= gpus]
    if single:
        best = min(single, key=lambda sid: free[sid])
        free[best] -= gpus
        return (Slot(best, gpus),)
    slots: list[Slot] = []
    remaining = gpus
    for sid in sorted(servers, key=lambda s: -free[s]):
        take = min(free[sid] - free[sid] % gpus_per_worker, remaining)
        if take > 0:
            slots.append(Slot(sid, take))
            remaining -= take
        if remaining == 0:
            for slot in slots:
                free[slot.server] -= slot.gpus
            return tuple(slots)
    return None


def share_changed(job: JobView, share: float) -> bool:
    return abs(job.share - share) > 1e-9
