"""The allocation stage `aryl-expand`: Aryl's multiple-choice knapsack (§5.2, Algorithm 2
`AllocateElastic`) for the free GPUs, on a policy whose jobs run at their requested size.

Like `edl-expand` (whose return of expanded GPUs it keeps: a job waits, every elastic job
goes back to its requested size), but the free GPUs and the flexible ones already held are
split among the running elastic jobs by Aryl's knapsack, re-solved every round as Aryl does,
instead of EDL's greedy gain: item `w` of a job is `w` flexible workers beyond its requested
ones, weighing their GPUs and worth the running time they save,
`T · (1 − rate(requested) / rate(requested + w))` with T the predicted time left at the
requested size (`aryl_knapsack.flexible_group`). Where the policy is Aryl, phase one admits
jobs at their minimum; here the policy has already admitted them at their requested size,
which is this stage's base. A job's base slots never move; its flexible workers go to
on-loan servers first (§5.3: a reclaim of a server holding only flexible workers then scales
them in instead of preempting), then to its own pools in server order, whole workers each;
a job gets fewer than chosen when its pools run out.
"""

from __future__ import annotations

from collections.abc import Iterator

from simulation.decisions import Decision, Placement, Resize, Slot
from simulation.policies.aryl_knapsack import flexible_group, solve_multiple_choice_knapsack
from simulation.policies.edl_expansion import EdlExpansion
from simulation.policies.ordering import pool_preference
from simulation.view import ClusterView, JobView


def predicted_seconds_left(job: JobView) -> float:
    """Predicted seconds left at the requested size (Aryl's T_j of a running job)."""
    duration = job.spec.duration
    return job.predicted_duration * (job.remaining_work / duration if duration > 0 else 0.0)


def knapsack_expand(view: ClusterView) -> Iterator[Decision]:
    """The free GPUs, and the flexible ones already held, split among the running elastic
    jobs by the knapsack: shrinks first (what they give back may go to another job), then
    growths."""
    candidates = [job for job in view.running.values()
                  if job.spec.elastic and job.spec.max_gpus > job.spec.num_gpus]
    free = {sid: server.free for sid, server in view.servers.items()
            if server.available and server.free > 0}
    held = sum(job.gpus - job.spec.num_gpus for job in candidates)
    if not candidates or not free and not held:
        return
    groups = []
    for job in candidates:
        spec = job.spec
        workers = range(spec.requested_workers, spec.max_workers + 1)
        rates = [view.throughput.speedup(spec.model, w * spec.gpus_per_worker) for w in workers]
        groups.append(flexible_group(job.job_id, predicted_seconds_left(job), rates,
                                     spec.gpus_per_worker))
    chosen = solve_multiple_choice_knapsack(groups, sum(free.values()) + held)
    flexible = {job.job_id: _flexible_per_server(job) for job in candidates}
    target = {job.job_id: job.spec.num_gpus + chosen.get(job.job_id, 0)
              * job.spec.gpus_per_worker for job in candidates}
    for job in candidates:
        give = job.gpus - target[job.job_id]
        if give > 0:
            mine = flexible[job.job_id]
            for sid in sorted(mine, key=lambda s: (mine[s], s)):  # the fewest first
                take = min(mine[sid], give)
                mine[sid] -= take
                free[sid] = free.get(sid, 0) + take
                give -= take
            yield Resize(job.job_id, _placement(job, mine))
    for job in candidates:
        want = target[job.job_id] - job.gpus
        if want > 0:
            added = _place_flexible(view, job, want, free)
            if added:
                mine = flexible[job.job_id]
                for sid, gpus in added.items():
                    mine[sid] = mine.get(sid, 0) + gpus
                yield Resize(job.job_id, _placement(job, mine))


def _flexible_per_server(job: JobView) -> dict[str, int]:
    counts: dict[str, int] = {}
    for slot in job.placement:
        if slot.flexible:
            counts[slot.server] = counts.get(slot.server, 0) + slot.gpus
    return counts


def _placement(job: JobView, flexible: dict[str, int]) -> Placement:
    """The job's base slots as they are, then `flexible` (server -> GPUs) as flexible slots."""
    base = tuple(slot for slot in job.placement if not slot.flexible)
    return base + tuple(Slot(sid, gpus, True) for sid, gpus in sorted(flexible.items()) if gpus)


def _place_flexible(view: ClusterView, job: JobView, gpus: int,
                    free: dict[str, int]) -> dict[str, int]:
    """Up to `gpus` more GPUs for the job (server -> GPUs), whole workers, on-loan servers
    first, then its own pools in server order; `free` keeps what is left to later jobs."""
    pools = set(pool_preference(view, job.spec))
    w = job.spec.gpus_per_worker
    servers = sorted((sid for sid in free if view.servers[sid].pool in pools),
                     key=lambda sid: (not view.servers[sid].on_loan, sid))
    added: dict[str, int] = {}
    for sid in servers:
        take = min(free[sid] - free[sid] % w, gpus - gpus % w)
        if take > 0:
            added[sid] = take
            free[sid] -= take
            gpus -= take
    return added


class ArylExpansion(EdlExpansion):
    """`edl-expand`'s return and rounds, with Aryl's knapsack for the free GPUs."""

    @staticmethod
    def expand(view: ClusterView) -> Iterator[Decision]:
        return knapsack_expand(view)
