"""Compositions against their parts (issue #20) on Aryl's calibrated production trace.

`elastic-tiresias+aryl-loan` is EDL's Elastic-Tiresias whose loaned inference servers are
returned by Aryl's Algorithm 1 instead of SCF (the engine's default, which Elastic-Tiresias
runs with); `muri-s+aryl-loan` interleaves jobs on training and loaned servers and returns
them by Algorithm 1; `tiresias+edl-expand` is Elastic-Tiresias without its compaction, and
`srtf+edl-expand` SRTF with EDL's expansion. Beside them their parts: each policy with its
own capacity stage, the same lending nothing (`+no-loan`), and Aryl's own policy. Runs lend
idle inference servers (Figure 1's diurnal load, peak 95 %) on the Aryl trace at `--scale`
(the reproduction's quarter by default) with `--training-share` of its training servers
(0.75: the reproduction's contended ablation, where loaned servers carry more of the
training load).

    .venv/bin/python benchmarks/bench_compositions.py --scale 0.1

`--packing` runs Tiresias' ordering with Gandiva's packing (`tiresias+gandiva-pack`) against
its parts, Tiresias and Gandiva, on the first `--jobs` jobs of Philly's trace
(`pollux_philly.csv`) at `--servers` × 8 GPUs, each job given one of Gandiva's Table 1 models
(uniformly, by a hash of its id: `with_models`), since the trace names none and only those
models' utilisation and packing gains are known.

`--sia` runs SIA's lending with EDL's expansion instead: §6.1's 4-queue, 3-day workload
(closed-loop users, a clock per queue) with `--elastic-share` of its jobs made elastic (half
to twice their workers), speedups against fcfs-pools, the production scheduler.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from simulation.composition import describe_stages, resolve_policy  # noqa: E402
from simulation.dlt_models import GANDIVA_TABLE1  # noqa: E402
from simulation.metrics import speedups  # noqa: E402
from simulation.model import ClusterSpec, GpuType, PoolKind, PoolSpec, Workload  # noqa: E402
from simulation.reproductions.sia import setup as sia_setup  # noqa: E402
from simulation.runner import run_simulation  # noqa: E402
from simulation.workloads import load_trace  # noqa: E402
from simulation.workloads.aryl_trace import (  # noqa: E402
    ArylTraceSpec,
    aryl_cluster,
    aryl_trace_workload,
)
from simulation.workloads.model_mix import with_models  # noqa: E402
from simulation.workloads.sia import generate_sia_workload, sia_cluster  # noqa: E402

POLICIES = ("tiresias+no-loan", "tiresias", "tiresias+aryl-loan", "tiresias+edl-expand",
            "elastic-tiresias+no-loan", "elastic-tiresias", "elastic-tiresias+aryl-loan",
            "srtf", "srtf+edl-expand", "srtf+aryl-expand", "srtf+aryl-loan+aryl-expand",
            "muri-s+no-loan", "muri-s", "muri-s+aryl-loan", "aryl")


PACKING_POLICIES = ("tiresias", "tiresias+gandiva-pack", "srtf", "srtf+gandiva-pack", "gandiva")
TRACES = Path(__file__).resolve().parents[2] / "shared" / "traces"

SIA_POLICIES = ("fcfs-pools+edl-expand", "fcfs-pools+aryl-expand", "sia-vc", "sia-vc+edl-expand",
                "sia-vc+aryl-expand", "sia", "sia+aryl-expand")


def elastic_share(workload: Workload, share: float, seed: int) -> Workload:
    """`share` of the jobs, drawn with `seed`, elastic from half to twice their workers."""
    rng = random.Random(seed)
    return Workload(tuple(
        replace(job, min_workers=max(1, job.requested_workers // 2),
                max_workers=2 * job.requested_workers) if rng.random() < share else job
        for job in workload.jobs), source=f"{workload.source}, {share:.0%} elastic")


def bench_sia(share: float, seed: int) -> None:
    spec = sia_setup(3.0)
    cluster = sia_cluster(spec, seed)
    workload = elastic_share(generate_sia_workload(spec, seed=seed), share, seed)
    base = run_simulation(cluster, workload, "fcfs-pools", seed=seed)
    print(f"SIA §6.1 setup, 3 days, 4 queues: {len(workload)} jobs, {share:.0%} elastic; "
          f"speedups against fcfs-pools")
    print(f"{'policy':<28}{'geomean':>9}{'p95':>8}{'slowed':>8}{'CPU s':>7}  stages")
    for policy in SIA_POLICIES:
        started = time.process_time()
        result = run_simulation(cluster, workload, policy, seed=seed)
        cpu = time.process_time() - started
        stats = speedups(base.jobs, result.jobs)
        print(f"{policy:<28}{stats['geomean']:>9.2f}{stats['p95']:>8.2f}"
              f"{stats['slowed_share']:>8.1%}{cpu:>7.1f}  "
              f"{describe_stages(resolve_policy(policy))}")


def timed_summary(cluster: ClusterSpec, workload: Workload, policy: str,
                  **options: Any) -> tuple[dict[str, Any], float]:
    """The run's summary and the CPU seconds it took."""
    started = time.process_time()
    result = run_simulation(cluster, workload, policy, **options)
    return result.summary, time.process_time() - started


def bench_packing(jobs: int, servers: int, policies: str) -> None:
    trace = load_trace(TRACES / "pollux_philly.csv")
    models = tuple(m.name for m in GANDIVA_TABLE1)
    workload = with_models(Workload(trace.jobs[:jobs], source=f"philly[:{jobs}]"), models)
    cluster = ClusterSpec(f"{servers}x8", {"V100": GpuType("V100", 1.0, 32.0)},
                          (PoolSpec("training", PoolKind.TRAINING, "V100", servers, 8),))
    one_gpu = sum(job.num_gpus == 1 for job in workload.jobs)
    print(f"Philly's first {len(workload)} jobs ({one_gpu} of one GPU), Gandiva Table 1 models; "
          f"{servers} x 8 GPUs")
    print(f"{'policy':<24}{'mean JCT h':>11}{'p95 h':>8}{'queuing h':>10}{'makespan h':>11}"
          f"{'preempt.':>9}{'packed':>8}{'kept':>6}{'undone':>7}{'CPU s':>7}")
    for policy in policies.split(","):
        s, cpu = timed_summary(cluster, workload, policy)
        counters = s["policy_counters"]
        print(f"{policy:<24}{s['jct']['mean'] / 3600:>11.2f}{s['jct']['p95'] / 3600:>8.2f}"
              f"{s['queuing']['mean'] / 3600:>10.2f}{s['makespan'] / 3600:>11.1f}"
              f"{s['preemptions']:>9}{counters.get('packings', 0):>8}"
              f"{counters.get('packings_kept', 0):>6}{counters.get('packings_undone', 0):>7}"
              f"{cpu:>7.1f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=float, default=0.25)
    parser.add_argument("--training-share", type=float, default=0.75)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--policies", default=",".join(POLICIES))
    parser.add_argument("--sia", action="store_true", help="SIA's lending with EDL's expansion")
    parser.add_argument("--elastic-share", type=float, default=0.3)
    parser.add_argument("--packing", action="store_true",
                        help="Tiresias' ordering with Gandiva's packing, on Philly's trace")
    parser.add_argument("--jobs", type=int, default=10_000, help="with --packing")
    parser.add_argument("--servers", type=int, default=60, help="with --packing")
    args = parser.parse_args()
    if args.packing:
        policies = args.policies if args.policies != ",".join(POLICIES) else ",".join(
            PACKING_POLICIES)
        bench_packing(args.jobs, args.servers, policies)
        return
    if args.sia:
        bench_sia(args.elastic_share, args.seed)
        return
    spec = ArylTraceSpec(scale=args.scale)
    full = spec.cluster()
    cluster = aryl_cluster(round(full.pool("training").servers * args.training_share),
                           full.pool("inference").servers)
    workload = aryl_trace_workload(spec, args.seed)
    load = spec.inference_load(args.seed)
    print(f"Aryl trace x{args.scale}: {len(workload)} jobs over {spec.days:g} days; "
          f"{cluster.pool('training').servers} training + {cluster.pool('inference').servers} "
          f"inference servers (lent when idle); seed {args.seed}")
    header = (f"{'policy':<28}{'mean JCT h':>11}{'queuing h':>10}{'preempt.':>9}"
              f"{'by reclaim':>11}{'collateral':>11}{'CPU s':>7}  stages")
    print(header)
    for policy in args.policies.split(","):
        s, cpu = timed_summary(cluster, workload, policy, seed=args.seed, inference_load=load)
        loaning = s["loaning"]
        print(f"{policy:<28}{s['jct']['mean'] / 3600:>11.2f}{s['queuing']['mean'] / 3600:>10.2f}"
              f"{s['preemptions']:>9}{loaning['reclaim_preemptions']:>11}"
              f"{loaning['collateral_damage']:>11.2f}{cpu:>7.1f}  "
              f"{describe_stages(resolve_policy(policy))}")


if __name__ == "__main__":
    main()
