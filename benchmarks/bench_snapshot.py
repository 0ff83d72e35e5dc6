"""Snapshot parsing and state building, the two steps that dominate a live reclaim.

Builds the snapshot of `bench_api.py`'s reclaim (8 training servers, 500 on-loan inference
servers of 8 GPUs, 2,000 running 2-GPU jobs, every 4th split 1+1 across two servers) in
process, with no HTTP or database, and prints median, p95 and minimum (ms, wall clock) over
`--repeat` runs of `parse_snapshot`, `snapshot_simulation` and the whole `decide_reclaim`
of one server, so a change to either step can be measured on its own.

Run: .venv/bin/python benchmarks/bench_snapshot.py
"""

from __future__ import annotations

import argparse
import copy
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from simulation.decide import decide_reclaim  # noqa: E402
from simulation.policies.base import Policy  # noqa: E402
from simulation.snapshot import parse_snapshot, snapshot_simulation  # noqa: E402


def reclaim_state(inference: int = 500, jobs: int = 2000) -> dict[str, Any]:
    """Per inference server: 3 jobs of 2 GPUs, and 1 GPU of each of two split jobs."""
    servers: list[dict[str, Any]] = [
        {"id": f"t{k}", "pool": "training", "kind": "training", "gpus": 8, "gpu_type": "V100",
         "on_loan": False} for k in range(8)
    ]
    servers += [{"id": f"i{k}", "pool": "inference", "kind": "inference", "gpus": 8,
                 "gpu_type": "T4", "on_loan": True} for k in range(inference)]
    entries = []
    for i in range(jobs):
        k = i // 4
        placement = ([{"server": f"i{k}", "gpus": 1, "flexible": False},
                      {"server": f"i{(k + 1) % inference}", "gpus": 1, "flexible": False}]
                     if i % 4 == 3 else [{"server": f"i{k}", "gpus": 2, "flexible": False}])
        entries.append({
            "id": f"r{i}", "status": "running", "gpus_per_worker": 1, "min_workers": 2,
            "max_workers": 2, "num_gpus": 2, "duration": 3600.0, "remaining_seconds": 600.0 + i,
            "model": "generic", "preemptible": True, "priority": 0,
            "submit_time": round(i * 0.01, 3), "placement": placement,
        })
    return {
        "now": 100.0,
        "gpu_types": {"V100": {"speed": 1.0, "memory_gb": 32.0},
                      "T4": {"speed": 0.25, "memory_gb": 16.0}},
        "pools": [{"name": "training", "kind": "training", "lending_limit": None},
                  {"name": "inference", "kind": "inference", "lending_limit": None}],
        "servers": servers, "jobs": entries,
    }


def timed(step: Callable[[], object], repeat: int) -> tuple[float, float, float]:
    """Median, p95 and minimum of `step` in ms, after one warm-up call (on a shared machine
    the minimum moves least with other load)."""
    step()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        step()
        times.append((time.perf_counter() - start) * 1000)
    times.sort()
    p95 = times[min(len(times) - 1, round(0.95 * (len(times) - 1)))]
    return statistics.median(times), p95, times[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=50)
    args = parser.parse_args()
    state = reclaim_state()
    snapshot = parse_snapshot(state)
    request = {"count": 1, "state": state}
    pristine = copy.deepcopy(request)
    rows = [
        ("parse_snapshot", lambda: parse_snapshot(state)),
        ("snapshot_simulation", lambda: snapshot_simulation(snapshot, Policy())),
        ("decide_reclaim (whole)", lambda: decide_reclaim(request)),
    ]
    print(f"{len(state['servers'])} servers, {len(state['jobs'])} jobs, "
          f"{args.repeat} runs each; ms")
    print(f"{'step':<24}{'median':>8}{'p95':>8}{'min':>8}")
    for name, step in rows:
        median, p95, least = timed(step, args.repeat)
        print(f"{name:<24}{median:>8.2f}{p95:>8.2f}{least:>8.2f}")
    assert request == pristine, "a decision changed its request"


if __name__ == "__main__":
    main()
