"""SIGKILL of the worker in the middle of a run: the run completes, or fails with a reason.

Two mechanisms, one test each, on a private queue served by a worker started here:

- prefork pool, pool child killed: the worker's main process sees the child die and, with
  acks_late and reject_on_worker_lost, puts the task back on the queue; the next attempt
  takes the run over (attempts 2) and completes it.
- whole worker killed (nothing left to re-queue; Redis would redeliver the unacked task only
  after the visibility timeout): the run's heartbeat goes stale, and the next worker to start
  fails it with the reason from its worker_ready hook.
"""

import os
import signal
import uuid

import pytest
from django.utils import timezone

from planner.scenarios import services
from planner.scenarios.models import Run, RunStatus
from planner.scenarios.services import workload_create_from_generator
from planner.scenarios.tasks import run_execute_task
from tests.planner.factories import scenario_make
from tests.planner.scenarios.test_worker import LONG_WORKLOAD
from tests.planner.scenarios.workers import (
    wait_for,
    worker_children,
    worker_kill,
    worker_start,
)

pytestmark = pytest.mark.django_db(transaction=True)

STALE_SECONDS = 3.0
FAST_HEARTBEAT = {"PLANNER_RUN_HEARTBEAT_SECONDS": "0.5",
                  "PLANNER_RUN_STALE_SECONDS": str(STALE_SECONDS)}


@pytest.fixture
def long_run(celery_worker_process) -> Run:
    """A run of a few seconds, created but sent to no queue yet."""
    scenario = scenario_make(policies=["fifo"])
    scenario.workload = workload_create_from_generator(name="long", spec=LONG_WORKLOAD)
    scenario.save()
    return services.run_create(scenario=scenario, policy="fifo", settings={}, seed=0,
                               variant={})


def _send_and_wait_running(run: Run, queue: str) -> None:
    run_execute_task.apply_async(args=[run.pk], queue=queue, task_id=run.task_id)
    wait_for(lambda: Run.objects.get(pk=run.pk).progress >= 0.05, timeout=120,
             what="the run to make progress")


def test_killed_pool_child_is_redelivered_and_the_run_completes(long_run, tmp_path):
    queue = f"kill-child-{uuid.uuid4().hex[:6]}"
    worker = worker_start(queue=queue, pool="prefork", log_path=tmp_path / "worker.log",
                          env=FAST_HEARTBEAT)
    try:
        _send_and_wait_running(long_run, queue)
        (child,) = worker_children(process=worker)

        os.kill(child, signal.SIGKILL)

        run = wait_for(lambda: (r := Run.objects.get(pk=long_run.pk)).is_terminal and r,
                       timeout=180, what="the re-delivered run to end")
    finally:
        worker_kill(process=worker)
    assert run.status == RunStatus.SUCCEEDED, run.error
    assert run.attempts == 2
    assert run.result.summary["jobs"] == LONG_WORKLOAD["num_jobs"]


def test_killed_worker_leaves_a_run_that_the_next_worker_fails_with_the_reason(long_run,
                                                                                tmp_path):
    queue = f"kill-worker-{uuid.uuid4().hex[:6]}"
    log = tmp_path / "worker.log"
    worker = worker_start(queue=queue, pool="solo", log_path=log, env=FAST_HEARTBEAT)
    try:
        _send_and_wait_running(long_run, queue)
    finally:
        worker_kill(process=worker)
    assert Run.objects.get(pk=long_run.pk).status == RunStatus.RUNNING
    wait_for(lambda: (timezone.now() - Run.objects.get(pk=long_run.pk).heartbeat_at
                      ).total_seconds() > STALE_SECONDS + 0.5, timeout=30,
             what="the heartbeat to go stale")

    restarted = worker_start(queue=queue, pool="solo", log_path=log, env=FAST_HEARTBEAT)
    try:
        run = wait_for(lambda: (r := Run.objects.get(pk=long_run.pk)).is_terminal and r,
                       timeout=60, what="the restarted worker to reap the run")
    finally:
        worker_kill(process=restarted)
    assert run.status == RunStatus.FAILED
    assert "worker lost: no heartbeat" in run.error
    assert run.finished_at is not None
