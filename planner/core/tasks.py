"""Housekeeping tasks: liveness probes for health checks and tests."""

from celery import shared_task

from planner.core.services import marker_write


@shared_task(name="core.tasks.ping")
def ping() -> str:
    return "pong"


@shared_task(name="core.tasks.write_marker")
def write_marker(path: str) -> None:
    """Lets a caller without a result backend observe that a worker ran its task."""
    marker_write(path=path)
