"""Runs, their results as frames, and a result's downloads (CSV per table, JSON whole)."""

from __future__ import annotations

import io
import json
import math
from typing import Any

import pandas as pd
from django.db.models import QuerySet

from planner.scenarios import results
from planner.scenarios.models import Run

EXPORT_TABLES = ("summary", "jobs", "timeseries")


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
