"""/metrics: what an operator graphs, read from the database every process writes.

Rules: each gauge and counter equals the rows behind it (servers on loan per pool, queued and
running live jobs per cluster, decisions by kind, runs by status), and the decision latency
histogram counts the stored latencies per bucket, cumulatively, with their sum. Expected
values are derived by hand from the rows each test makes.
"""

from __future__ import annotations

import pytest
from django.test import Client

from planner.clusters.models import ClusterKind, Server
from planner.clusters.services import cluster_create_from_spec
from planner.live.models import Decision, Job
from planner.live.services import decision_stateful, decision_stateless, job_submit
from planner.scenarios import services as scenario_services
from planner.scenarios.models import Run
from tests.planner.factories import SPEC_YAML, scenario_make
from tests.planner.live.conftest import live_cluster_make
from tests.simulation.test_decide import DESIGN_RECLAIM

pytestmark = pytest.mark.django_db


def scrape(client: Client | None = None, **headers) -> str:
    response = (client or Client()).get("/metrics", **headers)
    assert response.status_code == 200, response.content
    assert response["Content-Type"].startswith("text/plain; version=0.0.4")
    return response.content.decode()


def samples(text: str, name: str) -> dict[str, float]:
    """{'label="value",...': value} of one metric's samples."""
    found = {}
    for line in text.splitlines():
        if line.startswith(name + "{"):
            labels, value = line[len(name) + 1:].rsplit("} ", 1)
            found[labels] = float(value)
    return found


def test_live_gauges_count_servers_on_loan_and_queued_and_running_jobs():
    cluster = live_cluster_make(name="live", inference=6)  # 2 training, 6 inference servers
    cluster_create_from_spec(spec_text=SPEC_YAML.format(name="what-if"),
                             kind=ClusterKind.WHAT_IF)  # a template: no live gauge
    decision_stateful(cluster_id=cluster.pk, kind="loan", body={"count": 2}, actor=None)
    for name in ("a", "b", "c"):
        job_submit(cluster=cluster, name=name, num_gpus=8, duration_seconds=60.0)
    Job.objects.filter(name="a").update(status="running")
    Server.objects.filter(pool__cluster=cluster, name="training-1").update(status="offline")
    Server.objects.filter(pool__cluster=cluster, name="inference-6").update(status="reclaiming")

    text = scrape()

    # on loan: the 2 lent + the one being reclaimed (still lent until it is given back)
    assert samples(text, "planner_servers_on_loan") == {
        'cluster="live",pool="inference"': 3.0, 'cluster="live",pool="training"': 0.0}
    servers = samples(text, "planner_servers")
    assert servers['cluster="live",pool="inference",status="on_loan"'] == 2.0
    assert servers['cluster="live",pool="inference",status="reclaiming"'] == 1.0
    assert servers['cluster="live",pool="inference",status="idle"'] == 3.0
    assert servers['cluster="live",pool="training",status="offline"'] == 1.0
    assert servers['cluster="live",pool="training",status="idle"'] == 1.0
    assert samples(text, "planner_live_jobs") == {
        'cluster="live",status="queued"': 2.0, 'cluster="live",status="running"': 1.0}
    assert not any("what-if" in labels for labels in servers)


def test_decisions_are_counted_by_kind_and_their_latency_bucketed():
    for seconds in (0.003, 0.01, 0.02, 0.3, 7.0):  # 0.01 on a bound: `le` includes it
        Decision.objects.create(kind="reclaim", stateful=False, request={}, response={},
                                duration_seconds=seconds)
    Decision.objects.create(kind="reclaim", stateful=False, request={}, response={})  # before
    Decision.objects.create(kind="schedule", stateful=False, request={}, response={},
                            duration_seconds=0.05)

    text = scrape()

    assert samples(text, "planner_decisions_total") == {
        'kind="reclaim",stateful="false"': 6.0, 'kind="schedule",stateful="false"': 1.0}
    buckets = {labels: value for labels, value in
               samples(text, "planner_decision_duration_seconds_bucket").items()
               if labels.startswith('kind="reclaim"')}
    assert buckets == {
        'kind="reclaim",le="0.005"': 1.0, 'kind="reclaim",le="0.01"': 2.0,
        'kind="reclaim",le="0.025"': 3.0, 'kind="reclaim",le="0.05"': 3.0,
        'kind="reclaim",le="0.1"': 3.0, 'kind="reclaim",le="0.25"': 3.0,
        'kind="reclaim",le="0.5"': 4.0, 'kind="reclaim",le="1.0"': 4.0,
        'kind="reclaim",le="2.5"': 4.0, 'kind="reclaim",le="5.0"': 4.0,
        'kind="reclaim",le="10.0"': 5.0, 'kind="reclaim",le="+Inf"': 5.0}
    assert samples(text, "planner_decision_duration_seconds_count") == {
        'kind="reclaim"': 5.0, 'kind="schedule"': 1.0}
    assert samples(text, "planner_decision_duration_seconds_sum")['kind="reclaim"'] \
        == pytest.approx(0.003 + 0.01 + 0.02 + 0.3 + 7.0)


def test_a_decision_stores_how_long_it_took():
    decision = decision_stateless(kind="reclaim", request=DESIGN_RECLAIM, actor=None)

    assert 0 < decision.duration_seconds < 5


def test_runs_are_counted_by_outcome(settings, tmp_path):
    settings.MEDIA_ROOT = str(tmp_path)
    scenario = scenario_make(policies=["fifo", "sjf"], seeds=[0, 1])  # 4 runs when launched
    scenario_services.scenario_launch(scenario=scenario)
    first, second, third, _ = Run.objects.order_by("id")
    Run.objects.filter(pk=first.pk).update(status="failed")
    Run.objects.filter(pk=second.pk).update(status="cancelled")
    Run.objects.filter(pk=third.pk).update(status="running")

    text = scrape()

    assert samples(text, "planner_runs_finished_total") == {
        'status="succeeded"': 0.0, 'status="failed"': 1.0, 'status="cancelled"': 1.0}
    assert samples(text, "planner_runs") == {'status="queued"': 1.0, 'status="running"': 1.0}


def test_access_needs_the_bearer_token_when_one_is_set(settings):
    settings.PLANNER_METRICS_TOKEN = "s3cret"

    assert Client().get("/metrics").status_code == 403
    assert Client().get("/metrics", HTTP_AUTHORIZATION="Bearer wrong").status_code == 403
    assert "planner_runs" in scrape(HTTP_AUTHORIZATION="Bearer s3cret")


def test_production_without_a_token_refuses(settings):
    settings.IS_PRODUCTION = True
    settings.PLANNER_METRICS_TOKEN = ""

    assert Client().get("/metrics").status_code == 403

