"""Reads for pages and the API: the one place the dashboard gets scenario and run data from."""

from __future__ import annotations

import io
import json
import math
from typing import Any

import pandas as pd
from django.db.models import Count, Q, QuerySet

from planner.scenarios import results
from planner.scenarios.models import (
    InferenceLoadProfile,
    Run,
    RunStatus,
    Scenario,
    Sweep,
    Workload,
)
from simulation.policies import registry

EXPORT_TABLES = ("summary", "jobs", "timeseries")


def policy_catalog() -> list[dict[str, Any]]:
    """Every registered policy with its description and declared parameters (for forms)."""
    return [
        {"name": name, "description": cls.description,
         "params": [{"name": p.name, "type": p.type.__name__, "default": p.default,
                     "help": p.help, "choices": list(p.choices) if p.choices else None}
                    for p in cls.params]}
        for name, cls in registry().items()
    ]


def workload_list() -> QuerySet[Workload]:
    return Workload.objects.all()


def inference_load_list() -> QuerySet[InferenceLoadProfile]:
    return InferenceLoadProfile.objects.all()


def scenario_list() -> QuerySet[Scenario]:
    """Scenarios with run counts by status, newest first."""
    return Scenario.objects.select_related("cluster", "workload", "inference_load").annotate(
        run_count=Count("runs"),
        runs_succeeded=Count("runs", filter=Q(runs__status=RunStatus.SUCCEEDED)),
        runs_active=Count("runs", filter=Q(runs__status__in=[RunStatus.QUEUED,
                                                             RunStatus.RUNNING])),
    )


def scenario_get(*, scenario_id: int) -> Scenario:
    return Scenario.objects.select_related("cluster", "workload", "inference_load").get(
        pk=scenario_id)


def run_list(*, scenario_id: int | None = None, sweep_id: int | None = None,
             status: str | None = None) -> QuerySet[Run]:
    runs = Run.objects.select_related("result", "scenario")
    if scenario_id is not None:
        runs = runs.filter(scenario_id=scenario_id)
    if sweep_id is not None:
        runs = runs.filter(sweep_id=sweep_id)
    if status:
        runs = runs.filter(status=status)
    return runs.order_by("id")


def run_get(*, run_id: int) -> Run:
    return Run.objects.select_related("result", "scenario", "sweep").get(pk=run_id)


def run_result_frames(*, run: Run) -> tuple[dict[str, Any], pd.DataFrame, pd.DataFrame]:
    """(summary, per-job DataFrame, time-series DataFrame) of a succeeded run.

    Raises `Run.result.RelatedObjectDoesNotExist` (a `RunResult.DoesNotExist`) without one.
    """
    result = run.result
    jobs, timeseries = results.result_frames(directory=result.directory)
    return result.summary, jobs, timeseries


def sweep_list(*, scenario_id: int | None = None) -> QuerySet[Sweep]:
    sweeps = Sweep.objects.select_related("scenario").annotate(run_count=Count("runs"))
    if scenario_id is not None:
        sweeps = sweeps.filter(scenario_id=scenario_id)
    return sweeps


def sweep_get(*, sweep_id: int) -> Sweep:
    return Sweep.objects.select_related("scenario").get(pk=sweep_id)


def sweep_aggregate(*, sweep: Sweep) -> list[dict[str, Any]]:
    """Per grid point and policy: runs, successes and mean / 95% CI of each metric.

    Empty until every run of the sweep has ended and the aggregation task ran.
    """
    return sweep.aggregate


def sweep_progress(*, sweep: Sweep) -> dict[str, int]:
    """How many runs of the sweep are in each status."""
    counts = dict(sweep.runs.values_list("status").annotate(n=Count("id")))
    return {status: counts.get(status, 0) for status in RunStatus.values}


def _flatten(summary: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    flat: dict[str, Any] = {}
    for key, value in summary.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            flat.update(_flatten(value, f"{name}."))
        else:
            flat[name] = json.dumps(value) if isinstance(value, list) else value
    return flat


def run_export_csv(*, run: Run, table: str) -> str:
    """One table of a result as CSV: `summary` (flattened, one row), `jobs` or `timeseries`."""
    summary, jobs, timeseries = run_result_frames(run=run)
    frame = {"summary": pd.DataFrame([_flatten(summary)]), "jobs": jobs,
             "timeseries": timeseries}[table]
    buffer = io.StringIO()
    frame.to_csv(buffer, index=False)
    return buffer.getvalue()


def _records(frame: pd.DataFrame) -> list[dict[str, Any]]:
    rows = frame.astype(object).where(frame.notna(), None).to_dict(orient="records")
    return [{k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in row.items()}
            for row in rows]


def run_export_json(*, run: Run) -> dict[str, Any]:
    """The whole result: run identity, summary, per-job rows and time-series rows."""
    summary, jobs, timeseries = run_result_frames(run=run)
    return {"run": run.pk, "scenario": run.scenario_id, "policy": run.policy, "seed": run.seed,
            "variant": run.variant, "summary": summary, "jobs": _records(jobs),
            "timeseries": _records(timeseries)}
