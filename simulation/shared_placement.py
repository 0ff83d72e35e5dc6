"""Placement bookkeeping for policies that put several jobs on the same GPUs.

With `shares_gpus` the engine lets jobs over-commit servers, so its free-GPU index counts a
GPU once per job. Sharing policies (Muri, AntMan) keep an invariant instead: jobs that share
GPUs hold the *identical* placement, so a server's physically used GPUs are the sum over the
distinct placements on it. These helpers compute that and fit new placements into what is
physically free.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from simulation.decisions import Placement, Slot
from simulation.view import ClusterView, JobView


def placements_in_use(view: ClusterView) -> dict[Placement, list[str]]:
    """Distinct placements of running jobs -> the job ids on each, in run order."""
    sharing: dict[Placement, list[str]] = {}
    for job in view.running.values():
        sharing.setdefault(job.placement, []).append(job.job_id)
    return sharing


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


def gpus_by_server(placements: Mapping[Placement, object]) -> dict[str, int]:
    """Physically used GPUs per server under the sharing invariant."""
    used: dict[str, int] = {}
    for placement in placements:
        for slot in placement:
            used[slot.server] = used.get(slot.server, 0) + slot.gpus
    return used
