"""The live demo's replay client, over real HTTP against a live server: it submits due jobs,
lends and reclaims by the inference load, schedules only when something changed, and
advances each job's work at workers / requested workers per second."""

from __future__ import annotations

import pytest
from rest_framework.authtoken.models import Token

from planner.clusters.models import Server, ServerStatus
from planner.clusters.services import cluster_create_from_spec
from planner.live.models import Decision, Job, JobStatus
from planner.live.replay import LiveApi, LiveReplay, ReplayJob, replay_jobs, replay_reset
from tests.planner.live.conftest import user_make

SPEC = """\
name: replay
gpu_types: {V100: {speed: 1.0, memory_gb: 32}, T4x4: {speed: 1.0, memory_gb: 64}}
pools:
  - {name: training,  kind: training,  gpu_type: V100, servers: 1, gpus_per_server: 8}
  - {name: inference, kind: inference, gpu_type: T4x4, servers: 3, gpus_per_server: 2,
     lending_limit: 2}
"""


@pytest.fixture
def replay_setup(live_server, transactional_db):
    cluster = cluster_create_from_spec(spec_text=SPEC)
    token, _ = Token.objects.get_or_create(user=user_make(name="replayer", role="operator"))
    api = LiveApi(base_url=live_server.url, token=token.key)
    busy = {"now": 0}
    jobs = [ReplayJob(name="a", submit=0.0, work=10.0, num_gpus=8, min_workers=8,
                      max_workers=8),
            ReplayJob(name="b", submit=3.0, work=100.0, num_gpus=2, min_workers=1,
                      max_workers=4)]
    replay = LiveReplay(api=api, cluster_id=cluster.pk, jobs=jobs, inference_servers=3,
                        lending_limit=2, inference_busy=lambda now: busy["now"],
                        report_seconds=1.0)
    return cluster, replay, busy


def _kinds(cluster) -> list[str]:
    return [d.kind for d in Decision.objects.filter(cluster=cluster).order_by("id")]


def test_replay_lends_schedules_advances_and_reclaims(replay_setup) -> None:
    cluster, replay, busy = replay_setup
    replay.tick(0.0)
    # No inference load: 3 idle servers, of which the lending limit lets 2 go; then `a`,
    # the only job due (8 GPUs, not elastic), fills the training server.
    assert _kinds(cluster) == ["loan", "schedule"]
    assert len(replay.on_loan) == 2
    assert Job.objects.get(name="a").status == JobStatus.RUNNING
    assert replay.active["a"].workers == 8

    replay.tick(1.0)  # nothing arrives, finishes or changes hands: no decision asked
    assert _kinds(cluster) == ["loan", "schedule"]
    # ...but `a` did 1 s of work at 8 / 8 workers and reported it (report_seconds = 1).
    assert Job.objects.get(name="a").remaining_seconds == pytest.approx(9.0)

    replay.tick(4.0)  # `b` arrives (elastic: 1 to 4 workers): only loaned servers have room
    assert _kinds(cluster) == ["loan", "schedule", "schedule"]
    assert Job.objects.get(name="a").remaining_seconds == pytest.approx(6.0)
    b_workers = replay.active["b"].workers
    assert 1 <= b_workers <= 4

    busy["now"] = 3  # the inference load needs all three servers: both loans come back
    replay.tick(5.0)
    assert _kinds(cluster)[-2:] == ["reclaim", "schedule"]
    assert replay.on_loan == set()
    assert not Server.objects.filter(pool__cluster=cluster, status=ServerStatus.ON_LOAN).exists()
    b = Job.objects.get(name="b")
    assert b.status == JobStatus.QUEUED and b.preemptions == 1
    # `b` ran 1 s at b_workers / 2 of its speed and keeps that progress (it checkpoints).
    assert replay.active["b"].left == pytest.approx(100.0 - b_workers / 2)

    replay.tick(10.0)  # `a` has 10 - 9 = 1 s left at t = 9: done by t = 10
    assert Job.objects.get(name="a").status == JobStatus.FINISHED
    assert "a" not in replay.active and replay.finished == 1
    assert not replay.done  # `b` still waits

    assert replay_reset(api=replay.api, cluster_id=cluster.pk) == 1
    assert Job.objects.get(name="b").status == JobStatus.CANCELLED


def test_replay_jobs_compress_the_philly_day_and_make_multi_gpu_jobs_elastic() -> None:
    jobs = replay_jobs(speed=100.0, prefix="r1-")
    assert len(jobs) == 708 and jobs[0].submit == 0.0
    # The first two rows: 2017-10-19 02:51:13 (964 s) and 02:51:21 (1,050 s), at 100x.
    assert jobs[1].submit == pytest.approx(0.08) and jobs[0].work == pytest.approx(9.64)
    assert jobs[0].name == "r1-philly-0"
    four = next(job for job in jobs if job.num_gpus == 4)
    body = four.body(cluster_id=7)
    assert (body["min_workers"], body["max_workers"]) == (2, 8)
    assert (jobs[0].min_workers, jobs[0].max_workers) == (1, 1)
