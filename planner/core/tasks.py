"""Housekeeping tasks (liveness probes for tests) and the worker's heartbeat.

Every worker writes a heartbeat row from the moment it is ready until it stops; the health
check reads those rows instead of broadcasting a ping to the workers.
"""

from celery import shared_task
from celery.signals import worker_ready, worker_shutdown
from django.conf import settings

from planner.core.services import WorkerHeartbeat, marker_write

_heartbeat: WorkerHeartbeat | None = None


@shared_task(name="core.tasks.ping")
def ping() -> str:
    return "pong"


@shared_task(name="core.tasks.write_marker")
def write_marker(path: str) -> None:
    """Lets a caller without a result backend observe that a worker ran its task."""
    marker_write(path=path)


@worker_ready.connect
def _heartbeat_start(sender, **kwargs) -> None:
    global _heartbeat
    queues = list(sender.app.amqp.queues.consume_from)
    _heartbeat = WorkerHeartbeat(name=sender.hostname, queues=queues,
                                 interval=settings.PLANNER_WORKER_HEARTBEAT_SECONDS)
    _heartbeat.start()


@worker_shutdown.connect
def _heartbeat_stop(**kwargs) -> None:
    if _heartbeat is not None:
        _heartbeat.stop()
