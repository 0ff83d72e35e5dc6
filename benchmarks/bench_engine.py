"""Engine speed and memory: prints wall time, events per second and peak RSS per case.

Cases (issue #3's targets in brackets, on this 2-core machine):
  synthetic 15-day 50,000-job trace on 443 × 8 V100: fifo [≤ 10 s], tiresias [≤ 30 s],
  peak memory [≤ 2 GB]; the real 82,247-job Philly trace on 300 × 8 GPUs under srtf
  [≤ 30 s]; srtf on muri_trace4.csv on 8 × 8 [≤ 2 s]; fifo at 5k / 50k / 200k jobs to show
  near-linear growth. Each case runs in a fresh process so peak RSS is its own.

    .venv/bin/python benchmarks/bench_engine.py            # every case
    .venv/bin/python benchmarks/bench_engine.py --quick    # skip the 200k-job case
"""

from __future__ import annotations

import argparse
import multiprocessing
import resource
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
TRACES = REPO.parent / "shared" / "traces"
sys.path.insert(0, str(REPO))

from simulation.model import ClusterSpec, GpuType, PoolKind, PoolSpec  # noqa: E402


def training_cluster(servers: int, gpus: int) -> ClusterSpec:
    return ClusterSpec(
        f"{servers}x{gpus}",
        {"V100": GpuType("V100", 1.0, 32.0)},
        (PoolSpec("training", PoolKind.TRAINING, "V100", servers, gpus),),
    )


def synthetic(num_jobs: int, days: float):
    from simulation.workloads import generate_workload
    from simulation.workloads.generator import GeneratorSpec

    return generate_workload(GeneratorSpec(num_jobs=num_jobs, duration_days=days), seed=1)


def case(label: str, workload_fn, cluster: ClusterSpec, policy: str, queue) -> None:
    from simulation.runner import run_simulation

    workload = workload_fn()
    started = time.perf_counter()
    result = run_simulation(cluster, workload, policy)
    wall = time.perf_counter() - started
    summary = result.summary
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    queue.put((label, policy, len(workload.jobs), wall, summary["events_per_second"], peak_mb,
               summary["jct"]["mean"], summary["gpu_utilization"]["training"]))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="skip the 200k-job case")
    args = parser.parse_args()
    big = training_cluster(443, 8)
    cases = [
        ("synthetic 15d", lambda: synthetic(50_000, 15), big, "fifo"),
        ("synthetic 15d", lambda: synthetic(50_000, 15), big, "tiresias"),
        ("philly 82k", lambda: _trace("pollux_philly.csv"), training_cluster(300, 8), "srtf"),
        ("muri trace4", lambda: _trace("muri_trace4.csv"), training_cluster(8, 8), "srtf"),
        ("scale 5k", lambda: synthetic(5_000, 1.5), big, "fifo"),
        ("scale 50k", lambda: synthetic(50_000, 15), big, "fifo"),
    ]
    if not args.quick:
        cases.append(("scale 200k", lambda: synthetic(200_000, 60), big, "fifo"))
    ctx = multiprocessing.get_context("fork")
    print(f"{'case':<15} {'policy':<9} {'jobs':>7} {'wall s':>8} {'events/s':>10} "
          f"{'peak MB':>8} {'mean JCT s':>11} {'util':>6}")
    for label, fn, cluster, policy in cases:
        queue = ctx.Queue()
        proc = ctx.Process(target=case, args=(label, fn, cluster, policy, queue))
        proc.start()
        row = queue.get()
        proc.join()
        label, policy, jobs, wall, eps, peak, jct, util = row
        print(f"{label:<15} {policy:<9} {jobs:>7} {wall:>8.2f} {eps:>10.0f} {peak:>8.0f} "
              f"{jct:>11.0f} {util:>6.3f}")


def _trace(name: str):
    from simulation.workloads import load_trace

    return load_trace(TRACES / name)


if __name__ == "__main__":
    main()
