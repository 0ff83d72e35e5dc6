"""EDL's expansion (Wu et al., TPDS'22 §5.1, Algorithm 1 lines 7-13), and the allocation stage
`edl-expand` that adds it to a policy whose jobs run at their requested size.

- **Expansion**, when nothing waits: every free GPU goes, a worker at a time, to the running
  elastic job with the largest relative gain (S(p+1) - S(p)) / S(p) under the run's scaling
  curves, while that gain is positive; a job may add a machine only while it spans at most
  ⌈p/m⌉ machines (footnote 4; m GPUs per machine). Added GPUs are `flexible`.
- **Return** (our choice where the paper is silent, as in `elastic-tiresias`): when a job
  waits, expanded jobs first give back what they hold beyond their requested size (graceful
  scale-in, flexible slots first), so the policy they are added to meets every job at its
  requested size and preempts nobody merely because it was expanded.

`elastic-tiresias` runs both around Tiresias with EDL's compaction. `EdlExpansion` runs them
around any policy whose allocation layer is `requested` (`simulation.composition`): the
return before the policy's decisions, the expansion after them, so `srtf+edl-expand` is SRTF
whose elastic jobs take the GPUs nobody waits for.
"""

from __future__ import annotations

import math
from collections.abc import Iterator

from simulation.decisions import Decision, Placement, Resize, Slot
from simulation.errors import InputError
from simulation.model import ClusterSpec, JobSpec, Workload
from simulation.policies.ordering import pool_preference
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



def return_expansion(view: ClusterView) -> Iterator[Decision]:
    """Scale every expanded elastic job back to its requested size (a job waits)."""
    for job in list(view.running.values()):
        extra = job.gpus - job.spec.num_gpus
        if extra > 0 and job.spec.elastic:
            yield Resize(job.job_id, build_placement(shrunk_counts(job, extra), job.spec))


def shrunk_counts(job: JobView, extra: int) -> dict[str, int]:
    """The job's GPUs per server after giving back `extra`: flexible slots first, then the
    servers holding the fewest of its GPUs."""
    counts = gpus_per_server(job.placement)
    for slot in job.placement:
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
    return counts


def expand(view: ClusterView) -> Iterator[Decision]:
    """Free GPUs to the running elastic jobs of the largest relative gain (nothing waits)."""
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


class EdlExpansion:
    """The allocation stage `edl-expand`, mixed in before the policy it extends: return,
    the policy's own decisions, expand. Rounds without an elastic job running pass straight
    to the policy. While it decides, `deciding_layer` names its layer for engine errors.

    SIA's `locality=cells` keeps every job in a buddy cell of its requested width, which an
    expanded job would leave: refused before the run."""

    deciding_layer = "ordering"

    def check_inputs(self, cluster: ClusterSpec, workload: Workload) -> None:
        super().check_inputs(cluster, workload)  # type: ignore[misc]  # the policy's own
        if getattr(self, "locality", None) == "cells":
            name = getattr(self, "name", "policy")
            raise InputError(f"{name}: locality=cells runs every job in a buddy cell of its "
                             "requested width, which edl-expand would leave", field="locality")

    def schedule(self, view: ClusterView) -> Iterator[Decision]:
        elastic = any(job.spec.elastic for job in view.running.values())
        if view.queue and elastic:
            self.deciding_layer = "allocation"
            yield from return_expansion(view)
        self.deciding_layer = "ordering"
        decisions = super().schedule(view)  # type: ignore[misc]  # the policy it extends
        if decisions is not None:
            yield from decisions
        if not view.queue and any(job.spec.elastic for job in view.running.values()):
            self.deciding_layer = "allocation"
            yield from self.expand(view)

    @staticmethod
    def expand(view: ClusterView) -> Iterator[Decision]:
        """How free GPUs go to running elastic jobs: EDL's greedy relative gain."""
        return expand(view)
