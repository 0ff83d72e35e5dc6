"""Starting a capacity search and moving it from round to round; pages, API and tasks call
these only.

The search itself is `simulation.capacity` (plan, measure, answer). Here each planned point
becomes an ordinary `Run` of the scenario, so workers run a round's points in parallel and an
identical succeeded run is reused (`run_create`). The search advances when a round's last run
ends: `run_ended` (sent after that run's commit) calls `capacity_search_advance`, and the
periodic `capacity.maintenance` task catches a search whose signal was lost, as sweeps are
finished by theirs. No chord: a chord never fires when one run fails or is cancelled.
"""

from __future__ import annotations

import logging
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import Exists, OuterRef
from django.utils import timezone

from planner.capacity.models import CapacityPoint, CapacitySearch, CapacityStatus
from planner.clusters.services import cluster_to_spec
from planner.scenarios import results
from planner.scenarios.inputs import workload_to_simulation
from planner.scenarios.models import TERMINAL_STATUSES, Run, RunStatus, Scenario
from planner.scenarios.services import run_create, runs_enqueue
from simulation import capacity
from simulation.composition import resolve_policy
from simulation.errors import InputError
from simulation.limits import MAX_SEED
from simulation.model import ClusterSpec
from simulation.runner import split_settings

logger = logging.getLogger(__name__)

MAX_POINTS_PER_ROUND = 8


def _policy_entry(scenario: Scenario, policy: str) -> dict[str, Any]:
    """The scenario's entry of `policy` (its first, when listed twice)."""
    return next(e for e in scenario.policies if e["policy"] == policy)


def capacity_problem(*, search: CapacitySearch) -> capacity.Problem:
    return capacity.Problem(
        policies=tuple(search.policies),
        targets=tuple(capacity.Target(t["metric"], t["bound"]) for t in search.targets),
        axis=capacity.Axis(search.axis["kind"], pools=tuple(search.axis.get("pools", ())),
                           param=search.axis.get("param", "")),
        low=search.low, high=search.high, seeds=tuple(search.seeds),
        points_per_round=search.points_per_round, baseline=search.baseline,
        reference_level=search.reference_level)


def capacity_costs(*, search: CapacitySearch) -> capacity.CostModel:
    return capacity.CostModel(search.costs.get("gpu_hour", {}),
                              search.costs.get("server_hour", {}))


def _targets(targets: Any) -> list[capacity.Target]:
    if not isinstance(targets, list) or not targets:
        raise InputError("give at least one target {metric, bound}", field="targets")
    checked = []
    for i, target in enumerate(targets):
        if isinstance(target, str):
            checked.append(capacity.Target.parse(target, field=f"targets[{i}]"))
        elif isinstance(target, dict):
            checked.append(capacity.Target.checked(target.get("metric", ""),
                                                   target.get("bound"), field=f"targets[{i}]"))
        else:
            raise InputError("expected {metric, bound} or 'METRIC<=BOUND'", field=f"targets[{i}]")
    if len({t.metric for t in checked}) != len(checked):
        raise InputError("a metric has two targets", field="targets")
    return checked


def _policies(scenario: Scenario, policies: list[str] | None) -> list[str]:
    names = [e["policy"] for e in scenario.policies]
    chosen = list(dict.fromkeys(names)) if not policies else policies
    for i, name in enumerate(chosen):
        if name not in names:
            raise InputError(f"{name!r} is not a policy of the scenario (its policies: "
                             f"{', '.join(dict.fromkeys(names))})", field=f"policies[{i}]")
    if len(set(chosen)) != len(chosen):
        raise InputError("a policy is named twice", field="policies")
    return chosen


def _seeds(scenario: Scenario, seeds: list[int] | None) -> list[int]:
    seeds = list(scenario.seeds) if seeds is None else seeds
    if (not isinstance(seeds, list) or not seeds or len(set(seeds)) != len(seeds)
            or any(isinstance(s, bool) or not isinstance(s, int) or not 0 <= s <= MAX_SEED
                   for s in seeds)):
        raise InputError(f"expected distinct whole numbers in [0, {MAX_SEED}]", field="seeds")
    if len(seeds) > settings.PLANNER_MAX_SEEDS:
        raise InputError(f"{len(seeds)} seeds; the limit is {settings.PLANNER_MAX_SEEDS} "
                         "(PLANNER_MAX_SEEDS)", field="seeds")
    return seeds


def _param_check(*, scenario: Scenario, policies: list[str], param: str, levels: list[int]
                 ) -> None:
    """The sized parameter is an integer parameter of every policy, valid at both ends."""
    for name in policies:
        declared = {p.name: p for p in resolve_policy(name).params}
        if param not in declared or declared[param].type is not int:
            raise InputError(f"{param!r} is not an integer parameter of {name}",
                             field="axis.param")
        for level in levels:
            entry = _policy_entry(scenario, name)
            try:
                split_settings(name, {**entry["params"], param: level})
            except InputError as exc:
                raise InputError(f"{name}: {exc.message}", field="min" if level == levels[0]
                                 else "max") from None


@transaction.atomic
def capacity_search_start(*, scenario: Scenario, targets: list[Any], costs: dict[str, Any],
                          axis: dict[str, Any], policies: list[str] | None = None,
                          seeds: list[int] | None = None, low: int | None = None,
                          high: int | None = None, points_per_round: int = 1,
                          baseline: str = "", name: str = "") -> CapacitySearch:
    """Check the question completely, save it and send its first round, in one transaction.

    The range defaults to the axis' own (servers: from the least that holds the widest job
    to twice the pool; loan: from none to every inference server); a servers range starts no
    lower than where the widest job fits.
    """
    checked_targets = _targets(targets)
    chosen = _policies(scenario, policies)
    if baseline and baseline not in chosen:
        raise InputError(f"{baseline!r} is not one of the searched policies", field="baseline")
    seeds = _seeds(scenario, seeds)
    if not isinstance(costs, dict):
        raise InputError("expected {gpu_hour: {type: price}, server_hour: {...}}", field="costs")
    cost_model = capacity.CostModel.checked(costs.get("gpu_hour") or {},
                                            costs.get("server_hour") or {})
    spec = cluster_to_spec(cluster=scenario.cluster)
    cost_model.check(spec)
    if not isinstance(axis, dict):
        raise InputError("expected {kind, pools, param}", field="axis")
    sized = capacity.Axis(str(axis.get("kind", "")), pools=tuple(axis.get("pools") or ()),
                          param=str(axis.get("param") or ""))
    sized.check(spec)
    if isinstance(points_per_round, bool) or not 1 <= points_per_round <= MAX_POINTS_PER_ROUND:
        raise InputError(f"must be 1 to {MAX_POINTS_PER_ROUND}", field="points_per_round")
    workload = workload_to_simulation(workload=scenario.workload)
    if low is None or high is None:
        if sized.kind == capacity.AXIS_PARAM:
            raise InputError(f"give min and max for {sized.param}", field="min")
        default_low, default_high = sized.default_range(spec, workload)
        low = default_low if low is None else low
        high = default_high if high is None else high
    if sized.kind == capacity.AXIS_SERVERS:
        low = max(low, sized.fitting_level(spec, workload, max(high, 1)))
    sized.check_range(spec, low, high)
    if sized.kind == capacity.AXIS_PARAM:
        _param_check(scenario=scenario, policies=chosen, param=sized.param, levels=[low, high])
    per_round = len(chosen) * points_per_round * len(seeds)
    if per_round > settings.PLANNER_SWEEP_MAX_RUNS:
        raise InputError(f"{per_round} runs a round (policies x points x seeds); the limit is "
                         f"{settings.PLANNER_SWEEP_MAX_RUNS} (PLANNER_SWEEP_MAX_RUNS)",
                         field="points_per_round")
    shared = {**scenario.engine_settings}
    reference = sized.reference(spec, {**shared, **_policy_entry(scenario, chosen[0])["params"]})
    problem = capacity.Problem(
        policies=tuple(chosen), targets=tuple(checked_targets), axis=sized, low=low, high=high,
        seeds=tuple(seeds), points_per_round=points_per_round, baseline=baseline,
        reference_level=reference)
    search = CapacitySearch.objects.create(
        scenario=scenario, name=name.strip(), policies=chosen,
        targets=[{"metric": t.metric, "bound": t.bound} for t in checked_targets],
        costs=cost_model.to_dict(), axis=sized.to_dict(), low=low, high=high, seeds=seeds,
        points_per_round=points_per_round, baseline=problem.baseline_policy,
        reference_level=reference)
    _round_create(search=search, spec=spec, points=capacity.plan(problem, {}))
    return search


def _round_create(*, search: CapacitySearch, spec: ClusterSpec,
                  points: list[capacity.Point]) -> None:
    """The round's points as runs (reused when identical ones succeeded), sent after commit."""
    scenario = search.scenario
    axis = capacity_problem(search=search).axis
    search.rounds += 1
    search.save(update_fields=["rounds", "updated_at"])
    runs = []
    for point in points:
        entry = _policy_entry(scenario, point.policy)
        variant: dict[str, Any] = {}
        if axis.kind == capacity.AXIS_SERVERS:
            servers = axis.pool_servers(spec, point.level)
            if any(spec.pool(name).servers != count for name, count in servers.items()):
                variant = {"pool_servers": servers}  # the cluster as given: no variant, so
                # the scenario's own launched runs are reused
        run = run_create(scenario=scenario, policy=point.policy, seed=point.seed,
                         variant=variant, settings={**scenario.engine_settings,
                                                    **entry["params"],
                                                    **axis.settings(spec, point.level)})
        CapacityPoint.objects.create(search=search, run=run, policy=point.policy,
                                     level=point.level, seed=point.seed, round=search.rounds)
        runs.append(run)
    runs_enqueue(runs=runs)


def _job_rows(run: Run) -> list[dict[str, Any]]:
    jobs, _ = results.result_frames(directory=run.result.directory)
    return [{"job_id": str(job_id), "jct": jct}
            for job_id, jct in zip(jobs["job_id"], jobs["jct"], strict=True)]


def capacity_search_advance(*, search_id: int) -> bool:
    """Measure the ended round and send the next, or store the answer; True when it moved.

    Idempotent and safe to call from any process at any time: the search row is locked, and
    nothing happens while one of its runs has not ended. A run that failed or was cancelled
    stops its policy's search (shown with the run's error); the baseline's reference runs
    failing stop the whole search, since `slowed_share` cannot be measured without them.
    """
    with transaction.atomic():
        search = (CapacitySearch.objects.select_for_update()
                  .filter(pk=search_id, status=CapacityStatus.RUNNING)
                  .select_related("scenario__cluster").first())
        if search is None:
            return False
        points = list(search.points.select_related("run__result"))
        if any(p.run.status not in TERMINAL_STATUSES for p in points):
            return False
        problem = capacity_problem(search=search)
        reference_points = set(problem.reference_points())
        reference_runs = {p.seed: p.run for p in points
                          if capacity.Point(p.policy, p.level, p.seed) in reference_points}
        reference_jobs: dict[int, list[dict[str, Any]]] = {}
        failures = dict(search.failures)
        for point in points:
            if point.run.status == RunStatus.SUCCEEDED:
                continue
            failures.setdefault(point.policy, (
                f"run {point.run_id} ({point.level}, seed {point.seed}) {point.run.status}: "
                f"{point.run.error or 'no error given'}"))
            if point.run in reference_runs.values():
                return _search_finish(search=search, problem=problem, points=points,
                                      failures=failures, error=(
                                          "the baseline's runs on the cluster as given did "
                                          "not succeed: " + failures[point.policy]))
        for point in points:
            if point.measurement is not None or point.run.status != RunStatus.SUCCEEDED:
                continue
            jobs = reference = None
            if problem.needs_reference:  # slowed_share: this run's jobs against the reference
                if point.seed not in reference_jobs:
                    reference_jobs[point.seed] = _job_rows(reference_runs[point.seed])
                jobs, reference = _job_rows(point.run), reference_jobs[point.seed]
            point.measurement = capacity.measure(problem, point.run.result.summary, jobs,
                                                 reference)
            point.save(update_fields=["measurement"])
        search.failures = failures
        measured = _measured(points)
        following = [p for p in capacity.plan(problem, measured) if p.policy not in failures]
        if not following:
            return _search_finish(search=search, problem=problem, points=points,
                                  failures=failures)
        search.result = capacity.answer(problem, measured, cluster=_spec(search),
                                        costs=capacity_costs(search=search), failures=failures,
                                        rounds=search.rounds)
        search.save(update_fields=["failures", "result", "updated_at"])
        _round_create(search=search, spec=_spec(search), points=following)
    return True


def _spec(search: CapacitySearch) -> ClusterSpec:
    return cluster_to_spec(cluster=search.scenario.cluster)


def _measured(points: list[CapacityPoint]) -> dict[capacity.Point, capacity.Measurement]:
    return {capacity.Point(p.policy, p.level, p.seed): p.measurement for p in points
            if p.measurement is not None}


def _search_finish(*, search: CapacitySearch, problem: capacity.Problem,
                   points: list[CapacityPoint], failures: dict[str, str], error: str = ""
                   ) -> bool:
    search.failures = failures
    search.result = capacity.answer(problem, _measured(points), cluster=_spec(search),
                                    costs=capacity_costs(search=search), failures=failures,
                                    rounds=search.rounds)
    search.status = (CapacityStatus.FAILED if error or len(failures) == len(search.policies)
                     else CapacityStatus.SUCCEEDED)
    search.error = error or ("every policy's search stopped on a failed run"
                             if search.status == CapacityStatus.FAILED else "")
    search.finished_at = timezone.now()
    search.save(update_fields=["failures", "result", "status", "error", "finished_at",
                               "updated_at"])
    return True


def capacity_searches_advance_for_run(*, run_id: int) -> list[int]:
    """The `run_ended` receiver's body: advance the running searches this run belongs to."""
    ids = list(CapacitySearch.objects.filter(
        status=CapacityStatus.RUNNING, points__run_id=run_id).values_list("pk", flat=True))
    return [pk for pk in ids if capacity_search_advance(search_id=pk)]


def capacity_searches_advance_stalled() -> list[int]:
    """The periodic maintenance: advance running searches whose runs all ended (the signal
    after their last run was lost: a worker killed between its commit and the signal)."""
    unfinished = Run.objects.filter(capacity_points__search=OuterRef("pk")).exclude(
        status__in=TERMINAL_STATUSES)
    stalled = CapacitySearch.objects.filter(status=CapacityStatus.RUNNING).filter(
        ~Exists(unfinished)).values_list("pk", flat=True)
    return [pk for pk in list(stalled) if capacity_search_advance(search_id=pk)]
