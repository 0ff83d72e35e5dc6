"""The canonical workload trace CSV (DESIGN.md, "Workload trace"): reader and writer.

Required columns: job_id, submit_time (s from trace start), num_gpus, duration (s at
num_gpus reference GPUs). Optional: model, gpus_per_worker, min_workers, max_workers, pool,
gpu_type, preemptible, checkpoint, priority, user, experiment, iterations. An empty optional
cell means "the default". Beyond the contract, `resource_time_0`, `resource_time_1`, ...
(seconds per iteration per resource stage, as in Muri) become `JobSpec.profile`, so a Muri
trace converted to canonical keeps what the interleaving policies need. Other columns are
ignored. Submit times are kept as given; jobs are sorted by (submit_time, file order).
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Iterable
from pathlib import Path

from simulation.errors import InputError
from simulation.model import JobSpec, ResourceProfile, Workload
from simulation.workloads._rows import (
    JobIds,
    LoadedWorkload,
    Table,
    finish,
    non_negative,
    parse_bool,
    parse_float,
    parse_int,
    parse_text,
    positive,
)

REQUIRED_COLUMNS = ("job_id", "submit_time", "num_gpus", "duration")
OPTIONAL_COLUMNS = (
    "model", "gpus_per_worker", "min_workers", "max_workers", "pool", "gpu_type",
    "preemptible", "checkpoint", "priority", "user", "experiment", "iterations",
)
CANONICAL_COLUMNS = REQUIRED_COLUMNS + OPTIONAL_COLUMNS
_STAGE_COLUMN = re.compile(r"resource_time_(\d+)$")


def parse_canonical(table: Table) -> LoadedWorkload:
    """Validate every row of a canonical trace; the first bad cell raises InputError."""
    src = table.source
    i_id, i_submit, i_gpus, i_duration = table.require(*REQUIRED_COLUMNS)
    present = {name: i for name in OPTIONAL_COLUMNS if (i := table.column(name)) is not None}
    stages = sorted(
        (int(m.group(1)), i) for i, name in enumerate(table.header)
        if (m := _STAGE_COLUMN.match(name))
    )
    ids = JobIds(src)
    jobs, lines = [], []
    for line, cells in table:
        lines.append(line)
        values = {name: cells[i].strip() for name, i in present.items()}
        job_id = ids.add(parse_text(cells[i_id], src, line, "job_id"), line)
        submit = non_negative(parse_float(cells[i_submit], src, line, "submit_time"), src,
                              line, "submit_time")
        num_gpus = positive(parse_int(cells[i_gpus], src, line, "num_gpus"), src, line,
                            "num_gpus")
        duration = non_negative(parse_float(cells[i_duration], src, line, "duration"), src,
                                line, "duration")
        per_worker = _count(values, "gpus_per_worker", src, line) or 1
        low = _count(values, "min_workers", src, line) or 0
        high = _count(values, "max_workers", src, line) or 0
        _check_workers(num_gpus, per_worker, low, high, src, line)
        priority = values.get("priority")
        stage_seconds = tuple(
            non_negative(parse_float(cells[i], src, line, f"resource_time_{k}"), src, line,
                         f"resource_time_{k}")
            for k, i in stages if cells[i].strip()
        )
        jobs.append(JobSpec(
            job_id, submit, num_gpus, duration,
            model=values.get("model") or "generic",
            gpus_per_worker=per_worker, min_workers=low, max_workers=high,
            pool=values.get("pool") or None, gpu_type=values.get("gpu_type") or None,
            preemptible=_flag(values, "preemptible", src, line),
            checkpoint=_flag(values, "checkpoint", src, line),
            priority=parse_int(priority, src, line, "priority") if priority else 0,
            user=values.get("user", ""), experiment=values.get("experiment", ""),
            iterations=_count(values, "iterations", src, line),
            profile=ResourceProfile(stage_seconds) if stage_seconds else None,
        ))
    return finish(jobs, src, "canonical", lines=lines)


def _count(values: dict[str, str], name: str, src: str, line: int) -> int | None:
    """A positive whole number from an optional cell; None when the cell is absent or empty."""
    value = values.get(name)
    return positive(parse_int(value, src, line, name), src, line, name) if value else None


def _flag(values: dict[str, str], name: str, src: str, line: int) -> bool:
    value = values.get(name)
    return parse_bool(value, src, line, name) if value else True


def _check_workers(num_gpus: int, per_worker: int, low: int, high: int, src: str,
                   line: int) -> None:
    """Workers hold `per_worker` GPUs; 0 for low/high means "the requested count"."""
    if num_gpus % per_worker:
        raise InputError(f"num_gpus {num_gpus} is not a multiple of gpus_per_worker "
                         f"{per_worker}", source=src, line=line, field="num_gpus")
    requested = num_gpus // per_worker
    low, high = low or requested, high or requested
    if low > high:
        raise InputError(f"min_workers {low} is above max_workers {high}", source=src,
                         line=line, field="min_workers")
    if requested < low:
        raise InputError(f"the job requests {requested} workers, below min_workers {low}",
                         source=src, line=line, field="min_workers")
    if requested > high:
        raise InputError(f"the job requests {requested} workers, above max_workers {high}",
                         source=src, line=line, field="max_workers")


def canonical_csv_text(jobs: Iterable[JobSpec]) -> str:
    """The canonical CSV for `jobs`; floats use repr so reading it back is exact."""
    jobs = tuple(jobs)
    stage_count = max((len(j.profile.stage_seconds) for j in jobs if j.profile), default=0)
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(CANONICAL_COLUMNS + tuple(f"resource_time_{k}" for k in range(stage_count)))
    for j in jobs:
        stages = j.profile.stage_seconds if j.profile else ()
        writer.writerow((
            j.job_id, repr(j.submit_time), j.num_gpus, repr(j.duration), j.model,
            j.gpus_per_worker, j.min_workers, j.max_workers, j.pool or "", j.gpu_type or "",
            _bool(j.preemptible), _bool(j.checkpoint), j.priority, j.user, j.experiment,
            "" if j.iterations is None else j.iterations,
            *(repr(s) for s in stages), *([""] * (stage_count - len(stages))),
        ))
    return out.getvalue()


def write_canonical_csv(workload: Workload, path: str | Path) -> None:
    """Write `workload` as a canonical trace that `load_trace` reads back unchanged."""
    Path(path).write_text(canonical_csv_text(workload.jobs), encoding="utf-8")


def _bool(value: bool) -> str:
    return "true" if value else "false"
