"""Aryl's job scheduler: two-phase allocation (§5.2, Algorithm 2) and placement (§5.3).

At every event (arrival, completion, and the orchestrator's loans and reclaims on the
engine's 300 s `loan_interval`) the scheduler re-decides, non-preemptively. §5.2 runs it
"periodically ... in high frequency"; a round with no event since the last one would
repeat its answer (`_signature`), so the policy sets no clock of its own (`interval = None`:
on muri_trace2, 800,000 wakeups a minute apart that decided nothing):

- Capacity is the free GPUs of every available server (on-loan inference servers included)
  plus the GPUs of running elastic jobs' flexible workers, which may be taken back.
- Phase one, SJF: queued jobs in increasing running time (elastic jobs by `T_max`, their
  time at the minimum worker count) get their base demand (inelastic: the requested GPUs;
  elastic: `w_min · D`) while it fits; a job that does not fit is skipped.
- Phase two: the flexible demand of admitted and running elastic jobs is a multiple-choice
  knapsack over the GPUs left (`aryl_knapsack.py`).
- Running elastic jobs shrink to their new flexible count first, then admitted jobs launch in
  best-fit-decreasing order (largest per-worker demand first, each worker on the fullest
  server it fits), then running elastic jobs grow.

Placement (§5.3): elastic jobs prefer on-loan inference servers, inelastic jobs training
servers; on inference servers base and flexible workers never share a server, so reclaim can
return the flexible group by scaling in (`group_flexible=false` turns this off, Table 6).
GPU types partition the capacity: a job with a `gpu_type` uses only that type; a job without
one runs wholly on one type (Appendix E), and its running times and knapsack values use that
type's speed (the paper's speed-normalised capacity). With `heterogeneous` such jobs may also
span types when no single type holds them, placed last (§6): base workers on training
servers, flexible ones on inference servers; the engine's `heterogeneous_efficiency` (0.7 in
the Advanced scenario) sets their speed, and the policy's parameter of the same name must
match it for the knapsack values.

Choices where the paper is silent: running times are the job's *predicted* remaining time
(`predicted_duration` scaled by the work left), so Table 9's prediction errors enter; a
shrinking job drops its most recently added flexible workers; a job admitted in phase one
whose base demand finds no room after fragmentation waits for the next round.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass

from simulation.decisions import Decision
from simulation.model import JobSpec, PoolKind
from simulation.policies.aryl_knapsack import (
    FlexibleGroup,
    flexible_group,
    solve_multiple_choice_knapsack,
)
from simulation.policies.aryl_placement import Allocation, ArylPlacement
from simulation.policies.base import Param, Policy, register
from simulation.throughput import imperfect_scaling, placement_speed
from simulation.view import ClusterView, JobView


@register
class Aryl(ArylPlacement, Policy):
    name = "aryl"
    description = (
        "Aryl: SJF for base demand, a multiple-choice knapsack for elastic jobs' flexible "
        "workers, elastic jobs grouped on on-loan servers; non-preemptive."
    )
    paper = "Aryl §5, Algorithm 2"
    params = (
        Param("elastic", bool, True,
              "scale elastic jobs within [min, max] workers; off: every job runs at its "
              "requested size"),
        Param("heterogeneous", bool, False,
              "jobs without a GPU type may span GPU types (Advanced and Ideal scenarios)"),
        Param("heterogeneous_efficiency", float, 0.7,
              "share of the mean GPU speed a job across GPU types reaches (knapsack values)",
              bounds=(0.01, 1.0)),
        Param("group_flexible", bool, True,
              "elastic jobs on on-loan servers with base and flexible workers on separate "
              "servers (§5.3); off: plain best-fit decreasing (Table 6)"),
        Param("step_loss", float, 0.0,
              "throughput loss per worker past the middle of the range assumed by the "
              "knapsack (set with EngineConfig.elastic_step_loss)", bounds=(0.0, 0.99)),
    )
    interval = None  # rounds at events only: see the module docstring
    # Algorithm 1 reclaims (§4); resizes run on Elastic Horovod (§6, [1]): the old workers
    # train on while new ones start, then one short state broadcast, as EDL's stop-free
    # scale-out. Aryl's §7.1 baselines (afs, gandiva-elastic, pollux-lite) subclass this
    # policy and inherit both: they are other allocation rules inside the same system.
    engine_defaults = {"reclaim_strategy": "aryl", "scaling_mode": "stop-free"}

    elastic: bool
    heterogeneous: bool
    heterogeneous_efficiency: float
    group_flexible: bool
    step_loss: float

    def __init__(self, **values: object) -> None:
        super().__init__(**values)  # type: ignore[arg-type]
        self._settled: tuple[object, ...] | None = None
        # Per-job facts that only depend on the (immutable) spec, kept for the view they
        # were read from: whether the job is elastic, and its knapsack terms per GPU types.
        self._facts_view: ClusterView | None = None
        self._elastic_ids: dict[str, bool] = {}
        self._terms: dict[tuple[str, str | None, str], _GroupTerms] = {}
        self._round_elastic: list[JobView] | None = None  # running elastic jobs, this round
        # Phase one's key of each waiting job (`phase_one_order`), the allocation log read so
        # far, and the GPU types each kind of job may take (`_types`), for `_facts_view`.
        self._queued_keys: dict[JobView, tuple[float, float]] = {}
        self._keys_mark = 0
        self._types_of: dict[tuple[str | None, bool], list[str]] = {}
        self._base_demands: dict[JobView, int] = {}  # `_base_gpus` of each job seen waiting

    def schedule(self, view: ClusterView) -> Iterator[Decision]:
        if not view.queue and not (self.elastic and view.running):
            return
        if self._signature(view) == self._settled:
            return
        if view is not self._facts_view:
            self._facts_view = view
            self._elastic_ids.clear()
            self._terms.clear()
            self._queued_keys.clear()
            self._keys_mark = view.allocations_since(0)[1]
            self._types_of.clear()
            self._base_demands.clear()
        self._round_elastic = self._elastic_running(view)
        try:
            allocation = self.allocate(view)
            yield from self._enact(view, allocation)
        finally:
            self._round_elastic = None
        self._settled = self._signature(view)

    @staticmethod
    def _signature(view: ClusterView) -> tuple[object, ...]:
        """What a round depends on besides time: free GPUs per pool and the job counts.

        An arrival, a completion or a reclaim changes it; a round with none of them since
        the last one (a loan tick that lent nothing, or a periodic round under a numeric
        `cadence`) would repeat the last round's answer, so it is skipped (only the running
        jobs' remaining times have moved, which shifts knapsack values slightly).
        """
        free = tuple(view.free_gpus(p.name) for p in view.spec.pools)
        return free, len(view.queue), len(view.running)

    def _elastic_running(self, view: ClusterView) -> list[JobView]:
        """Running elastic jobs in running order, without touching the inelastic majority's
        views (their flags are cached by job id at launch); scanned once per round."""
        if self._round_elastic is not None:
            return list(self._round_elastic)
        flags = self._elastic_ids
        try:
            ids = [job_id for job_id in view.running if flags[job_id]]
        except KeyError:  # jobs this policy did not launch (a snapshot)
            for job_id in view.running:
                if job_id not in flags:
                    flags[job_id] = view.job(job_id).spec.elastic
            ids = [job_id for job_id in view.running if flags[job_id]]
        return [view.job(job_id) for job_id in ids]

    # -- allocation (Algorithm 2) ------------------------------------------------------------

    def allocate(self, view: ClusterView) -> Allocation:
        capacity = self._capacity(view)
        allocation = Allocation()
        later: list[JobView] = []
        # With no GPU to give (common on a loaded trace) phase one admits nobody.
        order = self.phase_one_order(view) if sum(capacity.values()) > 0 else []
        # No waiting job's base demand is below `smallest`: once no GPU type (with
        # `heterogeneous`, not all types together) has that many left, no job further on
        # can be admitted, so the walk ends there (issue #16: thousands wait on muri_trace2).
        smallest = self._smallest_base_demand(order)
        for job in order:
            free = sum(capacity.values())
            if free <= 0 or (free if self.heterogeneous else max(capacity.values())) < smallest:
                break
            demand = self._base_gpus(job.spec)
            for gpu_type in self._types(view, job.spec):
                if capacity.get(gpu_type, 0) >= demand:
                    capacity[gpu_type] -= demand
                    allocation.admitted.append((job, gpu_type))
                    break
            else:
                if self._spans_types(job.spec):
                    later.append(job)
        for job in later:  # heterogeneous jobs go last, on what is left (§6)
            demand = self._base_gpus(job.spec)
            if sum(capacity.values()) >= demand:
                for gpu_type in self._types(view, job.spec, base=True):
                    take = min(demand, capacity.get(gpu_type, 0))
                    capacity[gpu_type] -= take
                    demand -= take
                allocation.admitted.append((job, None))
        if self.elastic:
            allocation.flexible = self._allocate_flexible(view, allocation, capacity)
        return allocation

    def _smallest_base_demand(self, jobs: list[JobView]) -> int:
        """The fewest GPUs any of `jobs` needs admitted (`_base_gpus`; 0 for no job), each
        job's kept: it depends on the job's spec alone."""
        demands = self._base_demands
        for job in [job for job in jobs if job not in demands]:
            demands[job] = self._base_gpus(job.spec)
        return min(map(demands.__getitem__, jobs), default=0)

    def phase_one_order(self, view: ClusterView) -> list[JobView]:
        """SJF: T_j for inelastic jobs, T_j^max for elastic ones (Algorithm 2 `SortJobs`),
        ties by submission, then queue order.

        A waiting job's key is kept while it waits (issue #16: thousands wait on
        muri_trace2, and every round sorted them by keys computed afresh): its predicted
        work left changes only while it runs, and the allocation log names every job
        started, stopped or ended since the last round, whose key is dropped."""
        keys = self._queued_keys
        changed, self._keys_mark = view.allocations_since(self._keys_mark)
        for job_id in changed:
            keys.pop(view.job(job_id), None)
        queue = list(view.queue.values())
        for job in queue:
            if job not in keys:
                keys[job] = (self._sort_time(view, job), job.submit_time)
        queue.sort(key=keys.__getitem__)
        return queue

    def split_flexible(
        self, view: ClusterView, groups: list[FlexibleGroup], rates: dict[str, list[float]],
        capacity: int,
    ) -> dict[str, int]:
        """Flexible workers per job within one GPU type: the multiple-choice knapsack."""
        return solve_multiple_choice_knapsack(groups, capacity)

    def _allocate_flexible(
        self, view: ClusterView, allocation: Allocation, capacity: dict[str, int]
    ) -> dict[str, int]:
        """Flexible workers per elastic job: one knapsack per GPU type for jobs bound to a
        type, then one over what every type has left for jobs that may span types.

        A spanning job's flexible workers go wherever GPUs are free (on-loan servers
        first, §6), so tying its knapsack to the first type with a free GPU would leave it
        competing for that type's last GPUs while another type stands idle. Its knapsack
        values use that preferred type's speed.
        """
        by_type: dict[str | None, list[FlexibleGroup]] = {}
        rates: dict[str, list[float]] = {}
        candidates: list[tuple[JobView, str | None]] = [
            (job, self._running_type(view, job)) for job in self._elastic_running(view)
        ]
        candidates += [(job, t) for job, t in allocation.admitted if job.spec.elastic]
        for job, base_type in candidates:
            flex_type = self._flexible_type(view, job.spec, base_type, capacity)
            if flex_type is None:
                continue
            group, rates[job.job_id] = self._group(view, job, base_type, flex_type)
            bucket = None if self._spans_types(job.spec) else flex_type
            by_type.setdefault(bucket, []).append(group)
        left = dict(capacity)
        flexible: dict[str, int] = {}
        for gpu_type, groups in sorted(by_type.items(), key=lambda item: item[0] is None):
            if gpu_type is None:
                chosen = self.split_flexible(view, groups, rates, sum(left.values()))
            else:
                chosen = self.split_flexible(view, groups, rates, left.get(gpu_type, 0))
                left[gpu_type] = left.get(gpu_type, 0) - sum(
                    g.weights[chosen[g.job_id] - 1] for g in groups if chosen.get(g.job_id))
            flexible.update(chosen)
        return flexible

    def _group(
        self, view: ClusterView, job: JobView, base_type: str | None, flex_type: str
    ) -> tuple[FlexibleGroup, list[float]]:
        """The job's knapsack items; only the predicted work left changes between rounds."""
        key = (job.job_id, base_type, flex_type)
        terms = self._terms.get(key)
        if terms is None:
            terms = self._terms[key] = self._group_terms(view, job.spec, base_type, flex_type)
        base_seconds = self._predicted_work(job) * terms.base_ratio
        values = tuple(base_seconds * f if f is not None else -math.inf
                       for f in terms.fractions)
        return FlexibleGroup(job.job_id, terms.weights, values), terms.rates

    def _group_terms(
        self, view: ClusterView, spec: JobSpec, base_type: str | None, flex_type: str
    ) -> _GroupTerms:
        d = spec.gpus_per_worker
        base_speed = self._speed(view, base_type) if base_type else self._speed(view, None)
        flex_speed = self._speed(view, flex_type)
        rates = []
        for w in range(spec.max_workers - spec.min_workers + 1):
            workers = spec.min_workers + w
            speed = placement_speed(
                [(base_speed, spec.min_gpus), (flex_speed, w * d)] if w else
                [(base_speed, spec.min_gpus)],
                self.heterogeneous_efficiency,
                spans_types=base_type is None or bool(w) and flex_type != base_type,
            )
            rate = view.throughput.speedup(spec.model, workers * d) * speed
            if self.step_loss > 0:
                rate *= imperfect_scaling(spec, workers, self.step_loss)
            rates.append(rate)
        base_ratio = view.throughput.speedup(spec.model, spec.num_gpus) / rates[0]
        group = flexible_group(spec.job_id, 1.0, rates, d)
        fractions = tuple(1.0 - rates[0] / r if r > 0 else None for r in rates[1:])
        return _GroupTerms(group.weights, fractions, base_ratio, rates)

    # -- helpers: demand, time, GPU types ----------------------------------------------------

    def _base_gpus(self, spec: JobSpec) -> int:
        return spec.min_gpus if self.elastic and spec.elastic else spec.num_gpus

    @staticmethod
    def _predicted_work(job: JobView) -> float:
        """Predicted seconds left at the requested size on the reference GPU."""
        duration = job.spec.duration
        fraction = job.remaining_work / duration if duration > 0 else 0.0
        return job.predicted_duration * fraction

    def _sort_time(self, view: ClusterView, job: JobView) -> float:
        """SJF key: T_j, or T_j^max (the time at the minimum workers) for elastic jobs."""
        spec = job.spec
        work = self._predicted_work(job)
        if not (self.elastic and spec.elastic):
            return work
        at_min = view.throughput.speedup(spec.model, spec.min_gpus)
        return work * view.throughput.speedup(spec.model, spec.num_gpus) / at_min

    def _spans_types(self, spec: JobSpec) -> bool:
        return self.heterogeneous and spec.gpu_type is None

    def _capacity(self, view: ClusterView) -> dict[str, int]:
        capacity: dict[str, int] = {}
        for pool in view.spec.pools:
            capacity[pool.gpu_type] = capacity.get(pool.gpu_type, 0) + view.free_gpus(pool.name)
        if self.elastic:
            for job in self._elastic_running(view):
                for slot in job.placement:
                    if slot.flexible:
                        gpu_type = view.servers[slot.server].gpu_type
                        capacity[gpu_type] += slot.gpus
        return capacity

    def _speed(self, view: ClusterView, gpu_type: str | None) -> float:
        if gpu_type is None:  # spread over types: the training pools' speed for the base
            gpu_type = self._pools(view, None, elastic=False)[0][1]
        return view.spec.gpu_types[gpu_type].speed

    def _pools(
        self, view: ClusterView, gpu_type: str | None, *, elastic: bool
    ) -> list[tuple[str, str]]:
        """(pool, GPU type) in placement preference order."""
        loan_first = elastic and self.group_flexible
        pools = [p for p in view.spec.pools if gpu_type is None or p.gpu_type == gpu_type]
        pools.sort(key=lambda p: (p.kind == PoolKind.INFERENCE) != loan_first)
        return [(p.name, p.gpu_type) for p in pools]

    def _types(self, view: ClusterView, spec: JobSpec, *, base: bool = False) -> list[str]:
        """GPU types the job may run on, preferred first (kept per GPU type asked and
        elasticity: the cluster's pools do not change within a view; read-only)."""
        elastic = self.elastic and spec.elastic and not base
        key = (spec.gpu_type, elastic)
        types = self._types_of.get(key)
        if types is None:
            types = self._types_of[key] = []
            for _, gpu_type in self._pools(view, spec.gpu_type, elastic=elastic):
                if gpu_type not in types:
                    types.append(gpu_type)
        return types

    def _running_type(self, view: ClusterView, job: JobView) -> str | None:
        types = {view.servers[s.server].gpu_type for s in job.placement if not s.flexible}
        return types.pop() if len(types) == 1 else None

    def _flexible_type(
        self, view: ClusterView, spec: JobSpec, base_type: str | None, capacity: dict[str, int]
    ) -> str | None:
        if base_type is not None and not self._spans_types(spec):
            return base_type
        for gpu_type in self._types(view, spec):  # inference first for elastic jobs
            if capacity.get(gpu_type, 0) > 0:
                return gpu_type
        return base_type


@dataclass(frozen=True, slots=True)
class _GroupTerms:
    """The static part of a job's knapsack group: item weights, each item's saved share of
    the base running time (`1 - rate(base) / rate(base + w)`, None when the rate is 0), and
    `speedup(requested) / rate(base)` that turns predicted work into base seconds."""

    weights: tuple[int, ...]
    fractions: tuple[float | None, ...]
    base_ratio: float
    rates: list[float]
