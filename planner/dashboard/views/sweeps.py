"""Sweeps: the list, and a metric against a grid parameter with its 95 % band."""

from __future__ import annotations

from typing import Any

from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render

from planner.core.roles import READ, role_required
from planner.dashboard import figures, readable, selectors
from planner.dashboard.views.common import chart_payloads
from planner.scenarios import selectors as scenario_selectors
from planner.scenarios.models import Sweep
from planner.scenarios.services import (
    SWEEP_METRICS,
)


@role_required(READ)
def sweep_list(request: HttpRequest) -> HttpResponse:
    """Every sweep, newest first, with its grid and how far its runs are."""
    sweeps = selectors.sweep_recent(limit=200)
    return render(request, "dashboard/sweep_list.html", {
        "sweeps": [{"sweep": sweep, "grid": readable.grid_text(sweep.grid)} for sweep in sweeps],
        "nav": "sweeps"})


@role_required(READ)
def sweep_detail(request: HttpRequest, sweep_id: int) -> HttpResponse:
    """Metric against one grid parameter with a 95 % band across seeds, per policy.

    Durations read in the unit of the largest value shown (h, min or s, named in every
    title), shares in %; every table cell's title holds the exact value in seconds.
    """
    try:
        sweep = scenario_selectors.sweep_get(sweep_id=sweep_id)
    except Sweep.DoesNotExist:
        raise Http404(f"There is no sweep {sweep_id}.") from None
    notices: list[str] = []
    metric = request.GET.get("metric") or "jct_mean"
    if metric not in SWEEP_METRICS:
        notices.append(f"Unknown metric {metric!r}; showing "
                       f"{readable.SWEEP_METRIC_TITLES['jct_mean'][0]}.")
        metric = "jct_mean"
    axes = sorted(sweep.grid)
    parameter = request.GET.get("parameter") or (axes[0] if axes else "")
    if axes and parameter not in axes:
        notices.append(f"The sweep has no parameter {parameter!r}; showing {axes[0]}.")
        parameter = axes[0]
    raw_points = selectors.sweep_points(sweep=sweep, metric=metric)
    aggregate = scenario_selectors.sweep_aggregate(sweep=sweep)
    means = [row["metrics"].get(metric, {}).get("mean") for row in aggregate]
    unit, scale = readable.metric_unit(
        metric, [p["value"] for p in raw_points] + [m for m in means if m is not None])
    title = readable.metric_title(metric, unit)
    points = [
        {"label": " · ".join(filter(None, [p["policy"], readable.grid_point_text(
            p["variant"], leave_out=parameter)])),
         "policy": p["policy"], "value": p["variant"].get(parameter), "seed": p["seed"],
         metric: p["value"] / scale}
        for p in raw_points
    ]
    chart = figures.Chart(
        "sweep", f"{title} against {parameter}",
        "Mean over seeds per grid point; the band is the 95 % confidence interval (Student t).",
        figures.sweep_figure(points, parameter=parameter, metric=metric, metric_title=title,
                             parameter_title=readable.parameter_title(parameter), unit=unit,
                             colors=figures.policy_colors(
                                 entry["policy"] for entry in sweep.scenario.policies)))
    progress = scenario_selectors.sweep_progress(sweep=sweep)
    return render(request, "dashboard/sweep.html", {
        "sweep": sweep, "metric": metric, "metric_title": title, "unit": unit,
        "exact_in_seconds": readable.SWEEP_METRIC_TITLES[metric][1] == "time",
        "metrics": [(key, readable.SWEEP_METRIC_TITLES[key][0]) for key in SWEEP_METRICS],
        "parameter": parameter, "axes": axes, "grid": readable.grid_text(sweep.grid),
        "charts": chart_payloads([chart]) if points else [],
        "progress": ", ".join(f"{n} {status}" for status, n in progress.items() if n),
        "aggregate": [_aggregate_row(row, metric=metric, unit=unit, scale=scale)
                      for row in aggregate],
        "notices": notices, "filename_prefix": f"sweep-{sweep.pk}", "nav": "sweeps",
    })


def _aggregate_row(row: dict[str, Any], *, metric: str, unit: str,
                   scale: float) -> dict[str, Any]:
    """A row of the sweep's aggregate table: readable grid point, mean and CI half-width in
    the page's unit, the exact values for the cells' titles."""
    stats = row["metrics"].get(metric) or {}
    raw_unit = "s" if readable.SWEEP_METRIC_TITLES[metric][1] == "time" else ""

    def cell(value: float | None) -> dict[str, str]:
        if value is None:
            return {"text": "—", "exact": ""}
        return {"text": f"{value / scale:,.1f}" if unit else f"{value:,.2f}",
                "exact": f"{value} {raw_unit}".strip()}

    return {"point": readable.grid_point_text(row["variant"]) or "—", "policy": row["policy"],
            "runs": row["runs"], "succeeded": row["succeeded"],
            "mean": cell(stats.get("mean")), "ci95": cell(stats.get("ci95"))}
