"""Live decision API under load: gunicorn on 127.0.0.1 with PostgreSQL, this process as the
client over loopback (`http.client`, bounded loops).

1. Reclaim over 500 on-loan servers hosting 2,000 running jobs: p50/p95 end to end, both
   stateless (the 500/2,000 snapshot in the body) and stateful (the cluster's live state,
   row-locked, applied; each reclaim returns one server, so the state shrinks by one).
   Stateful twice: reclaims in a row on one connection (the web process decides on its
   copy of the state, `planner.live.state_cache`), and each after a job's progress report
   (untimed), which moves the state version on so the process reads the database again.
2. Schedule with 500 queued jobs (aryl and fifo): stateless p50/p95, and the first stateful
   schedule of those 500 jobs.
3. Sustained load: `--rate` requests/s (default 200) for `--seconds` (default 60) of reads
   and small stateless decisions from `--threads` client threads; achieved rate, errors and
   latency percentiles.

It uses a database of its own (`planner_bench` on the server of DATABASE_URL, recreated on
each run) so no test or development data is touched, and turns the throttles off.

Run: DATABASE_URL=postgres://postgres@127.0.0.1:5432/test .venv/bin/python benchmarks/bench_api.py
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import signal
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
BENCH_DB = "planner_bench"
PORT = 8765

SPEC = """\
name: bench-{name}
gpu_types: {{V100: {{speed: 1.0, memory_gb: 32}}, T4: {{speed: 0.25, memory_gb: 16}}}}
pools:
  - {{name: training,  kind: training,  gpu_type: V100, servers: {training}, gpus_per_server: 8}}
  - {{name: inference, kind: inference, gpu_type: T4,   servers: {inference}, gpus_per_server: 8}}
"""


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def bench_database_url(base: str) -> str:
    import psycopg

    parts = urlsplit(base)
    admin = urlunsplit(parts._replace(path="/postgres"))
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {BENCH_DB} WITH (FORCE)")
        conn.execute(f"CREATE DATABASE {BENCH_DB}")
    return urlunsplit(parts._replace(path=f"/{BENCH_DB}"))


def setup(database_url: str) -> dict:
    """Migrate, then build the clusters with the ORM: returns ids and the client token."""
    os.environ["DATABASE_URL"] = database_url
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "planner.settings")
    import django

    django.setup()
    from django.contrib.auth.models import Group, User
    from django.core.management import call_command
    from rest_framework.authtoken.models import Token

    from planner.clusters.models import Server, ServerStatus
    from planner.clusters.services import cluster_create_from_spec
    from planner.live.models import Job, JobStatus, Placement
    from planner.live.selectors import cluster_snapshot

    call_command("migrate", verbosity=0)
    user = User.objects.create_user("bench")
    user.groups.add(Group.objects.get(name="operator"))
    token = Token.objects.create(user=user).key

    loaned = cluster_create_from_spec(spec_text=SPEC.format(name="reclaim", training=8,
                                                            inference=500))
    servers = list(Server.objects.filter(pool__cluster=loaned, pool__kind="inference")
                   .order_by("id"))
    Server.objects.filter(id__in=[s.id for s in servers]).update(status=ServerStatus.ON_LOAN)
    jobs: list = []
    slots: list = []
    for i in range(2000):  # per server 3 jobs of 2 GPUs and one spanning it and the next
        jobs.append(Job(cluster=loaned, name=f"r{i}", status=JobStatus.RUNNING, num_gpus=2,
                        min_workers=2, max_workers=2, duration_seconds=3600,
                        remaining_seconds=600 + i))
    Job.objects.bulk_create(jobs, batch_size=1000)
    for i, job in enumerate(Job.objects.filter(cluster=loaned).order_by("id")):
        k = i // 4
        if i % 4 == 3:
            slots += [Placement(job=job, server=servers[k], gpus=1),
                      Placement(job=job, server=servers[(k + 1) % len(servers)], gpus=1)]
        else:
            slots.append(Placement(job=job, server=servers[k], gpus=2))
    Placement.objects.bulk_create(slots, batch_size=2000)

    queued = cluster_create_from_spec(spec_text=SPEC.format(name="schedule", training=64,
                                                            inference=64))
    Server.objects.filter(pool__cluster=queued, pool__kind="inference").update(
        status=ServerStatus.ON_LOAN)
    Job.objects.bulk_create([
        Job(cluster=queued, name=f"q{i}", num_gpus=[1, 2, 4, 8][i % 4],
            min_workers=[1, 2, 4, 8][i % 4] if i % 5 else 1,
            max_workers=[1, 2, 4, 8][i % 4] * (2 if i % 5 == 0 else 1),
            duration_seconds=300 + 7 * i, remaining_seconds=300 + 7 * i)
        for i in range(500)
    ])
    reporter = Job.objects.filter(cluster=loaned).order_by("id").first()
    return {"token": token, "reclaim_cluster": loaned.pk, "schedule_cluster": queued.pk,
            "reporting_job": reporter.pk,
            "reclaim_state": cluster_snapshot(cluster=loaned),
            "schedule_state": cluster_snapshot(cluster=queued)}


class Client:
    def __init__(self, token: str) -> None:
        self.headers = {"Authorization": f"Token {token}", "Content-Type": "application/json"}
        self.conn = http.client.HTTPConnection("127.0.0.1", PORT, timeout=60)

    def call(self, method: str, path: str, body: dict | None = None) -> tuple[int, float, bytes]:
        data = None if body is None else json.dumps(body)
        started = time.perf_counter()
        try:
            self.conn.request(method, path, body=data, headers=self.headers)
            response = self.conn.getresponse()
            payload = response.read()
        except (OSError, http.client.HTTPException):
            self.conn.close()
            self.conn = http.client.HTTPConnection("127.0.0.1", PORT, timeout=60)
            return 0, time.perf_counter() - started, b""
        return response.status, time.perf_counter() - started, payload


def timed(client: Client, n: int, method: str, path: str, body: dict | None) -> list[float]:
    times = []
    for _ in range(n):
        status, seconds, payload = client.call(method, path, body)
        if status != 200:
            raise SystemExit(f"{path}: HTTP {status}: {payload[:300]!r}")
        times.append(seconds)
    return times


def report(label: str, times: list[float]) -> None:
    ms = [t * 1000 for t in times]
    print(f"{label:58s} n={len(ms):4d}  p50 {statistics.median(ms):7.1f} ms  "
          f"p95 {percentile(ms, 0.95):7.1f} ms  max {max(ms):7.1f} ms")


def sustained(token: str, rate: float, seconds: float, threads: int, ids: dict) -> None:
    small = {"count": 1, "state": {
        "servers": [{"id": f"i{k}", "pool": "inference", "gpus": 8, "on_loan": True}
                    for k in range(4)],
        "jobs": [{"id": "a", "status": "running", "remaining_seconds": 60,
                  "placement": [{"server": "i0", "gpus": 4}, {"server": "i1", "gpus": 4}]}]}}
    requests = [
        ("GET", f"/api/v1/clusters/{ids['schedule_cluster']}/", None),
        ("GET", "/api/v1/jobs/1/hosts", None),
        ("GET", f"/api/v1/servers/?cluster={ids['schedule_cluster']}&status=on_loan", None),
        ("GET", "/api/v1/decisions/?kind=reclaim", None),
        ("POST", "/api/v1/decisions/reclaim", small),
    ]
    total = int(rate * seconds)
    latencies: list[float] = []
    errors: list[int] = []
    lock = threading.Lock()
    start = time.perf_counter() + 0.2

    def run(k: int) -> None:
        client = Client(token)
        for i in range(k, total, threads):
            due = start + i / rate
            pause = due - time.perf_counter()
            if pause > 0:
                time.sleep(pause)
            method, path, body = requests[i % len(requests)]
            status, took, payload = client.call(method, path, body)
            with lock:
                latencies.append(took)
                if status != 200:
                    errors.append(status)
                    if len(errors) <= 3:
                        print(f"  {method} {path}: HTTP {status} {payload[:200]!r}")

    workers = [threading.Thread(target=run, args=(k,)) for k in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=seconds * 3 + 60)
    elapsed = time.perf_counter() - start
    ms = [t * 1000 for t in latencies]
    print(f"sustained: {len(latencies)} requests in {elapsed:.1f} s = "
          f"{len(latencies) / elapsed:.1f} req/s (target {rate:g}), errors {len(errors)} "
          f"{sorted(set(errors))}, p50 {statistics.median(ms):.1f} ms, "
          f"p95 {percentile(ms, 0.95):.1f} ms, p99 {percentile(ms, 0.99):.1f} ms")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rate", type=float, default=200.0)
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--threads", type=int, default=16)
    parser.add_argument("--workers", type=int, default=3, help="gunicorn worker processes")
    parser.add_argument("--server-threads", type=int, default=4,
                        help="gunicorn threads per worker (gthread)")
    parser.add_argument("--samples", type=int, default=40)
    args = parser.parse_args()
    base = os.environ.get("DATABASE_URL", "")
    if not base.startswith("postgres"):
        print("bench_api: set DATABASE_URL to a PostgreSQL server", file=sys.stderr)
        return 2
    database_url = bench_database_url(base)
    ids = setup(database_url)
    env = {**os.environ, "DATABASE_URL": database_url, "PLANNER_THROTTLE_READ": "",
           "PLANNER_THROTTLE_DECIDE": "", "LOG_LEVEL": "WARNING"}
    server = subprocess.Popen(
        [str(REPO / ".venv" / "bin" / "gunicorn"), "planner.wsgi", "-b", f"127.0.0.1:{PORT}",
         "-w", str(args.workers), "-k", "gthread", "--threads", str(args.server_threads),
         "--log-level", "warning"],
        cwd=REPO, env=env, start_new_session=True)
    try:
        client = Client(ids["token"])
        for _ in range(100):
            if client.call("GET", "/api/v1/clusters/", None)[0] == 200:
                break
            time.sleep(0.2)
        rc, sc = ids["reclaim_cluster"], ids["schedule_cluster"]
        body = {"count": 1, "state": ids["reclaim_state"]}
        print(f"snapshot: {len(ids['reclaim_state']['servers'])} servers, "
              f"{len(ids['reclaim_state']['jobs'])} jobs, "
              f"{len(json.dumps(body)) // 1024} KiB request")
        timed(client, 3, "POST", "/api/v1/decisions/reclaim", body)  # warm every worker
        report("reclaim 1 of 500 on loan / 2,000 jobs, stateless (aryl)",
               timed(client, args.samples, "POST", "/api/v1/decisions/reclaim", body))
        report("reclaim 1 of 500 on loan / 2,000 jobs, stateful in a row (aryl)",
               timed(client, args.samples, "POST", f"/api/v1/clusters/{rc}/decisions/reclaim",
                     {"count": 1}))
        cold = []
        progress = f"/api/v1/jobs/{ids['reporting_job']}/progress"
        for i in range(args.samples):
            timed(client, 1, "POST", progress, {"remaining_seconds": 500 - i})
            cold += timed(client, 1, "POST", f"/api/v1/clusters/{rc}/decisions/reclaim",
                          {"count": 1})
        report("reclaim 1 of 500 ..., stateful after a job's report (aryl)", cold)
        for policy in ("aryl", "fifo"):
            body = {"policy": policy, "state": ids["schedule_state"]}
            report(f"schedule 500 queued jobs, stateless ({policy})",
                   timed(client, max(5, args.samples // 4), "POST",
                         "/api/v1/decisions/schedule", body))
        status, seconds, payload = client.call(
            "POST", f"/api/v1/clusters/{sc}/decisions/schedule", {"policy": "aryl"})
        launched = len(json.loads(payload)["launch"]) if status == 200 else 0
        print(f"schedule 500 queued jobs, stateful first round (aryl): {seconds * 1000:.1f} ms,"
              f" HTTP {status}, {launched} launched")
        sustained(ids["token"], args.rate, args.seconds, args.threads, ids)
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(timeout=30)
    return 0


if __name__ == "__main__":
    sys.exit(main())
