"""Aryl benchmarks: reclaim and knapsack latency, the Basic scenario at full scale, and the
two-phase heuristic's gap to the exact allocator on the paper's Tables 2-4.

Run: .venv/bin/python benchmarks/bench_aryl.py [--skip-scenario]
"""

from __future__ import annotations

import dataclasses
import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from simulation.decisions import Slot  # noqa: E402
from simulation.policies.aryl_exact import (  # noqa: E402
    EXAMPLE_WORKERS,
    TABLE_2,
    TABLE_4,
    heuristic_allocation,
    optimal_allocation,
)
from simulation.policies.aryl_knapsack import (  # noqa: E402
    flexible_group,
    solve_multiple_choice_knapsack,
)
from simulation.reclaim.aryl import HostedJob, select_reclaim_servers  # noqa: E402
from simulation.runner import run_simulation  # noqa: E402
from simulation.scenarios import load_named_scenarios  # noqa: E402
from simulation.workloads.cluster_spec import cluster_spec_from_dict  # noqa: E402
from simulation.workloads.generator import GeneratorSpec, generate_workload  # noqa: E402
from simulation.workloads.inference_load import generate_inference_load  # noqa: E402


def reclaim_instance(servers: int, jobs: int, seed: int) -> tuple[list[str], list[HostedJob]]:
    """`jobs` jobs packed on `servers` 8-GPU servers; a tenth span two or three servers."""
    rng = random.Random(seed)
    ids = [f"inference-{i}" for i in range(1, servers + 1)]
    free = dict.fromkeys(ids, 8)
    hosted = []
    for k in range(jobs):
        span = rng.sample(ids, rng.choice([2, 3])) if rng.random() < 0.1 else [rng.choice(ids)]
        slots = tuple(Slot(s, 1, flexible=bool(i) and rng.random() < 0.3)
                      for i, s in enumerate(span) if free[s] > 0)
        for slot in slots:
            free[slot.server] -= 1
        if slots:
            hosted.append(HostedJob(f"j{k}", slots))
    return ids, hosted


def bench_reclaim() -> None:
    servers, jobs = reclaim_instance(500, 2000, seed=1)
    for count in (1, 10, 50, 100):
        times = []
        for _ in range(21):
            start = time.perf_counter()
            answer = select_reclaim_servers(servers, jobs, count)
            times.append(time.perf_counter() - start)
        print(f"reclaim 500 servers / {len(jobs)} jobs, count {count:3d}: median "
              f"{statistics.median(times) * 1e3:.2f} ms (min {min(times) * 1e3:.2f}), "
              f"{len(answer.preempted_jobs)} "
              f"preempted, {len(answer.scaled_in)} scaled in (target <= 5 ms)")


def bench_knapsack() -> None:
    rng = random.Random(2)
    groups = []
    for k in range(300):
        base = rng.choice([1, 2, 4, 8])
        extra = rng.choice([1, 2, 4, 8, 16])
        d = rng.choice([1, 1, 2, 4])
        groups.append(flexible_group(f"j{k}", rng.uniform(600, 86400),
                                     [float(base + w) for w in range(extra + 1)], d))
    times = []
    for _ in range(11):
        start = time.perf_counter()
        solve_multiple_choice_knapsack(groups, 4000)
        times.append(time.perf_counter() - start)
    print(f"knapsack 300 elastic jobs, 4,000 free GPUs: median "
          f"{statistics.median(times) * 1e3:.1f} ms (min {min(times) * 1e3:.1f}; "
          f"target <= 100 ms)")


def bench_gap() -> None:
    print("two-phase heuristic vs exact allocator (8 workers, average JCT):")
    for name, jobs in (("Table 2/3", TABLE_2), ("Table 4", TABLE_4)):
        split, heuristic = heuristic_allocation(jobs, EXAMPLE_WORKERS)
        best_split, best = optimal_allocation(jobs, EXAMPLE_WORKERS)
        print(f"  {name}: heuristic {split} -> {heuristic:.2f}, exact {best_split} -> "
              f"{best:.2f}, gap {100 * (heuristic / best - 1):.1f}%")


def bench_basic_scenario() -> None:
    scenario = load_named_scenarios()["aryl-basic"]
    cluster = cluster_spec_from_dict(scenario.cluster)
    spec_values = dict(scenario.workload)
    spec_values["gpu_types"] = tuple(tuple(x) for x in spec_values["gpu_types"])
    workload = generate_workload(dataclasses.replace(GeneratorSpec(), **spec_values), seed=0)
    load = generate_inference_load(**scenario.inference_load, seed=0)
    start, cpu = time.perf_counter(), time.process_time()
    result = run_simulation(cluster, workload, scenario.policy, settings=scenario.settings,
                            inference_load=load)
    wall, cpu = time.perf_counter() - start, time.process_time() - cpu
    s = result.summary
    print(f"Basic scenario, {len(workload)} jobs, 15 days, 3,544 V100 + 1,040 V100-eq. of T4: "
          f"{wall:.1f} s "
          f"wall, {cpu:.1f} s CPU (target <= 60 s); mean JCT {s['jct']['mean']:.0f} s, "
          f"mean queuing {s['queuing']['mean']:.0f} s, preemptions {s['preemptions']}")


if __name__ == "__main__":
    bench_reclaim()
    bench_knapsack()
    bench_gap()
    if "--skip-scenario" not in sys.argv:
        bench_basic_scenario()
