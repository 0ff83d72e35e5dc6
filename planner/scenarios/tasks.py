"""Celery tasks of what-if runs: each takes an id and calls one service.

Tasks are acknowledged late and rejected (re-queued) when their worker process dies, so the
services they call are idempotent. A worker that starts fails the runs whose heartbeat went
stale while no worker was alive to re-deliver them.
"""

from celery import shared_task
from celery.signals import worker_ready
from django.conf import settings

from planner.scenarios import services


@shared_task(name="scenarios.run_execute")
def run_execute_task(run_id: int) -> str:
    return services.run_execute(run_id=run_id)


@shared_task(name="scenarios.sweep_aggregate")
def sweep_aggregate_task(sweep_id: int) -> None:
    services.sweep_aggregate(sweep_id=sweep_id)


@worker_ready.connect
def _reap_stale_runs_on_start(**kwargs) -> None:
    services.run_reap_stale(timeout_seconds=settings.PLANNER_RUN_STALE_SECONDS)
