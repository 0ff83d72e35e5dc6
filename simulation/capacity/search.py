"""The bracketing search, the rule a level meets, the answer and its saving."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from simulation.capacity.axis import AXIS_PARAM, AXIS_SERVERS, Axis
from simulation.capacity.targets import (
    RULE,
    SLOWED_SHARE,
    CostModel,
    Target,
)
from simulation.errors import InputError
from simulation.metrics import mean_ci95, speedups
from simulation.model import ClusterSpec, Workload


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
