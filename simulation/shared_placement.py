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
from simulation.model import PoolKind
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


class PhysicalFree:
    """`physical_free` kept across rounds, recomputed only on the servers that changed.

    A server's physically used GPUs are the engine's count (each job on it counts its GPUs)
    less the GPUs of *riders*, jobs holding the same GPUs as another job of their group, which
    the policy counts per server. So after jobs come, go or change partners only their
    servers are recomputed, however many jobs run. `free` is the dict `fit_placement` fills
    (call `taken` with what it placed); `pool_free` sums its positive entries per pool, so a
    job larger than that is refused without walking the servers.
    """

    def __init__(self, view: ClusterView, riders: dict[str, int]) -> None:
        self.free: dict[str, int] = {}
        self.pool_free: dict[str, int] = {}
        self._pool_of = {sid: server.pool for sid, server in view.servers.items()}
        self._lendable = [sid for sid, server in view.servers.items()
                          if server.kind == PoolKind.INFERENCE]  # available only on loan
        self._lent = self._lent_now(view)
        self.refresh(view, view.servers.keys(), riders)

    def _lent_now(self, view: ClusterView) -> list[str]:
        return [sid for sid in self._lendable if view.servers[sid].available]

    @property
    def lent(self) -> tuple[str, ...]:
        """The inference servers on loan at the last `refresh`."""
        return tuple(self._lent)

    def refresh(self, view: ClusterView, servers: Iterable[str], riders: dict[str, int]
                ) -> None:
        """Recompute `servers` (all of them if the servers on loan changed)."""
        if self._lendable:
            lent = self._lent_now(view)
            if lent != self._lent:
                self._lent = lent
                servers = view.servers.keys()
        free, totals = self.free, self.pool_free
        for sid in servers:
            server = view.servers[sid]
            pool = self._pool_of[sid]
            was = free.get(sid, 0)
            if server.available:
                now = free[sid] = server.gpus - server.used + riders.get(sid, 0)
            else:
                free.pop(sid, None)
                now = 0
            totals[pool] = totals.get(pool, 0) + max(now, 0) - max(was, 0)

    def taken(self, placement: Placement) -> None:
        """`fit_placement` took `placement` from `free`: update the pool sums."""
        for slot in placement:
            self.pool_free[self._pool_of[slot.server]] -= slot.gpus

    def may_fit(self, pools: Iterable[str], gpus: int) -> bool:
        """False when `fit_placement` must fail: fewer free GPUs in `pools` than `gpus`."""
        return sum(self.pool_free.get(pool, 0) for pool in pools) >= gpus
