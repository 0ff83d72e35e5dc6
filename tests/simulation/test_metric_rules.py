"""Summary metrics on runs small enough to compute by hand (simulation/metrics.py).

Each test names the metric's definition (SUMMARY_KEYS) and derives the expected number in
its docstring. The runs use FIFO and SRTF, which run at arrivals and completions only, so the
numbers do not depend on any periodic scheduling.
"""

from __future__ import annotations

import pytest

from simulation.composition import create_policy
from simulation.engine import EngineConfig, Simulation
from simulation.metrics import (
    blocking_index,
    percentiles,
    preempted_share,
    preemption_ratio,
    speedups,
)
from simulation.model import JobSpec
from tests.simulation.builders import training_cluster, workload


def run(gpus: int, jobs, policy: str = "fifo", **config):
    sim = Simulation(training_cluster(1, gpus), workload(*jobs), create_policy(policy),
                     config=EngineConfig(**config))
    return sim.run()


def queued_rows(result) -> list[tuple[float, int, float]]:
    return [(row["time"], row["queue_length"], row["blocking_index"])
            for row in result.timeseries if row["queue_length"] > 0]


def test_blocking_index_averages_only_rows_with_a_waiting_job():
    """Muri §6.1: blocking index = mean ratio of pending time to remaining time over pending
    jobs; the summary averages it over time-series rows *with a non-empty queue* (a row with
    nobody waiting has no ratio, it is not a 0). Mutation guarded: averaging every row.

    FIFO, 1 GPU, rows every 50 s. A (100 s) runs 0-100; B (200 s) waits 0-100, runs 100-300.
    Rows with B waiting: t=50: 50/200 = 0.25; t=100 (sampled before the completion at 100):
    100/200 = 0.5. Rows at 150-300 have an empty queue. Summary: (0.25 + 0.5) / 2 = 0.375
    (over all six rows it would be 0.125).
    """
    result = run(1, [JobSpec("A", 0.0, 1, 100.0), JobSpec("B", 0.0, 1, 200.0)],
                 sample_interval=50.0)
    assert queued_rows(result) == [(50.0, 1, pytest.approx(0.25)), (100.0, 1, pytest.approx(0.5))]
    assert all(row["blocking_index"] == 0 for row in result.timeseries if row["queue_length"] == 0)
    assert result.summary["blocking_index"] == pytest.approx(0.375)


def test_blocking_index_of_a_row_is_the_mean_over_the_waiting_jobs():
    """Each row's blocking index is the *mean* over queued jobs of waited / remaining.
    Mutation guarded: the sum over jobs, or a ratio not divided by the remaining work.

    FIFO, 1 GPU, rows every 50 s. A (100 s) runs 0-100, B (100 s) 100-200, C (200 s) 200-400.
    t=50: B 50/100, C 50/200 -> 0.375. t=100: 1.0, 0.5 -> 0.75. t=150: C 150/200 = 0.75.
    t=200: C 200/200 = 1.0. Summary over those four rows: 2.875 / 4 = 0.71875.
    """
    result = run(1, [JobSpec("A", 0.0, 1, 100.0), JobSpec("B", 0.0, 1, 100.0),
                     JobSpec("C", 0.0, 1, 200.0)], sample_interval=50.0)
    assert [(t, q) for t, q, _ in queued_rows(result)] == [(50.0, 2), (100.0, 2), (150.0, 1),
                                                           (200.0, 1)]
    assert [b for _, _, b in queued_rows(result)] == pytest.approx([0.375, 0.75, 0.75, 1.0])
    assert result.summary["blocking_index"] == pytest.approx(0.71875)


def test_blocking_index_divides_by_the_work_remaining_not_the_duration():
    """A preempted job's ratio is its time waited over the work it has *left*. Mutation
    guarded: dividing by the job's whole duration.

    SRTF, 1 GPU, no restart overhead, rows every 20 s. `long` (100 s) runs 0-40; `short`
    (30 s) arrives at 40 and preempts it with 60 s left; `long` waits 40-70. Only the row at
    60 has a waiting job: 20 / 60 = 1/3 (20 / 100 = 0.2 by duration).
    """
    result = run(1, [JobSpec("long", 0.0, 1, 100.0), JobSpec("short", 40.0, 1, 30.0)],
                 "srtf", restart_overhead=0.0, sample_interval=20.0)
    assert queued_rows(result) == [(60.0, 1, pytest.approx(1 / 3))]
    assert result.summary["blocking_index"] == pytest.approx(1 / 3, abs=1e-6)


def test_blocking_index_function_skips_empty_queue_rows():
    """The summary function itself: rows without a waiting job are not averaged in."""
    rows = [{"blocking_index": 0.5, "queue_length": 2}, {"blocking_index": 0.0,
                                                          "queue_length": 0},
            {"blocking_index": 1.5, "queue_length": 1}]
    assert blocking_index(rows) == pytest.approx(1.0)
    assert blocking_index([{"blocking_index": 0.0, "queue_length": 0}]) == 0.0


def test_jct_queuing_makespan_utilisation_and_queue_length_of_a_fifo_run():
    """JCT = end - submit, queuing = time waited, makespan = last end - first submit,
    utilisation = busy GPU-seconds / (GPUs × window), average queue length = job-seconds
    queued / window (SUMMARY_KEYS).

    FIFO, 2 GPUs: A (2 GPUs, 100 s) runs 0-100; B (1 GPU, 100 s) waits, runs 100-200.
    JCT 100 and 200 (mean 150); queuing 0 and 100 (mean 50); makespan 200; busy
    2·100 + 1·100 = 300 GPU·s of 2 · 200 = 0.75; queue length 100 job·s / 200 s = 0.5.
    """
    result = run(2, [JobSpec("A", 0.0, 2, 100.0), JobSpec("B", 0.0, 1, 100.0)])
    summary = result.summary
    assert {r["job_id"]: r["jct"] for r in result.jobs} == {"A": 100.0, "B": 200.0}
    assert summary["jct"]["mean"] == 150.0 and summary["jct"]["median"] == 150.0
    assert summary["queuing"]["mean"] == 50.0
    assert summary["makespan"] == 200.0
    assert summary["gpu_utilization"]["training"] == pytest.approx(0.75)
    assert summary["avg_queue_length"] == pytest.approx(0.5)


def test_jct_and_queuing_percentiles_of_a_fifo_run():
    """Summary `jct` and `queuing` hold mean, median, p95 and p99 (linear interpolation, as
    numpy). Mutations guarded: a percentile replaced or mis-rounded.

    FIFO, 1 GPU, three 100 s jobs at 0: JCTs 100, 200, 300 -> mean 200, median 200,
    p95 = 200 + 0.9 · 100 = 290, p99 = 298. Queuing 0, 100, 200 -> 100, 100, 190, 198.
    """
    result = run(1, [JobSpec(f"j{i}", 0.0, 1, 100.0) for i in range(3)])
    assert result.summary["jct"] == {"mean": 200.0, "median": 200.0, "p95": 290.0,
                                     "p99": 298.0}
    assert result.summary["queuing"] == {"mean": 100.0, "median": 100.0, "p95": 190.0,
                                         "p99": 198.0}
    assert percentiles([]) == {"mean": 0.0, "median": 0.0, "p95": 0.0, "p99": 0.0}


def test_preemption_ratio_counts_preemptions_per_submitted_job():
    """Aryl §7.1 Table 5 note (2): preemption ratio = total preemptions / job submissions;
    the share of jobs preempted at least once is `preempted_share`. Mutation guarded: the
    ratio computed as the preempted share (or the other way round).

    SRTF, 1 GPU, no restart overhead. `long` (100 s) is preempted by s1 (5 s, at 10) and
    again by s2 (5 s, at 50): 2 preemptions of 3 jobs = 0.666667; one job of three was
    preempted = 0.333333. Ends: s1 15, s2 55, long 100 + 10 = 110.
    """
    jobs = [JobSpec("long", 0.0, 1, 100.0), JobSpec("s1", 10.0, 1, 5.0),
            JobSpec("s2", 50.0, 1, 5.0)]
    result = run(1, jobs, "srtf", restart_overhead=0.0)
    assert {r["job_id"]: r["end"] for r in result.jobs} == {"long": 110.0, "s1": 15.0,
                                                            "s2": 55.0}
    assert result.summary["preemptions"] == 2
    assert result.summary["preemption_ratio"] == pytest.approx(2 / 3, abs=1e-6)
    assert result.summary["preempted_share"] == pytest.approx(1 / 3, abs=1e-6)
    assert preemption_ratio(3, 2) == 1.5 and preempted_share(1, 2) == 0.5
    assert preemption_ratio(0, 0) == 0.0 and preempted_share(0, 0) == 0.0


def test_speedup_is_baseline_jct_over_jct():
    """SIA §6.1: a job's speedup is baseline JCT / JCT (> 1: faster than the baseline).
    Mutation guarded: the ratio inverted.

    Baseline JCTs a 20, b 30, c 40; run a 10, b 60, c 20: speedups 2, 0.5, 2. Geometric mean
    (2 · 0.5 · 2)^(1/3) = 2^(1/3) = 1.259921; p5 0.5 + 0.1 · 1.5 = 0.65, p95 2; one of three
    slowed; b lost 30 s = 0.5 min.
    """
    base = [{"job_id": "a", "jct": 20.0}, {"job_id": "b", "jct": 30.0},
            {"job_id": "c", "jct": 40.0}]
    mine = [{"job_id": "a", "jct": 10.0}, {"job_id": "b", "jct": 60.0},
            {"job_id": "c", "jct": 20.0}]
    assert speedups(base, mine) == pytest.approx({
        "jobs": 3, "geomean": 1.259921, "p5": 0.65, "p95": 2.0, "slowed_share": 0.333333,
        "slowdown_minutes_total": 0.5, "slowdown_minutes_max": 0.5,
    }, abs=1e-6)


def test_an_equal_jct_is_no_speedup_and_no_slowdown():
    """A job as fast as under the baseline has speedup 1 and is not counted as slowed; with
    no job finished in both runs every statistic is 0."""
    same = [{"job_id": "a", "jct": 50.0}]
    assert speedups(same, same) == {"jobs": 1, "geomean": 1.0, "p5": 1.0, "p95": 1.0,
                                    "slowed_share": 0.0, "slowdown_minutes_total": 0.0,
                                    "slowdown_minutes_max": 0.0}
    assert speedups(same, [{"job_id": "a", "jct": None}])["jobs"] == 0
