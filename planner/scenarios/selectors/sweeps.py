"""Sweeps with their run counts, progress and aggregate."""

from __future__ import annotations

from typing import Any

from django.db.models import Count, QuerySet

from planner.scenarios.models import RunStatus, Sweep


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
