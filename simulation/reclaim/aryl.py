"""Aryl reclaim: which on-loan servers to return so the fewest training jobs are preempted.

Aryl §4, §5.3 and Algorithm 1 (Appendix B). The inference side asks for `count` servers; a
returned server must be empty, so every job on it either loses its workers there or stops.

1. Servers that cost nothing come first: empty on-loan servers, then servers holding only
   *flexible* workers of elastic jobs (§5.3 keeps base and flexible workers on separate
   server groups for exactly this). Those workers are scaled in; nobody is preempted. Among
   flexible-only servers the ones touching the fewest jobs, then the fewest GPUs, go first.
2. The rest follow Algorithm 1. A server's preemption cost is the sum, over the jobs with
   base workers on it, of the job's *server fraction* `1 / |S_j|` (`S_j`: every server the
   job runs on, on loan or not, as in the pseudo-code). The cheapest server is returned, its
   jobs are preempted everywhere, the costs of their other servers drop accordingly, and the
   loop repeats. When only one server is needed, the server with the fewest jobs to preempt
   is taken (`FindBestServer`).

Choices where the paper is silent, each tested:
- Flexible workers cost nothing in step 2 either: a server's flexible workers are scaled in
  when it is returned, so only base workers enter the cost.
- Ties between equal costs must not cost preemptions (Figure 5: servers 1, 2, 4 and 6 all
  cost 0.5, but returning 1 and 2 preempts one job where 4 and 5 preempt two). Ties are
  broken by the fewest jobs preempted now, then the most *other* on-loan servers that
  preempting those jobs vacates, counted up to the servers still needed after this one
  (returning server 1 empties server 2, which is then returned for free; on the last pick a
  vacated server is only collateral damage), then the fewest collateral GPUs, then cluster
  order.
- `collateral_gpus` counts GPUs vacated beyond the demand: the GPUs preempted jobs held on
  servers that are not returned.

`select_reclaim_servers` works on plain typed inputs (server ids and each job's slots) so the
engine and the live decision API share it; the registered `aryl` strategy adapts a
`ClusterView`. `select_reclaim_optimal` searches every combination exhaustively to measure
the heuristic's gap; it refuses instances with more than `OPTIMAL_COMBINATION_LIMIT`
combinations.
"""

from __future__ import annotations

import itertools
import math
import random
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from simulation.decisions import Placement, ReclaimPlan, Resize
from simulation.reclaim import on_loan_servers, register_reclaim
from simulation.view import ClusterView

OPTIMAL_COMBINATION_LIMIT = 200_000
_TIE = 1e-9


@dataclass(frozen=True, slots=True)
class HostedJob:
    """A running job as reclaim sees it: all its slots, on loan or not."""

    job_id: str
    slots: Placement
    gpus_per_worker: int = 1


@dataclass(frozen=True, slots=True)
class ScaleIn:
    """An elastic job giving up `workers` flexible workers; `placement` is what it keeps."""

    job_id: str
    workers: int
    placement: Placement


@dataclass(frozen=True, slots=True)
class ReclaimSelection:
    """The answer of DESIGN.md's reclaim decision."""

    servers: tuple[str, ...]
    preempted_jobs: tuple[str, ...]
    scaled_in: tuple[ScaleIn, ...]
    collateral_gpus: int

    def as_plan(self) -> ReclaimPlan:
        return ReclaimPlan(
            servers=self.servers,
            preempt=self.preempted_jobs,
            scale_in=tuple(Resize(s.job_id, s.placement) for s in self.scaled_in),
        )

    def as_answer(self, strategy: str) -> dict[str, object]:
        return {
            "strategy": strategy,
            "servers": list(self.servers),
            "preempted_jobs": list(self.preempted_jobs),
            "scaled_in": [{"job": s.job_id, "workers": s.workers} for s in self.scaled_in],
            "collateral_gpus": self.collateral_gpus,
        }


class _Instance:
    """Who holds base and flexible workers on which on-loan server, as numpy arrays.

    Slots are flattened once; the (job, server) pairs on on-loan servers are kept in CSR form
    by job and by server, both in job order, so Algorithm 1 updates a few array entries per
    preemption instead of per-server Python sets.
    """

    def __init__(
        self, on_loan: Sequence[str], jobs: Sequence[HostedJob], count: int, cost: str = "server"
    ) -> None:
        if len(set(on_loan)) != len(on_loan):
            raise ValueError("on-loan server ids must be unique")
        if not 0 <= count <= len(on_loan):
            raise ValueError(f"cannot reclaim {count} of {len(on_loan)} on-loan servers")
        if cost not in ("server", "gpu"):
            raise ValueError(f"unknown reclaim cost {cost!r} (server or gpu)")
        self.servers = list(on_loan)
        self.index = {sid: i for i, sid in enumerate(self.servers)}
        self.jobs = list(jobs)
        self.job_ids = [job.job_id for job in self.jobs]
        n, m = len(self.servers), len(self.jobs)
        index = self.index
        slots = [slot for job in self.jobs for slot in job.slots]
        slot_job = np.repeat(np.arange(m), [len(job.slots) for job in self.jobs])
        slot_server = np.fromiter((index.get(s.server, -1) for s in slots), np.int64, len(slots))
        slot_gpus = np.fromiter((s.gpus for s in slots), np.int64, len(slots))
        slot_flexible = np.fromiter((s.flexible for s in slots), bool, len(slots))
        self.total_gpus = np.bincount(slot_job, weights=slot_gpus, minlength=m).astype(np.int64)

        here = slot_server >= 0
        key = slot_job[here] * max(n, 1) + slot_server[here]
        pairs, inverse = np.unique(key, return_inverse=True)  # (job, server), job-major
        pair_job, pair_server = pairs // max(n, 1), pairs % max(n, 1)
        pair_gpus = np.bincount(inverse, weights=slot_gpus[here], minlength=len(pairs))
        is_flexible = slot_flexible[here]
        pair_base = np.bincount(inverse, weights=~is_flexible, minlength=len(pairs)) > 0
        pair_flex = np.bincount(inverse, weights=is_flexible, minlength=len(pairs)) > 0
        self.used = np.bincount(slot_server[here], weights=slot_gpus[here], minlength=n)

        # Base pairs by job (`base_server`, `job_ptr`) and by server (`server_job`, `base_ptr`).
        self.base_job = pair_job[pair_base]
        self.base_server = pair_server[pair_base]
        self.job_ptr = np.searchsorted(self.base_job, np.arange(m + 1))
        by_server = np.argsort(self.base_server, kind="stable")
        self.server_job = self.base_job[by_server]
        self.base_ptr = np.searchsorted(self.base_server[by_server], np.arange(n + 1))
        self.base_count = np.diff(self.base_ptr)
        flex_job, flex_server = pair_job[pair_flex], pair_server[pair_flex]
        by_server = np.argsort(flex_server, kind="stable")
        self.flex_job = flex_job[by_server]
        self.flex_ptr = np.searchsorted(flex_server[by_server], np.arange(n + 1))
        self.flex_count = np.diff(self.flex_ptr)

        base_gpus = pair_gpus[pair_base].astype(np.int64)
        self.collateral = self.total_gpus[self.base_job] - base_gpus  # per base pair
        if cost == "gpu":
            self.weight = base_gpus / self.total_gpus[self.base_job]
        else:
            distinct = np.array([len(job.slots) if len(job.slots) < 2
                                 else len({s.server for s in job.slots}) for job in self.jobs],
                                dtype=np.int64)
            with np.errstate(divide="ignore"):
                share = np.where(distinct > 0, 1.0 / np.maximum(distinct, 1), 0.0)
            self.weight = share[self.base_job]

    def initial_costs(self) -> np.ndarray:
        """Each server's preemption cost, summed in job order like Algorithm 1's loop."""
        return np.bincount(self.base_server, weights=self.weight, minlength=len(self.servers))

    def base_jobs(self, i: int) -> list[int]:
        return self.server_job[self.base_ptr[i]:self.base_ptr[i + 1]].tolist()

    def flexible_jobs(self, i: int) -> list[int]:
        return self.flex_job[self.flex_ptr[i]:self.flex_ptr[i + 1]].tolist()

    def job_servers(self, j: int) -> list[int]:
        """On-loan servers holding base workers of job `j`."""
        return self.base_server[self.job_ptr[j]:self.job_ptr[j + 1]].tolist()

    def selection(self, chosen: Sequence[int], preempted: Sequence[int]) -> ReclaimSelection:
        returned = {self.servers[i] for i in chosen}
        gone = set(preempted)
        collateral = sum(
            slot.gpus
            for j in preempted
            for slot in self.jobs[j].slots
            if slot.server not in returned
        )
        scaled: list[ScaleIn] = []
        seen: set[int] = set()
        for i in chosen:
            for j in self.flexible_jobs(i):
                if j in gone or j in seen:
                    continue
                seen.add(j)
                job = self.jobs[j]
                keep = tuple(s for s in job.slots if not (s.flexible and s.server in returned))
                removed = sum(s.gpus for s in job.slots) - sum(s.gpus for s in keep)
                scaled.append(ScaleIn(job.job_id, removed // job.gpus_per_worker, keep))
        return ReclaimSelection(
            servers=tuple(self.servers[i] for i in chosen),
            preempted_jobs=tuple(self.job_ids[j] for j in preempted),
            scaled_in=tuple(scaled),
            collateral_gpus=collateral,
        )


def select_reclaim_servers(
    on_loan: Sequence[str], jobs: Sequence[HostedJob], count: int, *, cost: str = "server"
) -> ReclaimSelection:
    """Aryl's reclaim (Algorithm 1 after the free flexible-only servers); see module doc.

    `cost="gpu"` swaps in Table 1's rejected definition (each job's share of its GPUs on the
    server) so the comparison the paper makes can be rerun.
    """
    inst = _Instance(on_loan, jobs, count, cost)
    n = len(inst.servers)
    unused = inst.base_count == 0
    free = np.flatnonzero(unused & (inst.flex_count == 0))
    flexible_only = np.flatnonzero(unused & (inst.flex_count > 0))
    flexible_only = flexible_only[np.lexsort((flexible_only, inst.used[flexible_only],
                                              inst.flex_count[flexible_only]))]
    chosen = np.concatenate((free, flexible_only))[:count].tolist()
    need = count - len(chosen)
    preempted: list[int] = []
    if need > 0:
        taken = np.zeros(n, dtype=bool)
        taken[chosen] = True
        chosen.extend(_algorithm_one(inst, taken, need, preempted))
    return inst.selection(chosen, preempted)


def _algorithm_one(
    inst: _Instance, taken: np.ndarray, need: int, preempted: list[int]
) -> list[int]:
    """Pick `need` servers by server-fraction cost, preempting as it goes (Algorithm 1).

    Costs and tie-break keys per server live in arrays updated only on the servers of each
    preempted job. The keys (module doc) are packed as `jobs · scale + collateral` so one
    argmin breaks most ties; the costly "servers vacated" count is computed only when
    candidates tied on jobs preempted have a job spanning servers, and cached until a
    preemption nearby.
    """
    n = len(inst.servers)
    cost = inst.initial_costs()
    cost[taken] = math.inf
    alive = [True] * len(inst.jobs)
    collateral = np.bincount(inst.base_server, weights=inst.collateral,
                             minlength=n).astype(np.int64)
    scale = int(collateral.max(initial=0)) + 1
    rank = inst.base_count * scale + collateral  # jobs preempted, then collateral GPUs
    job_ptr = inst.job_ptr.tolist()
    base_server = inst.base_server.tolist()
    weight = inst.weight.tolist()
    pair_rank = (inst.collateral + scale).tolist()
    # Servers whose base jobs all run on them alone vacate no other server.
    spans = np.diff(inst.job_ptr) > 1
    spread = np.bincount(inst.base_server, weights=spans[inst.base_job], minlength=n) > 0
    known: dict[int, int] = {}  # server -> servers vacated, until a preemption nearby
    picked: list[int] = []
    while need > 0:
        if need == 1 and not picked:
            ties = np.flatnonzero(~taken)
        else:
            ties = np.flatnonzero(cost <= cost.min() + _TIE)
        if len(ties) > 1 and need > 1 and spread[ties].any():
            counts = rank[ties] // scale
            ties = ties[counts == counts.min()]
            if spread[ties].any():
                vacated = np.zeros(len(ties), dtype=np.int64)
                for k, i in enumerate(ties.tolist()):
                    if spread[i]:
                        if i not in known:
                            known[i] = _vacated(inst, alive, taken, i)
                        vacated[k] = min(known[i], need - 1)
                ties = ties[vacated == vacated.max()]
        best = int(ties[np.argmin(rank[ties])]) if len(ties) > 1 else int(ties[0])
        picked.append(best)
        taken[best] = True
        cost[best] = math.inf
        hit = {best}
        for j in inst.base_jobs(best):
            if not alive[j]:
                continue
            alive[j] = False
            preempted.append(j)
            for p in range(job_ptr[j], job_ptr[j + 1]):
                i = base_server[p]
                hit.add(i)
                rank[i] -= pair_rank[p]
                if not taken[i]:
                    cost[i] -= weight[p]
        if known:
            for h in hit:
                known.pop(h, None)
                for j in inst.base_jobs(h):
                    for k in inst.job_servers(j):
                        known.pop(k, None)
        need -= 1
    return picked


def _vacated(inst: _Instance, alive: list[bool], taken: np.ndarray, i: int) -> int:
    """Other untaken on-loan servers left without base workers if server `i`'s jobs stop."""
    jobs = {j for j in inst.base_jobs(i) if alive[j]}
    touched = {k for j in jobs for k in inst.job_servers(j) if k != i and not taken[k]}
    return sum(1 for k in touched
               if all(j in jobs or not alive[j] for j in inst.base_jobs(k)))


def server_preemption_costs(
    on_loan: Sequence[str], jobs: Sequence[HostedJob], *, cost: str = "server"
) -> dict[str, float]:
    """Each on-loan server's initial preemption cost (Table 1's last two columns)."""
    inst = _Instance(on_loan, jobs, 0, cost)
    return dict(zip(inst.servers, inst.initial_costs().tolist(), strict=True))


def select_reclaim_optimal(
    on_loan: Sequence[str], jobs: Sequence[HostedJob], count: int
) -> ReclaimSelection:
    """The exact minimum-preemption choice (then fewest collateral GPUs), by exhaustion.

    Raises `ValueError` above `OPTIMAL_COMBINATION_LIMIT` combinations.
    """
    inst = _Instance(on_loan, jobs, count)
    n = len(inst.servers)
    combos = math.comb(n, count)
    if combos > OPTIMAL_COMBINATION_LIMIT:
        raise ValueError(
            f"optimal reclaim would try {combos} combinations "
            f"(limit {OPTIMAL_COMBINATION_LIMIT})"
        )
    order = sorted(range(len(inst.jobs)), key=lambda j: inst.job_ids[j])
    bit = {j: 1 << k for k, j in enumerate(order)}
    masks = [sum(bit[j] for j in inst.base_jobs(i)) for i in range(n)]
    gpus = inst.total_gpus.tolist()
    here: list[dict[int, int]] = [{} for _ in range(n)]
    base_gpus = (inst.total_gpus[inst.base_job] - inst.collateral).tolist()
    for j, i, g in zip(inst.base_job.tolist(), inst.base_server.tolist(), base_gpus,
                       strict=True):
        here[i][j] = g
    best: tuple[int, int] | None = None
    best_combo: tuple[int, ...] = ()
    for combo in itertools.combinations(range(n), count):
        mask = 0
        for i in combo:
            mask |= masks[i]
        hit = [j for j in order if mask & bit[j]]
        inside = {j: 0 for j in hit}
        for i in combo:
            for j, g in here[i].items():
                inside[j] += g
        score = (len(hit), sum(gpus[j] - inside[j] for j in hit))
        if best is None or score < best:
            best, best_combo = score, combo
    mask = 0
    for i in best_combo:
        mask |= masks[i]
    return inst.selection(list(best_combo), [j for j in order if mask & bit[j]])


def hosted_jobs(view: ClusterView, servers: Sequence[str]) -> list[HostedJob]:
    """The running jobs with workers on `servers`, in first-seen order."""
    seen: dict[str, HostedJob] = {}
    for sid in servers:
        for job_id in sorted(view.servers[sid].jobs):
            if job_id not in seen:
                job = view.job(job_id)
                seen[job_id] = HostedJob(job_id, job.placement, job.spec.gpus_per_worker)
    return list(seen.values())


@register_reclaim("aryl")
def select_reclaim_aryl(view: ClusterView, count: int, rng: random.Random) -> ReclaimPlan:
    """Aryl's Algorithm 1: empty and flexible-only servers first, then the cheapest by
    server fraction (Aryl §4, §5.3)."""
    servers = on_loan_servers(view)
    return select_reclaim_servers(servers, hosted_jobs(view, servers), count).as_plan()


@register_reclaim("optimal")
def select_reclaim_exhaustive(view: ClusterView, count: int, rng: random.Random) -> ReclaimPlan:
    """Every combination searched for the fewest preemptions, to measure the gap Aryl's
    heuristic leaves (small instances only)."""
    servers = on_loan_servers(view)
    return select_reclaim_optimal(servers, hosted_jobs(view, servers), count).as_plan()
