"""Every write endpoint refuses a body field it does not know, naming it by JSON path, and
(in JSON) a value of another JSON type than the schema's; nothing is written.

Rule: 400 `{"<path>": ["unknown field"]}` (or "expected ..."), the same shape as every other
error of the API, on the what-if writes (workloads, scenarios, sweeps) and the live ones (jobs,
progress, stateful and stateless decisions, the token endpoint). Before, DRF ignored such
keys, so a typo (`sed` for `seed`) silently became the default.
"""

from __future__ import annotations

import copy

import pytest
from django.contrib.auth.models import User
from rest_framework.test import APIClient

from planner.live.models import Decision, Job
from planner.live.services import job_submit
from planner.scenarios.models import Scenario, Sweep, Workload
from tests.planner.factories import TRACE_CSV, cluster_make, scenario_make, upload, workload_make
from tests.planner.live.conftest import live_cluster_make
from tests.simulation.test_decide import DESIGN_RECLAIM

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def media_root(settings, tmp_path):
    settings.MEDIA_ROOT = str(tmp_path)


@pytest.fixture
def admin() -> APIClient:
    client = APIClient()
    client.force_authenticate(User.objects.create_user("strict-admin", is_staff=True))
    return client


def rows() -> tuple[int, ...]:
    return (Workload.objects.count(), Scenario.objects.count(), Sweep.objects.count(),
            Job.objects.count(), Decision.objects.count())


def refused(client: APIClient, url: str, body, **kwargs) -> dict:
    before = rows()
    response = client.post(url, body, **{"format": "json", **kwargs})
    assert response.status_code == 400, response.content
    assert rows() == before
    return response.json()


def test_what_if_writes_name_unknown_fields(admin):
    scenario = scenario_make(policies=["fifo"])

    assert refused(admin, "/api/v1/workloads/", {
        "name": "w", "generator": {"num_jobs": 3}, "sed": 4}) == {"sed": ["unknown field"]}
    assert refused(admin, "/api/v1/workloads/", {
        "name": "w", "file": upload("t.csv", TRACE_CSV), "fromat": "tiresias"},
        format="multipart") == {"fromat": ["unknown field"]}
    assert refused(admin, "/api/v1/scenarios/", {
        "name": "s", "cluster": cluster_make(name="c2").pk, "workload": workload_make().pk,
        "policies": [{"policy": "fifo", "parmas": {}}], "lanch": True,
    }) == {"policies[0].parmas": ["unknown field"], "lanch": ["unknown field"]}
    assert refused(admin, f"/api/v1/scenarios/{scenario.pk}/sweeps", {
        "grid": {"load_scale": [1]}, "seeds": [1]}) == {"seeds": ["unknown field"]}


def test_live_writes_name_unknown_fields(admin):
    cluster = live_cluster_make(name="strict")
    job = job_submit(cluster=cluster, name="j", num_gpus=1, duration_seconds=60.0)
    snapshot = copy.deepcopy(DESIGN_RECLAIM)
    snapshot["state"]["jobs"][0]["placement"][1]["flexibel"] = True

    assert refused(admin, "/api/v1/jobs/", {
        "cluster": cluster.pk, "name": "k", "num_gpus": 1, "duration_seconds": 60,
        "priorty": 5}) == {"priorty": ["unknown field"]}
    assert refused(admin, f"/api/v1/jobs/{job.pk}/progress", {
        "remaining": 30}) == {"remaining": ["unknown field"]}
    assert refused(admin, "/api/v1/decisions/reclaim", snapshot) == {
        "state.jobs[0].placement[1].flexibel": ["unknown field"]}
    stateful = refused(admin, f"/api/v1/clusters/{cluster.pk}/decisions/reclaim", {
        "count": 1, "state": DESIGN_RECLAIM["state"]})
    assert list(stateful) == ["state"]
    assert stateful["state"][0].startswith("unknown field; a stateful decision uses")
    assert refused(admin, f"/api/v1/clusters/{cluster.pk}/decisions/schedule", {
        "policy": "fifo", "sed": 1}) == {"sed": ["unknown field"]}
    assert refused(admin, "/api/v1/auth/token", {
        "username": "a", "password": "b", "otp": "1"}) == {"otp": ["unknown field"]}


def test_json_values_of_another_type_are_refused_not_coerced(admin):
    cluster = live_cluster_make(name="typed")

    assert refused(admin, "/api/v1/jobs/", {
        "cluster": cluster.pk, "name": 7, "num_gpus": 1.0, "duration_seconds": "60",
        "preemptible": 0}) == {
        "name": ["expected a string"], "num_gpus": ["expected a whole number"],
        "duration_seconds": ["expected a number"], "preemptible": ["expected true or false"]}


def test_known_fields_still_pass(admin):
    cluster = live_cluster_make(name="fine")

    response = admin.post("/api/v1/jobs/", {"cluster": cluster.pk, "name": "ok", "num_gpus": 2,
                                            "duration_seconds": 60.5, "preemptible": False},
                          format="json")

    assert response.status_code == 201, response.content
    assert (response.json()["num_gpus"], response.json()["preemptible"]) == (2, False)


def test_unknown_fields_come_with_the_other_errors_in_one_answer(admin):
    errors = refused(admin, "/api/v1/scenarios/", {"nme": "typo", "workload": 1,
                                                   "policies": [{"policy": "fifo"}]})

    assert errors == {"nme": ["unknown field"], "name": ["This field is required."]}
