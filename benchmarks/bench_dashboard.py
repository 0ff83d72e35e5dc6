"""Comparison page for 8 policies on a 50,000-job run: server time and page size.

Targets (issue #8): <= 1 s of server time and <= 3 MB of HTML plus figure data.

The result is real: the simulator runs FIFO on a generated 50,000-job workload (a few
seconds). Simulating eight different policies on 50,000 jobs takes many minutes (SRTF alone
about 4.5 min here), so that one result is stored eight times, once under each of eight
registered policy names. The page does the same work for eight identical results as for eight
different ones: it reads eight Parquet pairs and draws the same number of traces and points.

Runs against a throwaway SQLite database and MEDIA_ROOT in a temporary folder.
Usage: .venv/bin/python benchmarks/bench_dashboard.py [--jobs 50000] [--repeat 5]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

SPEC = """
name: bench
gpu_types: {V100: {speed: 1.0, memory_gb: 32}, T4: {speed: 0.25, memory_gb: 16}}
pools:
  - {name: training, kind: training, gpu_type: V100, servers: 240, gpus_per_server: 8}
  - {name: inference, kind: inference, gpu_type: T4, servers: 60, gpus_per_server: 8}
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=50_000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()

    scratch = Path(tempfile.mkdtemp(prefix="bench-dashboard-"))
    os.environ["DATABASE_URL"] = f"sqlite:///{scratch / 'db.sqlite3'}"
    os.environ["MEDIA_ROOT"] = str(scratch / "media")
    os.environ.pop("REDIS_URL", None)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "planner.settings")
    import django

    django.setup()
    from django.conf import settings
    from django.contrib.auth import get_user_model
    from django.core.management import call_command
    from django.test import Client
    from django.urls import reverse
    from django.utils import timezone

    from planner.clusters.services import cluster_create_from_spec, cluster_to_spec
    from planner.scenarios import results
    from planner.scenarios.inputs import inference_load_to_simulation, workload_to_simulation
    from planner.scenarios.models import Run, RunResult, RunStatus
    from planner.scenarios.services import (
        inference_load_create_generated,
        scenario_create,
        workload_create_from_generator,
    )
    from simulation.policies import registry
    from simulation.runner import run_simulation

    settings.ALLOWED_HOSTS = ["testserver"]
    settings.MEDIA_ROOT = os.environ["MEDIA_ROOT"]
    call_command("migrate", verbosity=0)

    policies = list(registry())[:8]
    cluster = cluster_create_from_spec(spec_text=SPEC, source="bench")
    workload = workload_create_from_generator(
        name="bench", spec={"num_jobs": args.jobs, "arrival_rate_per_hour": 400}, seed=1)
    load = inference_load_create_generated(name="diurnal", params={"days": 8})
    scenario = scenario_create(name="bench", cluster=cluster, workload=workload,
                               inference_load=load, policies=policies, seeds=[0])

    spec = cluster_to_spec(cluster=cluster)
    started = time.perf_counter()
    result = run_simulation(spec, workload_to_simulation(workload=workload), "fifo", seed=0,
                            inference_load=inference_load_to_simulation(profile=load,
                                                                        cluster=spec))
    simulated = time.perf_counter() - started
    now = timezone.now()
    for policy in policies:
        run = Run.objects.create(scenario=scenario, policy=policy, seed=0, content_hash=policy,
                                 status=RunStatus.SUCCEEDED, progress=1.0, started_at=now,
                                 finished_at=now)
        directory = results.result_write(run_id=run.pk, attempt=1, result=result)
        RunResult.objects.create(run=run, summary={**result.summary, "policy": policy},
                                 directory=directory)

    client = Client()
    client.force_login(get_user_model().objects.create_user("bench", password="bench-pw-1"))
    url = reverse("dashboard:scenario-compare", args=[scenario.pk])
    times, size = [], 0
    for _ in range(args.repeat + 1):
        started = time.perf_counter()
        response = client.get(url)
        times.append(time.perf_counter() - started)
        assert response.status_code == 200, response.status_code
        size = len(response.content)
    if os.environ.get("BENCH_PROFILE"):
        import cProfile
        import pstats

        profiler = cProfile.Profile()
        profiler.runcall(client.get, url)
        pstats.Stats(profiler).sort_stats("cumulative").print_stats(25)
    server = statistics.median(times[1:])  # the first request also warms imports and caches

    print(f"workload: {args.jobs} jobs, FIFO simulated once in {simulated:.1f} s "
          f"({len(result.jobs)} job rows, {len(result.timeseries)} time-series rows), "
          f"stored as {len(policies)} runs: {', '.join(policies)}")
    print(f"comparison page server time: median {server:.3f} s over {args.repeat} requests "
          f"(first {times[0]:.3f} s); target <= 1 s: {'ok' if server <= 1 else 'MISSED'}")
    print(f"comparison page HTML with figure data: {size / 1e6:.2f} MB "
          f"(plotly.min.js is a separate cached static file); "
          f"target <= 3 MB: {'ok' if size <= 3e6 else 'MISSED'}")


if __name__ == "__main__":
    main()
