"""Capacity answers on Muri's trace 3 (issue #19): per policy the fewest training servers
meeting the targets, and the search's wall time on one process and on two.

By default the search is `python -m simulation size` (simulation/capacity.py) on `--jobs`
processes; with `--celery` it is the planner's (`capacity_search_start`) on real
`celery -A planner worker --pool solo` processes on Redis, against a database and MEDIA_ROOT
of its own under benchmarks/out/capacity/, each phase on another seed so the result cache
cannot answer for it. The trace is fixed and these policies draw no random numbers on it,
so one seed is the answer.

    .venv/bin/python benchmarks/bench_capacity.py [--jobs 1 --jobs 2] [--policy P ...]
        [--target queuing.p95<=1h ...] [--max 48] [--points-per-round K]
    REDIS_URL=redis://127.0.0.1:6379/10 .venv/bin/python benchmarks/bench_capacity.py --celery
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


def celery_search(*, workers: int, seed: int, policies: list[str], targets: list[str],
                  high: int, per_round: int) -> tuple[dict, float]:
    """The planner's search with its runs on `workers` Celery worker processes."""
    from bench_sweep import _workers_start, _workers_stop

    from planner.capacity.models import CapacitySearch, CapacityStatus
    from planner.capacity.services import capacity_search_start
    from planner.scenarios.models import Scenario

    processes = _workers_start(workers)
    try:
        started = time.perf_counter()
        search = capacity_search_start(
            scenario=Scenario.objects.get(name="bench"), targets=targets, policies=policies,
            costs={"gpu_hour": {"V100": 2.5}}, axis={"kind": "servers", "pools": ["training"]},
            high=high, seeds=[seed], points_per_round=per_round)
        while CapacitySearch.objects.get(pk=search.pk).status == CapacityStatus.RUNNING:
            time.sleep(0.1)
        wall = time.perf_counter() - started
    finally:
        _workers_stop(processes)
    search.refresh_from_db()
    if search.status != CapacityStatus.SUCCEEDED:
        raise SystemExit(f"search {search.status}: {search.error}")
    return search.result, wall


def celery_setup(redis_url: str) -> None:
    """A database of its own with the trace-3 scenario (policies as given)."""
    import bench_sweep

    bench_sweep.OUT = REPO / "benchmarks" / "out" / "capacity"
    bench_sweep._setup(f"sqlite:///{bench_sweep.OUT / 'bench.sqlite3'}", redis_url)
    from django.core.files.uploadedfile import SimpleUploadedFile

    from planner.clusters.services import cluster_create_from_spec
    from planner.scenarios.services import scenario_create, workload_create_from_upload

    cluster = cluster_create_from_spec(
        spec_text=(TRACES / "muri_cluster_spec_n8g8.csv").read_text(), source="bench")
    workload = workload_create_from_upload(name="muri_trace3", file=SimpleUploadedFile(
        "muri_trace3.csv", (TRACES / "muri_trace3.csv").read_bytes()))
    scenario_create(name="bench", cluster=cluster, workload=workload, seeds=[0],
                    policies=list(POLICIES))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, action="append", default=None)
    parser.add_argument("--policy", action="append", default=None)
    parser.add_argument("--target", action="append", default=None)
    parser.add_argument("--max", type=int, default=48, help="most training servers tried")
    parser.add_argument("--points-per-round", type=int, default=None,
                        help="levels per policy per round (default: the processes)")
    parser.add_argument("--celery", action="store_true",
                        help="the planner's search on Celery workers (needs REDIS_URL)")
    args = parser.parse_args()
    policies, targets = args.policy or list(POLICIES), args.target or list(TARGETS)
    if args.celery:
        import os
        import signal

        sys.path.insert(0, str(REPO / "benchmarks"))
        sys.path.insert(0, str(REPO))
        signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))
        celery_setup(os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/10"))
    walls = {}
    for i, jobs in enumerate(args.jobs or [1, 2]):
        per_round = args.points_per_round or jobs
        if args.celery:
            result, wall = celery_search(workers=jobs, seed=i, policies=policies,
                                         targets=targets, high=args.max, per_round=per_round)
        else:
            result, wall = search(jobs=jobs, policies=policies, targets=targets,
                                  high=args.max, per_round=per_round)
        walls[jobs] = wall
        where = "Celery worker process(es)" if args.celery else "process(es)"
        print(f"{jobs} {where}, {per_round} level(s) per policy per round: {wall:.1f} s, "
              f"{result['evaluations']} runs in {result['rounds']} rounds")
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
