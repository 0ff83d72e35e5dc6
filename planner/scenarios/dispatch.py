"""Getting queued runs to the workers, whatever the broker did meanwhile.

A run is committed first and sent to the broker after (a transactional outbox): the web
request that created it sends it at once when the broker answers, and records `dispatched_at`.
When the broker is down the run stays queued with `dispatched_at` empty, the request still
succeeds, and the periodic maintenance (Celery beat, every PLANNER_MAINTENANCE_SECONDS) sends
it once the broker is back. A Redis restart loses the messages it held unless it persists
them, so queued runs sent before the broker's current start are sent again too.

Every send carries a fresh task id stored on the run, and a worker executes a message only
while its id is the run's (`run_execute(task_id=...)`): a message that survived next to its
re-send is skipped, so sending again is always safe. Re-deliveries after a lost worker keep
their id and take the run over as before.

Tasks are sent by name (`send_task`), so this module imports neither the tasks nor the
services: services enqueue through it, tasks call services, and nothing imports back.
"""

from __future__ import annotations

import logging
import uuid
from datetime import datetime, timedelta

from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from planner.celery import app
from planner.scenarios.models import Run, RunStatus

logger = logging.getLogger(__name__)

# One quick retry: a web request must not hang on a broker that is down; the maintenance
# task sends what this could not.
PUBLISH_RETRY_POLICY = {"max_retries": 1, "interval_start": 0.2, "interval_step": 0.2,
                        "interval_max": 0.2}
PENDING_BATCH = 1000
RUN_EXECUTE_TASK = "scenarios.run_execute"  # planner.scenarios.tasks
SWEEP_AGGREGATE_TASK = "scenarios.sweep_aggregate"


def runs_dispatch(*, runs: list[Run]) -> int:
    """Send `runs` (queued, committed) to the workers; mark each one sent. Never raises.

    Stops at the first run the broker refuses: the rest stay pending for the maintenance.
    """
    sent: list[Run] = []
    try:
        with app.producer_or_acquire() as producer:
            for run in runs:
                app.send_task(RUN_EXECUTE_TASK, args=[run.pk], task_id=run.task_id,
                              producer=producer, retry=True, retry_policy=PUBLISH_RETRY_POLICY)
                sent.append(run)
    except Exception as error:  # any broker failure (kombu, redis, socket) leaves runs pending
        logger.warning("broker unreachable; %d run(s) stay queued until it is back: %s",
                       len(runs) - len(sent), error)
    finally:
        if sent:
            now = timezone.now()
            for run in sent:
                Run.objects.filter(pk=run.pk, task_id=run.task_id).update(dispatched_at=now)
                run.dispatched_at = now
    return len(sent)


def runs_dispatch_pending(*, grace_seconds: float, broker_started_at: datetime | None
                          ) -> list[int]:
    """Send the queued runs the broker does not hold; returns their ids.

    Those are runs never sent (created while the broker was down, or whose web process died
    before sending) at least `grace_seconds` old, and runs sent before `broker_started_at`
    (the broker restarted since and may have lost them). Each gets a new task id first.
    """
    now = timezone.now()
    pending = Q(dispatched_at__isnull=True, created_at__lt=now - timedelta(seconds=grace_seconds))
    if broker_started_at is not None:
        pending |= Q(dispatched_at__lt=broker_started_at)
    candidates = list(Run.objects.filter(pending, status=RunStatus.QUEUED)
                      .order_by("id").values_list("pk", "task_id")[:PENDING_BATCH])
    runs = []
    for pk, task_id in candidates:
        new_id = str(uuid.uuid4())
        if Run.objects.filter(pk=pk, status=RunStatus.QUEUED, task_id=task_id).update(
                task_id=new_id, dispatched_at=None):
            runs.append(Run(pk=pk, task_id=new_id))
    sent = runs_dispatch(runs=runs)
    if runs:
        logger.info("sent %d of %d pending run(s) to the workers", sent, len(runs))
    return [run.pk for run in runs[:sent]]


def sweep_aggregate_send(*, sweep_id: int) -> None:
    """Send the sweep's aggregation once the current transaction commits."""
    transaction.on_commit(lambda: app.send_task(SWEEP_AGGREGATE_TASK, args=[sweep_id]))
