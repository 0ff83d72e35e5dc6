"""Reads of capacity searches for the pages and the API."""

from __future__ import annotations

from typing import Any

from django.db.models import Count, Q, QuerySet

from planner.capacity.models import CapacitySearch
from planner.scenarios.models import TERMINAL_STATUSES, RunStatus


def capacity_search_list(*, scenario_id: int | None = None) -> QuerySet[CapacitySearch]:
    searches = CapacitySearch.objects.select_related("scenario").defer("result")
    return searches if scenario_id is None else searches.filter(scenario_id=scenario_id)


def capacity_search_get(*, search_id: int) -> CapacitySearch:
    return CapacitySearch.objects.select_related("scenario").get(pk=search_id)


def capacity_search_progress(*, search: CapacitySearch) -> dict[str, Any]:
    """Rounds so far and the runs they created: ended, running, queued, reused."""
    counts = search.points.aggregate(
        runs=Count("pk"), ended=Count("pk", filter=Q(run__status__in=TERMINAL_STATUSES)),
        running=Count("pk", filter=Q(run__status=RunStatus.RUNNING)),
        reused=Count("pk", filter=Q(run__reused_from__isnull=False)))
    return {"rounds": search.rounds, **counts}
