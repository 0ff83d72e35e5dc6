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
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from simulation.composition import describe_stages, resolve_policy  # noqa: E402
from simulation.runner import run_simulation  # noqa: E402
from simulation.workloads.aryl_trace import (  # noqa: E402
    ArylTraceSpec,
    aryl_cluster,
    aryl_trace_workload,
)

POLICIES = ("tiresias+no-loan", "tiresias", "tiresias+aryl-loan", "tiresias+edl-expand",
            "elastic-tiresias+no-loan", "elastic-tiresias", "elastic-tiresias+aryl-loan",
            "srtf", "srtf+edl-expand", "muri-s+no-loan", "muri-s", "muri-s+aryl-loan", "aryl")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=float, default=0.25)
    parser.add_argument("--training-share", type=float, default=0.75)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--policies", default=",".join(POLICIES))
    args = parser.parse_args()
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
        started = time.process_time()
        result = run_simulation(cluster, workload, policy, seed=args.seed, inference_load=load)
        cpu = time.process_time() - started
        s = result.summary
        loaning = s["loaning"]
        print(f"{policy:<28}{s['jct']['mean'] / 3600:>11.2f}{s['queuing']['mean'] / 3600:>10.2f}"
              f"{s['preemptions']:>9}{loaning['reclaim_preemptions']:>11}"
              f"{loaning['collateral_damage']:>11.2f}{cpu:>7.1f}  "
              f"{describe_stages(resolve_policy(policy))}")


if __name__ == "__main__":
    main()
