"""Run progress, cancel, re-run and export endpoints under /api/v1/."""

import csv
import io

import pytest
from rest_framework.test import APIClient

from planner.scenarios import services
from planner.scenarios.models import RunStatus
from tests.planner.factories import scenario_make, user_with_role

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def media_root(settings, tmp_path):
    settings.MEDIA_ROOT = str(tmp_path)


@pytest.fixture
def client() -> APIClient:
    api = APIClient()
    api.force_authenticate(user_with_role("planner", "planner"))
    return api


@pytest.fixture
def finished_run():
    (run,) = services.scenario_launch(scenario=scenario_make(policies=["fifo"]))
    services.run_execute(run_id=run.pk)
    return run


def test_runs_are_listed_per_scenario_with_progress(client, finished_run):
    body = client.get(f"/api/v1/runs/?scenario={finished_run.scenario_id}").json()

    assert body["count"] == 1
    (row,) = body["results"]
    assert (row["status"], row["progress"]) == ("succeeded", 1.0)
    assert row["summary"]["jobs"] == 5
    assert client.get("/api/v1/runs/?scenario=0").status_code == 400
    assert client.get("/api/v1/runs/?status=lost").status_code == 400


def test_run_detail_and_missing_run(client, finished_run):
    assert client.get(f"/api/v1/runs/{finished_run.pk}/").json()["policy"] == "fifo"
    assert client.get("/api/v1/runs/999999/").status_code == 404


def test_export_csv_and_json(client, finished_run):
    jobs = client.get(f"/api/v1/runs/{finished_run.pk}/export.csv")
    summary = client.get(f"/api/v1/runs/{finished_run.pk}/export.csv?table=summary")
    whole = client.get(f"/api/v1/runs/{finished_run.pk}/export.json").json()

    assert jobs["Content-Type"] == "text/csv"
    rows = list(csv.DictReader(io.StringIO(jobs.content.decode())))
    assert sorted(r["job_id"] for r in rows) == ["a", "b", "c", "d", "e"]
    (flat,) = csv.DictReader(io.StringIO(summary.content.decode()))
    assert flat["policy"] == "fifo" and "jct.mean" in flat
    assert len(whole["jobs"]) == 5 and whole["summary"]["policy"] == "fifo"
    assert whole["timeseries"][0]["time"] is not None
    bad = client.get(f"/api/v1/runs/{finished_run.pk}/export.csv?table=secrets")
    assert bad.status_code == 400 and "table" in bad.json()


def test_export_of_a_run_without_result_is_404(client):
    (run,) = services.scenario_launch(scenario=scenario_make(policies=["fifo"]))

    response = client.get(f"/api/v1/runs/{run.pk}/export.json")

    assert response.status_code == 404 and "queued" in response.json()["detail"]


def test_cancel_and_rerun(client, finished_run):
    refused = client.post(f"/api/v1/runs/{finished_run.pk}/cancel")
    rerun = client.post(f"/api/v1/runs/{finished_run.pk}/rerun")

    assert refused.status_code == 400 and "already succeeded" in refused.json()["status"][0]
    assert rerun.status_code == 201
    assert rerun.json()["status"] == RunStatus.SUCCEEDED  # identical: reused
    assert rerun.json()["reused_from"] == finished_run.pk


def test_sweep_create_refuses_a_bad_grid_and_accepts_a_good_one(client):
    scenario = scenario_make(policies=["fifo"])

    bad = client.post(f"/api/v1/scenarios/{scenario.pk}/sweeps",
                      {"grid": {"warp": [1]}}, format="json")
    good = client.post(f"/api/v1/scenarios/{scenario.pk}/sweeps",
                       {"grid": {"load_scale": [1, 2]}}, format="json")

    assert bad.status_code == 400 and "grid.warp" in bad.json()
    assert good.status_code == 201 and good.json()["progress"]["queued"] == 2
    detail = client.get(f"/api/v1/sweeps/{good.json()['id']}/").json()
    assert detail["grid"] == {"load_scale": [1, 2]}


def test_anonymous_clients_are_refused(finished_run):
    assert APIClient().get("/api/v1/runs/").status_code in (401, 403)
