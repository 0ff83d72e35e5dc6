"""A 16-run sweep on one vs two Celery worker processes, and the dispatch overhead per run.

Starts real `celery -A planner worker --pool solo` subprocesses on Redis, against a database
and MEDIA_ROOT of its own under benchmarks/out/sweep/ (SQLite unless --database-url is
given), so nothing of the development database is touched. Each phase uses fresh seeds so
the result cache cannot answer for it.

Run: REDIS_URL=redis://127.0.0.1:6379/14 .venv/bin/python benchmarks/bench_sweep.py
(the Redis database should be one no other worker listens on).
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
OUT = REPO / "benchmarks" / "out" / "sweep"
sys.path.insert(0, str(REPO))

SPEC = """\
name: bench
pools:
  - {name: training,  kind: training,  gpu_type: V100, servers: 8, gpus_per_server: 8}
  - {name: inference, kind: inference, gpu_type: T4,   servers: 8, gpus_per_server: 8,
     lending_limit: 6}
"""


def _setup(database_url: str, redis_url: str) -> None:
    if OUT.exists():
        shutil.rmtree(OUT)
    (OUT / "media").mkdir(parents=True)
    os.environ.update(DJANGO_SETTINGS_MODULE="planner.settings", DATABASE_URL=database_url,
                      REDIS_URL=redis_url, MEDIA_ROOT=str(OUT / "media"), LOG_LEVEL="WARNING")
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)


def _workers_start(count: int) -> list[subprocess.Popen]:
    from planner.celery import app

    app.control.purge()
    processes, names = [], []
    for i in range(count):
        name = f"bench-{i}-{os.getpid()}@bench"
        names.append(name)
        log = (OUT / f"worker-{name}.log").open("ab")
        processes.append(subprocess.Popen(
            [sys.executable, "-m", "celery", "-A", "planner", "worker", "--pool", "solo",
             "-n", name, "-l", "warning"], cwd=REPO, env=os.environ.copy(), stdout=log,
            stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True))
    deadline = time.monotonic() + 60
    while len(app.control.ping(destination=names, timeout=1.0)) < count:
        if time.monotonic() > deadline:
            raise SystemExit(f"workers did not start; see {OUT}/worker-*.log")
    return processes


def _workers_stop(processes: list[subprocess.Popen]) -> None:
    for process in processes:
        os.killpg(process.pid, signal.SIGTERM)
    for process in processes:
        process.wait(timeout=30)


def _sweep_wall(*, workload, seeds: list[int], grid: dict, policies: list[str]) -> tuple:
    """Wall time from creating the sweep to its aggregate, and its runs."""
    from planner.clusters.models import Cluster
    from planner.scenarios.models import Sweep, SweepStatus
    from planner.scenarios.services import scenario_create, sweep_create

    scenario = scenario_create(name=f"bench {seeds[0]}", cluster=Cluster.objects.get(name="bench"),
                               workload=workload, policies=policies, seeds=seeds)
    start = time.perf_counter()
    sweep = sweep_create(scenario=scenario, grid=grid)
    while Sweep.objects.get(pk=sweep.pk).status != SweepStatus.DONE:
        time.sleep(0.05)
    wall = time.perf_counter() - start
    runs = list(sweep.runs.all())
    failed = [r.error for r in runs if r.status != "succeeded"]
    if failed:
        raise SystemExit(f"{len(failed)} run(s) did not succeed: {failed[0]}")
    return wall, runs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--database-url", default=f"sqlite:///{OUT / 'bench.sqlite3'}")
    parser.add_argument("--redis-url", default=os.environ.get("REDIS_URL",
                                                              "redis://127.0.0.1:6379/14"))
    parser.add_argument("--jobs", type=int, default=3000, help="jobs per simulated workload")
    args = parser.parse_args()
    # `timeout` and Ctrl-C: unwind through the `finally` blocks that stop the workers.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))
    _setup(args.database_url, args.redis_url)

    from planner.clusters.services import cluster_create_from_spec
    from planner.scenarios.services import workload_create_from_generator

    cluster_create_from_spec(spec_text=SPEC, source="bench")
    workload = workload_create_from_generator(
        name="bench", spec={"num_jobs": args.jobs, "duration_days": 1}, seed=0)
    tiny = workload_create_from_generator(name="tiny", spec={"num_jobs": 5}, seed=0)
    grid = {"load_scale": [1.0, 1.5]}
    policies = ["fifo", "tiresias"]

    walls = {}
    for workers, first_seed in ((1, 0), (2, 100)):
        processes = _workers_start(workers)
        try:
            walls[workers], runs = _sweep_wall(workload=workload, grid=grid, policies=policies,
                                               seeds=list(range(first_seed, first_seed + 4)))
        finally:
            _workers_stop(processes)
        busy = sum(r.wall_seconds for r in runs)
        print(f"16-run sweep, {workers} worker process(es): {walls[workers]:.2f} s wall, "
              f"{busy:.2f} s inside runs ({args.jobs} jobs each), runs in parallel on "
              f"average: {busy / walls[workers]:.2f}")
    print(f"speedup 2 vs 1 worker processes: {walls[1] / walls[2]:.2f}x "
          f"(on {os.cpu_count()} CPU cores)")

    processes = _workers_start(1)
    try:
        wall, runs = _sweep_wall(workload=tiny, grid={"load_scale": [1.0, 2.0]},
                                 policies=["fifo", "sjf"], seeds=list(range(200, 204)))
    finally:
        _workers_stop(processes)
    inside = statistics.fmean(r.wall_seconds for r in runs)
    print(f"dispatch overhead per run (16 five-job runs, 1 worker): "
          f"{(wall / len(runs) - inside) * 1000:.1f} ms "
          f"({wall / len(runs) * 1000:.1f} ms per run end to end, "
          f"{inside * 1000:.1f} ms inside the task)")


if __name__ == "__main__":
    main()
