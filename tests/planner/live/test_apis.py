"""The live API end to end on the test database: auth matrix, jobs, loan/schedule/reclaim
applied to the live state, idempotent replays, decision log and replay, errors naming the
field, stateless = stateful, the CLI's answer, Figure 5 and throttling."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from django.test import override_settings
from rest_framework.test import APIClient

from planner.clusters.models import Server, ServerStatus
from planner.live.models import Decision, Job, JobStatus, Placement
from planner.live.selectors import cluster_snapshot, decision_list, job_list
from tests.planner.live.conftest import client_for, user_make
from tests.simulation.test_decide import DESIGN_RECLAIM, figure_5_state
from tests.support import REPO


def submit(client: APIClient, cluster, name: str, gpus: int, **extra) -> dict:
    body = {"cluster": cluster.pk, "name": name, "num_gpus": gpus, "duration_seconds": 600,
            **extra}
    response = client.post("/api/v1/jobs/", body, format="json")
    assert response.status_code == 201, response.content
    return response.json()


def post(client: APIClient, url: str, body: dict, **headers):
    return client.post(url, body, format="json", headers=headers)


@pytest.mark.django_db
@pytest.mark.parametrize(("role", "read", "decide"), [
    (None, 401, 401), ("nobody", 403, 403), ("viewer", 200, 403), ("operator", 200, 200),
])
def test_auth_matrix(cluster, role, read, decide) -> None:
    user = None if role is None else user_make(name=f"u-{role}",
                                               role=None if role == "nobody" else role)
    client = client_for(user)
    for url in ("/api/v1/jobs/", "/api/v1/decisions/", "/api/v1/servers/",
                f"/api/v1/clusters/{cluster.pk}/"):
        assert client.get(url).status_code == read, url
    answer = post(client, f"/api/v1/clusters/{cluster.pk}/decisions/loan", {"count": 1})
    assert answer.status_code == decide
    answer = post(client, "/api/v1/decisions/reclaim", DESIGN_RECLAIM)
    assert answer.status_code == decide


@pytest.mark.django_db
def test_a_token_and_its_role_are_read_in_one_query(cluster, viewer,
                                                      django_assert_num_queries) -> None:
    with django_assert_num_queries(2):  # the token with its user and role, then the cluster
        assert viewer.get(f"/api/v1/clusters/{cluster.pk}/").status_code == 200
    assert APIClient().get("/api/v1/jobs/", HTTP_AUTHORIZATION="Token nope").json() == {
        "detail": "Invalid token."}


@pytest.mark.django_db
def test_browser_session_reads_and_staff_admin_decides(cluster) -> None:
    client = APIClient()
    client.force_login(user_make(name="browser", role="viewer"))
    assert client.get("/api/v1/jobs/").status_code == 200
    admin = user_make(name="admin", role=None)
    admin.is_staff = True
    admin.save()
    assert post(client_for(admin), "/api/v1/decisions/reclaim", DESIGN_RECLAIM).json() \
        == {"strategy": "aryl", "servers": ["inf-1", "inf-2"], "preempted_jobs": ["job-a"],
            "scaled_in": [], "collateral_gpus": 0}


@pytest.mark.django_db
def test_loan_schedule_reclaim_change_the_live_state(cluster, operator) -> None:
    base = f"/api/v1/clusters/{cluster.pk}/decisions"
    loan = post(operator, f"{base}/loan", {"servers": ["inference-1", "inference-2"]})
    assert loan.status_code == 200 and loan.json() == {"servers": ["inference-1", "inference-2"]}
    assert Server.objects.filter(status=ServerStatus.ON_LOAN).count() == 2
    big = submit(operator, cluster, "big", 16)
    elastic = submit(operator, cluster, "elastic", 4, min_workers=4, max_workers=16)
    refused = post(operator, f"{base}/schedule", {"policy": "aryl+nosuch"})
    assert refused.status_code == 400
    assert "unknown stage 'nosuch'" in refused.json()["policy"][0]
    schedule = post(operator, f"{base}/schedule", {"policy": "aryl+scf-loan"})
    assert schedule.status_code == 200, schedule.content
    launched = {entry["job"] for entry in schedule.json()["launch"]}
    assert launched == {"big", "elastic"}
    jobs = {job.name: job for job in job_list(cluster=cluster)}
    assert {job.status for job in jobs.values()} == {JobStatus.RUNNING}
    hosts = operator.get(f"/api/v1/jobs/{big['id']}/hosts")
    assert hosts["Content-Type"].startswith("text/plain")
    lines = hosts.content.decode().splitlines()
    assert sum(int(line.split(":")[1]) for line in lines) == 16
    reclaim = post(operator, f"{base}/reclaim", {"count": 2})
    assert reclaim.status_code == 200, reclaim.content
    answer = reclaim.json()
    assert answer["strategy"] == "aryl" and sorted(answer["servers"]) == ["inference-1",
                                                                          "inference-2"]
    assert not Placement.objects.filter(server__name__in=answer["servers"]).exists()
    assert Server.objects.filter(status=ServerStatus.ON_LOAN).count() == 0
    for name in answer["preempted_jobs"]:
        assert Job.objects.get(name=name).status == JobStatus.QUEUED
    assert [d.kind for d in decision_list(cluster=cluster)] == ["reclaim", "schedule", "loan"]
    done = post(operator, f"/api/v1/jobs/{elastic['id']}/progress", {"finished": True})
    assert done.json()["status"] == "finished" and done.json()["placement"] == []
    cancel = post(operator, f"/api/v1/jobs/{big['id']}/cancel", {})
    assert cancel.json()["status"] == "cancelled"
    assert post(operator, f"/api/v1/jobs/{big['id']}/cancel", {}).json() == {
        "status": ["job big is cancelled"]}
    assert not Placement.objects.exists()


@pytest.mark.django_db
def test_idempotent_replay_returns_the_first_answer_once(cluster, operator) -> None:
    url = f"/api/v1/clusters/{cluster.pk}/decisions/loan"
    first = post(operator, url, {"count": 2}, **{"Idempotency-Key": "k-1"})
    again = post(operator, url, {"count": 2}, **{"Idempotency-Key": "k-1"})
    assert first.status_code == again.status_code == 200
    assert first.json() == again.json() == {"servers": ["inference-1", "inference-2"]}
    assert again["Idempotent-Replayed"] == "true"
    assert again["X-Decision-Id"] == first["X-Decision-Id"]
    assert Decision.objects.count() == 1
    assert Server.objects.filter(status=ServerStatus.ON_LOAN).count() == 2
    other = post(operator, url, {"count": 1}, **{"Idempotency-Key": "k-1"})
    assert other.status_code == 422 and "Idempotency-Key" in other.json()
    job = submit(operator, cluster, "j", 2)
    replay = operator.post("/api/v1/jobs/", {"cluster": cluster.pk, "name": "j", "num_gpus": 2,
                           "duration_seconds": 600}, format="json")
    assert replay.status_code == 400 and "name" in replay.json()  # no key: a real duplicate
    body = {"cluster": cluster.pk, "name": "k", "num_gpus": 2, "duration_seconds": 600}
    made = operator.post("/api/v1/jobs/", body, format="json", headers={"Idempotency-Key": "j"})
    same = operator.post("/api/v1/jobs/", body, format="json", headers={"Idempotency-Key": "j"})
    assert made.status_code == same.status_code == 201 and made.json() == same.json()
    assert Job.objects.count() == 2 and job["name"] == "j"


@pytest.mark.django_db
def test_errors_are_json_naming_the_field(cluster, operator) -> None:
    base = f"/api/v1/clusters/{cluster.pk}/decisions"
    assert post(operator, f"{base}/reclaim", {"count": 3}).json().keys() == {"count"}
    assert post(operator, f"{base}/reclaim", {"count": "x"}).json().keys() == {"count"}
    assert post(operator, f"{base}/schedule", {"policy": "nope"}).json().keys() == {"policy"}
    assert post(operator, f"{base}/schedule", {"policy": "fifo", "params": {"zz": 1}}
                ).json().keys() == {"params.zz"}
    assert post(operator, f"{base}/reclaim", {"count": 1, "state": {}}).json().keys() \
        == {"state"}
    queue = [{"id": "ghost", "remaining_seconds": 60}]  # not a job of the cluster
    assert post(operator, f"{base}/schedule", {"policy": "fifo", "queue": queue}).json().keys() \
        == {"queue"}
    bad = json.loads(json.dumps(DESIGN_RECLAIM))
    bad["state"]["jobs"][0]["placement"][0]["server"] = "nowhere"
    answer = post(operator, "/api/v1/decisions/reclaim", bad)
    assert answer.status_code == 400
    assert list(answer.json()) == ["state.jobs[0].placement[0].server"]
    assert post(operator, "/api/v1/jobs/", {"cluster": cluster.pk, "name": "x", "num_gpus": 999,
                                            "duration_seconds": 1}).json().keys() \
        == {"min_workers"}
    assert operator.get("/api/v1/jobs/999999/").status_code == 404
    missing = post(operator, "/api/v1/clusters/999999/decisions/reclaim", {"count": 1})
    assert missing.status_code == 404
    assert missing.json() == {"detail": "cluster 999999 does not exist"}
    assert not Decision.objects.exists() and not Job.objects.exists()


@pytest.mark.django_db
def test_stateless_and_stateful_agree_and_replays_match(cluster, operator) -> None:
    base = f"/api/v1/clusters/{cluster.pk}/decisions"
    post(operator, f"{base}/loan", {"count": 4})
    for i, gpus in enumerate([8, 8, 4, 2, 2, 16, 1]):
        submit(operator, cluster, f"j{i}", gpus, **({"max_workers": 16} if i == 3 else {}))
    schedule = post(operator, f"{base}/schedule", {"policy": "aryl"})
    logged = Decision.objects.get(pk=schedule["X-Decision-Id"])
    stateless = post(operator, "/api/v1/decisions/schedule", logged.request)
    assert stateless.status_code == 200 and stateless.json() == schedule.json()
    snapshot = cluster_snapshot(cluster=cluster)
    stateless = post(operator, "/api/v1/decisions/reclaim", {"count": 2, "state": snapshot})
    stateful = post(operator, f"{base}/reclaim", {"count": 2})
    assert stateless.json() == stateful.json()
    for decision in Decision.objects.all():
        replay = operator.get(f"/api/v1/decisions/{decision.pk}/replay").json()
        assert replay["same"] is True, decision
    listed = operator.get("/api/v1/decisions/", {"kind": "reclaim", "stateful": "true"}).json()
    assert listed["count"] == 1 and listed["results"][0]["response"] == stateful.json()


@pytest.mark.django_db
def test_cli_decide_gives_the_api_answer(cluster, operator, tmp_path) -> None:
    post(operator, f"/api/v1/clusters/{cluster.pk}/decisions/loan", {"count": 3})
    submit(operator, cluster, "a", 8)
    body = {"policy": "fifo", "state": cluster_snapshot(cluster=cluster)}
    path = tmp_path / "schedule.json"
    path.write_text(json.dumps(body))
    done = subprocess.run([sys.executable, "-m", "simulation", "decide", "schedule",
                           "--input", str(path)], capture_output=True, text=True, cwd=REPO)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == post(operator, "/api/v1/decisions/schedule", body).json()


@pytest.mark.django_db
def test_figure_5_through_the_api_preempts_exactly_one_job(operator) -> None:
    from tests.planner.live.conftest import live_cluster_make

    assert post(operator, "/api/v1/decisions/reclaim", {"count": 2, "state": figure_5_state()}
                ).json()["preempted_jobs"] == ["a"]
    cluster = live_cluster_make(name="figure-5", inference=6)
    post(operator, f"/api/v1/clusters/{cluster.pk}/decisions/loan", {"count": 6})
    servers = {s.name: s for s in Server.objects.filter(pool__cluster=cluster)}
    for job in figure_5_state()["jobs"]:
        gpus = sum(slot["gpus"] for slot in job["placement"])
        row = Job.objects.create(cluster=cluster, name=job["id"], num_gpus=gpus,
                                 min_workers=gpus, max_workers=gpus, duration_seconds=600,
                                 remaining_seconds=600, status=JobStatus.RUNNING)
        for slot in job["placement"]:
            Placement.objects.create(job=row, server=servers["inference-" + slot["server"][1:]],
                                     gpus=slot["gpus"])
    answer = post(operator, f"/api/v1/clusters/{cluster.pk}/decisions/reclaim", {"count": 2})
    assert answer.status_code == 200, answer.content
    assert answer.json()["preempted_jobs"] == ["a"] and answer.json()["collateral_gpus"] == 0
    assert sorted(answer.json()["servers"]) == ["inference-1", "inference-2"]
    assert Job.objects.get(cluster=cluster, name="a").status == JobStatus.QUEUED
    assert Job.objects.filter(cluster=cluster, status=JobStatus.RUNNING).count() == 3


@pytest.mark.django_db
def test_throttling_answers_429(cluster, viewer) -> None:
    rates = {"live-read": "2/min", "live-decide": "1/min"}
    with override_settings(PLANNER_LIVE_THROTTLE_RATES=rates):
        assert [viewer.get("/api/v1/jobs/").status_code for _ in range(3)] == [200, 200, 429]


@pytest.mark.django_db
def test_a_what_if_cluster_is_no_live_cluster(cluster, operator) -> None:
    """A scenario's template cluster never runs: the live API neither lists it nor takes its
    jobs or decisions, while the live cluster beside it is served as before."""
    from planner.clusters.models import ClusterKind
    from planner.clusters.services import cluster_create_from_spec
    from tests.planner.live.conftest import LIVE_SPEC

    template = cluster_create_from_spec(spec_text=LIVE_SPEC.format(name="what-if", inference=2),
                                        kind=ClusterKind.WHAT_IF)
    names = [row["name"] for row in operator.get("/api/v1/clusters/").json()["results"]]
    assert names == ["live"]
    assert operator.get(f"/api/v1/clusters/{template.pk}/").status_code == 404
    servers = operator.get(f"/api/v1/servers/?cluster={template.pk}").json()
    assert servers["count"] == 0
    refused = operator.post("/api/v1/jobs/", {"cluster": template.pk, "name": "j", "num_gpus": 1,
                                              "duration_seconds": 60}, format="json")
    assert refused.status_code == 400 and "cluster" in refused.json()
    loan = post(operator, f"/api/v1/clusters/{template.pk}/decisions/loan", {"count": 1})
    assert loan.status_code == 404
    assert post(operator, f"/api/v1/clusters/{cluster.pk}/decisions/loan",
                {"count": 1}).status_code == 200
