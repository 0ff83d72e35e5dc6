"""Turn a finished run into the result contract of DESIGN.md, and compare runs.

`summary.json` (the keys DESIGN.md fixes plus extras), `jobs.csv` (one row per job) and
`timeseries.csv` (time-averaged utilisation per pool, servers on loan, queue length).
"""

from __future__ import annotations

import csv
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from simulation.model import PoolKind

if TYPE_CHECKING:
    from simulation.engine import Simulation

JOB_COLUMNS = (
    "job_id", "submit", "start", "end", "jct", "queuing", "preemptions", "num_gpus",
    "duration", "model", "pool", "scaling_ops", "migrations", "early_feedback",
)


@dataclass(slots=True)
class RunResult:
    summary: dict[str, Any]
    jobs: list[dict[str, Any]]
    timeseries: list[dict[str, float]]
    loan_log: list[dict[str, Any]] = field(default_factory=list)

    def write(self, out_dir: str | Path) -> None:
        """Write summary.json, jobs.csv and timeseries.csv into `out_dir`."""
        out = Path(out_dir)
        out.mkdir(parents=True, exist_ok=True)
        (out / "summary.json").write_text(json.dumps(self.summary, indent=2, sort_keys=True))
        _write_csv(out / "jobs.csv", JOB_COLUMNS, self.jobs)
        columns = tuple(self.timeseries[0]) if self.timeseries else ("time",)
        _write_csv(out / "timeseries.csv", columns, self.timeseries)


def _write_csv(path: Path, columns: Sequence[str], rows: Sequence[Mapping[str, Any]]) -> None:
    with path.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(columns), extrasaction="ignore")
        writer.writeheader()
        writer.writerows(rows)


def percentiles(values: Sequence[float]) -> dict[str, float]:
    """mean, median, p95 and p99 (0 for an empty sample)."""
    if not values:
        return {"mean": 0.0, "median": 0.0, "p95": 0.0, "p99": 0.0}
    arr = np.asarray(values, dtype=float)
    p50, p95, p99 = np.percentile(arr, [50, 95, 99])
    return {
        "mean": round(float(arr.mean()), 6),
        "median": round(float(p50), 6),
        "p95": round(float(p95), 6),
        "p99": round(float(p99), 6),
    }


def build_result(sim: Simulation, *, wall_seconds: float) -> RunResult:
    """Collect per-job records, the time series and the summary of a finished run."""
    rows: list[dict[str, Any]] = []
    jcts: list[float] = []
    queuing: list[float] = []
    feedback: list[float] = []
    preempted_jobs = preemptions = scaling_ops = migrations = 0
    overhead = 0.0
    first_submit = math.inf
    last_end = 0.0
    for job in sim.state.jobs.values():
        spec = job.spec
        first_submit = min(first_submit, spec.submit_time)
        done = job.end_time is not None
        jct = job.end_time - spec.submit_time if done else None
        early = (
            job.early_feedback_time - spec.submit_time
            if job.early_feedback_time is not None
            else None
        )
        if done:
            jcts.append(jct)
            queuing.append(job.queued_seconds)
            last_end = max(last_end, job.end_time)
        if early is not None:
            feedback.append(early)
        preemptions += job.preemptions
        preempted_jobs += job.preemptions > 0
        scaling_ops += job.scaling_ops
        migrations += job.migrations
        overhead += job.overhead_gpu_seconds
        rows.append({
            "job_id": spec.job_id,
            "submit": spec.submit_time,
            "start": _round(job.first_start),
            "end": _round(job.end_time),
            "jct": _round(jct),
            "queuing": _round(job.queued_seconds if done else None),
            "preemptions": job.preemptions,
            "num_gpus": spec.num_gpus,
            "duration": spec.duration,
            "model": spec.model,
            "pool": spec.pool or "",
            "scaling_ops": job.scaling_ops,
            "migrations": job.migrations,
            "early_feedback": _round(early),
        })
    n = len(rows)
    span = max(last_end - first_submit, 0.0) if n and last_end else 0.0
    counters = sim.counters
    timeseries = sim.sampler.rows
    blocking = [row["blocking_index"] for row in timeseries if row["queue_length"] > 0]
    summary: dict[str, Any] = {
        "policy": sim.policy.name,
        "params": {p.name: getattr(sim.policy, p.name) for p in sim.policy.params},
        "seed": sim.config.seed,
        "cluster": sim.cluster.name,
        "trace": sim.workload.source,
        "jobs": n,
        "finished": len(jcts),
        "unfinished": n - len(jcts),
        "jct": percentiles(jcts),
        "queuing": percentiles(queuing),
        "makespan": round(span, 6),
        "preemptions": preemptions,
        "preemption_ratio": round(preempted_jobs / n, 6) if n else 0.0,
        "scaling_ops": scaling_ops,
        "migrations": migrations,
        "overhead_gpu_seconds": round(overhead, 3),
        "scaling_mode": sim.config.scaling_mode,
        "policy_counters": dict(sorted(getattr(sim.policy, "counters", {}).items())),
        "gpu_utilization": _utilization(sim, span),
        "avg_queue_length": round(float(np.mean([r["queue_length"] for r in timeseries])), 6)
        if timeseries
        else 0.0,
        "blocking_index": round(float(np.mean(blocking)), 6) if blocking else 0.0,
        "early_feedback": percentiles(feedback),
        "loaning": {
            "servers_lent": counters.servers_lent,
            "reclaims": counters.reclaims,
            "servers_reclaimed": counters.servers_reclaimed,
            "reclaim_preemptions": counters.reclaim_preemptions,
            "collateral_gpus": counters.collateral_gpus,
            "servers_freed_by_scale_in": counters.servers_freed_by_scale_in,
            "flexible_share": round(
                counters.servers_freed_by_scale_in / counters.servers_reclaimed, 6
            )
            if counters.servers_reclaimed
            else 0.0,
        },
        "events": counters.events,
        "schedule_rounds": counters.schedule_rounds,
        "decisions": counters.decisions,
        "wall_seconds": round(wall_seconds, 4),
        "events_per_second": round(counters.events / wall_seconds, 1) if wall_seconds else 0.0,
    }
    return RunResult(summary=summary, jobs=rows, timeseries=timeseries, loan_log=sim.loan_log)


def _utilization(sim: Simulation, span: float) -> dict[str, Any]:
    """Time-averaged busy share of GPUs over [first submit, last completion]."""
    busy = sim.sampler.total_busy
    inference_busy = sim.sampler.total_inference_busy
    pools = {}
    training_busy = training_cap = 0.0
    for pool in sim.cluster.pools:
        pool_busy = busy[pool.name] + (inference_busy if pool.kind == PoolKind.INFERENCE else 0)
        pools[pool.name] = round(pool_busy / (pool.gpus * span), 6) if span else 0.0
        if pool.kind != PoolKind.INFERENCE:
            training_busy += busy[pool.name]
            training_cap += pool.gpus
    total = sum(busy.values()) + inference_busy
    return {
        "training": round(training_busy / (training_cap * span), 6)
        if span and training_cap
        else 0.0,
        "overall": round(total / (sim.cluster.total_gpus * span), 6) if span else 0.0,
        "pools": pools,
    }


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 6)


def speedups(
    baseline_jobs: Sequence[Mapping[str, Any]], jobs: Sequence[Mapping[str, Any]]
) -> dict[str, float]:
    """Per-job speedup = baseline JCT / JCT over jobs finished in both runs (SIA §6.1).

    Reports the geometric mean, p5 and p95, the share of jobs slowed down, and the total and
    maximum slowdown in minutes.
    """
    base = {row["job_id"]: row["jct"] for row in baseline_jobs if row["jct"] not in (None, "")}
    ratios: list[float] = []
    slow_minutes: list[float] = []
    for row in jobs:
        jct = row["jct"]
        ref = base.get(row["job_id"])
        if jct in (None, "") or ref is None or float(jct) <= 0:
            continue
        ratios.append(float(ref) / float(jct))
        slow_minutes.append(max(0.0, float(jct) - float(ref)) / 60.0)
    if not ratios:
        return {"jobs": 0, "geomean": 0.0, "p5": 0.0, "p95": 0.0, "slowed_share": 0.0,
                "slowdown_minutes_total": 0.0, "slowdown_minutes_max": 0.0}
    arr = np.asarray(ratios)
    p5, p95 = np.percentile(arr, [5, 95])
    return {
        "jobs": len(ratios),
        "geomean": round(float(np.exp(np.log(arr).mean())), 6),
        "p5": round(float(p5), 6),
        "p95": round(float(p95), 6),
        "slowed_share": round(float((arr < 1 - 1e-9).mean()), 6),
        "slowdown_minutes_total": round(sum(slow_minutes), 6),
        "slowdown_minutes_max": round(max(slow_minutes), 6),
    }
