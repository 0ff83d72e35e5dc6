"""Sweeps: a grid over a scenario as runs, and their aggregate (mean and 95 % interval
across seeds) once the last one ends."""

from __future__ import annotations

import dataclasses
import itertools
import json
import logging
import math
from collections import defaultdict
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from planner.clusters.services import cluster_to_spec
from planner.scenarios.dispatch import sweep_aggregate_send
from planner.scenarios.inputs import (
    VARIANT_AXES,
    cluster_scale,
    sha256_json,
)
from planner.scenarios.models import (
    TERMINAL_STATUSES,
    Run,
    RunStatus,
    Scenario,
    Sweep,
    SweepStatus,
)
from planner.scenarios.services.runs import run_create, runs_enqueue
from planner.scenarios.services.scenarios import policy_settings_check
from simulation.composition import resolve_policy
from simulation.engine import EngineConfig
from simulation.errors import InputError
from simulation.limits import check_text, printable
from simulation.metrics import mean_ci95

logger = logging.getLogger(__name__)



SWEEP_METRICS = {
    "jct_mean": ("jct", "mean"),
    "jct_p95": ("jct", "p95"),
    "queuing_mean": ("queuing", "mean"),
    "makespan": ("makespan",),
    "preemptions": ("preemptions",),
    "gpu_utilization_training": ("gpu_utilization", "training"),
    "gpu_utilization_overall": ("gpu_utilization", "overall"),
}




# Bounds of the input axes: a cluster at most 100x its size (and each pool still within
# MAX_SERVERS_PER_POOL, checked when the run builds it), arrivals at most 1000x faster or
# slower.
_AXIS_BOUNDS = {"cluster_scale": (0.0, 100.0), "load_scale": (0.001, 1000.0),
                "elastic_share": (0.0, 1.0)}


def _grid_points(grid: Any, *, max_points: int) -> list[dict[str, Any]]:
    """Every combination of the grid's values; refused before it is built when there would
    be more than `max_points` (10 keys of 100 values are 10^20 combinations)."""
    if not isinstance(grid, dict) or not grid:
        raise InputError("expected an object of parameter -> list of values", field="grid")
    for key, values in grid.items():
        where = f"grid.{printable(key)}"
        if not isinstance(values, list) or not values:
            raise InputError("expected a non-empty list of values", field=where)
        for value in values:
            if value is not None and not isinstance(value, str | int | float):
                raise InputError(f"expected numbers, text, true/false or null, got a "
                                 f"{type(value).__name__}", field=where)
            if isinstance(value, str):
                check_text(value, field=where, max_chars=200)
        if key in VARIANT_AXES:
            low, high = _AXIS_BOUNDS[key]
            for value in values:
                number_ok = isinstance(value, int | float) and not isinstance(value, bool)
                if not number_ok or not (low <= value <= high) or (
                        key != "elastic_share" and value == 0):
                    bound = (f"in [{low:g}, {high:g}]" if key == "elastic_share"
                             else f"a positive number up to {high:g}")
                    raise InputError(f"expected {bound}, got {value!r}", field=where)
    keys = sorted(grid)
    if math.prod(len(grid[k]) for k in keys) > max_points:
        raise InputError(f"{math.prod(len(grid[k]) for k in keys):,} grid points; a sweep is "
                         f"limited to {max_points:,} runs (PLANNER_SWEEP_MAX_RUNS)",
                         field="grid")
    return [dict(zip(keys, combo, strict=True))
            for combo in itertools.product(*(grid[k] for k in keys))]


def _variant_settings(*, point: dict[str, Any], policy: str) -> dict[str, Any]:
    """The grid point's engine settings, and the policy parameters this policy declares."""
    declared = {p.name for p in resolve_policy(policy).params}
    engine = {f.name for f in dataclasses.fields(EngineConfig)}
    return {k: v for k, v in point.items()
            if k not in VARIANT_AXES and (k in declared or k in engine)}


@transaction.atomic
def sweep_create(*, scenario: Scenario, grid: dict[str, list[Any]], name: str = "") -> Sweep:
    """Every grid point x policy x seed as a run; enqueued together as one Celery group."""
    points = _grid_points(grid, max_points=settings.PLANNER_SWEEP_MAX_RUNS)
    engine_fields = {f.name for f in dataclasses.fields(EngineConfig)}
    declared = {p.name for e in scenario.policies for p in resolve_policy(e["policy"]).params}
    for key in grid:
        if key not in VARIANT_AXES and key not in engine_fields and key not in declared:
            raise InputError("not an engine setting, a parameter of the scenario's policies, "
                             f"or one of {', '.join(VARIANT_AXES)}",
                             field=f"grid.{printable(key)}")
    if "cluster_scale" in grid:
        spec = cluster_to_spec(cluster=scenario.cluster)
        for factor in grid["cluster_scale"]:
            cluster_scale(cluster=spec, factor=float(factor))  # refuses one over the limits
    total = len(points) * len(scenario.policies) * len(scenario.seeds)
    if total > settings.PLANNER_SWEEP_MAX_RUNS:
        raise InputError(f"{total} runs exceed the limit of {settings.PLANNER_SWEEP_MAX_RUNS} "
                         "(PLANNER_SWEEP_MAX_RUNS)", field="grid")
    sweep = Sweep.objects.create(scenario=scenario, grid=grid, name=name)
    runs = []
    for point in points:
        variant = {k: point[k] for k in sorted(point)}
        for i, entry in enumerate(scenario.policies):
            run_settings = {**scenario.engine_settings, **entry["params"],
                            **_variant_settings(point=point, policy=entry["policy"])}
            policy_settings_check(policy=entry["policy"], settings=run_settings,
                            where=f"policies[{i}]")
            runs += [run_create(scenario=scenario, policy=entry["policy"],
                                 settings=run_settings, seed=seed, variant=variant, sweep=sweep)
                     for seed in scenario.seeds]
    runs_enqueue(runs=runs)
    return sweep


def sweep_finish_if_done(*, sweep_id: int) -> bool:
    """Enqueue the aggregation once every run of the sweep has ended (idempotent)."""
    with transaction.atomic():
        sweep = Sweep.objects.select_for_update().filter(pk=sweep_id).first()
        if sweep is None or sweep.status == SweepStatus.DONE:
            return False
        if sweep.runs.exclude(status__in=TERMINAL_STATUSES).exists():
            return False
        sweep_aggregate_send(sweep_id=sweep_id)
    return True


def _metric(summary: dict[str, Any], path: tuple[str, ...]) -> float | None:
    value: Any = summary
    for key in path:
        if not isinstance(value, dict) or key not in value:
            return None
        value = value[key]
    return float(value) if isinstance(value, int | float) else None


def sweep_aggregate(*, sweep_id: int) -> Sweep:
    """Mean and 95% CI across seeds, per grid point and policy; the latest run per cell wins."""
    with transaction.atomic():
        sweep = Sweep.objects.select_for_update().get(pk=sweep_id)
        latest: dict[tuple[str, str, int], Run] = {}
        for run in sweep.runs.select_related("result").order_by("id"):
            latest[(sha256_json(run.variant), run.policy, run.seed)] = run
        cells: dict[tuple[str, str], list[Run]] = defaultdict(list)
        for (variant_key, policy, _), run in latest.items():
            cells[(variant_key, policy)].append(run)
        rows = []
        for (_, policy), runs in cells.items():
            done = [run for run in runs if run.status == RunStatus.SUCCEEDED]
            metrics = {name: mean_ci95([v for run in done
                                        if (v := _metric(run.result.summary, path)) is not None])
                       for name, path in SWEEP_METRICS.items()}
            rows.append({"variant": runs[0].variant, "policy": policy, "runs": len(runs),
                         "succeeded": len(done),
                         "failed": sum(run.status == RunStatus.FAILED for run in runs),
                         "cancelled": sum(run.status == RunStatus.CANCELLED for run in runs),
                         "metrics": metrics})
        rows.sort(key=lambda row: (json.dumps(row["variant"], sort_keys=True), row["policy"]))
        sweep.aggregate, sweep.status, sweep.finished_at = rows, SweepStatus.DONE, timezone.now()
        sweep.save(update_fields=["aggregate", "status", "finished_at"])
    return sweep
