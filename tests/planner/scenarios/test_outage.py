"""The broker killed mid-run, and a worker killed mid-run: every run still ends.

Real processes throughout: a private `redis-server` (no persistence, so killing it loses the
queued messages), a run worker, and a maintenance worker with Celery beat embedded, all on
the test database; requests go through the API as a planner would send them.

Rules:
- a run, sweep or re-run created while the broker is down is saved queued, the API answers
  201 saying it is not sent yet (never 500), and the maintenance sends it once the broker
  is back; runs the dead broker held are sent again;
- the workers reconnect by themselves (they are not restarted here);
- a run whose worker was SIGKILLed is failed with the reason by the beat-driven maintenance
  within the stale window plus one maintenance interval, with no other traffic.
"""

from __future__ import annotations

import time

import pytest
from django.utils import timezone

from planner.core.models import Heartbeat
from planner.scenarios.models import Run, RunStatus, Sweep, SweepStatus
from planner.scenarios.services import workload_create_from_generator
from tests.planner.factories import scenario_make, user_with_role
from tests.planner.live.conftest import client_for
from tests.planner.scenarios.outage import (
    app_on,
    celery_start,
    group_kill,
    heartbeats_wait,
)
from tests.planner.scenarios.workers import wait_for

pytestmark = pytest.mark.django_db(transaction=True)

MEDIUM_WORKLOAD = {"num_jobs": 1500, "duration_days": 1.5,
                   "gpu_sizes": [[1, 0.8], [2, 0.1], [4, 0.1]]}
STALE_SECONDS = 3.0
# The outage test reaps nothing: a long limit keeps a run whose heartbeat lapses on a loaded
# machine from being failed as lost (its rerun was, once, with 3 s).
OUTAGE_STALE_SECONDS = 60.0
MAINTENANCE_SECONDS = 1.0


def _processes(*, redis_url: str, tmp_path, tag: str,
               stale_seconds: float = STALE_SECONDS) -> tuple[list, list]:
    env = {"REDIS_URL": redis_url, "PLANNER_MAINTENANCE_SECONDS": str(MAINTENANCE_SECONDS),
           "PLANNER_RUN_DISPATCH_GRACE_SECONDS": "1", "PLANNER_WORKER_HEARTBEAT_SECONDS": "1",
           "PLANNER_RUN_HEARTBEAT_SECONDS": "0.5",
           "PLANNER_RUN_STALE_SECONDS": str(stale_seconds),
           "CELERY_BEAT_SCHEDULE_FILENAME": str(tmp_path / "beat-schedule")}
    logs = [tmp_path / "runs.log", tmp_path / "maintenance.log"]
    names = [f"{tag}-runs@pytest", f"{tag}-maintenance@pytest"]
    processes = [
        celery_start(name=names[0], args=["worker", "--pool", "solo"], env=env, log=logs[0]),
        celery_start(name=names[1], args=["worker", "-B", "--pool", "solo", "-Q", "maintenance"],
                     env=env, log=logs[1]),
    ]
    try:
        heartbeats_wait(names=names, processes=processes, logs=logs)
    except BaseException:
        for process in processes:
            group_kill(process)
        raise
    return processes, logs


def _tails(logs) -> str:
    return "\n".join(f"--- {log.name}\n" + log.read_text(errors="replace")[-3000:]
                     for log in logs)


def test_runs_created_during_a_broker_outage_end_when_it_returns(private_redis, tmp_path):
    planner = client_for(user_with_role("planner", "planner"))
    processes, logs = _processes(redis_url=private_redis.url, tmp_path=tmp_path, tag="outage",
                                 stale_seconds=OUTAGE_STALE_SECONDS)
    try:
        with app_on(private_redis.url):
            small = scenario_make(policies=["fifo", "sjf"], cluster_name="small")
            done = planner.post(f"/api/v1/scenarios/{small.pk}/launch").json()
            wait_for(lambda: Run.objects.filter(pk__in=[r["id"] for r in done],
                                                status=RunStatus.SUCCEEDED).count() == 2,
                     timeout=60, what=f"the first runs:\n{_tails(logs)}")
            medium = scenario_make(policies=["fifo", "sjf", "srtf"], cluster_name="medium")
            medium.workload = workload_create_from_generator(name="medium", spec=MEDIUM_WORKLOAD)
            medium.save()
            launched = planner.post(f"/api/v1/scenarios/{medium.pk}/launch")
            assert launched.status_code == 201
            assert all(run["dispatched_at"] for run in launched.json())
            wait_for(lambda: Run.objects.filter(status=RunStatus.RUNNING).exists(), timeout=60,
                     what=f"a medium run to start:\n{_tails(logs)}")
            cancelled = launched.json()[2]["id"]
            assert planner.post(f"/api/v1/runs/{cancelled}/cancel").status_code == 200

            private_redis.kill()

            sweep = planner.post(f"/api/v1/scenarios/{small.pk}/sweeps",
                                 {"grid": {"load_scale": [1, 2]}}, format="json")
            rerun = planner.post(f"/api/v1/runs/{cancelled}/rerun")
            time.sleep(2)
            private_redis.start()
            # The sweep is aggregated by a task after its last run: wait for that too before
            # the workers go, or the sweep may stay "running" (a race seen once in CI).
            sweep_id = sweep.json().get("id")
            runs = wait_for(
                lambda: (rows := list(Run.objects.all())) and all(r.is_terminal for r in rows)
                and Sweep.objects.filter(pk=sweep_id, status=SweepStatus.DONE).exists()
                and rows, timeout=60,
                what=f"every run to end and the sweep to be aggregated:\n{_tails(logs)}")
    finally:
        alive = [process.poll() is None for process in processes]
        for process in processes:
            group_kill(process)
    assert sweep.status_code == 201, sweep.content
    assert sweep.json()["runs_unsent"] == 4 and "broker is back" in sweep.json()["notice"]
    assert rerun.status_code == 201, rerun.content
    assert rerun.json()["status"] == "queued" and rerun.json()["dispatched_at"] is None
    assert alive == [True, True], _tails(logs)  # they reconnected, nobody restarted them
    assert len(runs) == 2 + 3 + 4 + 1
    assert {run.pk: run.status for run in runs} == {
        run.pk: RunStatus.CANCELLED if run.pk == cancelled else RunStatus.SUCCEEDED
        for run in runs}
    assert Sweep.objects.get(pk=sweep.json()["id"]).status == SweepStatus.DONE


def test_a_killed_workers_run_is_failed_by_the_scheduled_maintenance(private_redis,
                                                                      tmp_path):
    planner = client_for(user_with_role("planner", "planner"))
    processes, logs = _processes(redis_url=private_redis.url, tmp_path=tmp_path, tag="reap")
    runs_worker = processes[0]
    try:
        with app_on(private_redis.url):
            scenario = scenario_make(policies=["fifo"], cluster_name="reap")
            scenario.workload = workload_create_from_generator(name="medium",
                                                               spec=MEDIUM_WORKLOAD)
            scenario.save()
            (run,) = planner.post(f"/api/v1/scenarios/{scenario.pk}/launch").json()
            wait_for(lambda: Run.objects.get(pk=run["id"]).progress >= 0.05, timeout=60,
                     what=f"the run to make progress:\n{_tails(logs)}")

            group_kill(runs_worker)
            killed_at = timezone.now()

            failed = wait_for(lambda: (r := Run.objects.get(pk=run["id"])).is_terminal and r,
                              timeout=30, what=f"the run to be reaped:\n{_tails(logs)}")
    finally:
        for process in processes:
            group_kill(process)
    assert failed.status == RunStatus.FAILED
    assert failed.error.startswith(f"worker lost: no heartbeat for over {STALE_SECONDS:g} s")
    waited = (failed.finished_at - killed_at).total_seconds()
    assert waited <= STALE_SECONDS + 3 * MAINTENANCE_SECONDS + 2, waited
    assert Heartbeat.objects.filter(name="maintenance").exists()
