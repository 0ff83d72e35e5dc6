"""Muri: grouping time for 1,000 queued jobs, and whole runs over Muri's Philly traces.

Prints the figures a planner compares with the paper's Table 4 / Fig. 9 (JCT, p99 JCT and
makespan of muri-s, muri-l and the baselines on muri_trace3.csv, 8 servers × 8 GPUs).
Run: .venv/bin/python benchmarks/bench_muri.py [policy ...]
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from simulation.composition import create_policy  # noqa: E402
from simulation.engine import EngineConfig, Simulation  # noqa: E402
from simulation.interleaving_grouping import Bucket, GroupingConfig, multi_round_grouping  # noqa: E402
from simulation.model import JobSpec, Workload  # noqa: E402
from simulation.runner import run_simulation  # noqa: E402
from simulation.workloads import load_cluster_spec, load_trace  # noqa: E402

TRACES = REPO.parent / "shared" / "traces"
POLICIES = ("muri-s", "muri-l", "srsf", "srtf", "tiresias", "themis", "antman")


def bench_policy_grouping(cluster, trace: Workload) -> None:
    """One Muri round with 1,000 jobs queued at once (all submitted at time 0)."""
    jobs = tuple(
        JobSpec(j.job_id, 0.0, j.num_gpus, j.duration, model=j.model, iterations=j.iterations,
                profile=j.profile)
        for j in trace.jobs[:1000]
    )
    sim = Simulation(cluster, Workload(jobs), create_policy("muri-s"),
                     config=EngineConfig(max_time=0.0))
    started = time.perf_counter()
    sim.run()
    print(f"muri-s first round, 1,000 queued jobs on 8x8: {time.perf_counter() - started:.2f} s "
          f"({len(sim.state.running)} jobs running)")


def bench_algorithm1(n: int) -> None:
    """Algorithm 1 alone on n single-GPU jobs with profiles drawn from the trace's mix."""
    trace = load_trace(TRACES / "muri_trace2.csv")
    rows = [j.profile.stage_seconds + (0.0,) for j in trace.jobs if j.num_gpus == 1][:n]
    stages = np.array(rows)
    bucket = Bucket(1, stages, stages.sum(axis=1), list(range(len(rows))), [True] * len(rows))
    started = time.perf_counter()
    (groups,) = multi_round_grouping([bucket], GroupingConfig())
    print(f"Algorithm 1 (merge all matched pairs), {len(rows)} jobs: "
          f"{time.perf_counter() - started:.2f} s, {len(groups)} groups")


def main(policies: tuple[str, ...]) -> None:
    cluster = load_cluster_spec(TRACES / "muri_cluster_spec_n8g8.csv")
    trace3 = load_trace(TRACES / "muri_trace3.csv")
    bench_policy_grouping(cluster, load_trace(TRACES / "muri_trace2.csv"))
    for n in (256, 1000):
        bench_algorithm1(n)
    print("\nmuri_trace3.csv on 8 servers x 8 GPUs")
    print(f"{'policy':10} {'wall s':>7} {'JCT mean s':>11} {'JCT p99 s':>11} "
          f"{'makespan s':>11} {'preempt':>8}")
    for name in policies:
        started = time.perf_counter()
        s = run_simulation(cluster, trace3, name).summary
        print(f"{name:10} {time.perf_counter() - started:7.1f} {s['jct']['mean']:11.0f} "
              f"{s['jct']['p99']:11.0f} {s['makespan']:11.0f} {s['preemptions']:8d}")


if __name__ == "__main__":
    main(tuple(sys.argv[1:]) or POLICIES)
