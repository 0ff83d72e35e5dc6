"""Scenario, run and sweep services, executed in this process (the worker tests use Celery)."""

from datetime import timedelta
from pathlib import Path

import pytest
from django.core.management import call_command
from django.utils import timezone

from planner.scenarios import selectors, services
from planner.scenarios.models import Run, RunResult, RunStatus, Scenario, SweepStatus
from planner.scenarios.services import run_execution
from simulation.errors import InputError
from tests.planner.factories import cluster_make, scenario_make, workload_make

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def media_root(settings, tmp_path) -> Path:
    settings.MEDIA_ROOT = str(tmp_path)
    return tmp_path


@pytest.mark.parametrize(("policies", "seeds", "engine", "field"), [
    (["no-such-policy"], [0], {}, "policies[0]"),
    ([{"policy": "fifo", "params": {"nope": 1}}], [0], {}, "policies[0].nope"),
    (["fifo"], [0], {"restart_overhead": "soon"}, "policies[0].restart_overhead"),
    (["fifo"], [0, 0], {}, "seeds"),
    (["fifo"], [-1], {}, "seeds"),
    ([], [0], {}, "policies"),
])
def test_scenario_create_refuses_bad_input_naming_the_field(policies, seeds, engine, field):
    with pytest.raises(InputError) as error:
        services.scenario_create(name="x", cluster=cluster_make(), workload=workload_make(),
                                 policies=policies, seeds=seeds, engine_settings=engine)

    assert error.value.field == field


def test_run_execute_stores_a_complete_result(media_root):
    scenario = scenario_make(policies=["fifo"], inference=True)
    (run,) = services.scenario_launch(scenario=scenario)

    assert services.run_execute(run_id=run.pk) == "succeeded"

    run.refresh_from_db()
    assert (run.status, run.progress, run.attempts) == (RunStatus.SUCCEEDED, 1.0, 1)
    summary, jobs, timeseries = selectors.run_result_frames(run=run)
    assert summary["policy"] == "fifo" and summary["jobs"] == 5
    assert sorted(jobs["job_id"]) == ["a", "b", "c", "d", "e"]
    assert "on_loan_servers" in timeseries.columns
    folder = media_root / run.result.directory
    assert sorted(p.name for p in folder.iterdir()) == [
        "jobs.parquet", "summary.json", "timeseries.parquet"]
    assert not list(folder.parent.glob(".partial-*"))


def test_run_execute_is_idempotent():
    (run,) = services.scenario_launch(scenario=scenario_make(policies=["fifo"]))
    services.run_execute(run_id=run.pk)

    assert services.run_execute(run_id=run.pk) == "skipped"

    run.refresh_from_db()
    assert run.attempts == 1 and RunResult.objects.count() == 1


def test_an_identical_run_is_reused_not_computed_again():
    scenario = scenario_make(policies=["fifo", "sjf"], seeds=[1, 2])
    first = services.scenario_launch(scenario=scenario)
    for run in first:
        services.run_execute(run_id=run.pk)

    second = services.scenario_launch(scenario=scenario)

    assert [r.status for r in second] == [RunStatus.SUCCEEDED] * 4
    assert [r.reused_from_id for r in second] == [r.pk for r in first]
    assert [r.result.directory for r in second] == [
        Run.objects.get(pk=r.pk).result.directory for r in first]
    assert all(r.attempts == 0 for r in second)


def test_a_changed_input_is_not_reused():
    scenario = scenario_make(policies=["fifo"], seeds=[1])
    (run,) = services.scenario_launch(scenario=scenario)
    services.run_execute(run_id=run.pk)
    scenario.engine_settings = {"restart_overhead": 10.0}
    scenario.save()

    (other,) = services.scenario_launch(scenario=scenario)

    assert other.status == RunStatus.QUEUED and other.content_hash != run.content_hash


def test_cancel_then_execute_does_nothing():
    (run,) = services.scenario_launch(scenario=scenario_make(policies=["fifo"]))

    services.run_cancel(run_id=run.pk)

    assert services.run_execute(run_id=run.pk) == "skipped"
    run.refresh_from_db()
    assert run.status == RunStatus.CANCELLED and run.attempts == 0
    with pytest.raises(InputError):
        services.run_cancel(run_id=run.pk)


def test_a_superseded_attempt_stops_at_its_next_progress_report():
    (run,) = services.scenario_launch(scenario=scenario_make(policies=["fifo"]))
    Run.objects.filter(pk=run.pk).update(status=RunStatus.RUNNING, attempts=2)
    report = run_execution._progress_reporter(run_id=run.pk, attempt=1)

    with pytest.raises(services.RunAborted):
        report(0.5)

    assert Run.objects.get(pk=run.pk).progress == 0.0


def test_rerun_of_a_failed_run_computes_it_again():
    (run,) = services.scenario_launch(scenario=scenario_make(policies=["fifo"]))
    Run.objects.filter(pk=run.pk).update(status=RunStatus.FAILED, error="boom")

    again = services.run_rerun(run_id=run.pk)

    assert again.pk != run.pk and again.status == RunStatus.QUEUED
    assert services.run_execute(run_id=again.pk) == "succeeded"


def test_a_run_whose_worker_went_silent_is_failed_with_the_reason():
    (run,) = services.scenario_launch(scenario=scenario_make(policies=["fifo"]))
    old = timezone.now() - timedelta(seconds=600)
    Run.objects.filter(pk=run.pk).update(status=RunStatus.RUNNING, heartbeat_at=old,
                                         attempts=1)

    call_command("reap_stale_runs", "--timeout", "300")

    run.refresh_from_db()
    assert run.status == RunStatus.FAILED
    assert "worker lost: no heartbeat for over 300 s" in run.error
    assert run.finished_at is not None


def test_the_last_allowed_attempt_fails_with_the_reason(settings):
    (run,) = services.scenario_launch(scenario=scenario_make(policies=["fifo"]))
    Run.objects.filter(pk=run.pk).update(status=RunStatus.RUNNING, heartbeat_at=timezone.now(),
                                         attempts=settings.PLANNER_RUN_MAX_ATTEMPTS)

    assert services.run_execute(run_id=run.pk) == "skipped"

    run.refresh_from_db()
    assert run.status == RunStatus.FAILED and "gave up after 3 attempts" in run.error


def test_deleting_a_scenario_removes_its_files_but_not_shared_ones(
        media_root, django_capture_on_commit_callbacks):
    first = scenario_make(policies=["fifo"], seeds=[3])
    (run,) = services.scenario_launch(scenario=first)
    services.run_execute(run_id=run.pk)
    folder = media_root / Run.objects.get(pk=run.pk).result.directory
    twin = services.scenario_create(name="twin", cluster=first.cluster,
                                    workload=first.workload, policies=["fifo"], seeds=[3])
    (reused,) = services.scenario_launch(scenario=twin)
    assert reused.reused_from_id == run.pk

    with django_capture_on_commit_callbacks(execute=True):
        services.scenario_delete(scenario=first)
    assert folder.exists()  # the twin's run still uses it

    with django_capture_on_commit_callbacks(execute=True):
        services.scenario_delete(scenario=twin)
    assert not folder.exists()


def test_sweep_expands_the_grid_and_aggregates_across_seeds():
    scenario = scenario_make(policies=["fifo", "sjf"], seeds=[0, 1, 2], num_jobs=20)

    sweep = services.sweep_create(scenario=scenario, grid={"load_scale": [1, 2]})
    for run in sweep.runs.all():
        services.run_execute(run_id=run.pk)
    services.sweep_aggregate(sweep_id=sweep.pk)

    sweep.refresh_from_db()
    assert sweep.runs.count() == 12 and sweep.status == SweepStatus.DONE
    rows = selectors.sweep_aggregate(sweep=sweep)
    assert [(r["variant"], r["policy"], r["succeeded"]) for r in rows] == [
        ({"load_scale": 1}, "fifo", 3), ({"load_scale": 1}, "sjf", 3),
        ({"load_scale": 2}, "fifo", 3), ({"load_scale": 2}, "sjf", 3)]
    jct = [r.result.summary["jct"]["mean"] for r in sweep.runs.filter(
        policy="fifo", variant={"load_scale": 1})]
    assert rows[0]["metrics"]["jct_mean"]["mean"] == pytest.approx(sum(jct) / 3)
    assert rows[0]["metrics"]["jct_mean"]["n"] == 3


@pytest.mark.parametrize(("grid", "field"), [
    ({"warp_speed": [1]}, "grid.warp_speed"),
    ({"load_scale": [0]}, "grid.load_scale"),
    ({"elastic_share": [1.5]}, "grid.elastic_share"),
    ({"restart_overhead": []}, "grid.restart_overhead"),
    ({"restart_overhead": ["soon"]}, "policies[0].restart_overhead"),
])
def test_sweep_refuses_a_bad_grid(grid, field):
    scenario = scenario_make(policies=["fifo"])

    with pytest.raises(InputError) as error:
        services.sweep_create(scenario=scenario, grid=grid)

    assert error.value.field == field
    assert not Run.objects.exists()


def test_named_scenarios_are_created_once():
    created = services.named_scenarios_load()

    assert created and services.named_scenarios_load() == []
    by_slug = {s.slug: s for s in created}
    assert {"aryl-baseline", "aryl-scaling", "edl-table3", "gandiva-6.3"} <= set(by_slug)
    baseline = by_slug["aryl-baseline"]
    assert baseline.policies == [{"policy": "fifo", "params": {}}]
    assert baseline.cluster.name == "aryl-111+130" and baseline.inference_load is None
    # The reproduction's workload once, shared by every Aryl scenario on the Basic trace.
    assert by_slug["aryl-basic"].workload_id == baseline.workload_id
    assert baseline.workload.num_jobs == 12_598
    # A setting both declare reaches the policy and the engine; the rest only the engine.
    advanced = by_slug["aryl-advanced"]
    assert advanced.policies == [{"policy": "aryl", "params": {
        "heterogeneous": True, "heterogeneous_efficiency": 0.7}}]
    assert advanced.engine_settings == {"heterogeneous_efficiency": 0.7}
    gandiva = by_slug["gandiva-6.3"]
    assert [p["policy"] for p in gandiva.policies] == ["fifo", "gandiva"]
    assert gandiva.policies[0]["params"] == {"backfill": True}
    assert gandiva.engine_settings == {"migration_pause": 1.0}


def test_an_earlier_version_of_a_named_scenario_keeps_its_runs_but_not_the_name():
    # A database from before the file changed: "gandiva-6.4" with other jobs and policies.
    old = scenario_make(policies=["fifo"])
    Scenario.objects.filter(pk=old.pk).update(slug="gandiva-6.4", name="gandiva-6.4")
    services.scenario_launch(scenario=Scenario.objects.get(pk=old.pk))
    runs = Run.objects.filter(scenario=old).count()

    (created,) = services.named_scenarios_load(names={"gandiva-6.4"})

    old.refresh_from_db()
    assert created.slug == "gandiva-6.4" and created.workload.num_jobs == 500
    assert old.slug == "" and old.name == f"gandiva-6.4 (earlier version #{old.pk})"
    assert Run.objects.filter(scenario=old).count() == runs > 0
    assert services.named_scenarios_load(names={"gandiva-6.4"}) == []  # now up to date
