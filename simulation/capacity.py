"""Capacity answers (issue #19): per policy, the cheapest cluster that meets every target.

A planner asks "how many servers (of which pools), how much inference capacity lent, or
which value of a policy parameter does each scheduler need so that my workload meets its
targets, and at what cost?". This module answers it without Django: the search is driven
by an injected evaluator, so the CLI simulates in-process (`python -m simulation size`) and
the planner sends the very same points to Celery workers as ordinary runs.

- A **target** is a summary metric (`queuing.p95`, `jct.mean`, `makespan`, ...) or
  `slowed_share` (the share of jobs whose JCT is longer than under the baseline policy on the
  cluster as given, same seed; `simulation.metrics.speedups`), and an upper bound.
- The **rule**: a size meets the targets when, for every target, the mean over the seeds is
  at most the bound, and every job of every seed finished. Each mean is reported with its
  95 % Student-t interval (`simulation.metrics.mean_ci95`); the interval is shown, not
  tested, so with few seeds an answer can sit inside noise: read the interval.
- An **axis** maps an integer *level* to a cluster and settings, capacity growing with the
  level: servers of one or more pools (the first named pool has `level` servers, the others
  keep their ratio to it), servers the inference pool may lend (`loan_headroom` = inference
  servers - level), or an integer policy parameter (larger assumed to help).
- The **assumption** is that meeting the targets is monotone in the level. The search
  brackets the answer: it evaluates `points_per_round` levels per policy per round (so that
  many evaluations run in parallel), keeps the largest level seen missing a target (L) and
  the smallest level seen meeting them above which every evaluated level also met them (F),
  and narrows (L, F) until F = L + 1. A level meeting the targets below one missing them is
  reported as non-monotone; the answer stays F, which its own evaluation shows meeting every
  target, never a level that missed one.
- **Cost** per hour of a level: every pool's servers x (GPUs x the GPU type's price per
  GPU-hour + the per-server fixed price). On the loan axis the inference pool is charged for
  the servers it may lend only (the capacity training may take from it).
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from simulation.errors import InputError
from simulation.limits import MAX_SERVERS_PER_POOL
from simulation.metrics import mean_ci95, speedups, time_unit
from simulation.model import ClusterSpec, PoolKind, Workload

SLOWED_SHARE = "slowed_share"
TIME_METRICS = tuple(f"{m}.{s}" for m in ("jct", "queuing")
                     for s in ("mean", "median", "p95", "p99")) + ("makespan",)
RATIO_METRICS = ("preemption_ratio", "avg_queue_length", "blocking_index")
SHARE_METRICS = ("preempted_share", SLOWED_SHARE)
TARGET_METRICS = TIME_METRICS + RATIO_METRICS + SHARE_METRICS
_TIME_SUFFIXES = {"s": 1.0, "min": 60.0, "h": 3600.0, "d": 86400.0}
RULE = ("a size meets the targets when, for every target, the mean over the seeds is at most "
        "the bound, and every job of every seed finished")

AXIS_SERVERS, AXIS_LOAN, AXIS_PARAM = "servers", "loan", "param"


# --- Targets and costs ------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class Target:
    """`metric <= bound`; `metric` a summary path (`queuing.p95`) or `slowed_share`; time
    bounds in seconds, shares as fractions."""

    metric: str
    bound: float

    @classmethod
    def parse(cls, text: str, *, field: str = "target") -> Target:
        """`queuing.p95<=3600`, `queuing.p95<=1h`, `jct.mean<=6h`, `slowed_share<=1%`."""
        metric, sep, raw = text.partition("<=")
        metric, raw = metric.strip(), raw.strip()
        if not sep or not metric or not raw:
            raise InputError(f"expected METRIC<=BOUND, got {text!r}", field=field)
        if metric not in TARGET_METRICS:
            raise InputError(f"unknown metric {metric!r} (known: {', '.join(TARGET_METRICS)})",
                             field=field)
        match = re.fullmatch(r"([0-9]*\.?[0-9]+(?:[eE][+-]?[0-9]+)?)\s*(%|s|min|h|d)?", raw)
        if match is None:
            raise InputError(f"bound {raw!r} is not a number (a time may end in s, min, h "
                             "or d, a share in %)", field=field)
        number, suffix = float(match.group(1)), match.group(2)
        if suffix == "%":
            if metric not in SHARE_METRICS:
                raise InputError(f"{metric} is not a share; % applies to "
                                 f"{', '.join(SHARE_METRICS)}", field=field)
            number /= 100.0
        elif suffix:
            if metric not in TIME_METRICS:
                raise InputError(f"{metric} is not a time; {suffix!r} applies to "
                                 f"{', '.join(TIME_METRICS)}", field=field)
            number *= _TIME_SUFFIXES[suffix]
        return cls.checked(metric, number, field=field)

    @classmethod
    def checked(cls, metric: str, bound: Any, *, field: str = "target") -> Target:
        if metric not in TARGET_METRICS:
            raise InputError(f"unknown metric {metric!r} (known: {', '.join(TARGET_METRICS)})",
                             field=field)
        if isinstance(bound, bool) or not isinstance(bound, int | float) or not math.isfinite(
                bound) or bound < 0:
            raise InputError(f"bound must be a finite number >= 0, got {bound!r}", field=field)
        if metric in SHARE_METRICS and bound > 1:
            raise InputError(f"{metric} is a share in [0, 1], got {bound!r}", field=field)
        return cls(metric, float(bound))

    def value(self, summary: Mapping[str, Any]) -> float:
        node: Any = summary
        for key in self.metric.split("."):
            node = node[key]
        return float(node)

    def __str__(self) -> str:
        return f"{self.metric} <= {format_value(self.metric, self.bound)}"

    def to_dict(self) -> dict[str, Any]:
        return {"metric": self.metric, "bound": self.bound, "text": str(self)}


def format_value(metric: str, value: float | None) -> str:
    """A metric's value as people read it: times in s, min or h, shares in %."""
    if value is None:
        return "–"
    if metric in TIME_METRICS:
        unit, scale = time_unit(value)
        return f"{value / scale:,.4g} {unit}"
    if metric in SHARE_METRICS:
        return f"{value:.2%}"
    return f"{value:,.4g}"


def format_mean_ci(metric: str, cell: Mapping[str, Any]) -> str:
    """`mean ± half-width` of a `mean_ci95` cell, both in the mean's unit."""
    mean, half = cell["mean"], cell["ci95"]
    if mean is None:
        return "–"
    if half is None:
        return format_value(metric, mean)
    if metric in TIME_METRICS:
        unit, scale = time_unit(mean)
        return f"{mean / scale:,.1f} ± {half / scale:,.1f} {unit}"
    if metric in SHARE_METRICS:
        return f"{mean:.2%} ± {half:.2%}"
    return f"{mean:,.3f} ± {half:,.3f}"


@dataclass(frozen=True, slots=True)
class CostModel:
    """Price per GPU-hour of each GPU type, and an optional fixed price per server-hour."""

    gpu_hour: Mapping[str, float]
    server_hour: Mapping[str, float] = field(default_factory=dict)

    @classmethod
    def checked(cls, gpu_hour: Mapping[str, Any], server_hour: Mapping[str, Any] | None = None,
                *, field: str = "costs") -> CostModel:
        prices = {}
        for where, table in (("gpu_hour", gpu_hour), ("server_hour", server_hour or {})):
            for gpu_type, price in table.items():
                if isinstance(price, bool) or not isinstance(price, int | float) or not (
                        math.isfinite(price) and price >= 0):
                    raise InputError(f"price must be a finite number >= 0, got {price!r}",
                                     field=f"{field}.{where}.{gpu_type}")
            prices[where] = {str(k): float(v) for k, v in table.items()}
        return cls(prices["gpu_hour"], prices["server_hour"])

    def check(self, cluster: ClusterSpec, *, field: str = "costs") -> None:
        """Every GPU type a pool uses has a price: a missing one would read as free."""
        for pool in cluster.pools:
            if pool.gpu_type not in self.gpu_hour:
                raise InputError(f"no price per GPU-hour for {pool.gpu_type} (pool "
                                 f"{pool.name!r})", field=f"{field}.gpu_hour")

    def server_cost(self, gpu_type: str, gpus_per_server: int) -> float:
        return gpus_per_server * self.gpu_hour[gpu_type] + self.server_hour.get(gpu_type, 0.0)

    def per_hour(self, cluster: ClusterSpec, *, charged: Mapping[str, int] | None = None
                 ) -> float:
        """Cost per hour; `charged` overrides how many servers of a pool are paid for."""
        charged = charged or {}
        return sum(charged.get(pool.name, pool.servers)
                   * self.server_cost(pool.gpu_type, pool.gpus_per_server)
                   for pool in cluster.pools)

    def to_dict(self) -> dict[str, Any]:
        return {"gpu_hour": dict(self.gpu_hour), "server_hour": dict(self.server_hour)}


# --- The search axis -------------------------------------------------------------------------

def pools_resize(cluster: ClusterSpec, servers: Mapping[str, int]) -> ClusterSpec:
    """The cluster with the named pools at the given server counts; an inference pool's
    lending limit scales along (as `cluster_scale` does) and a quota pool's quota too."""
    pools = []
    for pool in cluster.pools:
        if pool.name not in servers:
            pools.append(pool)
            continue
        count = int(servers[pool.name])
        if not 1 <= count <= MAX_SERVERS_PER_POOL:
            raise InputError(f"pool {pool.name!r} would have {count:,} servers; a pool holds "
                             f"1 to {MAX_SERVERS_PER_POOL:,}", field="pool_servers")
        factor = count / pool.servers
        lending = None if pool.lending_limit is None else min(
            count, round(pool.lending_limit * factor))
        quota = None if pool.quota_gpus is None else max(1, round(pool.quota_gpus * factor))
        pools.append(dataclasses.replace(pool, servers=count, lending_limit=lending,
                                         quota_gpus=quota))
    return dataclasses.replace(cluster, pools=tuple(pools))


@dataclass(frozen=True, slots=True)
class Axis:
    """What the search sizes; see the module docstring for each kind's level."""

    kind: str
    pools: tuple[str, ...] = ()
    param: str = ""

    def check(self, cluster: ClusterSpec, *, field: str = "axis") -> None:
        names = [p.name for p in cluster.pools]
        if self.kind == AXIS_SERVERS:
            if not self.pools:
                raise InputError("name at least one pool to size", field=f"{field}.pools")
            for name in self.pools:
                if name not in names:
                    raise InputError(f"no pool {name!r} in the cluster (pools: "
                                     f"{', '.join(names)})", field=f"{field}.pools")
            if len(set(self.pools)) != len(self.pools):
                raise InputError("a pool is named twice", field=f"{field}.pools")
        elif self.kind == AXIS_LOAN:
            if not cluster.pools_of_kind(PoolKind.INFERENCE):
                raise InputError("the loan axis needs an inference pool", field=f"{field}.kind")
        elif self.kind == AXIS_PARAM:
            if not self.param:
                raise InputError("name the integer policy parameter to size",
                                 field=f"{field}.param")
        else:
            raise InputError(f"unknown axis {self.kind!r} (known: {AXIS_SERVERS}, {AXIS_LOAN}, "
                             f"{AXIS_PARAM})", field=f"{field}.kind")

    def check_range(self, cluster: ClusterSpec, low: int, high: int) -> None:
        """A range every level of which the axis can build (InputError on `min`/`max`)."""
        if not 0 <= low <= high:
            raise InputError(f"the range {low} to {high} is empty or negative", field="min")
        top = {AXIS_SERVERS: MAX_SERVERS_PER_POOL,
               AXIS_LOAN: _inference_servers(cluster)}.get(self.kind)
        if top is not None and high > top:
            what = "servers a pool holds" if self.kind == AXIS_SERVERS else "inference servers"
            raise InputError(f"{high} is over the {top:,} {what}", field="max")
        if self.kind == AXIS_SERVERS and low < 1:
            raise InputError("a pool needs at least 1 server", field="min")

    def pool_servers(self, cluster: ClusterSpec, level: int) -> dict[str, int]:
        """Servers axis: the lead pool has `level` servers, the others keep their ratio."""
        lead = cluster.pool(self.pools[0])
        return {name: level if i == 0 else max(1, round(
            cluster.pool(name).servers * level / lead.servers))
            for i, name in enumerate(self.pools)}

    def settings(self, cluster: ClusterSpec, level: int) -> dict[str, Any]:
        """The engine setting or policy parameter the level sets (none on the servers axis)."""
        if self.kind == AXIS_LOAN:
            return {"loan_headroom": _inference_servers(cluster) - level}
        if self.kind == AXIS_PARAM:
            return {self.param: level}
        return {}

    def apply(self, cluster: ClusterSpec, level: int) -> tuple[ClusterSpec, dict[str, Any]]:
        if self.kind == AXIS_SERVERS:
            return pools_resize(cluster, self.pool_servers(cluster, level)), {}
        return cluster, self.settings(cluster, level)

    def reference(self, cluster: ClusterSpec, settings: Mapping[str, Any]) -> int | None:
        """The level of the inputs as given (None when the parameter is not set)."""
        if self.kind == AXIS_SERVERS:
            return cluster.pool(self.pools[0]).servers
        if self.kind == AXIS_LOAN:
            return _inference_servers(cluster) - int(settings.get("loan_headroom", 0))
        value = settings.get(self.param)
        return None if value is None else int(value)

    def default_range(self, cluster: ClusterSpec, workload: Workload) -> tuple[int, int]:
        """Servers: from the least that holds the widest job to twice the pool as given;
        loan: from lending nothing to lending every inference server."""
        if self.kind == AXIS_SERVERS:
            high = min(MAX_SERVERS_PER_POOL, 2 * cluster.pool(self.pools[0]).servers)
            return self.fitting_level(cluster, workload, high), high
        if self.kind == AXIS_LOAN:
            return 0, _inference_servers(cluster)
        raise InputError(f"give the range of {self.param} to search", field="range")

    def fitting_level(self, cluster: ClusterSpec, workload: Workload, high: int) -> int:
        """The least level whose cluster holds every job's least GPUs of its type (the
        engine refuses a smaller one, `Simulation._check_fits`); `high` when none does."""
        need: dict[str | None, int] = {}
        for job in workload.jobs:
            need[job.gpu_type] = max(need.get(job.gpu_type, 0), job.min_gpus)

        def fits(level: int) -> bool:
            resized, _ = self.apply(cluster, level)
            have: dict[str | None, int] = {None: resized.total_gpus}
            for pool in resized.pools:
                have[pool.gpu_type] = have.get(pool.gpu_type, 0) + pool.gpus
            return all(have.get(kind, 0) >= gpus for kind, gpus in need.items())

        low, top = 1, high
        while low < top:
            mid = (low + top) // 2
            low, top = (low, mid) if fits(mid) else (mid + 1, top)
        return low

    def cost(self, cluster: ClusterSpec, level: int, costs: CostModel) -> float:
        resized, _ = self.apply(cluster, level)
        if self.kind == AXIS_LOAN:
            charged = {p.name: min(level, p.lending_limit if p.lending_limit is not None
                                   else p.servers)
                       for p in cluster.pools_of_kind(PoolKind.INFERENCE)}
            return costs.per_hour(resized, charged=charged)
        return costs.per_hour(resized)

    def gpus(self, cluster: ClusterSpec, level: int) -> dict[str, int]:
        """GPUs of the sized pools (servers axis) or lendable (loan axis), per GPU type."""
        out: dict[str, int] = {}
        if self.kind == AXIS_SERVERS:
            resized, _ = self.apply(cluster, level)
            for name in self.pools:
                pool = resized.pool(name)
                out[pool.gpu_type] = out.get(pool.gpu_type, 0) + pool.gpus
        elif self.kind == AXIS_LOAN:
            for pool in cluster.pools_of_kind(PoolKind.INFERENCE):
                out[pool.gpu_type] = out.get(pool.gpu_type, 0) + level * pool.gpus_per_server
        return out

    def describe(self, cluster: ClusterSpec, level: int) -> str:
        if self.kind == AXIS_SERVERS:
            resized, _ = self.apply(cluster, level)
            return ", ".join(f"{resized.pool(n).servers} {n} servers "
                             f"({resized.pool(n).gpus} {resized.pool(n).gpu_type})"
                             for n in self.pools)
        if self.kind == AXIS_LOAN:
            return (f"{level} inference servers lendable "
                    f"(loan_headroom={_inference_servers(cluster) - level})")
        return f"{self.param}={level}"

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "pools": list(self.pools), "param": self.param}


def _inference_servers(cluster: ClusterSpec) -> int:
    return sum(p.servers for p in cluster.pools_of_kind(PoolKind.INFERENCE))


# --- The search ------------------------------------------------------------------------------

class Point(NamedTuple):
    """One evaluation: a policy at a level on a seed (a run)."""

    policy: str
    level: int
    seed: int


@dataclass(frozen=True, slots=True)
class Problem:
    """One capacity question. `reference_level` is the inputs' own level, where the baseline
    runs to define `slowed_share`."""

    policies: tuple[str, ...]
    targets: tuple[Target, ...]
    axis: Axis
    low: int
    high: int
    seeds: tuple[int, ...] = (0,)
    points_per_round: int = 1
    baseline: str = ""
    reference_level: int | None = None

    def __post_init__(self) -> None:
        if not self.policies:
            raise InputError("name at least one policy", field="policies")
        if len(set(self.policies)) != len(self.policies):
            raise InputError("a policy is named twice", field="policies")
        if not self.targets:
            raise InputError("give at least one target", field="targets")
        if not self.seeds or len(set(self.seeds)) != len(self.seeds):
            raise InputError("give one or more distinct seeds", field="seeds")
        if not 0 <= self.low <= self.high:
            raise InputError(f"the range {self.low} to {self.high} is empty or negative",
                             field="range")
        if self.points_per_round < 1:
            raise InputError("must be at least 1", field="points_per_round")
        if self.needs_reference and self.reference_level is None:
            raise InputError("slowed_share needs the axis' value as given (set the "
                             "parameter in the inputs)", field="targets")

    @property
    def baseline_policy(self) -> str:
        """The one the saving is measured against: `baseline`, else FIFO, else the first."""
        return self.baseline or ("fifo" if "fifo" in self.policies else self.policies[0])

    @property
    def needs_reference(self) -> bool:
        return any(t.metric == SLOWED_SHARE for t in self.targets)

    def reference_points(self) -> list[Point]:
        if not self.needs_reference:
            return []
        return [Point(self.baseline_policy, self.reference_level, seed) for seed in self.seeds]


Measurement = dict[str, float]  # target metric -> value, plus "unfinished"


def measure(problem: Problem, summary: Mapping[str, Any],
            jobs: Sequence[Mapping[str, Any]] | None = None,
            reference_jobs: Sequence[Mapping[str, Any]] | None = None) -> Measurement:
    """The numbers the targets read from one run (jobs needed for `slowed_share` only)."""
    out: Measurement = {"unfinished": float(summary.get("unfinished", 0) or 0)}
    for target in problem.targets:
        if target.metric == SLOWED_SHARE:
            if jobs is None or reference_jobs is None:
                raise ValueError("slowed_share needs the run's and the reference's jobs")
            out[SLOWED_SHARE] = speedups(reference_jobs, jobs)["slowed_share"]
        else:
            out[target.metric] = target.value(summary)
    return out


@dataclass(slots=True)
class PolicyState:
    """What the evaluations so far say about one policy."""

    levels: dict[int, dict[int, Measurement]]  # level -> seed -> measurement, complete only
    feasible: dict[int, bool]
    answer: int | None  # F: smallest meeting level with every evaluated level above meeting
    below: int  # L: largest level seen missing a target under F (low - 1: none)
    non_monotone: list[tuple[int, int]]  # (meeting level, missing level above it)
    done: bool


def level_meets(problem: Problem, seeds: Mapping[int, Measurement]) -> bool:
    """The rule (module docstring): mean over seeds within every bound, every job done."""
    if any(m["unfinished"] > 0 for m in seeds.values()):
        return False
    return all(sum(m[t.metric] for m in seeds.values()) / len(seeds) <= t.bound
               for t in problem.targets)


def policy_state(problem: Problem, measured: Mapping[Point, Measurement], policy: str
                 ) -> PolicyState:
    by_level: dict[int, dict[int, Measurement]] = {}
    for point, m in measured.items():
        if point.policy == policy and problem.low <= point.level <= problem.high:
            by_level.setdefault(point.level, {})[point.seed] = m
    levels = {lv: s for lv, s in by_level.items() if all(seed in s for seed in problem.seeds)}
    feasible = {lv: level_meets(problem, {seed: s[seed] for seed in problem.seeds})
                for lv, s in levels.items()}
    answer = None
    for lv in sorted(feasible, reverse=True):
        if not feasible[lv]:
            break
        answer = lv
    missing = [lv for lv, ok in feasible.items() if not ok and (answer is None or lv < answer)]
    below = max(missing, default=problem.low - 1)
    non_monotone = sorted((ok_lv, bad_lv) for ok_lv, ok in feasible.items() if ok
                          for bad_lv, bad in feasible.items() if not bad and bad_lv > ok_lv)
    if answer is None:
        done = problem.high in feasible
    else:
        done = answer == below + 1
    return PolicyState(levels, feasible, answer, below, non_monotone, done)


def _candidates(problem: Problem, state: PolicyState) -> list[int]:
    """The next round's levels: k evenly spaced, up to `high` while nothing met the targets,
    strictly inside the bracket (L, F) once something did."""
    k, below = problem.points_per_round, state.below
    if state.answer is None:
        span = problem.high - below
        levels = {below + math.ceil(i * span / k) for i in range(1, k + 1)}
    else:
        span = state.answer - below
        levels = {below + round(i * span / (k + 1)) for i in range(1, k + 1)}
        levels = {lv for lv in levels if below < lv < state.answer} or {below + span // 2}
    return sorted(lv for lv in levels if lv not in state.feasible)


def plan(problem: Problem, measured: Mapping[Point, Measurement]) -> list[Point]:
    """The points to evaluate next (empty when the search is over): the baseline's reference
    runs first when a target needs them, then each unfinished policy's candidates x seeds."""
    reference = [p for p in problem.reference_points() if p not in measured]
    if reference:
        return reference
    points = []
    for policy in problem.policies:
        state = policy_state(problem, measured, policy)
        if state.done:
            continue
        for level in _candidates(problem, state):
            points += [Point(policy, level, seed) for seed in problem.seeds
                       if Point(policy, level, seed) not in measured]
    return points


def _stats(problem: Problem, seeds: Mapping[int, Measurement]) -> dict[str, Any]:
    return {t.metric: mean_ci95([seeds[s][t.metric] for s in problem.seeds])
            for t in problem.targets}


def answer(problem: Problem, measured: Mapping[Point, Measurement], *, cluster: ClusterSpec,
           costs: CostModel, failures: Mapping[str, str] | None = None,
           rounds: int = 0) -> dict[str, Any]:
    """The search's result as JSON: per policy the answer, its cost and bound with interval,
    every evaluated level (the frontier), non-monotone pairs; the best policy's saving."""
    failures = failures or {}
    axis = problem.axis
    policies = []
    for policy in problem.policies:
        state = policy_state(problem, measured, policy)
        points = [{"level": lv, "size": axis.describe(cluster, lv),
                   "cost_per_hour": axis.cost(cluster, lv, costs), "gpus": axis.gpus(cluster, lv),
                   "feasible": state.feasible[lv], "metrics": _stats(problem, state.levels[lv]),
                   "unfinished": max(m["unfinished"] for m in state.levels[lv].values())}
                  for lv in sorted(state.levels)]
        entry: dict[str, Any] = {
            "policy": policy, "points": points, "evaluations": sum(
                1 for p in measured if p.policy == policy and p.level in state.levels),
            "non_monotone": [list(pair) for pair in state.non_monotone],
            "bracket": {"meets": state.answer, "misses": state.below
                        if state.below >= problem.low else None},
        }
        if policy in failures:
            entry.update(status="failed", error=failures[policy])
        elif state.answer is None:
            entry.update(status="not_met" if state.done else "running")
            if points:  # the largest level tried, to show how far off the targets are
                entry["closest"] = points[-1]
        else:
            best = next(p for p in points if p["level"] == state.answer)
            entry.update(status="found" if state.done else "running", level=state.answer,
                         size=best["size"], cost_per_hour=best["cost_per_hour"],
                         gpus=best["gpus"], metrics=best["metrics"],
                         at_range_bottom=state.answer == problem.low)
        policies.append(entry)
    return {
        "axis": axis.to_dict(), "range": [problem.low, problem.high],
        "targets": [t.to_dict() for t in problem.targets], "seeds": list(problem.seeds),
        "costs": costs.to_dict(), "rule": RULE, "baseline": problem.baseline_policy,
        "reference_level": problem.reference_level, "points_per_round": problem.points_per_round,
        "policies": policies, "saving": saving(problem, policies),
        "evaluations": len(measured), "rounds": rounds,
    }


def saving(problem: Problem, policies: Sequence[Mapping[str, Any]]) -> dict[str, Any] | None:
    """The cheapest answer against the baseline's, in one sentence; None unless the baseline
    and another policy found one."""
    found = {p["policy"]: p for p in policies if p["status"] == "found"}
    baseline = found.get(problem.baseline_policy)
    if baseline is None or len(found) < 2:
        return None
    best = min(found.values(), key=lambda p: (p["cost_per_hour"], p["level"],
                                              p["policy"] != problem.baseline_policy))
    targets = " and ".join(str(t) for t in problem.targets)
    cost_share = (1 - best["cost_per_hour"] / baseline["cost_per_hour"]
                  if baseline["cost_per_hour"] else 0.0)
    out = {"best": best["policy"], "baseline": baseline["policy"], "cost_share": cost_share}
    axis = problem.axis
    if axis.kind == AXIS_PARAM:
        out["sentence"] = (f"{best['policy']} meets {targets} with {axis.param}="
                           f"{best['level']}, {baseline['policy']} with {baseline['level']}")
        return out
    best_gpus, base_gpus = sum(best["gpus"].values()), sum(baseline["gpus"].values())
    share = 1 - best_gpus / base_gpus if base_gpus else 0.0
    what = (" and ".join(axis.pools) + " GPUs" if axis.kind == AXIS_SERVERS
            else "lent inference GPUs")
    if best["policy"] == baseline["policy"] or share <= 0:
        out["sentence"] = (f"no policy meets {targets} with fewer {what} than "
                           f"{baseline['policy']} ({base_gpus} GPUs)")
    else:
        out["sentence"] = (f"{best['policy']} meets {targets} with {share:.0%} fewer {what} "
                           f"than {baseline['policy']} ({best_gpus} vs {base_gpus} GPUs, "
                           f"{cost_share:.0%} lower cost)")
    out["gpu_share"] = share
    return out


@dataclass(slots=True)
class Outcome:
    """What an evaluator returns for a point: the run's summary, and its per-job rows
    (`job_id`, `jct`) when the problem needs them."""

    summary: dict[str, Any]
    jobs: list[dict[str, Any]] | None = None


Evaluator = Callable[[list[Point]], Mapping[Point, Outcome]]


def search(problem: Problem, evaluate: Evaluator, *, cluster: ClusterSpec, costs: CostModel,
           progress: Callable[[int, int], None] | None = None) -> dict[str, Any]:
    """Drive the search in-process: plan, evaluate a round's points together, measure."""
    measured: dict[Point, Measurement] = {}
    reference: dict[int, list[dict[str, Any]]] = {}
    rounds = 0
    while points := plan(problem, measured):
        rounds += 1
        outcomes = evaluate(points)
        for point in points:
            outcome = outcomes[point]
            if problem.needs_reference and point in problem.reference_points():
                reference[point.seed] = outcome.jobs or []
            measured[point] = measure(problem, outcome.summary, outcome.jobs,
                                      reference.get(point.seed))
        if progress is not None:
            progress(rounds, len(measured))
    return answer(problem, measured, cluster=cluster, costs=costs, rounds=rounds)


def evaluate_point(cluster: ClusterSpec, workload: Workload, point: Point, axis: Axis, *,
                   settings: Mapping[str, Any] | None = None, inference_load: Any = None,
                   with_jobs: bool = False) -> Outcome:
    """Simulate one point as `run_simulation` would (the CLI's evaluator)."""
    from simulation.runner import run_simulation

    resized, extra = axis.apply(cluster, point.level)
    result = run_simulation(resized, workload, point.policy,
                            settings={**(settings or {}), **extra}, seed=point.seed,
                            inference_load=inference_load)
    jobs = ([{"job_id": r["job_id"], "jct": r["jct"]} for r in result.jobs]
            if with_jobs else None)
    return Outcome(result.summary, jobs)


def parse_pairs(pairs: Iterable[str], *, field: str) -> dict[str, float]:
    """`V100=2.5` pairs (the CLI's `--cost`) as a mapping; InputError names the argument."""
    out = {}
    for pair in pairs:
        key, sep, raw = pair.partition("=")
        try:
            out[key.strip()] = float(raw)
        except ValueError:
            sep = ""
        if not sep or not key.strip():
            raise InputError(f"expected GPU_TYPE=PRICE, got {pair!r}", field=field)
    return out
