"""The sweep page: one point per succeeded run of a sweep."""

from __future__ import annotations

from typing import Any

from planner.scenarios import selectors as scenario_selectors
from planner.scenarios.models import RunStatus, Sweep
from planner.scenarios.services import SWEEP_METRICS


def sweep_points(*, sweep: Sweep, metric: str) -> list[dict[str, Any]]:
    """One row per succeeded run of the sweep: label, grid point, seed and the metric's value.

    The label is the policy plus the grid's other axes, so each curve varies one parameter.
    """
    path = SWEEP_METRICS[metric]
    rows = []
    runs = scenario_selectors.run_list(sweep_id=sweep.pk, status=RunStatus.SUCCEEDED)
    for run in runs.select_related("result"):
        value: Any = run.result.summary
        for key in path:
            value = value.get(key) if isinstance(value, dict) else None
        if isinstance(value, int | float):
            rows.append({"policy": run.policy, "variant": run.variant, "seed": run.seed,
                         "value": float(value)})
    return rows
