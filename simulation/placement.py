"""Consolidating best-fit placement over the engine's free-GPU index.

Shared by every policy that does not place jobs its own way. A job that fits on one server
goes to the available server with the fewest free GPUs that still holds it (best fit keeps
whole servers free for large jobs); a larger job takes the emptiest servers first so it spans
as few servers as possible. Pools are tried in the order given, which is how a policy says
"training servers first" or "on-loan servers first".
"""

from __future__ import annotations

from collections.abc import Iterable

from simulation.decisions import Placement, Slot
from simulation.model import JobSpec
from simulation.view import ClusterView


def eligible_pools(
    view: ClusterView, spec: JobSpec, pools: Iterable[str] | None = None
) -> list[str]:
    """Pools whose GPU type satisfies `spec` (all pools by default, in cluster order)."""
    names = list(pools) if pools is not None else [p.name for p in view.spec.pools]
    if spec.gpu_type is None:
        return names
    return [name for name in names if view.spec.pool(name).gpu_type == spec.gpu_type]


def free_gpus(view: ClusterView, pools: Iterable[str]) -> int:
    return sum(view.free_gpus(pool) for pool in pools)


def best_fit(
    view: ClusterView,
    gpus: int,
    *,
    gpus_per_worker: int = 1,
    pools: Iterable[str],
    flexible: bool = False,
) -> Placement | None:
    """A placement of `gpus` GPUs on free capacity of `pools`, or None if it does not fit.

    Every slot holds a whole number of `gpus_per_worker`-GPU workers.
    """
    pools = list(pools)
    if gpus <= 0:
        return None
    for pool in pools:  # one server is best: no cross-server traffic
        server = _smallest_fit(view, pool, gpus)
        if server is not None:
            return (Slot(server, gpus, flexible),)
    if free_gpus(view, pools) < gpus:
        return None
    slots: list[Slot] = []
    remaining = gpus
    for pool in pools:
        size = view.spec.pool(pool).gpus_per_server
        for free in range(size, 0, -1):
            usable = free - free % gpus_per_worker
            if usable <= 0:
                continue
            for server in view.servers_with_free(pool, free):
                take = min(usable, remaining)
                slots.append(Slot(server, take, flexible))
                remaining -= take
                if remaining == 0:
                    return tuple(slots)
    return None


def _smallest_fit(view: ClusterView, pool: str, gpus: int) -> str | None:
    size = view.spec.pool(pool).gpus_per_server
    for free in range(gpus, size + 1):
        for server in view.servers_with_free(pool, free):
            return server
    return None
