"""SIA benchmarks: a 3-day, 4-queue run of every SIA policy (speedups vs fcfs-pools) and
WillJobsArrive trained on a 3-week history, scored on the week after (Table 10 style).

Run: .venv/bin/python benchmarks/bench_sia.py
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from simulation.metrics import speedups  # noqa: E402
from simulation.policies.sia.common import queue_quotas, virtual_start_times  # noqa: E402
from simulation.predictors.arrivals import DAY, WillJobsArrive, pool_histories  # noqa: E402
from simulation.runner import run_simulation  # noqa: E402
from simulation.workloads.sia import SiaSetup, generate_sia_workload, sia_cluster  # noqa: E402

RUNS = (
    ("ssf", {}),
    ("gssf", {}),
    ("maxmin", {}),
    ("sia-vc", {}),
    ("sia", {}),
    ("sia", {"arrivals": "perfect", "durations": "perfect"}),
    ("sia", {"arrivals": "random"}),
    ("sia", {"arrivals": "random", "durations": "random"}),
)


def bench_policies(seed: int = 0) -> None:
    setup = SiaSetup(queues=4, days=3.0)
    cluster = sia_cluster(setup)
    workload = generate_sia_workload(setup, seed=seed)
    started = time.perf_counter()
    base = run_simulation(cluster, workload, "fcfs-pools", seed=seed)
    print(f"3-day 4-queue SIA setup (seed {seed}): {len(workload)} jobs, "
          f"fcfs-pools {time.perf_counter() - started:.2f} s")
    header = (f"{'policy':<34}{'wall s':>8}{'geomean':>9}{'p5':>7}{'p95':>8}"
              f"{'slowed':>8}{'slow min tot':>13}{'slow min max':>13}")
    print(header)
    for policy, settings in RUNS:
        started = time.perf_counter()
        result = run_simulation(cluster, workload, policy, settings=settings, seed=seed)
        wall = time.perf_counter() - started
        stats = speedups(base.jobs, result.jobs)
        label = policy + "".join(f" {k}={v}" for k, v in settings.items())
        print(f"{label:<34}{wall:>8.2f}{stats['geomean']:>9.2f}{stats['p5']:>7.2f}"
              f"{stats['p95']:>8.2f}{stats['slowed_share']:>8.1%}"
              f"{stats['slowdown_minutes_total']:>13.0f}{stats['slowdown_minutes_max']:>13.0f}")


def bench_predictor(seed: int = 0) -> None:
    setup = SiaSetup(queues=4, days=28.0)
    workload = generate_sia_workload(setup, seed=seed)
    starts = virtual_start_times(workload.jobs, queue_quotas(sia_cluster(setup)))
    split = 21 * DAY
    history = pool_histories(workload.jobs, starts, until=split)
    started = time.perf_counter()
    model = WillJobsArrive(seed=seed).fit(history, 0.0, split)
    trained = time.perf_counter() - started
    scores = model.evaluate(pool_histories(workload.jobs, starts), split, 28 * DAY)
    print(f"\nWillJobsArrive: trained on 3 weeks x 4 queues in {trained:.2f} s; "
          "scored on the following week")
    print(f"{'quanta':<10}{'precision':>10}{'recall':>8}{'F-score':>9}{'samples':>9}"
          f"{'positive':>10}")
    for minutes, score in scores.items():
        print(f"{minutes:>5.0f} min{score.precision:>10.2f}{score.recall:>8.2f}"
              f"{score.f_score:>9.2f}{score.samples:>9}{score.positives / score.samples:>10.1%}")


if __name__ == "__main__":
    bench_policies()
    bench_predictor()
