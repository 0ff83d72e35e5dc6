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
    """Index of who holds base and flexible workers on which on-loan server."""

    def __init__(self, on_loan: Sequence[str], jobs: Sequence[HostedJob], count: int) -> None:
        if len(set(on_loan)) != len(on_loan):
            raise ValueError("on-loan server ids must be unique")
        if not 0 <= count <= len(on_loan):
            raise ValueError(f"cannot reclaim {count} of {len(on_loan)} on-loan servers")
        self.servers = list(on_loan)
        self.index = {sid: i for i, sid in enumerate(self.servers)}
        self.jobs = {job.job_id: job for job in jobs}
        n = len(self.servers)
        self.base: list[dict[str, None]] = [{} for _ in range(n)]  # ordered sets
        self.flex: list[dict[str, None]] = [{} for _ in range(n)]
        self.used = [0] * n
        self.job_servers: dict[str, list[int]] = {}
        self.share: dict[str, float] = {}
        for job in jobs:
            on = {slot.server for slot in job.slots}
            self.share[job.job_id] = 1.0 / len(on) if on else 0.0
            base_here: dict[int, None] = {}
            for slot in job.slots:
                i = self.index.get(slot.server)
                if i is None:
                    continue
                self.used[i] += slot.gpus
                if slot.flexible:
                    self.flex[i][job.job_id] = None
                else:
                    self.base[i][job.job_id] = None
                    base_here[i] = None
            self.job_servers[job.job_id] = list(base_here)
        self.gpu_share: dict[tuple[str, int], float] | None = None

    def weight(self, job_id: str, i: int) -> float:
        """What job `job_id` adds to server `i`'s preemption cost."""
        if self.gpu_share is None:
            return self.share[job_id]
        return self.gpu_share[job_id, i]

    def use_gpu_fractions(self) -> None:
        self.gpu_share = {}
        for job_id, servers in self.job_servers.items():
            slots = self.jobs[job_id].slots
            total = sum(s.gpus for s in slots)
            for i in servers:
                here = sum(s.gpus for s in slots if s.server == self.servers[i])
                self.gpu_share[job_id, i] = here / total

    def selection(self, chosen: Sequence[int], preempted: Sequence[str]) -> ReclaimSelection:
        returned = {self.servers[i] for i in chosen}
        gone = set(preempted)
        collateral = sum(
            slot.gpus
            for job_id in preempted
            for slot in self.jobs[job_id].slots
            if slot.server not in returned
        )
        scaled: list[ScaleIn] = []
        seen: set[str] = set()
        for i in chosen:
            for job_id in self.flex[i]:
                if job_id in gone or job_id in seen:
                    continue
                seen.add(job_id)
                job = self.jobs[job_id]
                keep = tuple(s for s in job.slots if not (s.flexible and s.server in returned))
                removed = sum(s.gpus for s in job.slots) - sum(s.gpus for s in keep)
                scaled.append(ScaleIn(job_id, removed // job.gpus_per_worker, keep))
        return ReclaimSelection(
            servers=tuple(self.servers[i] for i in chosen),
            preempted_jobs=tuple(preempted),
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
    inst = _Instance(on_loan, jobs, count)
    if cost == "gpu":
        inst.use_gpu_fractions()
    elif cost != "server":
        raise ValueError(f"unknown reclaim cost {cost!r} (server or gpu)")
    n = len(inst.servers)
    free = [i for i in range(n) if not inst.base[i] and not inst.flex[i]]
    flexible_only = sorted(
        (i for i in range(n) if not inst.base[i] and inst.flex[i]),
        key=lambda i: (len(inst.flex[i]), inst.used[i], i),
    )
    chosen = (free + flexible_only)[:count]
    need = count - len(chosen)
    preempted: list[str] = []
    if need > 0:
        picked = _algorithm_one(inst, set(chosen), need, preempted)
        chosen.extend(picked)
    return inst.selection(chosen, preempted)


def _algorithm_one(inst: _Instance, taken: set[int], need: int, preempted: list[str]) -> list[int]:
    """Pick `need` servers by server-fraction cost, preempting as it goes (Algorithm 1).

    Tie-break keys are cached and invalidated two hops around each preemption (a key reads
    the alive jobs of the server and of the servers it shares jobs with).
    """
    n = len(inst.servers)
    alive: list[set[str]] = [set(jobs) for jobs in inst.base]
    neighbours: list[set[int]] = [set() for _ in range(n)]
    cost = np.zeros(n)
    for job_id, servers in inst.job_servers.items():
        for i in servers:
            cost[i] += inst.weight(job_id, i)
            neighbours[i].update(servers)
    for i in taken:
        cost[i] = math.inf
    keys: dict[int, tuple[int, int, int, int]] = {}

    def key(i: int) -> tuple[int, int, int, int]:
        if i not in keys:
            keys[i] = _tie_key(inst, alive, taken, i)
        jobs, vacated, collateral, order = keys[i]
        return jobs, -min(vacated, need - 1), collateral, order

    picked: list[int] = []
    while need > 0:
        if need == 1 and not picked:
            best = min((i for i in range(n) if i not in taken), key=key)
        else:
            ties = np.flatnonzero(cost <= cost.min() + _TIE)
            best = int(min(ties.tolist(), key=key))
        picked.append(best)
        taken.add(best)
        cost[best] = math.inf
        hit = {best}
        for job_id in [j for j in inst.base[best] if j in alive[best]]:
            preempted.append(job_id)
            for i in inst.job_servers[job_id]:
                hit.add(i)
                alive[i].discard(job_id)
                if i not in taken:
                    cost[i] -= inst.weight(job_id, i)
        for i in hit:
            keys.pop(i, None)
            for k in neighbours[i]:
                keys.pop(k, None)
        need -= 1
    return picked


def _tie_key(
    inst: _Instance, alive: list[set[str]], taken: set[int], i: int
) -> tuple[int, int, int, int]:
    """(jobs preempted, other servers vacated, collateral GPUs, cluster order)."""
    jobs = alive[i]
    touched: set[int] = set()
    collateral = 0
    for job_id in jobs:
        for slot in inst.jobs[job_id].slots:
            if inst.index.get(slot.server) != i:
                collateral += slot.gpus
        touched.update(k for k in inst.job_servers[job_id] if k != i and k not in taken)
    vacated = sum(1 for k in touched if alive[k] <= jobs)
    return (len(jobs), vacated, collateral, i)


def server_preemption_costs(
    on_loan: Sequence[str], jobs: Sequence[HostedJob], *, cost: str = "server"
) -> dict[str, float]:
    """Each on-loan server's initial preemption cost (Table 1's last two columns)."""
    inst = _Instance(on_loan, jobs, 0)
    if cost == "gpu":
        inst.use_gpu_fractions()
    costs = dict.fromkeys(inst.servers, 0.0)
    for job_id, servers in inst.job_servers.items():
        for i in servers:
            costs[inst.servers[i]] += inst.weight(job_id, i)
    return costs


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
    order = sorted(inst.jobs)
    bit = {job_id: 1 << k for k, job_id in enumerate(order)}
    masks = [sum(bit[j] for j in inst.base[i]) for i in range(n)]
    gpus = {job_id: sum(s.gpus for s in inst.jobs[job_id].slots) for job_id in order}
    here = [
        {job_id: sum(s.gpus for s in inst.jobs[job_id].slots if s.server == inst.servers[i])
         for job_id in inst.base[i]}
        for i in range(n)
    ]
    best: tuple[int, int] | None = None
    best_combo: tuple[int, ...] = ()
    for combo in itertools.combinations(range(n), count):
        mask = 0
        for i in combo:
            mask |= masks[i]
        hit = [job_id for job_id in order if mask & bit[job_id]]
        inside = {job_id: 0 for job_id in hit}
        for i in combo:
            for job_id, g in here[i].items():
                inside[job_id] += g
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
    servers = on_loan_servers(view)
    return select_reclaim_servers(servers, hosted_jobs(view, servers), count).as_plan()


@register_reclaim("optimal")
def select_reclaim_exhaustive(view: ClusterView, count: int, rng: random.Random) -> ReclaimPlan:
    servers = on_loan_servers(view)
    return select_reclaim_optimal(servers, hosted_jobs(view, servers), count).as_plan()
