"""Durations, grid points and metric names as people read them on the pages.

Pure functions, no database: pages show these texts, and put the exact value in the cell's
title; downloads keep the raw seconds.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from simulation.metrics import time_unit

# Sweep metric id -> (name, kind); a "time" metric reads in the unit of its largest value.
SWEEP_METRIC_TITLES = {
    "jct_mean": ("Mean JCT", "time"),
    "jct_p95": ("p95 JCT", "time"),
    "queuing_mean": ("Mean queuing delay", "time"),
    "makespan": ("Makespan", "time"),
    "preemptions": ("Preemptions", "count"),
    "gpu_utilization_training": ("Training GPU utilisation", "share"),
    "gpu_utilization_overall": ("Overall GPU utilisation", "share"),
}
# Grid parameters whose unit the name does not say; any other reads as its own name.
PARAMETER_TITLES = {
    "load_scale": "load_scale (× arrival rate)",
    "cluster_scale": "cluster_scale (× servers per pool)",
    "elastic_share": "elastic_share (share of jobs)",
    "restart_overhead": "restart_overhead (s)",
    "cadence": "cadence (s)",
    "sample_interval": "sample_interval (s)",
    "loan_interval": "loan_interval (s)",
    "scale_out_pause": "scale_out_pause (s)",
    "scale_in_pause": "scale_in_pause (s)",
    "migration_pause": "migration_pause (s)",
    "stop_free_prepare": "stop_free_prepare (s)",
    "stop_resume_pause": "stop_resume_pause (s)",
    "loan_headroom": "loan_headroom (servers)",
}


def duration_text(seconds: float) -> str:
    """``4070766.18`` -> ``"1,130.8 h"``: one decimal in the unit `time_unit` picks."""
    unit, scale = time_unit(seconds)
    return f"{seconds / scale:,.1f} {unit}"


def value_text(value: Any) -> str:
    """A grid value: ``2.0`` and ``2`` read ``2``, ``0.5`` stays, text as it is."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return str(value)
    return f"{value:g}"


def grid_point_text(variant: Mapping[str, Any], *, leave_out: str | None = None) -> str:
    """``{"cluster_scale": 0.5, "load_scale": 2}`` -> ``cluster_scale = 0.5 · load_scale = 2``."""
    return " · ".join(f"{key} = {value_text(value)}" for key, value in sorted(variant.items())
                      if key != leave_out)


def grid_text(grid: Mapping[str, Iterable[Any]]) -> str:
    """``{"load_scale": [1, 2]}`` -> ``load_scale ∈ {1, 2}``, axes joined by " · "."""
    return " · ".join(f"{key} ∈ {{{', '.join(value_text(v) for v in values)}}}"
                      for key, values in sorted(grid.items()))


def metric_unit(metric: str, values: Iterable[float]) -> tuple[str, float]:
    """(unit, scale) a sweep metric is shown in: value / scale reads in unit."""
    kind = SWEEP_METRIC_TITLES.get(metric, (metric, "count"))[1]
    if kind == "time":
        return time_unit(max(values, default=0.0))
    return ("%", 0.01) if kind == "share" else ("", 1.0)


def metric_title(metric: str, unit: str) -> str:
    """``Mean JCT (h)``: the metric's name, and its unit when it has one."""
    name = SWEEP_METRIC_TITLES.get(metric, (metric, "count"))[0]
    return f"{name} ({unit})" if unit else name


def parameter_title(parameter: str) -> str:
    return PARAMETER_TITLES.get(parameter, parameter)
