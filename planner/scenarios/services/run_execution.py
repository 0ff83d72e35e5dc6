"""A run's execution, the body of the Celery task: claim, simulate with a heartbeat and
progress, store the result, and fail the runs whose worker was lost.

`run_execute` is idempotent, so Celery's late acks and redelivery are safe.
"""

from __future__ import annotations

import logging
import threading
from datetime import timedelta

from celery.exceptions import SoftTimeLimitExceeded
from django.conf import settings
from django.core.exceptions import ObjectDoesNotExist
from django.db import connection, transaction
from django.db.models import Q
from django.utils import timezone

from planner.scenarios import results
from planner.scenarios.inputs import (
    run_inputs,
)
from planner.scenarios.models import (
    Run,
    RunResult,
    RunStatus,
)
from planner.scenarios.services.runs import run_finish, run_reuse_identical
from simulation.errors import InputError
from simulation.runner import run_simulation

logger = logging.getLogger(__name__)



class RunAborted(Exception):
    """The run was cancelled, or a newer attempt took it over: stop simulating."""




class _Heartbeat:
    """Refreshes the run's heartbeat from a thread while the simulation holds the CPU."""

    def __init__(self, *, run_id: int, attempt: int, interval: float) -> None:
        self._run_id, self._attempt, self._interval = run_id, attempt, interval
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._beat, daemon=True,
                                        name=f"heartbeat-run-{run_id}")

    def _beat(self) -> None:
        try:
            while not self._stop.wait(self._interval):
                Run.objects.filter(pk=self._run_id, status=RunStatus.RUNNING,
                                   attempts=self._attempt).update(heartbeat_at=timezone.now())
        finally:
            connection.close()

    def __enter__(self) -> _Heartbeat:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._stop.set()
        self._thread.join()


def _progress_reporter(*, run_id: int, attempt: int):
    """The engine's progress callback (every 1 % of jobs finished): record it, or abort.

    One UPDATE both saves the progress and checks the run is still this attempt's and still
    running; nothing updated means it was cancelled or taken over, so the simulation stops.
    """
    def report(fraction: float) -> None:
        updated = Run.objects.filter(
            pk=run_id, status=RunStatus.RUNNING, attempts=attempt,
        ).update(progress=min(max(fraction, 0.0), 1.0), heartbeat_at=timezone.now())
        if not updated:
            raise RunAborted
    return report


def _run_claim(*, run_id: int, task_id: str | None = None) -> Run | None:
    """Start the next attempt of a run, or None when there is nothing (left) to do.

    A message whose `task_id` is no longer the run's was superseded by a re-send: skipped.
    """
    with transaction.atomic():
        run = Run.objects.select_for_update().filter(pk=run_id).first()
        if run is None or run.is_terminal:
            return None
        if task_id is not None and run.task_id and run.task_id != task_id:
            return None
        if run.attempts >= settings.PLANNER_RUN_MAX_ATTEMPTS:
            run_finish(run=run, status=RunStatus.FAILED, error=(
                f"gave up after {run.attempts} attempts: the worker running it stopped "
                "each time (killed, or out of memory?)"))
            return None
        now = timezone.now()
        run.attempts += 1
        run.status, run.progress, run.error = RunStatus.RUNNING, 0.0, ""
        run.started_at = run.heartbeat_at = now
        run.save(update_fields=["attempts", "status", "progress", "error", "started_at",
                                "heartbeat_at"])
        if run_reuse_identical(run=run):
            return None
        return run


def _run_fail_attempt(*, run_id: int, attempt: int, error: str) -> None:
    with transaction.atomic():
        run = Run.objects.select_for_update().filter(pk=run_id).first()
        if run is not None and run.status == RunStatus.RUNNING and run.attempts == attempt:
            run_finish(run=run, status=RunStatus.FAILED, error=error)


def run_execute(*, run_id: int, task_id: str | None = None) -> str:
    """Simulate one run and store its result; safe to call again for the same run.

    Other stale runs are reaped once this one is claimed, so a run whose worker died is
    failed as soon as any worker is busy, not only when a worker starts; claiming first lets a
    re-delivered task take over its own run however long the re-delivery took. A run deleted
    meanwhile (its scenario deleted in the admin) stops like a cancelled one: "aborted", no
    result files left behind.
    """
    run = _run_claim(run_id=run_id, task_id=task_id)
    run_reap_stale(timeout_seconds=settings.PLANNER_RUN_STALE_SECONDS)
    if run is None:
        return "skipped"
    attempt = run.attempts
    try:
        inputs = run_inputs(run=run)
        with _Heartbeat(run_id=run_id, attempt=attempt,
                        interval=settings.PLANNER_RUN_HEARTBEAT_SECONDS):
            result = run_simulation(
                inputs.cluster, inputs.workload, run.policy, settings=run.params,
                seed=run.seed, inference_load=inputs.inference_load,
                progress=_progress_reporter(run_id=run_id, attempt=attempt),
            )
        directory = results.result_write(run_id=run_id, attempt=attempt, result=result)
    except RunAborted:
        return "aborted"
    except ObjectDoesNotExist:
        if not Run.objects.filter(pk=run_id).exists():  # deleted while it ran
            return "aborted"
        logger.exception("run %s failed", run_id)
        _run_fail_attempt(run_id=run_id, attempt=attempt, error="a row it needs was deleted")
        return "failed"
    except InputError as exc:
        _run_fail_attempt(run_id=run_id, attempt=attempt, error=str(exc))
        return "failed"
    except SoftTimeLimitExceeded:
        _run_fail_attempt(run_id=run_id, attempt=attempt, error=(
            f"stopped at the time limit of {settings.CELERY_TASK_SOFT_TIME_LIMIT} s "
            "(CELERY_TASK_SOFT_TIME_LIMIT)"))
        return "failed"
    except Exception as exc:  # a policy or engine bug: record it, never leave it running
        logger.exception("run %s failed", run_id)
        _run_fail_attempt(run_id=run_id, attempt=attempt, error=f"{type(exc).__name__}: {exc}")
        return "failed"
    with transaction.atomic():
        run = Run.objects.select_for_update().filter(pk=run_id).first()
        if run is None or run.status != RunStatus.RUNNING or run.attempts != attempt:
            results.result_remove(directory=directory)
            return "aborted"
        RunResult.objects.create(run=run, summary=result.summary, directory=directory)
        run.progress = 1.0
        run.save(update_fields=["progress"])
        run_finish(run=run, status=RunStatus.SUCCEEDED)
    return "succeeded"


def run_reap_stale(*, timeout_seconds: float) -> list[int]:
    """Fail running runs whose heartbeat is older than `timeout_seconds` (worker lost)."""
    cutoff = timezone.now() - timedelta(seconds=timeout_seconds)
    stale = Q(heartbeat_at__lt=cutoff) | Q(heartbeat_at__isnull=True)
    reaped = []
    for run_id in Run.objects.filter(stale, status=RunStatus.RUNNING).values_list("pk",
                                                                                  flat=True):
        with transaction.atomic():
            run = Run.objects.select_for_update().get(pk=run_id)
            if run.status != RunStatus.RUNNING or (run.heartbeat_at and
                                                   run.heartbeat_at >= cutoff):
                continue
            last = run.heartbeat_at.isoformat(timespec="seconds") if run.heartbeat_at else "never"
            run_finish(run=run, status=RunStatus.FAILED, error=(
                f"worker lost: no heartbeat for over {timeout_seconds:g} s (last {last}, "
                f"attempt {run.attempts}); re-run it"))
            reaped.append(run_id)
    if reaped:
        logger.warning("marked %d stale run(s) failed: %s", len(reaped), reaped)
    return reaped
