"""A process's cached live state (`state_cache`) is exactly what the database holds.

Decisions in a row decide on the copy the previous one derived from its own answer; every
other write moves the state version on so the next decision reads the database again.
"""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db.models import RestrictedError

from planner.clusters.models import GpuType, Server, ServerStatus
from planner.live import services
from planner.live.models import Decision, Job, LiveStateVersion, Placement
from planner.live.selectors import cluster_state, cluster_state_read
from planner.live.state_cache import LIVE_STATES
from simulation.errors import InputError
from tests.planner.live.conftest import live_cluster_make


@pytest.fixture(autouse=True)
def _empty_cache():
    LIVE_STATES.clear()
    yield
    LIVE_STATES.clear()


def cached(cluster):
    version = LiveStateVersion.objects.get(cluster=cluster).version
    return LIVE_STATES.get((cluster.pk, cluster.created_at), version)


def copy_fields(copy) -> tuple:
    """A cached copy's fields as `cluster_state_read` returns them."""
    return copy.state, copy.server_ids, copy.job_ids, copy.submitted


@pytest.fixture
def decide(django_capture_on_commit_callbacks):
    """A stateful decision whose transaction commits, so its copy is cached."""
    def run(cluster, kind: str, **body) -> Decision:
        with django_capture_on_commit_callbacks(execute=True):
            return services.decision_stateful(cluster_id=cluster.pk, kind=kind, body=body,
                                              actor=None)
    return run


def submit(cluster, name: str, gpus: int, **extra) -> Job:
    return services.job_submit(cluster=cluster, name=name, num_gpus=gpus,
                               duration_seconds=600 + 60 * gpus, **extra)


@pytest.mark.django_db
def test_decisions_in_a_row_decide_on_a_copy_equal_to_the_database(
        cluster, decide) -> None:
    decide(cluster, "loan", count=4)
    copy = cached(cluster)
    assert copy is not None and copy.state == cluster_state(cluster=cluster)
    assert copy_fields(copy) == cluster_state_read(cluster=cluster)
    for i, gpus in enumerate([8, 8, 4, 2, 2]):
        submit(cluster, f"rigid-{i}", gpus)
    submit(cluster, "elastic-a", 4, min_workers=2, max_workers=16)
    submit(cluster, "elastic-b", 2, min_workers=1, max_workers=8)
    assert cached(cluster) is None  # submitting moved the version on
    kinds = set()
    steps = [("schedule", {"policy": "aryl"}), ("reclaim", {"count": 1}),
             ("schedule", {"policy": "aryl"}), ("reclaim", {"count": 2}),
             ("loan", {"count": 1}), ("schedule", {"policy": "srtf"}),
             ("schedule", {"policy": "aryl"}), ("reclaim", {"count": 1})]
    for kind, body in steps:
        decision = decide(cluster, kind, **body)
        copy = cached(cluster)
        assert copy is not None, kind
        assert copy_fields(copy) == cluster_state_read(cluster=cluster), \
            (kind, decision.response)
        assert services.decision_replay(decision=decision).same
        kinds.update(key for key, value in decision.response.items()
                     if isinstance(value, list) and value)
    # The sequence exercised every kind of change the copy is derived from.
    assert {"servers", "launch", "preempted_jobs", "scaled_in", "scale_out"} <= kinds, kinds


@pytest.mark.django_db
def test_writes_outside_decisions_make_the_next_decision_read_the_database(
        cluster, decide) -> None:
    decide(cluster, "loan", count=2)
    assert cached(cluster) is not None
    server = Server.objects.get(pool__cluster=cluster, name="training-1")
    server.status = ServerStatus.OFFLINE
    server.save()  # as the admin does
    assert cached(cluster) is None
    decision = decide(cluster, "schedule", policy="fifo")
    assert "training-1" not in {s["id"] for s in decision.request["state"]["servers"]}
    job = submit(cluster, "late", 2)
    decision = decide(cluster, "schedule", policy="fifo")
    assert [entry["job"] for entry in decision.response["launch"]] == ["late"]
    services.job_report(job=job, remaining_seconds=100.0)
    assert cached(cluster) is None
    decision = decide(cluster, "reclaim", count=1)
    late = next(j for j in decision.request["state"]["jobs"] if j["id"] == "late")
    assert late["remaining_seconds"] == 100.0


@pytest.mark.django_db
def test_a_failed_decision_leaves_the_copy_and_the_version_alone(
        cluster, decide) -> None:
    decide(cluster, "loan", count=2)
    before = cached(cluster)
    with pytest.raises(InputError) as failure:
        decide(cluster, "reclaim", count=5)
    assert failure.value.field == "count"
    assert cached(cluster) is before


@pytest.mark.django_db
def test_snapshot_submit_times_are_seconds_since_the_cluster_was_created(cluster) -> None:
    offsets = {"j0": timedelta(seconds=1.234_4), "j1": timedelta(days=40, seconds=0.012_3),
               "j2": timedelta(seconds=7.000_1)}
    for name, offset in offsets.items():
        job = submit(cluster, name, 2)
        Job.objects.filter(pk=job.pk).update(submitted_at=cluster.created_at + offset)
    times = {job["id"]: job["submit_time"] for job in cluster_state(cluster=cluster)["jobs"]}
    assert times == pytest.approx({name: round(offset.total_seconds(), 3)
                                   for name, offset in offsets.items()}, abs=1e-6)


@pytest.mark.django_db
def test_placement_and_gpu_type_edits_invalidate_the_copy_and_a_cluster_deletes_cleanly(
        cluster, decide) -> None:
    other = live_cluster_make(name="other")
    for live in (cluster, other):
        decide(live, "loan", count=2)
        submit(live, "small", 2)
        decide(live, "schedule", policy="fifo")
    assert cached(cluster) is not None
    Placement.objects.get(job__cluster=cluster).save()  # as the admin's job inline does
    assert cached(cluster) is None
    decide(cluster, "schedule", policy="fifo")
    assert cached(cluster) is not None
    gpu_type = GpuType.objects.get(name="V100")
    gpu_type.speed = 2.0
    gpu_type.save()
    assert cached(cluster) is None and cached(other) is None
    # A server still holding a job's GPUs is not deleted on its own; its cluster is, whole.
    with pytest.raises(RestrictedError):
        Placement.objects.get(job__cluster=other).server.delete()
    pk = cluster.pk
    cluster.delete()
    assert not LiveStateVersion.objects.filter(cluster_id=pk).exists()
    assert not Job.objects.filter(cluster_id=pk).exists()
    assert Job.objects.filter(cluster=other).exists()


@pytest.fixture
def whole_reads(monkeypatch):
    """Counts the decisions that read the cluster's whole state from the database."""
    reads = []
    real = services.cluster_state_read

    def counted(*, cluster):
        reads.append(cluster.pk)
        return real(cluster=cluster)

    monkeypatch.setattr(services, "cluster_state_read", counted)
    return reads


@pytest.mark.django_db
def test_an_older_copy_is_brought_up_to_date_from_the_rows_the_change_log_names(
        cluster, decide, whole_reads) -> None:
    decide(cluster, "loan", count=4)
    for i, gpus in enumerate([8, 4, 2, 2]):
        submit(cluster, f"rigid-{i}", gpus)
    submit(cluster, "elastic", 4, min_workers=2, max_workers=16)
    decide(cluster, "schedule", policy="aryl")
    assert whole_reads == [cluster.pk]  # only the first decision read everything
    running = list(Job.objects.filter(cluster=cluster, status="running").order_by("id"))
    assert len(running) >= 3

    other_process = cached(cluster)  # a copy another web process would still hold
    decide(cluster, "reclaim", count=1)  # ...while this one decides
    LIVE_STATES.clear()
    LIVE_STATES.put((cluster.pk, cluster.created_at), other_process)
    services.job_report(job=running[0], remaining_seconds=42.0)
    services.job_report(job=running[1], finished=True)
    services.job_cancel(job=running[2])
    submit(cluster, "late", 2)
    reports = list(Decision.objects.values_list("id", flat=True))
    for kind, body in [("schedule", {"policy": "aryl"}), ("reclaim", {"count": 1}),
                       ("loan", {"count": 1}), ("schedule", {"policy": "fifo"})]:
        decision = decide(cluster, kind, **body)
        assert copy_fields(cached(cluster)) == cluster_state_read(cluster=cluster), kind
        assert services.decision_replay(decision=decision).same
        services.job_report(job=Job.objects.get(cluster=cluster, name="elastic"),
                            remaining_seconds=300.0)
    assert whole_reads == [cluster.pk]
    first = Decision.objects.exclude(id__in=reports).order_by("id").first()
    names = {job["id"]: job for job in first.request["state"]["jobs"]}
    assert names[running[0].name]["remaining_seconds"] == 42.0
    assert running[1].name not in names and running[2].name not in names
    assert "late" in names


@pytest.mark.django_db
def test_edits_the_change_log_cannot_patch_make_the_next_decision_read_everything(
        cluster, decide, whole_reads) -> None:
    decide(cluster, "loan", count=2)
    early = submit(cluster, "early", 2)
    decide(cluster, "schedule", policy="fifo")
    assert len(whole_reads) == 1
    # A server edit is not logged: anything about the servers may have changed.
    server = Server.objects.get(pool__cluster=cluster, name="inference-6")
    server.status = ServerStatus.OFFLINE
    server.save()
    decide(cluster, "schedule", policy="fifo")
    assert len(whole_reads) == 2
    # A job whose submit time moved may sort elsewhere: read again rather than re-sort.
    early.refresh_from_db()
    early.submitted_at += timedelta(seconds=5)
    early.save()
    decide(cluster, "schedule", policy="fifo")
    assert len(whole_reads) == 3
    # So does a new job that sorts before the others, as one the admin back-dates does.
    late = submit(cluster, "back-dated", 2)
    late.submitted_at = cluster.created_at
    late.save()
    decide(cluster, "schedule", policy="fifo")
    assert len(whole_reads) == 4
    assert copy_fields(cached(cluster)) == cluster_state_read(cluster=cluster)
    assert [job["id"] for job in cached(cluster).state["jobs"]] == ["back-dated", "early"]


@pytest.mark.django_db
def test_the_change_log_keeps_the_last_versions_only(cluster, decide, whole_reads,
                                                     monkeypatch) -> None:
    from planner.live import versions
    from planner.live.models import LiveStateChange

    monkeypatch.setattr(versions, "CHANGES_KEPT", 4)
    decide(cluster, "loan", count=2)
    stale = cached(cluster)
    job = submit(cluster, "reporter", 2)
    for i in range(9):
        services.job_report(job=job, remaining_seconds=100.0 - i)
    version = LiveStateVersion.objects.get(cluster=cluster).version
    assert version == 11
    kept = set(LiveStateChange.objects.filter(cluster=cluster).values_list("version", flat=True))
    assert min(kept) > version - 8 and max(kept) == version
    assert LIVE_STATES.latest((cluster.pk, cluster.created_at)) is stale
    decide(cluster, "reclaim", count=1)
    assert len(whole_reads) == 2  # the copy was older than the log
    assert copy_fields(cached(cluster)) == cluster_state_read(cluster=cluster)


@pytest.mark.django_db
def test_a_job_stamped_before_its_cluster_is_submitted_at_zero(cluster, decide) -> None:
    """A web host whose clock is behind the one that created the cluster."""
    early, later = submit(cluster, "early", 2), submit(cluster, "later", 2)
    Job.objects.filter(pk=early.pk).update(submitted_at=cluster.created_at - timedelta(seconds=3))
    Job.objects.filter(pk=later.pk).update(submitted_at=cluster.created_at - timedelta(seconds=1))
    jobs = cluster_state(cluster=cluster)["jobs"]
    assert [(job["id"], job["submit_time"]) for job in jobs] == [("early", 0.0), ("later", 0.0)]
    decision = decide(cluster, "schedule", policy="fifo")
    assert [entry["job"] for entry in decision.response["launch"]] == ["early", "later"]


@pytest.mark.django_db
def test_the_admin_does_not_move_a_job_to_another_cluster(cluster, client) -> None:
    from django.contrib.auth.models import User

    client.force_login(User.objects.create_superuser("root", password="pw-for-tests-only"))
    job = submit(cluster, "pinned", 2)
    change = client.get(f"/admin/live/job/{job.pk}/change/")
    add = client.get("/admin/live/job/add/")
    assert change.status_code == add.status_code == 200
    assert b'name="cluster"' in add.content
    assert b'name="cluster"' not in change.content and cluster.name.encode() in change.content
