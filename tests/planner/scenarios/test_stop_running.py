"""A running simulation stops when it is cancelled or its scenario is deleted, through the real
Redis broker and a real worker, even while no job finishes.

The run is long on purpose: eight one-GPU jobs of 358 days time-sliced by Gandiva on one GPU
(60 s quanta, no job finishing for minutes of wall time). A cancel used to be heard only at
the next 1 % of jobs finished, so the worker stayed busy for the whole run; now the engine
calls the progress callback at least every 2 s of wall time and the callback stops the run.
The solo worker runs one task at a time: a tiny run succeeding afterwards proves the long
one gave the worker back (the long one alone would hold it for over ten minutes, longer than
any timeout here). No wall-clock speed is asserted: the timeouts are generous.
"""

from __future__ import annotations

import pytest
from django.test import Client

from planner.clusters.services import cluster_create_from_spec
from planner.scenarios import services
from planner.scenarios.models import Run, RunResult, RunStatus, Scenario
from planner.scenarios.services import run_execution
from tests.planner.factories import scenario_make, upload
from tests.planner.scenarios.workers import wait_for

ONE_GPU = ("name: {name}\npools:\n  - {{name: training, kind: training, gpu_type: V100, "
           "servers: 1, gpus_per_server: 1}}\n")
LONG_JOBS = "job_id,submit_time,num_gpus,duration\n" + "".join(
    f"j{i},{i},1,31000000\n" for i in range(8))


def _long_run(name: str) -> Run:
    scenario = services.scenario_create(
        name=name, cluster=cluster_create_from_spec(spec_text=ONE_GPU.format(name=name)),
        workload=services.workload_create_from_upload(name=name,
                                                      file=upload("long.csv", LONG_JOBS)),
        policies=["gandiva"], seeds=[0])
    (run,) = services.scenario_launch(scenario=scenario)
    return run


def _next_run_succeeds(worker, cluster_name: str) -> None:
    (tiny,) = services.scenario_launch(scenario=scenario_make(policies=["fifo"],
                                                              cluster_name=cluster_name))
    wait_for(lambda: Run.objects.get(pk=tiny.pk).status == RunStatus.SUCCEEDED, timeout=180,
             what=f"the next run on the worker:\n{worker.log_tail()}")


def _running(run_id: int, worker) -> None:
    wait_for(lambda: Run.objects.filter(pk=run_id, status=RunStatus.RUNNING).exists(),
             timeout=120, what=f"the long run to start:\n{worker.log_tail()}")


@pytest.mark.django_db(transaction=True)
def test_cancel_stops_a_run_in_which_no_job_finishes(celery_worker_process, media_root):
    run = _long_run("cancel-me")
    _running(run.pk, celery_worker_process)

    services.run_cancel(run_id=run.pk)

    _next_run_succeeds(celery_worker_process, "after-cancel")
    run.refresh_from_db()
    assert run.status == RunStatus.CANCELLED and run.progress == 0.0
    assert not RunResult.objects.filter(run=run).exists()
    assert not list((media_root / "results").glob(f"run-{run.pk}-*"))


@pytest.mark.django_db(transaction=True)
def test_deleting_the_scenario_in_the_admin_ends_its_running_run_cleanly(
        celery_worker_process, media_root, django_user_model):
    run = _long_run("delete-me")
    _running(run.pk, celery_worker_process)
    log_before = celery_worker_process.log_path.read_text(errors="replace")
    admin = Client()
    admin.force_login(django_user_model.objects.create_user("deleter", is_staff=True,
                                                            is_superuser=True))

    response = admin.post(f"/admin/scenarios/scenario/{run.scenario_id}/delete/",
                          {"post": "yes"})

    assert response.status_code == 302, response.content[:500]
    assert not Scenario.objects.filter(pk=run.scenario_id).exists()
    _next_run_succeeds(celery_worker_process, "after-delete")
    assert not Run.objects.filter(pk=run.pk).exists()
    assert not list((media_root / "results").glob(f"run-{run.pk}-*"))
    log = celery_worker_process.log_path.read_text(errors="replace")[len(log_before):]
    assert "Traceback" not in log and "ERROR" not in log, log[-3000:]


# --- the same rule at the two moments a progress step cannot catch, without a worker -----------

@pytest.fixture
def launched(settings, tmp_path) -> Run:
    settings.MEDIA_ROOT = str(tmp_path)
    (run,) = services.scenario_launch(scenario=scenario_make(policies=["fifo"]))
    return run


def _delete_scenario_then(real):
    def wrapper(*args, **kwargs):
        Scenario.objects.all().delete()  # what the admin's delete does, cascading to the run
        return real(*args, **kwargs)
    return wrapper


@pytest.mark.django_db
def test_a_run_deleted_before_its_inputs_are_read_is_aborted(launched, monkeypatch):
    monkeypatch.setattr(run_execution, "run_inputs",
                        _delete_scenario_then(run_execution.run_inputs))

    assert services.run_execute(run_id=launched.pk) == "aborted"
    assert not Run.objects.filter(pk=launched.pk).exists()


@pytest.mark.django_db
def test_a_run_deleted_as_its_simulation_ends_leaves_no_result(launched, monkeypatch,
                                                                settings):
    from pathlib import Path

    monkeypatch.setattr(run_execution, "run_simulation",
                        _delete_scenario_then(run_execution.run_simulation))

    assert services.run_execute(run_id=launched.pk) == "aborted"
    assert not Run.objects.filter(pk=launched.pk).exists()
    assert not list((Path(settings.MEDIA_ROOT) / "results").glob("run-*"))
