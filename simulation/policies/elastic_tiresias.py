"""Elastic-Tiresias: EDL Algorithm 1 (Wu et al., TPDS'22 §5.1, §6.3) on top of Tiresias.

Each round runs Algorithm 1 around Tiresias' discretised 2D-LAS plan (`tiresias.py`,
reused by subclassing): compaction before the plan, so waiting jobs start by scaling others
in rather than by preempting them ("instead of preempting low-priority jobs, we may scale in
low-priority jobs", EDL §1), and expansion after it.

- Compaction (lines 1-6), when more than `compaction_threshold` (N, default 10) jobs wait:
  for each waiting job J in Tiresias order, running elastic jobs of the lower-priority queues
  (G_i, i != 0) are scaled in to make room for J, never below their minimum parallelism
  `min_j` (EDL §6.3's quality-of-service ratio r = 0.5 of the requested GPUs, and never below
  the job's own `min_workers`). J's GPUs must come from at most ⌈P_J/m⌉ machines (footnote 4;
  m GPUs per machine). The GPUs taken are those whose loss costs the least relative
  throughput, (S(p) - S(p-1)) / S(p) under the run's scaling curves, so the efficiency gain
  1 - Σ loss is maximal (Gain(J, r_j, G_i)); J starts only when that gain is positive.
- Expansion (lines 7-13), when nothing waits: every free GPU goes to the running elastic job
  with the largest relative gain (S(p+1) - S(p)) / S(p), subject to the same locality rule
  (a job may add a machine only while it spans at most ⌈p/m⌉ machines).

Choices where the paper is silent, and why:
- GPUs added by expansion are opportunistic (marked `flexible`): when a job waits, expanded
  jobs first give back what they hold beyond their requested size (graceful scale-in), so
  Tiresias preempts nobody merely because it was expanded.
- Inelastic jobs (`max_workers == min_workers`) are never resized.
- Resize costs come from the engine's overhead model; EDL's own stop-free scaling (§4.2) is
  the default (`engine_defaults`), `scaling_mode=stop-resume` the paper's comparison.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Iterator

from simulation.decisions import Decision, Launch, Placement, Resize, Slot
from simulation.model import JobSpec
from simulation.policies.base import Param, register
from simulation.policies.ordering import pool_preference
from simulation.policies.tiresias import Tiresias
from simulation.view import ClusterView, JobView


def gpus_per_server(placement: Placement) -> dict[str, int]:
    """GPUs per server of `placement`, merging a server's base and flexible slots."""
    counts: dict[str, int] = {}
    for slot in placement:
        counts[slot.server] = counts.get(slot.server, 0) + slot.gpus
    return counts


def build_placement(counts: dict[str, int], spec: JobSpec) -> Placement:
    """Slots for `counts`: up to the requested GPUs are base, the rest `flexible`.

    Servers holding more of the job come first so the base part stays consolidated.
    """
    base_left = min(spec.num_gpus, sum(counts.values()))
    slots: list[Slot] = []
    for server, gpus in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])):
        if gpus <= 0:
            continue
        base = min(gpus, base_left)
        base_left -= base
        if base:
            slots.append(Slot(server, base))
        if gpus > base:
            slots.append(Slot(server, gpus - base, True))
    return tuple(slots)


def relative_gain(view: ClusterView, spec: JobSpec, gpus: int, delta: int) -> float:
    """(S(gpus + delta) - S(gpus)) / S(gpus): EDL's relative throughput change."""
    now = view.throughput.speedup(spec.model, gpus)
    return (view.throughput.speedup(spec.model, gpus + delta) - now) / now if now else math.inf


@register
class ElasticTiresias(Tiresias):
    name = "elastic-tiresias"
    description = "Tiresias with EDL compaction (scale-in under load) and expansion."
    paper = "EDL TPDS'22 §5.1 Algorithm 1, §6.3 (N=10, r=0.5)"
    params = (
        *Tiresias.params,
        Param("compaction_threshold", int, 10, "compact when more than N jobs wait",
              bounds=(0, 200_000)),
        Param("qos_ratio", float, 0.5, "never scale a job in below this share of its request",
              bounds=(0.01, 1.0)),
    )
    engine_defaults = {"scaling_mode": "stop-free"}  # EDL §4.2
    compaction_threshold: int
    qos_ratio: float

    def schedule(self, view: ClusterView) -> Iterator[Decision]:
        if view.queue:
            yield from self._return_expansion(view)
        if len(view.queue) > self.compaction_threshold:
            yield from self._compact(view)
        yield from super().schedule(view)
        if not view.queue:
            yield from self._expand(view)

    def min_gpus(self, spec: JobSpec) -> int:
        """The job's minimum parallelism min_j in GPUs (whole workers)."""
        w = spec.gpus_per_worker
        qos = math.ceil(self.qos_ratio * spec.num_gpus / w) * w
        return max(spec.min_gpus, min(qos, spec.num_gpus))

    # -- expansion ------------------------------------------------------------------------

    def _return_expansion(self, view: ClusterView) -> Iterator[Decision]:
        for job in list(view.running.values()):
            extra = job.gpus - job.spec.num_gpus
            if extra > 0 and job.spec.elastic:
                counts = gpus_per_server(job.placement)
                for slot in job.placement:  # flexible slots first, then the smallest
                    if extra <= 0:
                        break
                    if slot.flexible:
                        take = min(slot.gpus, extra)
                        counts[slot.server] -= take
                        extra -= take
                for server in sorted(counts, key=lambda s: (counts[s], s)):
                    take = min(counts[server], extra)
                    counts[server] -= take
                    extra -= take
                yield Resize(job.job_id, build_placement(counts, job.spec))

    def _expand(self, view: ClusterView) -> Iterator[Decision]:
        candidates = [
            job for job in view.running.values()
            if job.spec.elastic and job.gpus < job.spec.max_gpus
        ]
        if not candidates:
            return
        counts = {job.job_id: gpus_per_server(job.placement) for job in candidates}
        held = {job.job_id: job.gpus for job in candidates}
        pools = {job.job_id: set(pool_preference(view, job.spec)) for job in candidates}
        free = {sid: s.free for sid, s in view.servers.items() if s.available and s.free > 0}
        order = {job.job_id: i for i, job in enumerate(candidates)}
        by_id = {job.job_id: job for job in candidates}
        for sid in sorted(free):
            server = view.servers[sid]
            while True:
                best: tuple[float, int, str] | None = None
                for job_id, job in by_id.items():
                    w = job.spec.gpus_per_worker
                    if held[job_id] + w > job.spec.max_gpus or free[sid] < w:
                        continue
                    if server.pool not in pools[job_id]:
                        continue
                    spans = len(counts[job_id]) + (sid not in counts[job_id])
                    if spans > math.ceil((held[job_id] + w) / server.gpus):
                        continue
                    key = (-relative_gain(view, job.spec, held[job_id], w), order[job_id], job_id)
                    if best is None or key < best:
                        best = key
                if best is None or best[0] >= 0:
                    break
                job_id = best[2]
                w = by_id[job_id].spec.gpus_per_worker
                counts[job_id][sid] = counts[job_id].get(sid, 0) + w
                held[job_id] += w
                free[sid] -= w
        for job in candidates:
            if held[job.job_id] != job.gpus:
                yield Resize(job.job_id, build_placement(counts[job.job_id], job.spec))

    # -- compaction -----------------------------------------------------------------------

    def _compact(self, view: ClusterView) -> Iterator[Decision]:
        waiting = sorted(view.queue.values(),
                         key=lambda j: (self.queue_index(view, j), j.submit_time))
        for job in waiting:
            plan = self._compaction_plan(view, job)
            if plan is None:
                continue
            resizes, placement = plan
            yield from resizes
            yield Launch(job.job_id, placement)

    def _compaction_plan(
        self, view: ClusterView, job: JobView
    ) -> tuple[list[Resize], Placement] | None:
        """Scale-ins and the launch placement for `job`, or None if compaction cannot help."""
        spec = job.spec
        need = spec.num_gpus
        w = spec.gpus_per_worker
        victims = {
            v.job_id: v for v in view.running.values()
            if v.spec.elastic and self.queue_index(view, v) >= 1
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
