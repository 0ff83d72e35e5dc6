"""Aryl's enactment and placement (§5.3), mixed into `Aryl`.

Running elastic jobs shrink first, then admitted jobs launch in best-fit-decreasing order
(largest per-worker demand first, each worker on the fullest server it fits), then running
elastic jobs grow. Elastic jobs prefer on-loan inference servers, inelastic jobs training
servers; on inference servers base and flexible workers never share a server, so a reclaim
can return the flexible group by scaling in (`group_flexible=false` turns this off, Table 6).
The mixin reads the allocation's state on `Aryl` (`_pools`, `_running_type`, ...).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

from simulation.decisions import Decision, Launch, Placement, Resize, Slot
from simulation.model import JobSpec, PoolKind
from simulation.view import ClusterView, JobView


@dataclass(slots=True)
class Allocation:
    """What the two phases decided: base admissions and flexible workers per elastic job."""

    admitted: list[tuple[JobView, str | None]] = field(default_factory=list)  # job, GPU type
    flexible: dict[str, int] = field(default_factory=dict)  # job id -> flexible workers


class ArylPlacement:
    """Aryl's §5.3: how an allocation becomes launches and resizes."""

    def _enact(self, view: ClusterView, allocation: Allocation) -> Iterator[Decision]:
        groups = ServerGroups(view) if self.group_flexible else None
        elastic_running = self._elastic_running(view) if self.elastic else []
        for job in elastic_running:
            target = allocation.flexible.get(job.job_id, 0)
            kept = _shrink(job, target)
            if kept is not None:
                yield Resize(job.job_id, kept)
        admitted = sorted(enumerate(allocation.admitted),
                          key=lambda item: (-item[1][0].spec.gpus_per_worker, item[0]))
        for _, (job, gpu_type) in admitted:
            placement = self._place_new(view, job.spec, gpu_type,
                                        allocation.flexible.get(job.job_id, 0), groups)
            if placement is not None:
                if groups is not None:
                    groups.add(placement)
                self._elastic_ids[job.job_id] = job.spec.elastic
                if self.elastic and job.spec.elastic:
                    elastic_running.append(job)  # launches join the end of the running order
                yield Launch(job.job_id, placement)
        if self.elastic:
            for job in elastic_running:
                extra = allocation.flexible.get(job.job_id, 0) - _flexible_workers(job)
                if extra <= 0:
                    continue
                base_type = self._running_type(view, job)
                slots = self._place_flexible(view, job.spec, base_type, extra, groups, {})
                if slots:
                    if groups is not None:
                        groups.add(tuple(slots))
                    yield Resize(job.job_id, _merge(job.placement, slots))

    def _place_new(
        self, view: ClusterView, spec: JobSpec, gpu_type: str | None, flexible: int,
        groups: ServerGroups | None,
    ) -> Placement | None:
        elastic = self.elastic and spec.elastic
        workers = self._base_gpus(spec) // spec.gpus_per_worker
        if gpu_type is None:  # heterogeneous: base on training servers first
            pools = [p for p, _ in self._pools(view, None, elastic=False)]
        else:
            pools = [p for p, _ in self._pools(view, gpu_type, elastic=elastic)]
        avoid = groups.flexible if groups is not None else set()
        base = pack_workers(view, workers, spec.gpus_per_worker, pools, avoid, flexible=False)
        if base is None:
            return None
        slots = list(base)
        if flexible > 0:
            reserved = {s.server: s.gpus for s in base}
            slots += self._place_flexible(view, spec, gpu_type, flexible, groups, reserved)
        return tuple(slots)

    def _place_flexible(
        self, view: ClusterView, spec: JobSpec, base_type: str | None, workers: int,
        groups: ServerGroups | None, reserved: dict[str, int],
    ) -> list[Slot]:
        """Flexible workers, off inference servers holding base workers (this job's too)."""
        gpu_type = None if self._spans_types(spec) else base_type
        pools = [p for p, _ in self._pools(view, gpu_type, elastic=True)]
        avoid = set(groups.base) if groups is not None else set()
        if groups is not None:
            avoid.update(s for s in reserved if view.servers[s].kind == PoolKind.INFERENCE)
        return pack_workers(view, workers, spec.gpus_per_worker, pools, avoid,
                            flexible=True, partial=True, reserved=reserved) or []


class ServerGroups:
    """Inference servers holding base workers vs. flexible workers (kept apart, §5.3).

    Built on first use, since most rounds place nothing.
    """

    def __init__(self, view: ClusterView) -> None:
        self.view = view
        self._base: set[str] = set()
        self._flexible: set[str] = set()
        self._built = False

    @property
    def base(self) -> set[str]:
        self._build()
        return self._base

    @property
    def flexible(self) -> set[str]:
        self._build()
        return self._flexible

    def _build(self) -> None:
        """From the busy inference servers (a bucket of the free index below full) rather
        than from every running job's placement."""
        if self._built:
            return
        self._built = True
        view = self.view
        for pool in view.spec.pools:
            if pool.kind != PoolKind.INFERENCE:
                continue
            for free in range(pool.gpus_per_server):
                for sid in view.servers_with_free(pool.name, free):
                    for job_id in view.servers[sid].jobs:
                        for slot in view.job(job_id).placement:
                            if slot.server == sid:
                                (self._flexible if slot.flexible else self._base).add(sid)

    def add(self, placement: Sequence[Slot]) -> None:
        self._build()
        for slot in placement:
            if self.view.servers[slot.server].kind == PoolKind.INFERENCE:
                (self._flexible if slot.flexible else self._base).add(slot.server)


def pack_workers(
    view: ClusterView, workers: int, gpus_per_worker: int, pools: Sequence[str],
    avoid: set[str], *, flexible: bool, partial: bool = False,
    reserved: dict[str, int] | None = None,
) -> list[Slot] | None:
    """Best-fit decreasing for one job: each worker on the fullest server that holds it.

    Pools are tried in order; `reserved` GPUs (this job's other slots, not yet applied) are
    taken off a server's free count. Returns None when not every worker fits, unless
    `partial`.
    """
    reserved = reserved or {}
    slots: list[Slot] = []
    remaining = workers
    for pool in pools:
        if remaining == 0:
            break
        size = view.spec.pool(pool).gpus_per_server
        for free in range(gpus_per_worker, size + 1):
            for server in view.servers_with_free(pool, free):
                if server in avoid:
                    continue
                take = min((free - reserved.get(server, 0)) // gpus_per_worker, remaining)
                if take <= 0:
                    continue
                slots.append(Slot(server, take * gpus_per_worker, flexible))
                remaining -= take
                if remaining == 0:
                    return slots
    return slots if partial else None


def _flexible_workers(job: JobView) -> int:
    return sum(s.gpus for s in job.placement if s.flexible) // job.spec.gpus_per_worker


def _shrink(job: JobView, target: int) -> Placement | None:
    """The placement keeping `target` flexible workers (latest added dropped first)."""
    drop = (_flexible_workers(job) - target) * job.spec.gpus_per_worker
    if drop <= 0:
        return None
    kept: list[Slot] = []
    for slot in reversed(job.placement):
        if slot.flexible and drop > 0:
            cut = min(slot.gpus, drop)
            drop -= cut
            if slot.gpus > cut:
                kept.append(Slot(slot.server, slot.gpus - cut, True))
        else:
            kept.append(slot)
    return tuple(reversed(kept))


def _merge(placement: Placement, extra: Sequence[Slot]) -> Placement:
    """`placement` plus `extra`, one slot per (server, flexible)."""
    gpus: dict[tuple[str, bool], int] = {}
    for slot in (*placement, *extra):
        key = (slot.server, slot.flexible)
        gpus[key] = gpus.get(key, 0) + slot.gpus
    return tuple(Slot(server, g, flexible) for (server, flexible), g in gpus.items())
