"""`/api/v1/capacity-searches/`: start (planner role), read (any role), refuse unknown fields,
wrong JSON types and bad questions by JSON path with nothing saved, read the answer."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from planner.capacity.models import CapacitySearch
from planner.scenarios.models import Run
from tests.planner.capacity.conftest import drive, scenario_make
from tests.planner.factories import user_with_role

pytestmark = pytest.mark.django_db
URL = "/api/v1/capacity-searches/"


def _client(role: str) -> APIClient:
    api = APIClient()
    api.force_authenticate(user_with_role(role, role))
    return api


def _body(scenario_id: int, **change) -> dict:
    return {"scenario": scenario_id, "targets": [{"metric": "makespan", "bound": 3600}],
            "costs": {"gpu_hour": {"V100": 2.5}},
            "axis": {"kind": "servers", "pools": ["training"]}, **change}


def test_a_planner_starts_a_search_and_any_role_reads_its_answer(
        no_broker, django_capture_on_commit_callbacks):
    scenario = scenario_make()
    with django_capture_on_commit_callbacks(execute=True):
        answer = _client("planner").post(URL, _body(scenario.pk, max=8), format="json")
    assert answer.status_code == 201, answer.json()
    started = answer.json()
    assert (started["status"], started["low"], started["high"]) == ("running", 1, 8)
    assert started["progress"] == {"rounds": 1, "runs": 1, "ended": 0, "running": 0,
                                   "reused": 0}
    assert started["url"] == f"/capacity/{started['id']}/"
    drive(CapacitySearch.objects.get(pk=started["id"]), django_capture_on_commit_callbacks)

    viewer = _client("viewer")
    read = viewer.get(f"{URL}{started['id']}/").json()
    (fifo,) = read["result"]["policies"]
    assert (read["status"], fifo["level"], fifo["cost_per_hour"]) == ("succeeded", 6, 120.0)
    listed = viewer.get(f"{URL}?scenario={scenario.pk}").json()
    assert [s["id"] for s in listed["results"]] == [started["id"]]


def test_a_search_sizes_a_composition_of_the_scenario(
        no_broker, django_capture_on_commit_callbacks):
    """Compositions are chosen like policies: SRTF with Gandiva's packing runs the six
    whole-server jobs as SRTF does (nothing packs), so its answer is FIFO's 6 servers."""
    scenario = scenario_make(policies=("fifo", "srtf+gandiva-pack"))
    with django_capture_on_commit_callbacks(execute=True):
        answer = _client("planner").post(
            URL, _body(scenario.pk, max=8, policies=["srtf+gandiva-pack"]), format="json")
    assert answer.status_code == 201, answer.json()
    search = drive(CapacitySearch.objects.get(pk=answer.json()["id"]),
                   django_capture_on_commit_callbacks)
    (packed,) = search.result["policies"]
    assert (packed["policy"], packed["level"]) == ("srtf+gandiva-pack", 6)


def test_a_viewer_may_not_start_a_search():
    answer = _client("viewer").post(URL, _body(scenario_make().pk), format="json")
    assert answer.status_code == 403
    assert CapacitySearch.objects.count() == 0


@pytest.mark.parametrize(("change", "errors"), [
    ({"axis": {"kind": "servers", "pool": ["training"]}}, {"axis.pool": ["unknown field"]}),
    ({"targets": [{"metric": "makespan", "bound": "1h"}]},
     {"targets[0].bound": ["expected a number"]}),
    ({"costs": {"gpu_hour": {"T4": 1.0}}},
     {"costs.gpu_hour": ["no price per GPU-hour for V100 (pool 'training')"]}),
    ({"axis": {"kind": "servers", "pools": ["gpus"]}},
     {"axis.pools": ["no pool 'gpus' in the cluster (pools: training)"]}),
    ({"policies": ["sjf"]}, {"policies[0]": [
        "'sjf' is not a policy of the scenario (its policies: fifo)"]}),
])
def test_a_bad_body_is_refused_by_json_path_and_saves_nothing(change, errors):
    answer = _client("planner").post(URL, _body(scenario_make().pk, **change), format="json")
    assert answer.status_code == 400
    assert answer.json() == errors
    assert (CapacitySearch.objects.count(), Run.objects.count()) == (0, 0)


def test_an_unknown_search_is_404():
    answer = _client("viewer").get(f"{URL}999/")
    assert answer.status_code == 404 and "capacity search 999 does not exist" in str(
        answer.json())
