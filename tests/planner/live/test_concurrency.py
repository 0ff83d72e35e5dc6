"""Parallel reclaim, schedule, loan and job requests on PostgreSQL, then the invariants: no
GPU assigned twice, no job lost, every answer logged once. Threads get their own database
connections, so the cluster row lock is what keeps them apart."""

from __future__ import annotations

import random
import threading

import pytest
from django.db import connection, connections
from django.db.models import Sum

from planner.clusters.models import Server, ServerStatus
from planner.live import services
from planner.live.models import Decision, Job, JobStatus, LiveStateVersion, Placement
from planner.live.selectors import cluster_state_read
from planner.live.state_cache import LIVE_STATES
from tests.planner.live.conftest import client_for, live_cluster_make, user_make
from tests.support import skip_or_fail

THREADS = 6
REQUESTS_PER_THREAD = 12
JOBS = 24


@pytest.fixture
def postgres() -> None:
    if connection.vendor != "postgresql":
        skip_or_fail("concurrent decisions need PostgreSQL row locks (set DATABASE_URL)")


@pytest.mark.django_db(transaction=True)
def test_parallel_decisions_never_assign_a_gpu_twice_or_lose_a_job(postgres) -> None:
    cluster = live_cluster_make(name="race", inference=8)
    user = user_make(name="racer", role="operator")
    setup = client_for(user)
    setup.post(f"/api/v1/clusters/{cluster.pk}/decisions/loan", {"count": 6}, format="json")
    for i in range(JOBS):
        extra = {"min_workers": 2, "max_workers": 8} if i % 3 == 0 else {}
        answer = setup.post("/api/v1/jobs/", {"cluster": cluster.pk, "name": f"j{i}",
                                              "num_gpus": [1, 2, 4, 8][i % 4] if not extra else 2,
                                              "duration_seconds": 600 + i, **extra},
                            format="json")
        assert answer.status_code == 201, answer.content
    base = f"/api/v1/clusters/{cluster.pk}/decisions"
    outcomes: list[tuple[str, int]] = []
    errors: list[BaseException] = []
    lock = threading.Lock()

    def worker(seed: int) -> None:
        rng = random.Random(seed)
        client = client_for(user)
        try:
            for _ in range(REQUESTS_PER_THREAD):
                kind = rng.choice(["schedule", "schedule", "reclaim", "loan", "finish"])
                if kind == "schedule":
                    body = {"policy": rng.choice(["aryl", "fifo", "elastic-tiresias"])}
                    response = client.post(f"{base}/schedule", body, format="json")
                elif kind == "reclaim":
                    body = {"count": 1, "strategy": rng.choice(["aryl", "scf"])}
                    response = client.post(f"{base}/reclaim", body, format="json")
                elif kind == "loan":
                    response = client.post(f"{base}/loan", {"count": 1}, format="json")
                else:
                    running = list(Job.objects.filter(cluster=cluster, status="running")
                                   .values_list("id", flat=True))
                    if not running:
                        continue
                    response = client.post(f"/api/v1/jobs/{rng.choice(running)}/progress",
                                           {"finished": True}, format="json")
                assert response.status_code in (200, 400), response.content
                with lock:
                    outcomes.append((kind, response.status_code))
        except BaseException as exc:  # noqa: BLE001 - reported by the main thread
            errors.append(exc)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(THREADS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert not errors, errors[0]
    assert sum(1 for kind, code in outcomes if kind == "schedule" and code == 200) > 0

    # No GPU assigned twice: per server, placements never exceed its GPUs.
    for server in Server.objects.filter(pool__cluster=cluster).select_related("pool"):
        used = Placement.objects.filter(server=server).aggregate(g=Sum("gpus"))["g"] or 0
        assert used <= server.pool.gpus_per_server, server.name
        if server.pool.kind == "inference" and used:
            assert server.status == ServerStatus.ON_LOAN, server.name
    # No job lost: every job is still there, running jobs hold a valid placement, others none.
    jobs = Job.objects.filter(cluster=cluster)
    assert jobs.count() == JOBS
    for job in jobs:
        gpus = job.placements.aggregate(g=Sum("gpus"))["g"] or 0
        if job.status == JobStatus.RUNNING:
            assert job.min_workers <= gpus // job.gpus_per_worker <= job.max_workers, job.name
        else:
            assert gpus == 0, job.name
    decided = sum(1 for kind, code in outcomes if kind != "finish" and code == 200)
    assert Decision.objects.filter(cluster=cluster).count() == decided + 1  # + the setup loan
    for decision in Decision.objects.filter(cluster=cluster):
        assert services.decision_replay(decision=decision).same, decision.pk

    # The threads' decisions went through this process's copy of the state, derived from
    # answers, brought up to date from the change log or read whole: one more decision
    # leaves a copy that is exactly what the database holds.
    response = setup.post(f"{base}/schedule", {"policy": "fifo"}, format="json")
    assert response.status_code == 200, response.content
    copy = LIVE_STATES.latest((cluster.pk, cluster.created_at))
    assert copy.version == LiveStateVersion.objects.get(cluster=cluster).version
    read = cluster_state_read(cluster=cluster)
    assert (copy.state, copy.server_ids, copy.job_ids, copy.submitted) == read
