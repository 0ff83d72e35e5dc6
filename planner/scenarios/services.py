"""Writes for workloads, scenarios, sweeps and runs; the body of every Celery task.

User mistakes raise `simulation.errors.InputError` (field, line, one-line message) before
anything is saved; the API turns them into HTTP 400. Runs are enqueued after the transaction
commits, and `run_execute` is idempotent, so Celery's late acks and redelivery are safe.
"""

from __future__ import annotations

import dataclasses
import hashlib
import itertools
import json
import logging
import math
import statistics
import threading
import uuid
from collections import defaultdict
from collections.abc import Collection
from datetime import timedelta
from pathlib import PurePath
from typing import Any

from celery.exceptions import SoftTimeLimitExceeded
from django.conf import settings
from django.core.exceptions import ObjectDoesNotExist
from django.core.files.base import ContentFile, File
from django.db import connection, transaction
from django.db.models import Q
from django.utils import timezone

from planner.clusters.models import Cluster, ClusterKind
from planner.clusters.services import cluster_create_from_spec, cluster_to_spec
from planner.scenarios import results
from planner.scenarios.dispatch import runs_dispatch, sweep_aggregate_send
from planner.scenarios.inputs import (
    INFERENCE_LOAD_PARAMS,
    VARIANT_AXES,
    cluster_scale,
    generated_workload,
    policies_check_inputs,
    run_content_hash,
    run_inputs,
    sha256_json,
)
from planner.scenarios.models import (
    TERMINAL_STATUSES,
    InferenceLoadKind,
    InferenceLoadProfile,
    Run,
    RunResult,
    RunStatus,
    Scenario,
    Sweep,
    SweepStatus,
    Workload,
    WorkloadKind,
)
from planner.scenarios.signals import run_ended
from simulation.engine import EngineConfig
from simulation.errors import InputError
from simulation.limits import MAX_SEED, check_text, printable
from simulation.metrics import mean_ci95
from simulation.model import PoolKind
from simulation.model import Workload as SimWorkload
from simulation.policies import registry
from simulation.runner import engine_config, run_simulation, split_settings
from simulation.workloads import (
    generate_inference_load,
    parse_inference_load_text,
    parse_trace_text,
)

logger = logging.getLogger(__name__)

# Metrics a sweep aggregates across seeds: name -> path into the summary.
SWEEP_METRICS = {
    "jct_mean": ("jct", "mean"),
    "jct_p95": ("jct", "p95"),
    "queuing_mean": ("queuing", "mean"),
    "makespan": ("makespan",),
    "preemptions": ("preemptions",),
    "gpu_utilization_training": ("gpu_utilization", "training"),
    "gpu_utilization_overall": ("gpu_utilization", "overall"),
}


class RunAborted(Exception):
    """The run was cancelled, or a newer attempt took it over: stop simulating."""


# --- Uploads and workloads -------------------------------------------------------------------

def upload_text(*, file: File, field: str = "file") -> str:
    """The upload as text, refused when empty, over PLANNER_MAX_UPLOAD_MB or not UTF-8."""
    name = PurePath(file.name or "upload").name
    limit_mb = settings.PLANNER_MAX_UPLOAD_MB
    if file.size == 0:
        raise InputError("the file is empty (0 bytes)", source=name, field=field)
    if file.size > limit_mb * 1024 * 1024:
        raise InputError(f"the file is {file.size / 2**20:.1f} MB; uploads are limited to "
                         f"{limit_mb} MB (PLANNER_MAX_UPLOAD_MB)", source=name, field=field)
    file.seek(0)
    data = file.read()
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InputError(f"not UTF-8 text (byte {exc.start})", source=name,
                         field=field) from None


def workload_summary(*, workload: SimWorkload) -> dict[str, Any]:
    """Statistics shown next to a workload: size, span, GPU demand, elasticity."""
    jobs = workload.jobs
    if not jobs:
        return {"jobs": 0}
    durations = [job.duration for job in jobs]
    submits = [job.submit_time for job in jobs]
    summary = {
        "jobs": len(jobs),
        "format": workload.format,
        "span_hours": round((max(submits) - min(submits)) / 3600, 3),
        "gpu_hours": round(sum(job.gpu_seconds for job in jobs) / 3600, 3),
        "duration_median_s": round(statistics.median(durations), 3),
        "duration_mean_s": round(statistics.fmean(durations), 3),
        "max_gpus": max(job.num_gpus for job in jobs),
        "multi_gpu_share": round(sum(job.num_gpus > 1 for job in jobs) / len(jobs), 4),
        "elastic_share": round(sum(job.elastic for job in jobs) / len(jobs), 4),
    }
    skipped = getattr(workload, "skipped", ())
    if skipped:
        summary["skipped"] = {reason: count for reason, count in skipped}
    return summary


def workload_create_from_upload(*, name: str, file: File, format: str | None = None
                                ) -> Workload:
    """Validate a trace upload completely, then store the file and the row together."""
    text = upload_text(file=file)
    source = PurePath(file.name or "upload").name
    loaded = parse_trace_text(text, source, format=format or None)
    if not loaded.jobs:
        raise InputError("the trace has no jobs", source=source, field="file")
    workload = Workload(
        name=name or source, kind=WorkloadKind.UPLOAD, format=loaded.format,
        content_sha256=hashlib.sha256(text.encode()).hexdigest(), num_jobs=len(loaded.jobs),
        summary=workload_summary(workload=loaded),
    )
    return _save_with_file(row=workload, filename=source, text=text)


def workload_create_from_generator(*, name: str, spec: dict[str, Any], seed: int = 0
                                   ) -> Workload:
    if not 0 <= seed <= MAX_SEED:
        raise InputError(f"must be in [0, {MAX_SEED}]", source="generator", field="seed")
    generated = generated_workload(spec=spec, seed=seed)
    return Workload.objects.create(
        name=name, kind=WorkloadKind.GENERATOR, format="generated", generator_spec=spec,
        generator_seed=seed, content_sha256=sha256_json({"spec": spec, "seed": seed}),
        num_jobs=len(generated.jobs), summary=workload_summary(workload=generated),
    )


def inference_load_create_generated(*, name: str, params: dict[str, Any]
                                    ) -> InferenceLoadProfile:
    """A diurnal load (Aryl Fig. 1); `params` are generate_inference_load's, `days` required."""
    for key in params:
        if key not in INFERENCE_LOAD_PARAMS:
            raise InputError(f"unknown setting (known: {', '.join(INFERENCE_LOAD_PARAMS)})",
                             source=name, field=key)
    if "days" not in params:
        raise InputError("missing", source=name, field="days")
    try:
        generate_inference_load(1, **params)
    except TypeError as exc:
        raise InputError(f"wrong type ({exc})", source=name) from None
    return InferenceLoadProfile.objects.create(
        name=name, kind=InferenceLoadKind.GENERATED, params=params,
        content_sha256=sha256_json(params),
    )


def inference_load_create_from_upload(*, name: str, file: File) -> InferenceLoadProfile:
    text = upload_text(file=file)
    source = PurePath(file.name or "upload").name
    parse_inference_load_text(text, source, total_servers=1)
    profile = InferenceLoadProfile(name=name or source, kind=InferenceLoadKind.UPLOAD,
                                   content_sha256=hashlib.sha256(text.encode()).hexdigest())
    return _save_with_file(row=profile, filename=source, text=text)


def _save_with_file(*, row: Workload | InferenceLoadProfile, filename: str, text: str):
    """Save the file and the row; a failed row leaves no file behind."""
    row.file.save(filename, ContentFile(text.encode()), save=False)
    try:
        with transaction.atomic():
            row.save()
    except BaseException:
        row.file.delete(save=False)
        raise
    return row


# --- Scenarios -------------------------------------------------------------------------------

def _policy_entries(policies: list[Any]) -> list[dict[str, Any]]:
    if not isinstance(policies, list) or not policies:
        raise InputError("choose at least one policy", field="policies")
    entries = []
    for i, entry in enumerate(policies):
        if isinstance(entry, str):
            entry = {"policy": entry, "params": {}}
        if not isinstance(entry, dict) or not isinstance(entry.get("params", {}), dict):
            raise InputError("expected a policy name or {policy, params}",
                             field=f"policies[{i}]")
        entries.append({"policy": entry.get("policy"), "params": entry.get("params", {})})
    return entries


def _settings_check(*, policy: str, settings: dict[str, Any], where: str) -> None:
    """Refuse unknown policies, parameters and engine settings, naming the field."""
    try:
        _, engine = split_settings(policy, settings)
        engine_config(engine, seed=0)
    except InputError as exc:
        field = f"{where}.{exc.field}" if exc.field and exc.field != "policy" else where
        raise InputError(exc.message, field=field) from None


def _seeds_check(seeds: Any) -> list[int]:
    if (not isinstance(seeds, list) or not seeds
            or any(isinstance(s, bool) or not isinstance(s, int) or s < 0 for s in seeds)):
        raise InputError("expected a non-empty list of non-negative whole numbers",
                         field="seeds")
    if len(seeds) > settings.PLANNER_MAX_SEEDS:
        raise InputError(f"{len(seeds):,} seeds; a scenario is limited to "
                         f"{settings.PLANNER_MAX_SEEDS} (PLANNER_MAX_SEEDS)", field="seeds")
    if max(seeds) > MAX_SEED:
        raise InputError(f"seed {max(seeds)} is over the limit of {MAX_SEED}", field="seeds")
    if len(set(seeds)) != len(seeds):
        raise InputError("seeds repeat", field="seeds")
    return seeds


def _runs_check(*, runs: int, field: str) -> None:
    """Refuse creating more runs at once than PLANNER_SCENARIO_MAX_RUNS allows."""
    limit = settings.PLANNER_SCENARIO_MAX_RUNS
    if runs > limit:
        raise InputError(f"{runs:,} runs (policies x seeds); a scenario is limited to {limit} "
                         "(PLANNER_SCENARIO_MAX_RUNS)", field=field)


@transaction.atomic
def scenario_create(*, name: str, cluster: Cluster, workload: Workload,
                    policies: list[Any], seeds: list[int],
                    inference_load: InferenceLoadProfile | None = None,
                    engine_settings: dict[str, Any] | None = None, description: str = "",
                    slug: str = "") -> Scenario:
    """A what-if scenario; every policy, parameter, setting and seed is checked first."""
    engine_settings = engine_settings or {}
    if not name.strip():
        raise InputError("must not be empty", field="name")
    entries = _policy_entries(policies)
    for i, entry in enumerate(entries):
        _settings_check(policy=entry["policy"], settings={**engine_settings, **entry["params"]},
                        where=f"policies[{i}]")
    seeds = _seeds_check(seeds)
    _runs_check(runs=len(entries) * len(seeds), field="seeds")
    policies_check_inputs(cluster=cluster, workload=workload, policies=entries,
                          engine_settings=engine_settings)
    if inference_load is not None:
        spec = cluster_to_spec(cluster=cluster)
        if not spec.pools_of_kind(PoolKind.INFERENCE):
            raise InputError("the cluster has no inference pool to apply a load to",
                             field="inference_load")
    return Scenario.objects.create(
        name=name.strip(), slug=slug, description=description, cluster=cluster,
        workload=workload, inference_load=inference_load, policies=entries, seeds=seeds,
        engine_settings=engine_settings,
    )


@transaction.atomic
def scenario_create_from_specs(*, name: str, cluster_spec_text: str, policies: list[Any],
                               seeds: list[int], trace: File | None = None,
                               generator: dict[str, Any] | None = None,
                               engine_settings: dict[str, Any] | None = None) -> Scenario:
    """Cluster spec (YAML/JSON) plus a trace upload or a generator spec, as one scenario."""
    if (trace is None) == (generator is None):
        raise InputError("give either a trace file or a generator spec", field="trace")
    cluster = cluster_create_from_spec(spec_text=cluster_spec_text, source="cluster spec",
                                       kind=ClusterKind.WHAT_IF)
    if trace is not None:
        workload = workload_create_from_upload(name=f"{name} trace", file=trace)
    else:
        workload = workload_create_from_generator(name=f"{name} workload", spec=generator or {})
    return scenario_create(name=name, cluster=cluster, workload=workload, policies=policies,
                           seeds=seeds, engine_settings=engine_settings)


def _under(prefix: str, exc: InputError) -> InputError:
    """The error again, its field moved under the request field `prefix` it came from."""
    field = f"{prefix}.{exc.field}" if exc.field and exc.field != prefix else prefix
    return InputError(exc.message, source=exc.source, line=exc.line, field=field)


@transaction.atomic
def scenario_create_from_inputs(*, name: str, workload_id: int, policies: list[Any],
                                seeds: list[int], cluster_id: int | None = None,
                                cluster_spec_text: str = "",
                                inference_load_id: int | None = None,
                                inference_load_params: dict[str, Any] | None = None,
                                engine_settings: dict[str, Any] | None = None,
                                description: str = "", launch: bool = False
                                ) -> tuple[Scenario, list[Run]]:
    """A scenario from the API's ids and specs: an existing cluster or a new one from its
    spec text, a stored workload, a stored or newly generated inference load; launched when
    asked. One transaction: a bad input anywhere leaves no cluster, load or scenario behind.
    """
    if (cluster_id is None) == (not cluster_spec_text):
        raise InputError("give either cluster (an id) or cluster_spec", field="cluster")
    if inference_load_id is not None and inference_load_params is not None:
        raise InputError("give either inference_load (an id) or inference_load_generator",
                         field="inference_load")
    if cluster_id is not None:
        cluster = Cluster.objects.filter(pk=cluster_id).first()
        if cluster is None:
            raise InputError(f"cluster {cluster_id} does not exist", field="cluster")
    else:
        try:
            cluster = cluster_create_from_spec(spec_text=cluster_spec_text,
                                               source="cluster spec")
        except InputError as exc:
            raise _under("cluster_spec", exc) from None
    workload = Workload.objects.filter(pk=workload_id).first()
    if workload is None:
        raise InputError(f"workload {workload_id} does not exist", field="workload")
    load = None
    if inference_load_id is not None:
        load = InferenceLoadProfile.objects.filter(pk=inference_load_id).first()
        if load is None:
            raise InputError(f"inference load {inference_load_id} does not exist",
                             field="inference_load")
    elif inference_load_params is not None:
        try:
            load = inference_load_create_generated(name=f"{name} load",
                                                   params=inference_load_params)
        except InputError as exc:
            raise _under("inference_load_generator", exc) from None
    scenario = scenario_create(name=name, cluster=cluster, workload=workload,
                               inference_load=load, policies=policies, seeds=seeds,
                               engine_settings=engine_settings, description=description)
    return scenario, scenario_launch(scenario=scenario) if launch else []


@transaction.atomic
def scenario_delete(*, scenario: Scenario) -> None:
    """Delete a scenario with its sweeps, runs and their result files (after commit)."""
    scenario.delete()


# --- Runs: creation, launch, cancel, re-run --------------------------------------------------

def runs_enqueue(*, runs: list[Run]) -> None:
    """Send the queued runs to the workers once the transaction commits.

    A broker that is down fails nothing: the runs stay queued, unsent (`dispatched_at` empty),
    and the periodic maintenance sends them when it is back (see `dispatch`).
    """
    queued = [run for run in runs if run.status == RunStatus.QUEUED]
    if queued:
        transaction.on_commit(lambda: runs_dispatch(runs=queued))


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
    _run_reuse(run=run)
    return run


def _run_reuse(*, run: Run) -> bool:
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
    _sweep_check_on_commit(run=run)
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
    _run_finish(run=run, status=RunStatus.CANCELLED, error="cancelled by a user")
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


def _run_finish(*, run: Run, status: str, error: str = "") -> None:
    """Move a locked run to a terminal status and let its sweep know. The error may quote
    an input (a job id), so what no text column can hold is escaped."""
    run.status, run.error, run.finished_at = status, printable(error[:4000]), timezone.now()
    run.save(update_fields=["status", "error", "finished_at"])
    _sweep_check_on_commit(run=run)


# --- Runs: execution (the Celery task body) --------------------------------------------------

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
            _run_finish(run=run, status=RunStatus.FAILED, error=(
                f"gave up after {run.attempts} attempts: the worker running it stopped "
                "each time (killed, or out of memory?)"))
            return None
        now = timezone.now()
        run.attempts += 1
        run.status, run.progress, run.error = RunStatus.RUNNING, 0.0, ""
        run.started_at = run.heartbeat_at = now
        run.save(update_fields=["attempts", "status", "progress", "error", "started_at",
                                "heartbeat_at"])
        if _run_reuse(run=run):
            return None
        return run


def _run_fail_attempt(*, run_id: int, attempt: int, error: str) -> None:
    with transaction.atomic():
        run = Run.objects.select_for_update().filter(pk=run_id).first()
        if run is not None and run.status == RunStatus.RUNNING and run.attempts == attempt:
            _run_finish(run=run, status=RunStatus.FAILED, error=error)


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
        _run_finish(run=run, status=RunStatus.SUCCEEDED)
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
            _run_finish(run=run, status=RunStatus.FAILED, error=(
                f"worker lost: no heartbeat for over {timeout_seconds:g} s (last {last}, "
                f"attempt {run.attempts}); re-run it"))
            reaped.append(run_id)
    if reaped:
        logger.warning("marked %d stale run(s) failed: %s", len(reaped), reaped)
    return reaped


# --- Sweeps ----------------------------------------------------------------------------------

# Bounds of the input axes: a cluster at most 100x its size (and each pool still within
# MAX_SERVERS_PER_POOL, checked when the run builds it), arrivals at most 1000x faster or
# slower.
_AXIS_BOUNDS = {"cluster_scale": (0.0, 100.0), "load_scale": (0.001, 1000.0),
                "elastic_share": (0.0, 1.0)}


def _grid_points(grid: Any, *, max_points: int) -> list[dict[str, Any]]:
    """Every combination of the grid's values; refused before it is built when there would
    be more than `max_points` (10 keys of 100 values are 10^20 combinations)."""
    if not isinstance(grid, dict) or not grid:
        raise InputError("expected an object of parameter -> list of values", field="grid")
    for key, values in grid.items():
        where = f"grid.{printable(key)}"
        if not isinstance(values, list) or not values:
            raise InputError("expected a non-empty list of values", field=where)
        for value in values:
            if value is not None and not isinstance(value, str | int | float):
                raise InputError(f"expected numbers, text, true/false or null, got a "
                                 f"{type(value).__name__}", field=where)
            if isinstance(value, str):
                check_text(value, field=where, max_chars=200)
        if key in VARIANT_AXES:
            low, high = _AXIS_BOUNDS[key]
            for value in values:
                number_ok = isinstance(value, int | float) and not isinstance(value, bool)
                if not number_ok or not (low <= value <= high) or (
                        key != "elastic_share" and value == 0):
                    bound = (f"in [{low:g}, {high:g}]" if key == "elastic_share"
                             else f"a positive number up to {high:g}")
                    raise InputError(f"expected {bound}, got {value!r}", field=where)
    keys = sorted(grid)
    if math.prod(len(grid[k]) for k in keys) > max_points:
        raise InputError(f"{math.prod(len(grid[k]) for k in keys):,} grid points; a sweep is "
                         f"limited to {max_points:,} runs (PLANNER_SWEEP_MAX_RUNS)",
                         field="grid")
    return [dict(zip(keys, combo, strict=True))
            for combo in itertools.product(*(grid[k] for k in keys))]


def _variant_settings(*, point: dict[str, Any], policy: str) -> dict[str, Any]:
    """The grid point's engine settings, and the policy parameters this policy declares."""
    declared = {p.name for p in registry()[policy].params}
    engine = {f.name for f in dataclasses.fields(EngineConfig)}
    return {k: v for k, v in point.items()
            if k not in VARIANT_AXES and (k in declared or k in engine)}


@transaction.atomic
def sweep_create(*, scenario: Scenario, grid: dict[str, list[Any]], name: str = "") -> Sweep:
    """Every grid point x policy x seed as a run; enqueued together as one Celery group."""
    points = _grid_points(grid, max_points=settings.PLANNER_SWEEP_MAX_RUNS)
    policies = registry()
    engine_fields = {f.name for f in dataclasses.fields(EngineConfig)}
    for key in grid:
        declared = any(key in {p.name for p in policies[e["policy"]].params}
                       for e in scenario.policies if e["policy"] in policies)
        if key not in VARIANT_AXES and key not in engine_fields and not declared:
            raise InputError("not an engine setting, a parameter of the scenario's policies, "
                             f"or one of {', '.join(VARIANT_AXES)}",
                             field=f"grid.{printable(key)}")
    if "cluster_scale" in grid:
        spec = cluster_to_spec(cluster=scenario.cluster)
        for factor in grid["cluster_scale"]:
            cluster_scale(cluster=spec, factor=float(factor))  # refuses one over the limits
    total = len(points) * len(scenario.policies) * len(scenario.seeds)
    if total > settings.PLANNER_SWEEP_MAX_RUNS:
        raise InputError(f"{total} runs exceed the limit of {settings.PLANNER_SWEEP_MAX_RUNS} "
                         "(PLANNER_SWEEP_MAX_RUNS)", field="grid")
    sweep = Sweep.objects.create(scenario=scenario, grid=grid, name=name)
    runs = []
    for point in points:
        variant = {k: point[k] for k in sorted(point)}
        for i, entry in enumerate(scenario.policies):
            run_settings = {**scenario.engine_settings, **entry["params"],
                            **_variant_settings(point=point, policy=entry["policy"])}
            _settings_check(policy=entry["policy"], settings=run_settings,
                            where=f"policies[{i}]")
            runs += [run_create(scenario=scenario, policy=entry["policy"],
                                 settings=run_settings, seed=seed, variant=variant, sweep=sweep)
                     for seed in scenario.seeds]
    runs_enqueue(runs=runs)
    return sweep


def _sweep_check_on_commit(*, run: Run) -> None:
    """After commit, aggregate the sweep if this was its last run, and tell `run_ended`'s
    receivers; a failure there (broker down) is logged, and the periodic maintenance
    finishes the sweep (or capacity search) instead."""
    if run.sweep_id is not None:
        sweep_id = run.sweep_id
        transaction.on_commit(lambda: sweep_finish_if_done(sweep_id=sweep_id), robust=True)
    run_id = run.pk
    transaction.on_commit(lambda: run_ended.send(sender=Run, run_id=run_id),
                          robust=True)


def sweep_finish_if_done(*, sweep_id: int) -> bool:
    """Enqueue the aggregation once every run of the sweep has ended (idempotent)."""
    with transaction.atomic():
        sweep = Sweep.objects.select_for_update().filter(pk=sweep_id).first()
        if sweep is None or sweep.status == SweepStatus.DONE:
            return False
        if sweep.runs.exclude(status__in=TERMINAL_STATUSES).exists():
            return False
        sweep_aggregate_send(sweep_id=sweep_id)
    return True


def _metric(summary: dict[str, Any], path: tuple[str, ...]) -> float | None:
    value: Any = summary
    for key in path:
        if not isinstance(value, dict) or key not in value:
            return None
        value = value[key]
    return float(value) if isinstance(value, int | float) else None


def sweep_aggregate(*, sweep_id: int) -> Sweep:
    """Mean and 95% CI across seeds, per grid point and policy; the latest run per cell wins."""
    with transaction.atomic():
        sweep = Sweep.objects.select_for_update().get(pk=sweep_id)
        latest: dict[tuple[str, str, int], Run] = {}
        for run in sweep.runs.select_related("result").order_by("id"):
            latest[(sha256_json(run.variant), run.policy, run.seed)] = run
        cells: dict[tuple[str, str], list[Run]] = defaultdict(list)
        for (variant_key, policy, _), run in latest.items():
            cells[(variant_key, policy)].append(run)
        rows = []
        for (_, policy), runs in cells.items():
            done = [run for run in runs if run.status == RunStatus.SUCCEEDED]
            metrics = {name: mean_ci95([v for run in done
                                        if (v := _metric(run.result.summary, path)) is not None])
                       for name, path in SWEEP_METRICS.items()}
            rows.append({"variant": runs[0].variant, "policy": policy, "runs": len(runs),
                         "succeeded": len(done),
                         "failed": sum(run.status == RunStatus.FAILED for run in runs),
                         "cancelled": sum(run.status == RunStatus.CANCELLED for run in runs),
                         "metrics": metrics})
        rows.sort(key=lambda row: (json.dumps(row["variant"], sort_keys=True), row["policy"]))
        sweep.aggregate, sweep.status, sweep.finished_at = rows, SweepStatus.DONE, timezone.now()
        sweep.save(update_fields=["aggregate", "status", "finished_at"])
    return sweep


# --- Demo and named scenarios ----------------------------------------------------------------

DEMO_CLUSTER_SPEC = """\
name: demo-what-if
gpu_types: {V100: {speed: 1.0, memory_gb: 32}, T4x4: {speed: 1.0, memory_gb: 64}}
pools:
  - {name: training,  kind: training,  gpu_type: V100, servers: 8, gpus_per_server: 8}
  - {name: inference, kind: inference, gpu_type: T4x4, servers: 8, gpus_per_server: 2,
     lending_limit: 6}
"""
# Bursty arrivals that outrun 64 training GPUs for hours, heavy-tailed durations, 30 %
# elastic jobs: queues form, so the policies' orderings, loaning and sharing differ (FIFO's
# mean JCT is 1.5-2.3x the others' on seeds 0-2).
DEMO_WORKLOAD = {"num_jobs": 400, "duration_days": 2, "arrivals": "bursty",
                 "median_duration_minutes": 45, "elastic_fraction": 0.3,
                 "gpu_sizes": [[1, 0.5], [2, 0.2], [4, 0.15], [8, 0.12], [16, 0.03]]}
DEMO_POLICIES = ("fifo", "sjf", "srtf", "tiresias", "elastic-tiresias", "aryl", "gandiva",
                 "muri-s")
DEMO_SEEDS = [0, 1, 2]
DEMO_SWEEP_GRID = {"load_scale": [0.5, 1.0, 1.5]}
DEMO_SLUG = "demo-contended"


@transaction.atomic
def demo_load() -> Scenario | None:
    """The demo's what-if study: a contended scenario on three seeds and a load sweep over
    it, launched once; idempotent (None when the scenario exists).

    The inference servers count their T4s as V100-equivalents (Aryl §5.2), so a job lent one
    runs at the speed it would on the training pool.
    """
    if Scenario.objects.filter(slug=DEMO_SLUG).exists():
        return None
    cluster = Cluster.objects.filter(name="demo-what-if").first() or cluster_create_from_spec(
        spec_text=DEMO_CLUSTER_SPEC, source="demo", kind=ClusterKind.WHAT_IF)
    workload = workload_create_from_generator(name="demo: 400 bursty jobs over 2 days",
                                              spec=DEMO_WORKLOAD, seed=0)
    load = inference_load_create_generated(name="demo: diurnal inference load",
                                           params={"days": 5})
    known = registry()
    scenario = scenario_create(
        name="Demo: the papers' policies on a contended cluster", slug=DEMO_SLUG,
        cluster=cluster, workload=workload, inference_load=load, seeds=DEMO_SEEDS,
        policies=[name for name in DEMO_POLICIES if name in known],
        description="8 x 8 V100 training servers and 8 inference servers lent when idle; "
                    "400 bursty jobs over 2 days, 30 % elastic; three seeds.",
    )
    scenario_launch(scenario=scenario)
    sweep_create(scenario=scenario, grid=DEMO_SWEEP_GRID, name="Demo: load from 0.5x to 1.5x")
    return scenario


def _cluster_for_spec(*, data: dict[str, Any], source: str) -> Cluster:
    """The stored cluster of that name when it has the same spec, else a new one."""
    from planner.clusters.services import cluster_create, cluster_spec_dict
    from simulation.workloads import cluster_spec_from_dict

    spec = cluster_spec_from_dict(data, source)
    existing = Cluster.objects.filter(name=spec.name).first()
    if existing is not None:
        if cluster_spec_dict(spec=cluster_to_spec(cluster=existing)) != cluster_spec_dict(
                spec=spec):
            raise InputError(f"a different cluster named '{spec.name}' exists", source=source,
                             field="cluster.name")
        return existing
    return cluster_create(spec=spec, source=source, kind=ClusterKind.WHAT_IF)


@transaction.atomic
def named_scenarios_load(*, names: Collection[str] | None = None) -> list[Scenario]:
    """The paper reproductions' named scenarios (simulation/scenarios/*.yaml), or those of
    `names`, as scenarios; returns the ones created.

    Idempotent by slug (the scenario's name); a stored scenario of that slug whose workload,
    policies or settings differ from the file's is an earlier version: it loses the slug
    (keeping its runs, renamed) and the file's version is created. A shared setting goes to
    each policy that declares it and to the engine otherwise (`split_settings`); the
    inference load is sized to the cluster. Nothing is launched here
    (`named_scenario_launch` does).
    """
    from simulation.scenarios import load_named_scenarios

    created = []
    for name, named in load_named_scenarios().items():
        if names is not None and name not in names:
            continue
        policies, engines = [], []
        for entry in named.policies:
            params, engine = split_settings(entry["policy"], named.settings)
            policies.append({"policy": entry["policy"], "params": {**params, **entry["params"]}})
            engines.append(engine)
        if any(engine != engines[0] for engine in engines):
            raise InputError("a setting is a parameter of some of its policies only: give it "
                             "in their params", source=named.source, field=name)
        load_params = None if named.inference_load is None else dict(named.inference_load)
        existing = (Scenario.objects.filter(slug=name)
                    .select_related("workload", "cluster", "inference_load").first())
        if existing is not None:
            load = existing.inference_load
            if (existing.workload.generator_spec == named.workload
                    and existing.cluster.name == named.cluster["name"]
                    and (load.content_sha256 if load else None) == (
                        None if load_params is None else sha256_json(load_params))
                    and existing.policies == policies and existing.engine_settings == engines[0]):
                continue
            # An earlier version of this named scenario: kept with its runs, under its name.
            existing.slug = ""
            existing.name = f"{existing.name} (earlier version #{existing.pk})"
            existing.save(update_fields=["slug", "name"])
        cluster = _cluster_for_spec(data=named.cluster, source=named.source)
        workload_row = (Workload.objects.filter(
            content_sha256=sha256_json({"spec": named.workload, "seed": 0})).first()
            or workload_create_from_generator(name=f"{name} workload", spec=named.workload))
        load = None
        if load_params is not None:
            load = (InferenceLoadProfile.objects.filter(
                kind=InferenceLoadKind.GENERATED, content_sha256=sha256_json(load_params))
                .first() or inference_load_create_generated(name=f"{name} inference load",
                                                            params=load_params))
        created.append(scenario_create(
            name=name, slug=name, description=named.description, cluster=cluster,
            workload=workload_row, inference_load=load, seeds=[0], policies=policies,
            engine_settings=engines[0],
        ))
    return created


def named_scenario_launch(*, name: str) -> Scenario:
    """Create the named scenario if needed and launch it, unless its runs are under way.

    One click on the reproductions page: a second click while the runs go on only shows them.
    """
    from simulation.scenarios import load_named_scenarios

    if name not in load_named_scenarios():
        raise InputError(f"unknown named scenario {name!r}", source="named scenarios",
                         field="name")
    named_scenarios_load(names={name})
    scenario = Scenario.objects.get(slug=name)
    if not scenario.runs.exclude(status__in=TERMINAL_STATUSES).exists():
        scenario_launch(scenario=scenario)
    return scenario
