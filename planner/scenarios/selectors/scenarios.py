"""Scenarios with their inputs and run counts, and the policies a scenario can run."""

from __future__ import annotations

from typing import Any

from django.db.models import Count, Q, QuerySet

from planner.scenarios.models import RunStatus, Scenario
from simulation.policies import registry


def policy_catalog() -> list[dict[str, Any]]:
    """Every registered policy with its description and declared parameters (for forms)."""
    return [
        {"name": name, "description": cls.description,
         "params": [{"name": p.name, "type": p.type.__name__, "default": p.default,
                     "help": p.help, "choices": list(p.choices) if p.choices else None}
                    for p in cls.params]}
        for name, cls in registry().items()
    ]


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
