"""Capacity searches on the planner: rounds of ordinary runs, advanced when a round ends,
the result cache, bad input refused whole, failed runs, and the maintenance catch-up."""

from __future__ import annotations

import pytest

from planner.capacity import services
from planner.capacity.models import CapacityPoint, CapacitySearch, CapacityStatus
from planner.scenarios import services as scenario_services
from planner.scenarios.models import Run
from simulation.errors import InputError
from tests.planner.capacity.conftest import drive, scenario_make

pytestmark = pytest.mark.django_db

SERVERS = {"kind": "servers", "pools": ["training"]}
COSTS = {"gpu_hour": {"V100": 2.5}}


def test_the_search_finds_the_hand_derived_servers_through_runs(
        no_broker, django_capture_on_commit_callbacks):
    scenario = scenario_make(policies=("fifo", "sjf"))
    with django_capture_on_commit_callbacks(execute=True):
        search = services.capacity_search_start(
            scenario=scenario, targets=[{"metric": "makespan", "bound": 3600}], costs=COSTS,
            axis=SERVERS, points_per_round=2)
    # Range: 1 server (the widest job) to twice the 4 given; round 1 tries ceil(8/2) = 4
    # and 8 for each policy.
    assert (search.low, search.high) == (1, 8)
    assert sorted(search.points.filter(round=1).values_list("policy", "level")) == [
        ("fifo", 4), ("fifo", 8), ("sjf", 4), ("sjf", 8)]
    search = drive(search, django_capture_on_commit_callbacks)
    assert search.status == CapacityStatus.SUCCEEDED
    answers = {p["policy"]: (p["level"], p["cost_per_hour"], p["bracket"])
               for p in search.result["policies"]}
    assert answers == {"fifo": (6, 120.0, {"meets": 6, "misses": 5}),
                       "sjf": (6, 120.0, {"meets": 6, "misses": 5})}
    # A level is a variant of the scenario's runs; 4 servers is the cluster as given.
    six = CapacityPoint.objects.get(search=search, policy="fifo", level=6).run
    assert six.variant == {"pool_servers": {"training": 6}}
    assert six.result.summary["makespan"] == 3600.0
    assert CapacityPoint.objects.get(search=search, policy="fifo", level=4).run.variant == {}


def test_an_identical_search_reuses_every_run_and_finishes_at_once(
        no_broker, django_capture_on_commit_callbacks):
    scenario = scenario_make()
    question = {"targets": ["jct.mean<=1.5h"], "costs": COSTS, "axis": SERVERS}
    with django_capture_on_commit_callbacks(execute=True):
        first = services.capacity_search_start(scenario=scenario, **question)
    first = drive(first, django_capture_on_commit_callbacks)
    runs = Run.objects.count()
    with django_capture_on_commit_callbacks(execute=True):
        second = services.capacity_search_start(scenario=scenario, **question)
    second.refresh_from_db()
    assert second.status == CapacityStatus.SUCCEEDED
    assert second.result["policies"][0]["level"] == first.result["policies"][0]["level"] == 3
    reused = Run.objects.filter(capacity_points__search=second)
    assert reused.count() == Run.objects.count() - runs
    assert all(run.reused_from_id for run in reused)


@pytest.mark.parametrize(("change", "field"), [
    ({"targets": [{"metric": "latency", "bound": 1}]}, "targets[0]"),
    ({"targets": [{"metric": "jct.mean", "bound": -1}]}, "targets[0]"),
    ({"targets": []}, "targets"),
    ({"costs": {"gpu_hour": {"T4": 1}}}, "costs.gpu_hour"),
    ({"costs": {"gpu_hour": {"V100": -2}}}, "costs.gpu_hour.V100"),
    ({"axis": {"kind": "servers", "pools": ["gpus"]}}, "axis.pools"),
    ({"axis": {"kind": "loan"}}, "axis.kind"),
    ({"axis": {"kind": "param", "param": "backfill"}}, "min"),
    ({"axis": {"kind": "param", "param": "backfill"}, "low": 1, "high": 2}, "axis.param"),
    ({"policies": ["aryl"]}, "policies[0]"),
    ({"seeds": [0, 0]}, "seeds"),
    ({"low": 5, "high": 2}, "min"),
    ({"high": 20000}, "max"),
    ({"points_per_round": 0}, "points_per_round"),
    ({"baseline": "sjf"}, "baseline"),
])
def test_bad_input_is_refused_naming_the_field_and_nothing_is_saved(change, field):
    scenario = scenario_make()
    question = {"targets": ["makespan<=1h"], "costs": COSTS, "axis": SERVERS, **change}
    with pytest.raises(InputError) as error:
        services.capacity_search_start(scenario=scenario, **question)
    assert error.value.field == field
    assert (CapacitySearch.objects.count(), Run.objects.count()) == (0, 0)


def test_a_cancelled_run_stops_its_policy_with_the_reason(
        no_broker, django_capture_on_commit_callbacks):
    scenario = scenario_make(policies=("fifo", "sjf"))
    with django_capture_on_commit_callbacks(execute=True):
        search = services.capacity_search_start(scenario=scenario, targets=["makespan<=1h"],
                                                costs=COSTS, axis=SERVERS)
    (sjf_run,) = Run.objects.filter(capacity_points__search=search, policy="sjf")
    with django_capture_on_commit_callbacks(execute=True):
        scenario_services.run_cancel(run_id=sjf_run.pk)
    search = drive(search, django_capture_on_commit_callbacks)
    by_policy = {p["policy"]: p for p in search.result["policies"]}
    assert search.status == CapacityStatus.SUCCEEDED
    assert by_policy["fifo"]["level"] == 6
    assert by_policy["sjf"]["status"] == "failed"
    assert "cancelled: cancelled by a user" in by_policy["sjf"]["error"]


def test_the_maintenance_advances_a_search_whose_signal_was_lost(no_broker):
    # Without the commit callbacks no `run_ended` is sent, as when a worker dies between its
    # commit and the signal: the search waits until the maintenance looks.
    search = services.capacity_search_start(scenario=scenario_make(), targets=["makespan<=1h"],
                                            costs=COSTS, axis=SERVERS)
    (run,) = Run.objects.filter(capacity_points__search=search)
    assert services.capacity_searches_advance_stalled() == []  # its run has not ended
    scenario_services.run_execute(run_id=run.pk)
    assert services.capacity_searches_advance_stalled() == [search.pk]
    search.refresh_from_db()
    assert search.rounds == 2 and search.points.filter(round=2).count() == 1
    assert services.capacity_searches_advance_stalled() == []  # idempotent: round 2 runs


def test_slowed_share_is_measured_against_the_baseline_on_the_cluster_as_given(
        no_broker, django_capture_on_commit_callbacks):
    # The baseline is SJF itself (the only policy searched); its reference is its run on the
    # 4 given servers: 4 jobs end at 1 h, 2 at 2 h. At 3 servers 3 jobs end at 2 h: one job
    # of 6 is slowed, so a bound of 0 needs 4 servers. The reference run is a round of its
    # own, and at once a point of the search.
    scenario = scenario_make(policies=("fifo", "sjf"))
    with django_capture_on_commit_callbacks(execute=True):
        search = services.capacity_search_start(
            scenario=scenario, targets=[{"metric": "slowed_share", "bound": 0.0}], costs=COSTS,
            axis=SERVERS, policies=["sjf"], baseline="")
    assert list(search.points.values_list("policy", "level", "round")) == [("sjf", 4, 1)]
    search = drive(search, django_capture_on_commit_callbacks)
    (sjf,) = search.result["policies"]
    assert (sjf["level"], sjf["bracket"]["misses"]) == (4, 3)
    three = next(p for p in sjf["points"] if p["level"] == 3)
    assert three["metrics"]["slowed_share"]["mean"] == pytest.approx(1 / 6, abs=1e-6)
