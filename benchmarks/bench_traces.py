"""Baseline schedulers on the real Philly-derived traces, on the clusters they were made for.

Muri's four traces ran on 8 servers × 8 GPUs (`muri_cluster_spec_n8g8.csv`); Tiresias' 60-job
trace on 16 × 4 (`tiresias_cluster_spec_n16g4.csv`). Prints one Markdown table (the README's
"Results" section quotes it).

    .venv/bin/python benchmarks/bench_traces.py [--policy fifo --policy sjf ...]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
TRACES = REPO.parent / "shared" / "traces"
sys.path.insert(0, str(REPO))

from simulation.runner import run_simulation  # noqa: E402
from simulation.workloads import load_cluster_spec, load_trace  # noqa: E402

CASES = (
    ("tiresias_60_job.csv", "tiresias_cluster_spec_n16g4.csv"),
    ("muri_trace1.csv", "muri_cluster_spec_n8g8.csv"),
    ("muri_trace2.csv", "muri_cluster_spec_n8g8.csv"),
    ("muri_trace3.csv", "muri_cluster_spec_n8g8.csv"),
    ("muri_trace4.csv", "muri_cluster_spec_n8g8.csv"),
)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--policy", action="append", default=None)
    args = parser.parse_args()
    policies = args.policy or ["fifo", "sjf", "tiresias"]
    print("| trace | cluster | policy | jobs | mean JCT (h) | p99 JCT (h) | mean queuing (h) "
          "| makespan (h) | preemptions | GPU util | wall (s) |")
    print("|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for trace_name, cluster_name in CASES:
        workload = load_trace(TRACES / trace_name)
        cluster = load_cluster_spec(TRACES / cluster_name)
        gpus = cluster.total_gpus
        for policy in policies:
            s = run_simulation(cluster, workload, policy).summary
            print(
                f"| {trace_name} | {gpus} GPUs | {policy} | {s['jobs']} "
                f"| {s['jct']['mean'] / 3600:.2f} | {s['jct']['p99'] / 3600:.2f} "
                f"| {s['queuing']['mean'] / 3600:.2f} | {s['makespan'] / 3600:.1f} "
                f"| {s['preemptions']} | {s['gpu_utilization']['training']:.3f} "
                f"| {s['wall_seconds']:.2f} |"
            )


if __name__ == "__main__":
    main()
