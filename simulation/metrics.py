"""Turn a finished run into the result contract of DESIGN.md, and compare runs.

`summary.json` (the keys DESIGN.md fixes plus extras), `jobs.csv` (one row per job) and
`timeseries.csv` (time-averaged utilisation per pool, servers on loan, queue length).

Every number a summary holds is defined once, in `SUMMARY_KEYS` (unit, definition, source),
and computed by the function named there; the README's results table is that mapping.
Times are in seconds of simulated time; utilisation is measured over the run's window, from
the first submission to the last completion, which is the makespan when every job finishes.
"""

from __future__ import annotations

import csv
import hashlib
import json
import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from simulation.errors import InvariantViolation
from simulation.model import ClusterSpec, PoolKind

JOB_COLUMNS = (
    "job_id", "submit", "start", "end", "jct", "queuing", "preemptions", "num_gpus",
    "duration", "model", "pool", "scaling_ops", "migrations", "early_feedback",
)


@dataclass(frozen=True, slots=True)
class MetricDefinition:
    unit: str
    definition: str
    source: str


# The summary's keys, each defined once. `jct`, `queuing` and `early_feedback` hold the
# statistics of `percentiles`; `gpu_utilization` and `loaning` hold the keys listed under them.
SUMMARY_KEYS: dict[str, MetricDefinition] = {
    "policy": MetricDefinition("", "the policy's registry name", "DESIGN.md result"),
    "params": MetricDefinition("", "every policy parameter as the run used it", ""),
    "engine": MetricDefinition(
        "", "every engine setting as the run used it (EngineConfig), the policy's own "
        "paper defaults applied", ""),
    "cadence": MetricDefinition(
        "", "when the policy ran: 'event' or seconds between rounds", "EngineConfig.cadence"),
    "scaling_mode": MetricDefinition("", "resize overhead model that ran", "EDL §4.2"),
    "seed": MetricDefinition("", "random seed of the run", ""),
    "cluster": MetricDefinition("", "cluster spec name", ""),
    "trace": MetricDefinition("", "workload source", ""),
    "jobs": MetricDefinition("jobs", "jobs submitted", "DESIGN.md result"),
    "finished": MetricDefinition("jobs", "jobs that completed", ""),
    "unfinished": MetricDefinition("jobs", "jobs not completed when the run stopped", ""),
    "jct": MetricDefinition(
        "s", "job completion time, completion − submission, over finished jobs "
        "(mean, median, p95, p99)", "Aryl §7.1; Tiresias/Muri JCT"),
    "queuing": MetricDefinition(
        "s", "time a finished job spent waiting in the queue, every wait counted, also "
        "after a preemption (mean, median, p95, p99)", "Aryl §7.1 queuing time"),
    "makespan": MetricDefinition(
        "s", "last completion − first submission", "Gandiva §6.4; Muri §6.1"),
    "preemptions": MetricDefinition("preemptions", "preemptions of all jobs, counted each time",
                                    "Aryl §7.1"),
    "preemption_ratio": MetricDefinition(
        "preemptions per job", "preemptions / jobs submitted (can exceed 1)",
        "Aryl §7.1, Table 5 note (2)"),
    "preempted_share": MetricDefinition(
        "share of jobs", "jobs preempted at least once / jobs submitted", ""),
    "scaling_ops": MetricDefinition("resizes", "resize decisions applied (scale-out and -in)",
                                    "Aryl §7.1; EDL §6"),
    "migrations": MetricDefinition("migrations", "migrations applied", "Gandiva §6.4"),
    "overhead_gpu_seconds": MetricDefinition(
        "GPU·s", "GPU time held but not training: restarts, resize and migration pauses, "
        "stop-free workers preparing", "EDL §4.2, §6.1"),
    "policy_counters": MetricDefinition("", "the policy's own counters", ""),
    "gpu_utilization": MetricDefinition(
        "share of GPU time", "busy GPU-seconds / (GPUs × window), window = first submission "
        "to last completion; `training` over training (and quota) pools, `overall` over every "
        "pool with inference-busy GPUs counted busy, `pools` per pool; each in [0, 1]",
        "Aryl Table 5 note (1)"),
    "avg_queue_length": MetricDefinition(
        "jobs", "time-average of the number of queued jobs over the window", "Muri §6.1"),
    "blocking_index": MetricDefinition(
        "ratio", "mean over time-series rows with a non-empty queue of the mean, over queued "
        "jobs, of time waited / work remaining", "Muri §6.1 (after Tiresias [18])"),
    "early_feedback": MetricDefinition(
        "s", "submission to the end of the first `early_feedback_iterations` (100) "
        "iterations, jobs with an iteration count only", "Gandiva §6.3"),
    "loaning": MetricDefinition(
        "", "servers_lent, reclaims, servers_reclaimed, reclaim_preemptions (jobs preempted "
        "by reclaims), collateral_gpus (GPUs of preempted jobs off the returned servers), "
        "collateral_damage (collateral_gpus / GPUs reclaimed), servers_freed_by_scale_in, "
        "flexible_share (servers_freed_by_scale_in / servers_reclaimed)", "Aryl §4, §7.3 Fig. 8"),
    "events": MetricDefinition("events", "arrivals, completions, loan and policy ticks handled",
                               ""),
    "schedule_rounds": MetricDefinition("rounds", "times the policy ran", ""),
    "decisions": MetricDefinition("decisions", "decisions the engine applied", ""),
    "wall_seconds": MetricDefinition("s (wall clock)", "time the run took", "DESIGN.md result"),
    "events_per_second": MetricDefinition("events/s", "events / wall_seconds", ""),
}


def preemption_ratio(preemptions: int, jobs: int) -> float:
    """Preemptions per submitted job, Aryl §7.1 Table 5 note (2): "the ratio between total
    number of preemptions and the total number of job submissions" (0 with no jobs)."""
    return preemptions / jobs if jobs else 0.0


def preempted_share(preempted_jobs: int, jobs: int) -> float:
    """Share of submitted jobs preempted at least once (0 with no jobs)."""
    return preempted_jobs / jobs if jobs else 0.0


def utilization(busy_gpu_seconds: float, gpus: int, window: float) -> float:
    """Busy GPU-seconds over the GPU-seconds of `window` (Aryl Table 5 note (1)); 0 for an
    empty window or no GPUs."""
    return busy_gpu_seconds / (gpus * window) if gpus and window > 0 else 0.0


def blocking_index(rows: Sequence[Mapping[str, float]]) -> float:
    """Muri §6.1: "the average ratio of pending time to remaining time of pending jobs".
    Each row carries the mean over the jobs queued at its time; rows with an empty queue have
    no pending job and are left out (an empty queue is not a ratio of 0)."""
    values = [row["blocking_index"] for row in rows if row["queue_length"] > 0]
    return float(np.mean(values)) if values else 0.0


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


@dataclass(frozen=True, slots=True)
class RunRecord:
    """What a finished run leaves behind for its result: plain parts, not the engine that
    made them (the engine builds one at the end of `Simulation.run`)."""

    jobs: Sequence[Any]  # the engine's job states: spec, times, preemptions, scaling ops
    policy: Any  # its name, declared params and optional `counters`
    config: Any  # the EngineConfig
    cluster: ClusterSpec
    trace: str  # the workload's source
    counters: Any  # loans, reclaims and collateral, as counted by the engine
    timeseries: list[dict[str, Any]]
    window: float  # seconds from the first submission to the last completion
    total_busy: Mapping[str, float]  # GPU-seconds busy per pool over the window
    total_inference_busy: float
    total_queued: float  # queue length integrated over the window
    loan_log: list[Any]


def build_result(record: RunRecord, *, wall_seconds: float) -> RunResult:
    """Collect per-job records, the time series and the summary of a finished run."""
    rows: list[dict[str, Any]] = []
    jcts: list[float] = []
    queuing: list[float] = []
    feedback: list[float] = []
    preempted_jobs = preemptions = scaling_ops = migrations = 0
    overhead = 0.0
    first_submit = math.inf
    last_end = 0.0
    for job in record.jobs:
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
    counters = record.counters
    timeseries = record.timeseries
    window = record.window
    summary: dict[str, Any] = {
        "policy": record.policy.name,
        "params": {p.name: getattr(record.policy, p.name) for p in record.policy.params},
        "engine": engine_settings(record.config),
        "cadence": record.config.cadence,
        "seed": record.config.seed,
        "cluster": record.cluster.name,
        "trace": record.trace,
        "jobs": n,
        "finished": len(jcts),
        "unfinished": n - len(jcts),
        "jct": percentiles(jcts),
        "queuing": percentiles(queuing),
        "makespan": round(span, 6),
        "preemptions": preemptions,
        "preemption_ratio": round(preemption_ratio(preemptions, n), 6),
        "preempted_share": round(preempted_share(preempted_jobs, n), 6),
        "scaling_ops": scaling_ops,
        "migrations": migrations,
        "overhead_gpu_seconds": round(overhead, 3),
        "scaling_mode": record.config.scaling_mode,
        "policy_counters": dict(sorted(getattr(record.policy, "counters", {}).items())),
        "gpu_utilization": _utilization(record, window),
        "avg_queue_length": round(record.total_queued / window, 6) if window > 0 else 0.0,
        "blocking_index": round(blocking_index(timeseries), 6),
        "early_feedback": percentiles(feedback),
        "loaning": {
            "servers_lent": counters.servers_lent,
            "reclaims": counters.reclaims,
            "servers_reclaimed": counters.servers_reclaimed,
            "reclaim_preemptions": counters.reclaim_preemptions,
            "collateral_gpus": counters.collateral_gpus,
            "collateral_damage": round(
                counters.collateral_gpus / counters.gpus_reclaimed, 6
            ) if counters.gpus_reclaimed else 0.0,
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
    result = RunResult(summary=summary, jobs=rows, timeseries=timeseries, loan_log=record.loan_log)
    check_invariants(result, first_submit=first_submit)
    return result


_TOLERANCE = 1e-9


def job_digest(jobs: list[dict]) -> str:
    """sha256 over each job's id, start, end, preemptions and migrations, in id order, times
    to the microsecond: two runs give every job the same record exactly when their digests
    agree (`benchmarks/fingerprint.py`, `tests/simulation/test_policy_pinned.py`)."""
    digest = hashlib.sha256()
    for job in sorted(jobs, key=lambda j: str(j["job_id"])):
        digest.update(f"{job['job_id']}|{job['start']:.6f}|{job['end']:.6f}|"
                      f"{job['preemptions']}|{job['migrations']}\n".encode())
    return digest.hexdigest()[:16]


def check_invariants(result: RunResult, *, first_submit: float) -> None:
    """Raise `InvariantViolation` unless the run's numbers can be true: every utilisation and
    every time-series utilisation in [0, 1], each job reported once with 0 ≤ queuing ≤ JCT,
    and, when every job finished, the time series ending at the last completion."""
    summary = result.summary
    problems: list[str] = []
    util = summary["gpu_utilization"]
    for name, value in (("training", util["training"]), ("overall", util["overall"]),
                        *((f"pool {p}", v) for p, v in util["pools"].items())):
        if not -_TOLERANCE <= value <= 1 + _TOLERANCE:
            problems.append(f"{name} utilisation {value}")
    for row in result.timeseries:
        for key, value in row.items():
            if key.startswith("util_") and not -_TOLERANCE <= value <= 1 + _TOLERANCE:
                problems.append(f"{key} {value} at t={row['time']}")
                break
    ids = [row["job_id"] for row in result.jobs]
    if len(set(ids)) != len(ids) or summary["finished"] + summary["unfinished"] != len(ids):
        problems.append("a job is reported more than once")
    for row in result.jobs:
        if row["jct"] is not None and not 0 <= row["queuing"] <= row["jct"] + _TOLERANCE:
            problems.append(f"job {row['job_id']} queued {row['queuing']} s of JCT {row['jct']}")
            break
    if summary["unfinished"] == 0 and result.timeseries:
        end = first_submit + summary["makespan"]
        if abs(result.timeseries[-1]["time"] - end) > 1e-6 * max(1.0, end):
            problems.append(f"time series ends at {result.timeseries[-1]['time']}, the last "
                            f"completion is at {end}")
    if problems:
        raise InvariantViolation(f"run of {summary['policy']} breaks invariants: "
                                 + "; ".join(problems[:5]))


def engine_settings(config: Any) -> dict[str, Any]:
    """The run's `EngineConfig` as JSON values (an unbounded `max_time` as None)."""
    settings = {}
    for name in config.__dataclass_fields__:
        value = getattr(config, name)
        settings[name] = None if isinstance(value, float) and math.isinf(value) else value
    return settings


def _utilization(record: RunRecord, window: float) -> dict[str, Any]:
    """`utilization` of the training pools, of every pool, and overall (SUMMARY_KEYS)."""
    busy = record.total_busy
    inference_busy = record.total_inference_busy
    pools = {}
    training_busy = 0.0
    training_gpus = 0
    for pool in record.cluster.pools:
        pool_busy = busy[pool.name] + (inference_busy if pool.kind == PoolKind.INFERENCE else 0)
        pools[pool.name] = round(utilization(pool_busy, pool.gpus, window), 6)
        if pool.kind != PoolKind.INFERENCE:
            training_busy += busy[pool.name]
            training_gpus += pool.gpus
    total = sum(busy.values()) + inference_busy
    return {
        "training": round(utilization(training_busy, training_gpus, window), 6),
        "overall": round(utilization(total, record.cluster.total_gpus, window), 6),
        "pools": pools,
    }


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 6)


TIME_UNITS = ((7200.0, "h", 3600.0), (120.0, "min", 60.0), (0.0, "s", 1.0))


def time_unit(seconds: float) -> tuple[str, float]:
    """The unit a person reads a duration in, and its length in seconds: hours from two
    hours up, minutes from two minutes up, else seconds (the pages, charts and CLI)."""
    return next(((unit, scale) for least, unit, scale in TIME_UNITS if seconds >= least),
                ("s", 1.0))  # NaN


def jct_pairs(
    baseline_jobs: Sequence[Mapping[str, Any]], jobs: Sequence[Mapping[str, Any]]
) -> list[tuple[float, float]]:
    """(baseline JCT, JCT) of every job finished in both runs, in `jobs`' order."""
    base = {row["job_id"]: row["jct"] for row in baseline_jobs if row["jct"] not in (None, "")}
    pairs = []
    for row in jobs:
        jct = row["jct"]
        ref = base.get(row["job_id"])
        if jct in (None, "") or ref is None or float(jct) <= 0:
            continue
        pairs.append((float(ref), float(jct)))
    return pairs


def speedups(
    baseline_jobs: Sequence[Mapping[str, Any]], jobs: Sequence[Mapping[str, Any]]
) -> dict[str, float]:
    """Per-job speedup = baseline JCT / JCT over jobs finished in both runs (SIA §6.1).

    Reports the geometric mean, p5 and p95, the share of jobs slowed down, and the total and
    maximum slowdown in minutes.
    """
    pairs = jct_pairs(baseline_jobs, jobs)
    ratios = [ref / jct for ref, jct in pairs]
    slow_minutes = [max(0.0, jct - ref) / 60.0 for ref, jct in pairs]
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


def mean_ci95(values: Sequence[float]) -> dict[str, float | None]:
    """Mean over seeds and the half-width of its 95 % Student-t confidence interval,
    t(0.975, n - 1) * s / sqrt(n) with s the sample standard deviation (None for n < 2)."""
    from scipy import stats

    if not values:
        return {"mean": None, "ci95": None, "n": 0}
    mean = statistics.fmean(values)
    if len(values) < 2:
        return {"mean": mean, "ci95": None, "n": 1}
    half = stats.t.ppf(0.975, len(values) - 1) * statistics.stdev(values) / math.sqrt(
        len(values))
    return {"mean": mean, "ci95": float(half), "n": len(values)}
