"""Elastic-Tiresias: EDL Algorithm 1 (Wu et al., TPDS'22 §5.1, §6.3) on top of Tiresias.

Each round runs Algorithm 1 around Tiresias' discretised 2D-LAS plan (`tiresias.py`): the
allocation stage `edl-compact` (`EdlCompaction`, mixed in before Tiresias; the policy
`elastic-tiresias` is `tiresias+edl-compact`) compacts before the plan, so waiting jobs
start by scaling others in rather than by preempting them ("instead of preempting
low-priority jobs, we may scale in low-priority jobs", EDL §1), and expands after it.

- Compaction (lines 1-6), when more than `compaction_threshold` (N, default 10) jobs wait:
  for each waiting job J in Tiresias order, running elastic jobs of the lower-priority queues
  (G_i, i != 0) are scaled in to make room for J, never below their minimum parallelism
  `min_j` (EDL §6.3's quality-of-service ratio r = 0.5 of the requested GPUs, and never below
  the job's own `min_workers`). J's GPUs must come from at most ⌈P_J/m⌉ machines (footnote 4;
  m GPUs per machine). The GPUs taken are those whose loss costs the least relative
  throughput, (S(p) - S(p-1)) / S(p) under the run's scaling curves, so the efficiency gain
  1 - Σ loss is maximal (Gain(J, r_j, G_i)); J starts only when that gain is positive.
- Expansion (lines 7-13), when nothing waits, and the return of expanded GPUs when a job
  waits: `edl_expansion.py`, shared with the allocation stage `edl-expand` that adds them to
  other policies.

Choices where the paper is silent, and why:
- Inelastic jobs (`max_workers == min_workers`) are never resized.
- Resize costs come from the engine's overhead model; EDL's own stop-free scaling (§4.2) is
  the default (`engine_defaults`), `scaling_mode=stop-resume` the paper's comparison.

Speed (issue #22): compaction tries every waiting job, every round. A plan depends on the job
only through its size, worker size and GPU type, so a class found without a plan is skipped
until a launch changes the state; and when no job is elastic nothing can be scaled in, plans
come from free GPUs alone (`free_compaction_plan`) and a launch only takes GPUs, so the jobs
started are found from the heads of per-class queues (`WaitingIndex`) without walking the
queue. Both expansions have no work without elastic jobs and are skipped.
"""

from __future__ import annotations

import heapq
import math
from bisect import bisect_right, insort
from collections.abc import Iterator

from simulation.decisions import Decision, Launch, Placement, Resize, Slot
from simulation.model import JobSpec, PoolSpec
from simulation.policies.base import Param, register
from simulation.policies.edl_expansion import (
    build_placement,
    expand,
    gpus_per_server,
    relative_gain,
    return_expansion,
)
from simulation.policies.ordering import pool_preference
from simulation.policies.tiresias import Tiresias
from simulation.view import ClusterView, JobView


def open_pools(view: ClusterView, gpu_type: str | None) -> list[PoolSpec]:
    """The pools a job of `gpu_type` may use (the set `pool_preference` orders) that have a
    server available to training now."""
    return [pool for pool in view.spec.pools
            if (gpu_type is None or pool.gpu_type == gpu_type) and any(
                next(view.servers_with_free(pool.name, f), None) is not None
                for f in range(pool.gpus_per_server + 1))]


def free_compaction_plan(
    view: ClusterView, need: int, per_worker: int, pools: list[PoolSpec]
) -> Placement | None:
    """`ElasticTiresias._compaction_plan` when no running job can be scaled in: the ⌈need/m⌉
    servers of `pools` (`open_pools`) with the most free GPUs in whole workers, ties by server
    id, must hold `need` (m: GPUs of the largest server). Read from the engine's free-GPU
    index, so it costs the servers it takes rather than a pass over every server."""
    if not pools or sum(view.free_gpus(pool.name) for pool in pools) < need:
        return None
    size = max(pool.gpus_per_server for pool in pools)
    count = math.ceil(need / size)
    chosen: list[tuple[int, str]] = []  # (usable free GPUs, server), best first
    for usable in range(size - size % per_worker, 0, -per_worker):
        group = [sid for pool in pools
                 for f in range(usable, min(usable + per_worker, pool.gpus_per_server + 1))
                 for sid in view.servers_with_free(pool.name, f)]
        if group:
            group.sort()
            chosen += [(usable, sid) for sid in group[:count - len(chosen)]]
            if len(chosen) == count:
                break
    if sum(usable for usable, _ in chosen) < need:
        return None
    slots: list[Slot] = []
    left = need
    for usable, sid in chosen:
        take = min(usable, left)
        got = min(take - take % per_worker, left)
        if got:
            slots.append(Slot(sid, got))
            left -= got
    return tuple(slots) if left <= 0 else None


JobClass = tuple[int, int, "str | None"]  # (GPUs asked, GPUs per worker, GPU type)
_Entry = tuple[tuple[int, float, int], int, str]  # ((queue, submit time, trace index), seq, id)


class WaitingIndex:
    """The waiting jobs by `JobClass`, each class a heap in compaction order, and the elastic
    jobs not yet done; kept from the engine's queue log, so a round costs what entered the
    queue since the last one rather than the queue's length.

    A compaction plan reads the job it starts only through its class, so one cluster state
    gives every job of a class the same plan, and when nothing can be scaled in, a launch only
    takes free GPUs, so a class without a plan gets none later in the round: the jobs
    compaction starts are then each time the first of the class heads, in order, that has a
    plan. The order is (queue, submit time, trace index): waiting jobs' queues are frozen
    without promotion, and trace index is the queue's own tie order while
    `ClusterView.queue_in_submit_order` holds.
    """

    def __init__(self, bounds: list[float]) -> None:
        self._bounds = bounds
        self._reset(None)

    def _reset(self, view: ClusterView | None) -> None:
        self._view = view
        self._mark = 0  # position in the view's queue log
        self._heaps: dict[JobClass, list[_Entry]] = {}
        self._live: dict[str, int] = {}  # job id -> seq of its current entry
        self._entries = 0
        self._seq = 0
        self._elastic: set[str] = set()
        if view is not None:
            self._elastic = {job.job_id for job in view.running.values() if job.spec.elastic}

    def sync(self, view: ClusterView) -> None:
        """Add the jobs queued since the last call (all of them for a new view)."""
        if view is not self._view:
            self._reset(view)
        queued, self._mark = view.queued_since(self._mark)
        waiting = view.queue.keys()
        for job_id in dict.fromkeys(queued):
            job = view.job(job_id)
            spec = job.spec
            if spec.elastic:
                self._elastic.add(job_id)
            if job_id not in waiting:
                continue
            self._seq += 1
            key = (bisect_right(self._bounds, job.attained_service), spec.submit_time,
                   job.trace_index)
            cls = (spec.num_gpus, spec.gpus_per_worker, spec.gpu_type)
            heapq.heappush(self._heaps.setdefault(cls, []), (key, self._seq, job_id))
            self._live[job_id] = self._seq
            self._entries += 1
        if self._entries > 2 * len(self._live) + 64:
            self._compact_entries(view)

    def _compact_entries(self, view: ClusterView) -> None:
        """Drop the entries of jobs that left the queue or were queued again since."""
        waiting = view.queue.keys()
        live = {job_id: seq for job_id, seq in self._live.items() if job_id in waiting}
        for cls, heap in list(self._heaps.items()):
            heap[:] = [e for e in heap if live.get(e[2]) == e[1]]
            heapq.heapify(heap)
            if not heap:
                del self._heaps[cls]
        self._live = live
        self._entries = len(live)

    def has_elastic(self, view: ClusterView) -> bool:
        """Whether an elastic job waits or runs (after `sync`)."""
        if self._elastic:
            waiting, running = view.queue.keys(), view.running.keys()
            self._elastic = {j for j in self._elastic if j in waiting or j in running}
        return bool(self._elastic)

    def head(self, view: ClusterView, cls: JobClass) -> tuple[tuple[int, float, int], str] | None:
        """(order key, job id) of the first waiting job of `cls`, or None."""
        heap = self._heaps.get(cls)
        waiting = view.queue.keys()
        while heap:
            key, seq, job_id = heap[0]
            if self._live.get(job_id) == seq:
                if job_id in waiting:
                    return key, job_id
                del self._live[job_id]
            heapq.heappop(heap)
            self._entries -= 1
        return None

    def heads(self, view: ClusterView) -> list[tuple[tuple[int, float, int], JobClass, str]]:
        """(order key, class, job id) of every class's first waiting job, in order."""
        found = []
        for cls in list(self._heaps):
            head = self.head(view, cls)
            if head is None:
                del self._heaps[cls]
            else:
                found.append((head[0], cls, head[1]))
        return sorted(found)

    def pop(self, cls: JobClass) -> None:
        """Remove the head of `cls`, which `head` has just returned."""
        _, _, job_id = heapq.heappop(self._heaps[cls])
        del self._live[job_id]
        self._entries -= 1


EDL_COMPACTION_PARAMS = (
    Param("compaction_threshold", int, 10, "compact when more than N jobs wait",
          bounds=(0, 200_000)),
    Param("qos_ratio", float, 0.5, "never scale a job in below this share of its request",
          bounds=(0.01, 1.0)),
)


class EdlCompaction:
    """EDL's Algorithm 1 as the allocation stage `edl-compact`, mixed in before Tiresias (it
    reads Tiresias' queues: `queue_index`, `_bounds`, `promote_knob`): return the expansion
    when a job waits, compact, Tiresias' own round, expand when nothing waits.
    `elastic-tiresias` is this stage on Tiresias."""

    deciding_layer = "ordering"
    compaction_threshold: int
    qos_ratio: float

    def __init__(self, **values: object) -> None:
        super().__init__(**values)  # type: ignore[call-arg]  # Tiresias
        self._waiting = WaitingIndex(self._bounds)  # type: ignore[attr-defined]

    def schedule(self, view: ClusterView) -> Iterator[Decision]:
        self._waiting.sync(view)
        elastic = self._waiting.has_elastic(view)  # without, neither expansion has work
        self.deciding_layer = "allocation"
        if view.queue and elastic:
            yield from return_expansion(view)
        if len(view.queue) > self.compaction_threshold:
            if elastic or self.promote_knob > 0 or not view.queue_in_submit_order():  # type: ignore[attr-defined]
                yield from self._compact(view)
            else:
                yield from self._compact_from_free(view)
        self.deciding_layer = "ordering"
        yield from super().schedule(view)  # type: ignore[misc]  # Tiresias' round
        if not view.queue and elastic:
            self.deciding_layer = "allocation"
            yield from expand(view)

    def min_gpus(self, spec: JobSpec) -> int:
        """The job's minimum parallelism min_j in GPUs (whole workers)."""
        w = spec.gpus_per_worker
        qos = math.ceil(self.qos_ratio * spec.num_gpus / w) * w
        return max(spec.min_gpus, min(qos, spec.num_gpus))

    # -- compaction -----------------------------------------------------------------------

    def _compact(self, view: ClusterView) -> Iterator[Decision]:
        queue_index = self.queue_index  # type: ignore[attr-defined]  # Tiresias'
        waiting = sorted(view.queue.values(),
                         key=lambda j: (queue_index(view, j), j.submit_time))
        # A plan reads the job only through its class and the state changes only by what is
        # yielded here: a class without a plan stays so until the next launch.
        planless: set[JobClass] = set()
        for job in waiting:
            spec = job.spec
            cls = (spec.num_gpus, spec.gpus_per_worker, spec.gpu_type)
            if cls in planless:
                continue
            plan = self._compaction_plan(view, job)
            if plan is None:
                planless.add(cls)
                continue
            planless.clear()
            resizes, placement = plan
            yield from resizes
            self._started(job.job_id)
            yield Launch(job.job_id, placement)

    def _compact_from_free(self, view: ClusterView) -> Iterator[Decision]:
        """`_compact` when no job is elastic, promotion is off and the queue is in submit
        order: each launch goes to the first class head with a plan (see `WaitingIndex`)."""
        free = sum(view.free_gpus(pool.name) for pool in view.spec.pools)
        if free < view.smallest_queued_gpus():
            return  # no plan finds the GPUs of any waiting job
        index = self._waiting
        heads = index.heads(view)
        pools: dict[str | None, list[PoolSpec]] = {}  # by GPU type
        while heads:
            _, cls, job_id = heads[0]
            if cls[2] not in pools:
                pools[cls[2]] = open_pools(view, cls[2])
            placement = free_compaction_plan(view, cls[0], cls[1], pools[cls[2]])
            if placement is None:
                del heads[0]  # launches only take free GPUs: no plan later this round
                continue
            index.pop(cls)
            del heads[0]
            head = index.head(view, cls)
            if head is not None:
                insort(heads, (head[0], cls, head[1]))
            self._started(job_id)
            yield Launch(job_id, placement)

    def _started(self, job_id: str) -> None:
        """Tell Tiresias' queue order that compaction starts `job_id`, as its own launches
        do, so its walks do not step over the job's entry until a clean-up drops it."""
        order = self._order  # type: ignore[attr-defined]  # Tiresias' queue order
        if order is not None:
            order.forget(job_id)

    def _compaction_plan(
        self, view: ClusterView, job: JobView
    ) -> tuple[list[Resize], Placement] | None:
        """Scale-ins and the launch placement for `job`, or None if compaction cannot help."""
        spec = job.spec
        need = spec.num_gpus
        w = spec.gpus_per_worker
        victims = {
            v.job_id: v for v in view.running.values()
            if v.spec.elastic and self.queue_index(view, v) >= 1  # type: ignore[attr-defined]
            and v.gpus > self.min_gpus(v.spec)
        }
        budget = {vid: v.gpus - self.min_gpus(v.spec) for vid, v in victims.items()}
        pools = set(pool_preference(view, spec))
        supply: dict[str, int] = {}
        for sid, server in view.servers.items():
            if not server.available or server.pool not in pools:
                continue
            give = server.free + sum(
                min(held, budget[vid]) for vid, held in server.jobs.items() if vid in victims
            )
            supply[sid] = give - give % w
        if not supply:
            return None
        size = max(view.servers[sid].gpus for sid in supply)
        chosen = sorted(supply, key=lambda s: (-supply[s], s))[: math.ceil(need / size)]
        if sum(supply[s] for s in chosen) < need:
            return None
        counts = {vid: gpus_per_server(v.placement) for vid, v in victims.items()}
        held = {vid: v.gpus for vid, v in victims.items()}
        slots: list[Slot] = []
        loss = 0.0
        left = need
        for sid in chosen:
            server = view.servers[sid]
            take = min(server.free - server.free % w, left)
            got = take
            heap = [
                (-relative_gain(view, victims[vid].spec, held[vid], -victims[vid].spec
                                .gpus_per_worker), vid)
                for vid in sorted(server.jobs) if vid in victims
            ]
            heapq.heapify(heap)
            while got < min(left, supply[sid]) and heap:
                cost, vid = heapq.heappop(heap)
                vw = victims[vid].spec.gpus_per_worker
                if budget[vid] < vw or counts[vid].get(sid, 0) < vw:
                    continue
                counts[vid][sid] -= vw
                held[vid] -= vw
                budget[vid] -= vw
                got += vw
                loss += cost
                heapq.heappush(
                    heap, (-relative_gain(view, victims[vid].spec, held[vid], -vw), vid)
                )
            got = min(got - got % w, left)
            if got:
                slots.append(Slot(sid, got))
                left -= got
        if left > 0 or loss >= 1.0:
            return None
        resizes = [
            Resize(vid, build_placement({s: g for s, g in counts[vid].items() if g}, v.spec))
            for vid, v in victims.items() if held[vid] != v.gpus
        ]
        return resizes, tuple(slots)


@register
class ElasticTiresias(EdlCompaction, Tiresias):
    """Tiresias with the allocation stage `edl-compact`: the same class as the composition
    `tiresias+edl-compact`, registered under EDL's name for the policy."""

    name = "elastic-tiresias"
    layers = ("ordering", "allocation", "placement")  # a fixed composition: see `composition`
    composition = {"ordering": "tiresias", "allocation": "edl-compact", "placement": "best-fit"}
    description = "Tiresias with EDL compaction (scale-in under load) and expansion."
    paper = "EDL TPDS'22 §5.1 Algorithm 1, §6.3 (N=10, r=0.5)"
    params = (*Tiresias.params, *EDL_COMPACTION_PARAMS)
    engine_defaults = {"scaling_mode": "stop-free"}  # EDL §4.2
