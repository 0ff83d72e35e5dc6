"""Capacity answers on Muri's trace 3 (issue #19): per policy the fewest training servers
meeting the targets, and the search's wall time on one process and on two.

The search is `python -m simulation size` (simulation/capacity.py); each measurement runs it
afresh, so nothing is cached between them. The trace is fixed and these policies draw no
random numbers on it, so one seed is the answer (a second would repeat the same runs).

    .venv/bin/python benchmarks/bench_capacity.py [--jobs 1 --jobs 2] [--policy P ...]
        [--target queuing.p95<=1h ...] [--max 48] [--points-per-round K]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
TRACES = REPO.parent / "shared" / "traces"
POLICIES = ("fifo", "tiresias", "muri-s", "elastic-tiresias")
TARGETS = ("queuing.p95<=1h", "jct.mean<=24h")


def search(*, jobs: int, policies: list[str], targets: list[str], high: int,
           per_round: int | None) -> tuple[dict, float]:
    """One search in this process (runs on `jobs` processes); its JSON and wall seconds."""
    sys.path.insert(0, str(REPO))
    from simulation.cli import main

    with tempfile.TemporaryDirectory() as out:
        argv = ["size", "--cluster", str(TRACES / "muri_cluster_spec_n8g8.csv"),
                "--trace", str(TRACES / "muri_trace3.csv"), "--pool", "training",
                "--cost", "V100=2.5", "--max", str(high), "--jobs", str(jobs), "--out", out]
        for policy in policies:
            argv += ["--policy", policy]
        for target in targets:
            argv += ["--target", target]
        if per_round:
            argv += ["--points-per-round", str(per_round)]
        started = time.perf_counter()
        with contextlib.redirect_stdout(io.StringIO()) as printed:
            code = main(argv)
        wall = time.perf_counter() - started
        if code != 0:
            raise SystemExit(f"size exited with {code}: {printed.getvalue()}")
        return json.loads((Path(out) / "capacity.json").read_text()), wall


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, action="append", default=None)
    parser.add_argument("--policy", action="append", default=None)
    parser.add_argument("--target", action="append", default=None)
    parser.add_argument("--max", type=int, default=48, help="most training servers tried")
    parser.add_argument("--points-per-round", type=int, default=None)
    args = parser.parse_args()
    policies, targets = args.policy or list(POLICIES), args.target or list(TARGETS)
    walls = {}
    for jobs in args.jobs or [1, 2]:
        result, wall = search(jobs=jobs, policies=policies, targets=targets, high=args.max,
                              per_round=args.points_per_round)
        walls[jobs] = wall
        print(f"{jobs} process(es): {wall:.1f} s, {result['evaluations']} runs in "
              f"{result['rounds']} rounds")
    print(f"targets: {' and '.join(t['text'] for t in result['targets'])}; "
          f"range 1 to {args.max} servers of 8 V100 at 2.5 per GPU-hour")
    for p in result["policies"]:
        stats = "; ".join(f"{metric} {cell['mean'] / 3600:.2f} h" for metric, cell in
                          p.get("metrics", {}).items())
        answer = p.get("size", p["status"])
        print(f"  {p['policy']:17} {answer:32} {p.get('cost_per_hour', 0):8.2f}/h  {stats}"
              + (f"  non-monotone {p['non_monotone']}" if p["non_monotone"] else ""))
    if result["saving"]:
        print(result["saving"]["sentence"])
    if len(walls) > 1:
        first, *rest = sorted(walls)
        for jobs in rest:
            print(f"speed-up {jobs} vs {first} process(es): {walls[first] / walls[jobs]:.2f}x")


if __name__ == "__main__":
    main()
