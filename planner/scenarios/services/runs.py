"""Runs: created (or reused from an identical succeeded run), sent after the commit,
cancelled and re-run."""

from __future__ import annotations

import logging
import uuid
from typing import Any

from django.db import transaction
from django.utils import timezone

from planner.clusters.services import cluster_to_spec
from planner.scenarios import dispatch
from planner.scenarios.inputs import (
    policies_check_inputs,
    run_content_hash,
)
from planner.scenarios.models import (
    Run,
    RunResult,
    RunStatus,
    Scenario,
    Sweep,
    SweepStatus,
)
from planner.scenarios.signals import run_ended
from simulation.errors import InputError
from simulation.limits import printable

logger = logging.getLogger(__name__)



def runs_enqueue(*, runs: list[Run]) -> None:
    """Send the queued runs to the workers once the transaction commits.

    A broker that is down fails nothing: the runs stay queued, unsent (`dispatched_at` empty),
    and the periodic maintenance sends them when it is back (see `dispatch`).
    """
    queued = [run for run in runs if run.status == RunStatus.QUEUED]
    if queued:
        transaction.on_commit(lambda: dispatch.runs_dispatch(runs=queued))


def run_create(*, scenario: Scenario, policy: str, settings: dict[str, Any], seed: int,
                variant: dict[str, Any], sweep: Sweep | None = None) -> Run:
    """A queued run, or an already succeeded one when an identical run has a result.

    The caller sends queued runs to the workers with `runs_enqueue`.
    """
    content_hash = run_content_hash(
        cluster=cluster_to_spec(cluster=scenario.cluster), workload=scenario.workload,
        inference_load=scenario.inference_load, policy=policy, settings=settings,
        variant=variant, seed=seed,
    )
    run = Run.objects.create(
        scenario=scenario, sweep=sweep, policy=policy, params=settings, seed=seed,
        variant=variant, content_hash=content_hash, task_id=str(uuid.uuid4()),
    )
    run_reuse_identical(run=run)
    return run


def run_reuse_identical(*, run: Run) -> bool:
    """Finish `run` with the result of an identical succeeded run, if there is one."""
    cached = (RunResult.objects.filter(run__content_hash=run.content_hash,
                                       run__status=RunStatus.SUCCEEDED)
              .exclude(run=run).select_related("run").order_by("-id").first())
    if cached is None:
        return False
    RunResult.objects.create(run=run, summary=cached.summary, directory=cached.directory)
    now = timezone.now()
    run.status, run.progress, run.reused_from = RunStatus.SUCCEEDED, 1.0, cached.run
    run.started_at = run.finished_at = run.heartbeat_at = now
    run.save(update_fields=["status", "progress", "reused_from", "started_at", "finished_at",
                            "heartbeat_at"])
    _run_ended_on_commit(run=run)
    return True


@transaction.atomic
def scenario_launch(*, scenario: Scenario) -> list[Run]:
    """One run per policy x seed; identical earlier runs are reused, the rest enqueued."""
    policies_check_inputs(cluster=scenario.cluster, workload=scenario.workload,
                          policies=scenario.policies, engine_settings=scenario.engine_settings)
    runs = [
        run_create(scenario=scenario, policy=entry["policy"], seed=seed, variant={},
                    settings={**scenario.engine_settings, **entry["params"]})
        for entry in scenario.policies for seed in scenario.seeds
    ]
    runs_enqueue(runs=runs)
    return runs


@transaction.atomic
def run_cancel(*, run_id: int) -> Run:
    """Mark a queued or running run cancelled; a running one stops at its next 1 % step."""
    run = Run.objects.select_for_update().get(pk=run_id)
    if run.is_terminal:
        raise InputError(f"run {run.pk} already {run.status}; only queued or running runs "
                         "can be cancelled", field="status")
    run_finish(run=run, status=RunStatus.CANCELLED, error="cancelled by a user")
    if run.task_id:
        from planner.celery import app

        task_id = run.task_id
        # Best effort: the run is cancelled in the database, which the task checks anyway.
        transaction.on_commit(lambda: app.control.revoke(task_id), robust=True)
    return run


@transaction.atomic
def run_rerun(*, run_id: int) -> Run:
    """A new run from the same inputs (reused when an identical run already succeeded)."""
    old = Run.objects.select_related("scenario", "sweep").get(pk=run_id)
    if not old.is_terminal:
        raise InputError(f"run {old.pk} is still {old.status}", field="status")
    if old.sweep is not None and old.sweep.status == SweepStatus.DONE:
        Sweep.objects.filter(pk=old.sweep_id).update(status=SweepStatus.RUNNING)
    run = run_create(scenario=old.scenario, policy=old.policy, settings=old.params,
                      seed=old.seed, variant=old.variant, sweep=old.sweep)
    runs_enqueue(runs=[run])
    return run


def run_finish(*, run: Run, status: str, error: str = "") -> None:
    """Move a locked run to a terminal status and let its sweep know. The error may quote
    an input (a job id), so what no text column can hold is escaped."""
    run.status, run.error, run.finished_at = status, printable(error[:4000]), timezone.now()
    run.save(update_fields=["status", "error", "finished_at"])
    _run_ended_on_commit(run=run)


def _run_ended_on_commit(*, run: Run) -> None:
    """Tell `run_ended`'s receivers after the commit (the run's sweep, capacity searches); a
    failure there (broker down) is logged, and the periodic maintenance finishes instead."""
    run_id = run.pk
    transaction.on_commit(lambda: run_ended.send(sender=Run, run_id=run_id), robust=True)
