"""The home page's recent studies: scenarios, sweeps and reproductions."""

from __future__ import annotations

from django.db.models import Count, Q

from planner.reproductions.models import Reproduction
from planner.scenarios import selectors as scenario_selectors
from planner.scenarios.models import RunStatus, Scenario, Sweep

RECENT_STUDIES = 5


def scenario_recent(*, limit: int = RECENT_STUDIES) -> list[Scenario]:
    """The newest scenarios with their runs counted per status (`runs_<status>`)."""
    counts = {f"runs_{status}": Count("runs", filter=Q(runs__status=status))
              for status in (RunStatus.QUEUED, RunStatus.RUNNING, RunStatus.FAILED,
                             RunStatus.CANCELLED)}
    return list(scenario_selectors.scenario_list().annotate(**counts)[:limit])


def sweep_recent(*, limit: int = RECENT_STUDIES) -> list[Sweep]:
    """The newest sweeps with their runs counted (`run_count`, `runs_succeeded`)."""
    return list(scenario_selectors.sweep_list().annotate(
        runs_succeeded=Count("runs", filter=Q(runs__status=RunStatus.SUCCEEDED)))[:limit])


def reproduction_recent(*, limit: int = RECENT_STUDIES) -> list[Reproduction]:
    """The newest paper reproductions, without their (large) reports and logs."""
    return list(Reproduction.objects.defer("report", "progress_log")[:limit])
