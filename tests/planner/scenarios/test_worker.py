"""Sweeps and cancellation through the real Redis broker and a real worker process."""

import pytest

from planner.scenarios import selectors, services
from planner.scenarios.models import Run, RunResult, RunStatus, Sweep, SweepStatus
from tests.planner.factories import scenario_make
from tests.planner.scenarios.workers import wait_for

pytestmark = pytest.mark.django_db(transaction=True)

LONG_WORKLOAD = {"num_jobs": 1500, "duration_days": 1.5,
                 "gpu_sizes": [[1, 0.8], [2, 0.1], [4, 0.1]]}


def test_a_sweep_of_eight_runs_completes_and_is_aggregated(celery_worker_process):
    scenario = scenario_make(policies=["fifo", "sjf"], seeds=[0, 1], num_jobs=20)

    sweep = services.sweep_create(scenario=scenario, grid={"load_scale": [1, 2]})

    wait_for(lambda: Sweep.objects.get(pk=sweep.pk).status == SweepStatus.DONE, timeout=180,
             what=f"the sweep to finish:\n{celery_worker_process.log_tail()}")
    sweep.refresh_from_db()
    assert sorted(sweep.runs.values_list("status", flat=True)) == [RunStatus.SUCCEEDED] * 8
    rows = selectors.sweep_aggregate(sweep=sweep)
    assert len(rows) == 4
    assert all(row["metrics"]["jct_mean"]["n"] == 2 for row in rows)
    assert all(row["metrics"]["jct_mean"]["ci95"] is not None for row in rows)


def test_cancelling_a_running_run_stops_it(celery_worker_process, media_root):
    from planner.scenarios.services import workload_create_from_generator

    scenario = scenario_make(policies=["fifo"])
    scenario.workload = workload_create_from_generator(name="long", spec=LONG_WORKLOAD)
    scenario.save()
    (run,) = services.scenario_launch(scenario=scenario)
    wait_for(lambda: Run.objects.get(pk=run.pk).progress > 0.02, timeout=120,
             what="the run to make progress")

    services.run_cancel(run_id=run.pk)

    # The solo worker runs one task at a time: a tiny run finishing proves the cancelled one
    # gave the worker back.
    (tiny,) = services.scenario_launch(scenario=scenario_make(policies=["fifo"],
                                                              cluster_name="other"))
    wait_for(lambda: Run.objects.get(pk=tiny.pk).status == RunStatus.SUCCEEDED, timeout=120,
             what="the next run")
    run.refresh_from_db()
    assert run.status == RunStatus.CANCELLED and run.progress < 1
    assert not RunResult.objects.filter(run=run).exists()
    assert not (media_root / "results" / f"run-{run.pk}-a1").exists()
