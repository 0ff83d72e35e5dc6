"""The runs page: runs filtered and paged, their times so far and errors as people read them."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from django.db.models import QuerySet

from planner.scenarios import selectors as scenario_selectors
from planner.scenarios.models import Run, RunStatus


def run_filtered(*, scenario_id: int | None = None, status: str | None = None,
                 policy: str | None = None) -> QuerySet[Run]:
    """Runs matching every filter given, newest first (the runs page pages through them)."""
    runs = scenario_selectors.run_list(scenario_id=scenario_id, status=status)
    if policy:
        runs = runs.filter(policy=policy)
    return runs.select_related("scenario", "sweep").order_by("-id")


def run_policies() -> list[str]:
    """Every policy some run used, for the runs page's filter."""
    return sorted(set(Run.objects.values_list("policy", flat=True).distinct()))


def run_eta_seconds(*, progress: float, elapsed_seconds: float) -> float | None:
    """Seconds left at the rate so far: the whole run takes elapsed / progress, so what is
    left is elapsed x (1 - progress) / progress; None before any progress."""
    if progress <= 0:
        return None
    return elapsed_seconds * (1 - progress) / progress


@dataclass(frozen=True, slots=True)
class RunRow:
    """A run on the runs page: its times so far, and its error as a person reads it."""

    run: Run
    elapsed_seconds: float | None
    eta_seconds: float | None
    error_headline: str


def run_rows(*, runs: Sequence[Run], now: datetime) -> list[RunRow]:
    """`runs` with their duration (running: so far) and, while running, the time left."""
    rows = []
    for run in runs:
        end = run.finished_at or (now if run.status == RunStatus.RUNNING else None)
        elapsed = (end - run.started_at).total_seconds() if run.started_at and end else None
        eta = run_eta_seconds(progress=run.progress, elapsed_seconds=elapsed) \
            if run.status == RunStatus.RUNNING and elapsed is not None else None
        rows.append(RunRow(run=run, elapsed_seconds=elapsed, eta_seconds=eta,
                           error_headline=error_headline(run.error) if run.error else ""))
    return rows


def short_error(text: str, *, limit: int = 300) -> str:
    """One line of a run's error for a table cell: a traceback's last line, else the first."""
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    if not lines:
        return "no error message recorded"
    line = lines[-1] if lines[0].startswith("Traceback (most recent call last)") else lines[0]
    return line if len(line) <= limit else line[:limit - 1] + "…"


_INPUT_ERROR = re.compile(r"^(?:[\w.]+\.)?InputError: ")


def error_headline(text: str) -> str:
    """`short_error` for a person: an input error without its class name, since its message
    already names the file, line and field."""
    return _INPUT_ERROR.sub("", short_error(text))
