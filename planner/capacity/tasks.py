"""Celery task of capacity searches: the periodic catch-up, calling one service."""

from celery import shared_task

from planner.capacity import services


@shared_task(name="capacity.maintenance")
def capacity_maintenance_task() -> list[int]:
    return services.capacity_searches_advance_stalled()
