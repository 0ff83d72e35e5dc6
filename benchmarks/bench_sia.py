"""SIA benchmarks: a 3-day, 4-queue run of every SIA policy (speedups vs fcfs-pools), the
same with a 3-week history before the 3 evaluated days (`sia history_days=21`; speedups
over the evaluated jobs only), and WillJobsArrive trained on a 3-week history, scored on
the week after (Table 10 style, plus ROC AUC: 0.5 means the features carry no signal).

Run: .venv/bin/python benchmarks/bench_sia.py [--arrivals poisson|closed-loop]
    [--mix alike|varied|table12]
(closed-loop: SIA §3's users with a daily and weekly rhythm; varied: queues that differ as
§6.1's and Table 12's do; `simulation/workloads/sia.py`)
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from simulation.metrics import speedups  # noqa: E402
from simulation.policies.sia.common import queue_quotas, virtual_start_times  # noqa: E402
from simulation.predictors.arrivals import DAY, WillJobsArrive, pool_histories  # noqa: E402
from simulation.runner import run_simulation  # noqa: E402
from simulation.workloads.sia import (  # noqa: E402
    QUEUE_MIXES,
    SiaSetup,
    generate_sia_workload,
    sia_cluster,
)

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


def bench_policies(arrivals: str, mix: str, seed: int = 0) -> None:
    setup = SiaSetup(queues=4, days=3.0, arrivals=arrivals, queue_mix=mix)
    cluster = sia_cluster(setup, seed)
    workload = generate_sia_workload(setup, seed=seed)
    started = time.perf_counter()
    base = run_simulation(cluster, workload, "fcfs-pools", seed=seed)
    print(f"3-day 4-queue SIA setup (seed {seed}): {len(workload)} jobs, "
          f"fcfs-pools {time.perf_counter() - started:.2f} s")
    header = (f"{'policy':<48}{'wall s':>8}{'geomean':>9}{'p5':>7}{'p95':>8}"
              f"{'slowed':>8}{'slow min tot':>13}{'slow min max':>13}")
    print(header)
    for policy, settings in RUNS:
        started = time.perf_counter()
        result = run_simulation(cluster, workload, policy, settings=settings, seed=seed)
        wall = time.perf_counter() - started
        stats = speedups(base.jobs, result.jobs)
        label = policy + "".join(f" {k}={v}" for k, v in settings.items())
        print(f"{label:<48}{wall:>8.2f}{stats['geomean']:>9.2f}{stats['p5']:>7.2f}"
              f"{stats['p95']:>8.2f}{stats['slowed_share']:>8.1%}"
              f"{stats['slowdown_minutes_total']:>13.0f}{stats['slowdown_minutes_max']:>13.0f}")


HISTORY_RUNS = (
    ("maxmin", {}),
    ("ssf", {}),
    ("gssf", {}),
    ("sia-vc", {}),  # perfect per-job predictions: the bound without slowdowns (§5.1)
    ("sia", {}),
    ("sia", {"arrivals": "perfect", "durations": "perfect"}),
    ("sia", {"arrivals": "random"}),
)


def bench_history(arrivals: str, mix: str, seed: int = 0, history_days: float = 21.0,
                  days: float = 3.0) -> None:
    setup = SiaSetup(queues=4, days=history_days + days, arrivals=arrivals,
                     queue_mix=mix)
    cluster = sia_cluster(setup, seed)
    workload = generate_sia_workload(setup, seed=seed)
    split = history_days * DAY

    def evaluated(jobs: list[dict]) -> list[dict]:
        return [row for row in jobs if float(row["submit"]) >= split]

    base = evaluated(run_simulation(cluster, workload, "fcfs-pools", seed=seed).jobs)
    print(f"\n{history_days:.0f}-day history + {days:.0f} evaluated days, 4 queues "
          f"(seed {seed}): {len(base)} evaluated jobs of {len(workload)}")
    print(f"{'policy':<48}{'wall s':>8}{'CPU s':>8}{'geomean':>9}{'p5':>7}{'p95':>8}"
          f"{'slowed':>8}{'slow min tot':>13}{'slow min max':>13}")
    for policy, settings in HISTORY_RUNS:
        if policy == "sia":
            settings = {"history_days": history_days, **settings}
        started, cpu = time.perf_counter(), time.process_time()
        result = run_simulation(cluster, workload, policy, settings=settings, seed=seed)
        wall, cpu = time.perf_counter() - started, time.process_time() - cpu
        stats = speedups(base, evaluated(result.jobs))
        label = policy + "".join(f" {k}={v:g}" if isinstance(v, float) else f" {k}={v}"
                                 for k, v in settings.items())
        print(f"{label:<48}{wall:>8.2f}{cpu:>8.2f}{stats['geomean']:>9.2f}"
              f"{stats['p5']:>7.2f}{stats['p95']:>8.2f}{stats['slowed_share']:>8.1%}"
              f"{stats['slowdown_minutes_total']:>13.0f}{stats['slowdown_minutes_max']:>13.0f}")


def bench_predictor(arrivals: str, mix: str, seed: int = 0) -> None:
    setup = SiaSetup(queues=4, days=28.0, arrivals=arrivals, queue_mix=mix)
    workload = generate_sia_workload(setup, seed=seed)
    starts = virtual_start_times(workload.jobs, queue_quotas(sia_cluster(setup, seed)))
    split = 21 * DAY
    history = pool_histories(workload.jobs, starts, until=split)
    started = time.perf_counter()
    model = WillJobsArrive(seed=seed).fit(history, 0.0, split)
    trained = time.perf_counter() - started
    later = pool_histories(workload.jobs, starts)
    scores = model.evaluate(later, split, 28 * DAY)
    aucs = model.roc_auc(later, split, 28 * DAY)
    print(f"\nWillJobsArrive: trained on 3 weeks x 4 queues in {trained:.2f} s; "
          "scored on the following week")
    print(f"{'quanta':<10}{'precision':>10}{'recall':>8}{'F-score':>9}{'samples':>9}"
          f"{'positive':>10}{'ROC AUC':>9}")
    for minutes, score in scores.items():
        print(f"{minutes:>5.0f} min{score.precision:>10.2f}{score.recall:>8.2f}"
              f"{score.f_score:>9.2f}{score.samples:>9}{score.positives / score.samples:>10.1%}"
              f"{aucs[minutes]:>9.2f}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--arrivals", choices=("poisson", "closed-loop"), default="poisson")
    parser.add_argument("--mix", choices=QUEUE_MIXES, default="alike",
                        help="how the queues differ (SiaSetup.queue_mix)")
    parser.add_argument("--only", choices=("policies", "history", "predictor"))
    args = parser.parse_args()
    print(f"arrivals: {args.arrivals}, queues: {args.mix}")
    for name, bench in (("policies", bench_policies), ("history", bench_history),
                        ("predictor", bench_predictor)):
        if args.only in (None, name):
            bench(args.arrivals, args.mix)
