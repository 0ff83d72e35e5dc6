"""Scripting a study through the API: workloads, scenarios and sweeps created and listed.

Rules: a generated workload is created from JSON on the same POST as uploads; a scenario is
created from ids (or a cluster spec) in one transaction, launched only with `launch: true`,
and lists its runs with links; a bad input is refused naming its field (a JSON path) and
leaves no row behind; sweeps are listed per scenario.
"""

import pytest
from rest_framework.test import APIClient

from planner.clusters.models import Cluster
from planner.scenarios.models import InferenceLoadProfile, Run, Scenario, Workload
from tests.planner.factories import (
    SPEC_YAML,
    TRACE_CSV,
    cluster_make,
    scenario_make,
    upload,
    user_with_role,
    workload_make,
)

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def media_root(settings, tmp_path):
    settings.MEDIA_ROOT = str(tmp_path)


@pytest.fixture
def client() -> APIClient:
    api = APIClient()
    api.force_authenticate(user_with_role("planner", "planner"))
    return api


def rows() -> tuple[int, ...]:
    return (Cluster.objects.count(), Workload.objects.count(),
            InferenceLoadProfile.objects.count(), Scenario.objects.count(), Run.objects.count())


def test_a_generated_workload_is_created_from_json_and_listed(client):
    created = client.post("/api/v1/workloads/", {
        "name": "twelve", "generator": {"num_jobs": 12, "duration_days": 0.5}, "seed": 3,
    }, format="json")
    uploaded = client.post("/api/v1/workloads/", {"name": "five", "file": upload(
        "five.csv", TRACE_CSV)}, format="multipart")

    assert created.status_code == 201, created.content
    body = created.json()
    assert (body["kind"], body["num_jobs"], body["generator_seed"]) == ("generator", 12, 3)
    assert uploaded.status_code == 201 and uploaded.json()["num_jobs"] == 5
    listed = client.get("/api/v1/workloads/").json()
    assert [w["name"] for w in listed["results"]] == ["five", "twelve"]  # newest first
    detail = client.get(f"/api/v1/workloads/{body['id']}/").json()
    assert detail["generator_spec"] == {"num_jobs": 12, "duration_days": 0.5}
    assert client.get("/api/v1/workloads/999999/").status_code == 404


def test_a_bad_generator_setting_is_named_under_generator(client):
    response = client.post("/api/v1/workloads/", {
        "name": "bad", "generator": {"num_jobz": 12}}, format="json")

    assert response.status_code == 400
    assert list(response.json()) == ["generator.num_jobz"]
    assert Workload.objects.count() == 0


def test_a_scenario_is_created_from_ids_without_launching(client):
    cluster, workload = cluster_make(), workload_make()

    response = client.post("/api/v1/scenarios/", {
        "name": "fifo vs gandiva", "cluster": cluster.pk, "workload": workload.pk,
        "policies": [{"policy": "fifo+aryl-loan"},
                     {"policy": "gandiva", "params": {"time_slice": 30}}],
        "seeds": [0, 1], "inference_load_generator": {"days": 1},
    }, format="json")

    assert response.status_code == 201, response.content
    body = response.json()
    scenario = Scenario.objects.get()
    assert body["id"] == scenario.pk and body["cluster"] == cluster.pk
    assert body["policies"] == [{"policy": "fifo+aryl-loan", "params": {}},
                                {"policy": "gandiva", "params": {"time_slice": 30}}]
    assert scenario.inference_load.params == {"days": 1}
    assert body["runs"] == [] and Run.objects.count() == 0  # created, not launched
    assert body["links"]["launch"] == f"/api/v1/scenarios/{scenario.pk}/launch"
    assert body["links"]["runs"] == f"/api/v1/runs/?scenario={scenario.pk}"


def test_launch_true_creates_a_run_per_policy_and_seed_with_links(client):
    response = client.post("/api/v1/scenarios/", {
        "name": "launched", "cluster_spec": SPEC_YAML.format(name="from-spec"),
        "workload": workload_make().pk, "policies": [{"policy": "fifo"}, {"policy": "sjf"}],
        "seeds": [0, 1, 2], "launch": True,
    }, format="json")

    assert response.status_code == 201, response.content
    body = response.json()
    assert Cluster.objects.filter(name="from-spec").exists()
    assert len(body["runs"]) == 6  # 2 policies x 3 seeds
    assert sorted((r["policy"], r["seed"]) for r in body["runs"]) == [
        ("fifo", 0), ("fifo", 1), ("fifo", 2), ("sjf", 0), ("sjf", 1), ("sjf", 2)]
    run = body["runs"][0]
    assert run["url"] == f"/api/v1/runs/{run['id']}/"
    assert sum(body["run_counts"].values()) == 6
    listed = client.get("/api/v1/scenarios/").json()["results"]
    assert [s["name"] for s in listed] == ["launched"]
    assert client.get(f"/api/v1/scenarios/{body['id']}/").json()["runs"] == body["runs"]


@pytest.mark.parametrize(("change", "field"), [
    ({"cluster": 999999}, "cluster"),
    ({"workload": 999999}, "workload"),
    ({"policies": [{"policy": "fifo"}, {"policy": "warp"}]}, "policies[1].policy"),
    ({"policies": [{"policy": "fifo+aryl-loan+scf-loan"}]}, "policies[0].policy"),
    ({"policies": [{"policy": "gandiva", "params": {"time_slize": 3}}]},
     "policies[0].time_slize"),
    ({"seeds": [0, 0]}, "seeds"),
    ({"cluster": None, "cluster_spec": "name: x\npools: []\n"}, "cluster_spec"),
    ({"inference_load_generator": {"days": 1, "peak_utilization": 0}},
     "inference_load_generator.peak_utilization"),
])
def test_a_bad_scenario_names_its_field_and_saves_nothing(client, change, field):
    cluster, workload = cluster_make(), workload_make()
    before = rows()
    body = {"name": "bad", "cluster": cluster.pk, "workload": workload.pk,
            "policies": [{"policy": "fifo"}], "seeds": [0],
            "inference_load_generator": {"days": 1}, "launch": True, **change}
    body = {key: value for key, value in body.items() if value is not None}

    response = client.post("/api/v1/scenarios/", body, format="json")

    assert response.status_code == 400, response.content
    assert any(key.startswith(field) for key in response.json()), response.json()
    assert rows() == before  # nothing half-saved: no cluster, load, scenario or run


def test_sweeps_are_listed_per_scenario(client):
    first, second = scenario_make(policies=["fifo"]), scenario_make(
        policies=["fifo"], cluster_name="other")
    for scenario in (first, second):
        response = client.post(f"/api/v1/scenarios/{scenario.pk}/sweeps",
                               {"grid": {"load_scale": [1, 2]}}, format="json")
        assert response.status_code == 201

    everything = client.get("/api/v1/sweeps/").json()
    mine = client.get(f"/api/v1/sweeps/?scenario={first.pk}").json()

    assert everything["count"] == 2
    assert [s["scenario"] for s in mine["results"]] == [first.pk]
    assert mine["results"][0]["progress"]["queued"] == 2
    assert client.get("/api/v1/sweeps/?scenario=abc").status_code == 400


def test_reading_needs_a_role_and_creating_the_planner_role():
    viewer = APIClient()
    viewer.force_authenticate(user_with_role("viewer", "viewer"))

    assert viewer.get("/api/v1/scenarios/").status_code == 200
    assert viewer.get("/api/v1/workloads/").status_code == 200
    refused = viewer.post("/api/v1/workloads/", {"name": "x", "generator": {"num_jobs": 2}},
                          format="json")
    assert refused.status_code == 403 and Workload.objects.count() == 0
    operator = APIClient()
    operator.force_authenticate(user_with_role("operator", "operator"))
    workload = workload_make()
    scenario = operator.post("/api/v1/scenarios/", {
        "name": "x", "cluster": cluster_make().pk, "workload": workload.pk,
        "policies": [{"policy": "fifo"}]}, format="json")
    assert scenario.status_code == 403 and Scenario.objects.count() == 0
