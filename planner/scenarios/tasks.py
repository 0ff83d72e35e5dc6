"""Celery tasks of what-if runs: each takes an id and calls one service.

Tasks are acknowledged late and rejected (re-queued) when their worker process dies, so the
services they call are idempotent. A run executes only for the message whose task id the run
holds (see `dispatch`). A worker that starts fails the runs whose heartbeat went stale while
no worker was alive to re-deliver them; the periodic maintenance (Celery beat) does the same
every PLANNER_MAINTENANCE_SECONDS, and sends runs the broker never got.
"""

from celery import shared_task
from celery.signals import worker_ready
from django.conf import settings

from planner.scenarios import maintenance, services


@shared_task(name="scenarios.run_execute", bind=True)
def run_execute_task(self, run_id: int) -> str:
    return services.run_execute(run_id=run_id, task_id=self.request.id)


@shared_task(name="scenarios.sweep_aggregate")
def sweep_aggregate_task(sweep_id: int) -> None:
    services.sweep_aggregate(sweep_id=sweep_id)


@shared_task(name="scenarios.maintenance")
def maintenance_task() -> dict[str, list[int]]:
    return maintenance.maintenance_run()


@worker_ready.connect
def _reap_stale_runs_on_start(**kwargs) -> None:
    services.run_reap_stale(timeout_seconds=settings.PLANNER_RUN_STALE_SECONDS)
