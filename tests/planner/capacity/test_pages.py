"""The capacity pages: the form from a scenario (errors next to their inputs, nothing half
saved), one search's answer with its saving sentence, frontier chart and exports."""

from __future__ import annotations

import csv
import io
import json

import pytest

from planner.capacity import services
from planner.capacity.models import CapacitySearch
from tests.planner.capacity.conftest import drive, scenario_make

pytestmark = pytest.mark.django_db


@pytest.fixture
def planner_client(client, django_user_model):
    from django.contrib.auth.models import Group

    user = django_user_model.objects.create_user("planner", password="pw-planner-1")
    user.groups.add(Group.objects.get_or_create(name="planner")[0])
    client.force_login(user)
    return client


@pytest.fixture
def answered(no_broker, django_capture_on_commit_callbacks) -> CapacitySearch:
    """FIFO and SJF with a mean-JCT bound of 1.5 h: both need 3 servers (hand-derived in
    conftest), so neither saves against the other."""
    scenario = scenario_make(policies=("fifo", "sjf"))
    with django_capture_on_commit_callbacks(execute=True):
        search = services.capacity_search_start(
            scenario=scenario, targets=["jct.mean<=1.5h"], costs={"gpu_hour": {"V100": 2.5}},
            axis={"kind": "servers", "pools": ["training"]}, name="six jobs")
    return drive(search, django_capture_on_commit_callbacks)


def test_the_answer_page_shows_sizes_costs_saving_and_the_frontier(planner_client, answered):
    page = planner_client.get(f"/capacity/{answered.pk}/")
    html = page.content.decode()
    assert page.status_code == 200
    assert "no policy meets jct.mean &lt;= 90 min with fewer training GPUs than fifo (24 GPUs)" \
        in html
    assert '<tr id="answer-fifo">' in html and "3 training servers (24 V100)" in html
    assert "60.00" in html  # 3 servers x 8 GPUs x 2.5 per GPU-hour
    figure = json.loads(html.split('id="data-frontier-0" type="application/json">')[1]
                        .split("</script>")[0])
    fifo = next(trace for trace in figure["data"] if trace["name"] == "fifo")
    levels = sorted(answered.result["policies"][0]["points"], key=lambda p: p["cost_per_hour"])
    assert fifo["marker"]["symbol"] == ["circle" if p["feasible"] else "circle-open"
                                        for p in levels]


def test_the_exports_hold_the_answer(planner_client, answered):
    exported = planner_client.get(f"/capacity/{answered.pk}/export.json").json()
    assert [p["level"] for p in exported["policies"]] == [3, 3]
    text = planner_client.get(f"/capacity/{answered.pk}/export.csv").content.decode()
    rows = list(csv.DictReader(io.StringIO(text)))
    assert [(r["policy"], r["level"], r["cost_per_hour"], r["jct.mean"]) for r in rows] == [
        ("fifo", "3", "60.0", "5400.0"), ("sjf", "3", "60.0", "5400.0")]


def test_the_form_shows_an_error_next_to_its_input_and_saves_nothing(planner_client):
    scenario = scenario_make()
    page = planner_client.get(f"/scenarios/{scenario.pk}/")
    assert f'href="/capacity/new/{scenario.pk}/"' in page.content.decode()
    form = {"policies": ["fifo"], "targets": "jct.mean<=5%", "costs": "V100=2.5",
            "axis": "servers", "pools": "training", "points_per_round": "1"}
    page = planner_client.post(f"/capacity/new/{scenario.pk}/", form)
    assert page.status_code == 400
    assert "line 1: jct.mean is not a share" in page.content.decode()
    assert CapacitySearch.objects.count() == 0
    page = planner_client.post(f"/capacity/new/{scenario.pk}/", {**form, "targets":
                                                                  "jct.mean<=90min"})
    search = CapacitySearch.objects.get()
    assert page.status_code == 302 and page["Location"] == f"/capacity/{search.pk}/"
    assert search.targets == [{"metric": "jct.mean", "bound": 5400.0}]


def test_a_viewer_reads_but_may_not_open_the_form(client, django_user_model, answered):
    from django.contrib.auth.models import Group

    user = django_user_model.objects.create_user("viewer", password="pw-viewer-1")
    user.groups.add(Group.objects.get_or_create(name="viewer")[0])
    client.force_login(user)
    assert client.get("/capacity/").status_code == 200
    assert client.get(f"/capacity/new/{answered.scenario_id}/").status_code == 403
