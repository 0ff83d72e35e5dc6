"""Importers for the public trace formats users already have; each yields canonical JobSpecs.

Formats, and where their columns and units were confirmed:

- ``tiresias``: ``job_id,num_gpu,submit_time,iterations,model_name,duration,interval``,
  seconds (SymbioticLab/Tiresias ``simulator/60_job.csv``; ../shared/traces/README.md).
  ``interval`` (gap to the next submission) is redundant and ignored.
- ``muri``: Tiresias's columns plus ``batch_size,iteration_time,resource_time_0..2,
  priority``. Every time is in milliseconds: Rivendile/Muri ``simulator/jobs.py``
  (``add_job``) divides submit_time, duration and each resource_time by 1000, so we do too.
  The resource times become ``JobSpec.profile`` (seconds per iteration per stage) and
  ``priority`` is kept (AntMan: 0 = resource-guaranteed, 1 = opportunistic).
  ``batch_size`` and ``iteration_time`` have no JobSpec field and are dropped.
- ``philly_summary``: ``timestamp,duration,num_gpus,gpu_time,cluster`` (petuum/adaptdl
  ``osdi21-artifact`` ``simulator/traces/philly.csv``): dated submit timestamps become
  seconds since the earliest one; ``cluster`` (the Philly virtual-cluster hash) is kept as
  ``user``, the tenant the fairness policies share among; job ids are ``philly-<row>``
  (0-based data-row order).
- ``pollux_workload``: ``name,time,application,num_replicas,batch_size`` (adaptdl
  ``simulator/workloads/workload-6.csv``). The file has NO job length: Pollux runs each job
  to a target epoch from measured profiles. Durations here are ASSUMED: the artifact's
  ``workload.py`` picks the application from a Philly job's GPU-time band (cifar10/ncf
  < 1 GPU-hour, deepspeech2/bert 1-10, yolov3 10-100, imagenet 100-1000); we give each job
  the median GPU-time of its band in philly.csv (jobs >= 60 s, < 1000 GPU-hours; see
  ``POLLUX_GPU_HOURS``), divided over its ``num_replicas`` GPUs.
- ``philly_json``: Microsoft Philly ``cluster_job_log`` (msr-fiddle/philly-traces
  README): a JSON list of ``{status, vc, jobid, submitted_time, user, attempts: [{start_time,
  end_time, detail: [{ip, gpus: [...]}]}]}``, times ``YYYY-MM-DD HH:MM:SS`` or null.
  GPUs = the first attempt's GPUs; duration = the sum of attempts' run times (time between
  attempts is queueing, not running). Skipped: jobs with no attempt, never started, still
  running at snapshot time (last end_time null), or on zero GPUs. ``vc`` is dropped.
- ``helios``: SenseTime Helios ``cluster_log.csv`` (S-Lab-System-Group/HeliosData README):
  ``job_id,user,vc,gpu_num,cpu_num,node_num,state,submit_time,start_time,end_time,duration,
  queue``; ``duration`` in seconds = end - start; dated submit times become seconds since the
  earliest. Skipped: CPU-only jobs (gpu_num 0) and jobs that never started or ran 0 s.
- ``pai``: Alibaba PAI ``pai_task_table.csv`` (alibaba/clusterdata cluster-trace-gpu-v2020
  README and ``pai_task_table.header``): ``job_name,task_name,inst_num,status,start_time,
  end_time,plan_cpu,plan_mem,plan_gpu,gpu_type``, headerless in the original, times in
  seconds (shifted by a constant), ``plan_gpu`` in percent of one GPU per instance. A job's
  tasks are merged: GPUs = ceil(sum(inst_num x plan_gpu) / 100) (the engine allocates whole
  GPUs), submit = earliest task start, duration = latest end - earliest start. The task
  table has only launch times, so queueing before launch is lost. Skipped: CPU-only jobs,
  unfinished tasks (no start or end time) and zero-length jobs. ``gpu_type`` is the type a
  task *ran* on, not a requirement, so it is not copied.

Every importer rejects a malformed row with InputError (file, line, field) and counts the
rows that are legitimately not jobs in ``LoadedWorkload.skipped``.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Callable
from datetime import datetime
from typing import Any

from simulation.errors import InputError
from simulation.model import JobSpec, ResourceProfile
from simulation.workloads._rows import (
    JobIds,
    LoadedWorkload,
    Table,
    finish,
    non_negative,
    parse_datetime,
    parse_float,
    parse_int,
    parse_text,
    positive,
)

# Median GPU-hours of the philly.csv jobs in the band each Pollux application stands for.
POLLUX_GPU_HOURS = {
    "cifar10": 0.217, "ncf": 0.217, "deepspeech2": 1.70, "bert": 1.70,
    "yolov3": 24.7, "imagenet": 237.0,
}
PAI_COLUMNS = ("job_name", "task_name", "inst_num", "status", "start_time", "end_time",
               "plan_cpu", "plan_mem", "plan_gpu", "gpu_type")


def import_tiresias(table: Table) -> LoadedWorkload:
    """Tiresias simulator CSV, seconds."""
    return _simulator_csv(table, divisor=1, fmt="tiresias")


def import_muri(table: Table) -> LoadedWorkload:
    """Muri simulator CSV, milliseconds (converted to seconds), with resource profiles."""
    return _simulator_csv(table, divisor=1000, fmt="muri")


def _simulator_csv(table: Table, divisor: int, fmt: str) -> LoadedWorkload:
    src = table.source
    i_id, i_gpus, i_submit, i_duration = table.require(
        "job_id", "num_gpu", "submit_time", "duration")
    i_iters, i_model, i_priority = (table.column(c) for c in
                                    ("iterations", "model_name", "priority"))
    stages = sorted((int(name.rsplit("_", 1)[1]), i) for i, name in enumerate(table.header)
                    if name.startswith("resource_time_") and name.rsplit("_", 1)[1].isdigit())
    ids = JobIds(src)
    jobs, lines = [], []
    for line, cells in table:
        lines.append(line)
        profile = None
        if stages:
            profile = ResourceProfile(tuple(
                non_negative(parse_float(cells[i], src, line, f"resource_time_{k}"), src,
                             line, f"resource_time_{k}") / divisor
                for k, i in stages))
        jobs.append(JobSpec(
            job_id=ids.add(parse_text(cells[i_id], src, line, "job_id"), line),
            submit_time=non_negative(parse_float(cells[i_submit], src, line, "submit_time"),
                                     src, line, "submit_time") / divisor,
            num_gpus=positive(parse_int(cells[i_gpus], src, line, "num_gpu"), src, line,
                              "num_gpu"),
            duration=non_negative(parse_float(cells[i_duration], src, line, "duration"), src,
                                  line, "duration") / divisor,
            model=(cells[i_model].strip() if i_model is not None else "") or "generic",
            priority=(parse_int(cells[i_priority], src, line, "priority")
                      if i_priority is not None else 0),
            iterations=(positive(parse_int(cells[i_iters], src, line, "iterations"), src, line,
                                 "iterations") if i_iters is not None else None),
            profile=profile,
        ))
    return finish(jobs, src, fmt, lines=lines)


def import_philly_summary(table: Table) -> LoadedWorkload:
    """Pollux's one-row-per-job Philly summary; times become seconds since the first submit."""
    src = table.source
    i_time, i_duration, i_gpus = table.require("timestamp", "duration", "num_gpus")
    i_cluster = table.column("cluster")
    rows = []
    skipped: Counter[str] = Counter()
    for index, (line, cells) in enumerate(table):
        submitted = parse_datetime(cells[i_time], src, line, "timestamp")
        duration = non_negative(parse_float(cells[i_duration], src, line, "duration"), src,
                                line, "duration")
        gpus = parse_int(cells[i_gpus], src, line, "num_gpus")
        non_negative(gpus, src, line, "num_gpus")
        if gpus == 0:
            skipped["CPU-only jobs"] += 1
        elif duration == 0:
            skipped["zero-length jobs"] += 1
        else:
            user = cells[i_cluster].strip() if i_cluster is not None else ""
            rows.append((f"philly-{index}", submitted, gpus, duration, user))
    return finish(_jobs_from_dated_rows(rows), src, "philly_summary", skipped)


def import_pollux_workload(table: Table) -> LoadedWorkload:
    """Pollux testbed workload; durations are assumed from POLLUX_GPU_HOURS (see module doc)."""
    src = table.source
    i_name, i_time, i_app, i_replicas = table.require(
        "name", "time", "application", "num_replicas")
    ids = JobIds(src)
    jobs = []
    for line, cells in table:
        app = parse_text(cells[i_app], src, line, "application").lower()
        if app not in POLLUX_GPU_HOURS:
            raise InputError(f"unknown application '{app}' (known: "
                             f"{', '.join(POLLUX_GPU_HOURS)})", source=src, line=line,
                             field="application")
        replicas = positive(parse_int(cells[i_replicas], src, line, "num_replicas"), src, line,
                            "num_replicas")
        jobs.append(JobSpec(
            job_id=ids.add(parse_text(cells[i_name], src, line, "name"), line, "name"),
            submit_time=non_negative(parse_float(cells[i_time], src, line, "time"), src, line,
                                     "time"),
            num_gpus=replicas,
            duration=round(POLLUX_GPU_HOURS[app] * 3600 / replicas, 3),
            model=app,
        ))
    return finish(jobs, src, "pollux_workload")


def import_helios(table: Table) -> LoadedWorkload:
    """Helios ``cluster_log.csv``; CPU-only and never-started jobs are skipped."""
    src = table.source
    i_id, i_gpus, i_submit, i_duration = table.require(
        "job_id", "gpu_num", "submit_time", "duration")
    i_user, i_start = table.column("user"), table.column("start_time")
    ids = JobIds(src)
    skipped: Counter[str] = Counter()
    rows = []
    for line, cells in table:
        job_id = ids.add(parse_text(cells[i_id], src, line, "job_id"), line)
        gpus = parse_int(cells[i_gpus], src, line, "gpu_num")
        non_negative(gpus, src, line, "gpu_num")
        submitted = parse_datetime(cells[i_submit], src, line, "submit_time")
        started = i_start is None or bool(cells[i_start].strip())
        duration = (non_negative(parse_float(cells[i_duration], src, line, "duration"), src,
                                 line, "duration") if started and cells[i_duration].strip()
                    else 0.0)
        if gpus == 0:
            skipped["CPU-only jobs"] += 1
        elif not started:
            skipped["never-started jobs"] += 1
        elif duration == 0:
            skipped["zero-length jobs"] += 1
        else:
            user = cells[i_user].strip() if i_user is not None else ""
            rows.append((job_id, submitted, gpus, duration, user))
    return finish(_jobs_from_dated_rows(rows), src, "helios", skipped)


def import_pai(table: Table) -> LoadedWorkload:
    """Alibaba PAI task table, merged per job (see module doc for the rules)."""
    src = table.source
    i_job, i_inst, i_start, i_end, i_gpu = table.require(
        "job_name", "inst_num", "start_time", "end_time", "plan_gpu")
    # job -> [first line, GPU percent, earliest start, latest end, finished]
    merged: dict[str, list[Any]] = {}
    for line, cells in table:
        job = parse_text(cells[i_job], src, line, "job_name")
        instances = non_negative(parse_float(cells[i_inst], src, line, "inst_num"), src, line,
                                 "inst_num")
        percent = (non_negative(parse_float(cells[i_gpu], src, line, "plan_gpu"), src, line,
                                "plan_gpu") if cells[i_gpu].strip() else 0.0)
        start_text, end_text = cells[i_start].strip(), cells[i_end].strip()
        finished = bool(start_text and end_text)
        start = parse_float(start_text, src, line, "start_time") if start_text else math.inf
        end = parse_float(end_text, src, line, "end_time") if end_text else -math.inf
        if finished and end < start:
            raise InputError(f"end_time {end:g} is before start_time {start:g}", source=src,
                             line=line, field="end_time")
        entry = merged.get(job)
        if entry is None:
            merged[job] = [line, instances * percent, start, end, finished]
        else:
            entry[1] += instances * percent
            entry[2] = min(entry[2], start)
            entry[3] = max(entry[3], end)
            entry[4] = entry[4] and finished
    skipped: Counter[str] = Counter()
    rows = []
    for job, (_, percent, start, end, finished) in merged.items():
        if percent == 0:
            skipped["CPU-only jobs"] += 1
        elif not finished:
            skipped["unfinished jobs"] += 1
        elif end == start:
            skipped["zero-length jobs"] += 1
        else:
            rows.append((job, start, math.ceil(percent / 100 - 1e-9), end - start))
    first = min((row[1] for row in rows), default=0.0)
    jobs = [JobSpec(job, start - first, gpus, duration) for job, start, gpus, duration in rows]
    return finish(jobs, src, "pai", skipped)


def import_philly_json(text: str, source: str) -> LoadedWorkload:
    """Microsoft Philly ``cluster_job_log`` JSON (see module doc for what is skipped)."""
    try:
        records = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(f"invalid JSON: {exc.msg}", source=source, line=exc.lineno) from None
    except RecursionError:  # the decoder recurses per level: thousands of '[' exhaust it
        raise InputError("invalid JSON: nested too deeply", source=source) from None
    if not isinstance(records, list):
        raise InputError("expected a JSON list of jobs", source=source)
    seen: dict[str, int] = {}
    skipped: Counter[str] = Counter()
    rows = []
    for n, record in enumerate(records):
        where = f"[{n}]"
        if not isinstance(record, dict):
            raise InputError("expected a job object", source=source, field=where)
        job_id = _json_text(record, "jobid", source, where)
        submitted = _json_time(record.get("submitted_time"), source, f"{where}.submitted_time")
        if submitted is None:
            raise InputError("missing submit time", source=source,
                             field=f"{where}.submitted_time")
        attempts = record.get("attempts") or []
        if not isinstance(attempts, list):
            raise InputError("expected a list", source=source, field=f"{where}.attempts")
        gpus, duration, reason = _philly_attempts(attempts, source, where)
        if reason:
            skipped[reason] += 1
            continue
        first = seen.setdefault(job_id, n)
        if first != n:
            raise InputError(f"duplicate job id {job_id!r} (first at [{first}])",
                             source=source, field=f"{where}.jobid")
        user = record.get("user")
        rows.append((job_id, submitted, gpus, duration, user if isinstance(user, str) else ""))
    return finish(_jobs_from_dated_rows(rows), source, "philly_json", skipped)


def _jobs_from_dated_rows(rows: list[tuple[str, datetime, int, float, str]]) -> list[JobSpec]:
    """Jobs from (id, submit datetime, GPUs, duration, user) rows, timed from the first."""
    start = min((row[1] for row in rows), default=None)
    return [JobSpec(job_id, (submitted - start).total_seconds(), gpus, duration, user=user)
            for job_id, submitted, gpus, duration, user in rows]


def _philly_attempts(attempts: list[Any], source: str, where: str) -> tuple[int, float, str]:
    """(GPUs, running seconds, skip reason or "") of one Philly job's attempts."""
    if not attempts:
        return 0, 0.0, "jobs without attempts"
    spans = []
    for k, attempt in enumerate(attempts):
        at = f"{where}.attempts[{k}]"
        if not isinstance(attempt, dict):
            raise InputError("expected an attempt object", source=source, field=at)
        spans.append((_json_time(attempt.get("start_time"), source, f"{at}.start_time"),
                      _json_time(attempt.get("end_time"), source, f"{at}.end_time")))
    detail = attempts[0].get("detail") or []
    if not isinstance(detail, list) or not all(
            isinstance(d, dict) and isinstance(d.get("gpus", []), list) for d in detail):
        raise InputError("expected a list of {ip, gpus}", source=source,
                         field=f"{where}.attempts[0].detail")
    gpus = sum(len(d.get("gpus", [])) for d in detail)
    if spans[0][0] is None:
        return gpus, 0.0, "never-started jobs"
    if spans[-1][1] is None:
        return gpus, 0.0, "jobs still running at snapshot"
    if gpus == 0:
        return gpus, 0.0, "CPU-only jobs"
    duration = sum(max((end - start).total_seconds(), 0.0) for start, end in spans
                   if start is not None and end is not None)
    return gpus, duration, "" if duration > 0 else "zero-length jobs"


def _json_text(record: dict[str, Any], key: str, source: str, where: str) -> str:
    value = record.get(key)
    if not isinstance(value, str) or not value.strip():
        raise InputError("missing or empty", source=source, field=f"{where}.{key}")
    return value.strip()


def _json_time(value: object, source: str, field: str) -> datetime | None:
    if value is None or value == "None":
        return None
    if not isinstance(value, str):
        raise InputError(f"expected a date-time string, got {type(value).__name__}",
                         source=source, field=field)
    return parse_datetime(value, source, None, field)


TABLE_IMPORTERS: dict[str, Callable[[Table], LoadedWorkload]] = {
    "tiresias": import_tiresias,
    "muri": import_muri,
    "philly_summary": import_philly_summary,
    "pollux_workload": import_pollux_workload,
    "helios": import_helios,
    "pai": import_pai,
}
