"""Operator pages of the clusters: list, overview with servers by state, its live fragment."""

import json
import re

import pytest
from django.urls import reverse

from planner.clusters.models import Server, ServerStatus
from planner.clusters.services import cluster_create_from_spec

SPEC = """
name: lab
gpu_types: {V100: {speed: 1.0, memory_gb: 32}, T4: {speed: 0.25, memory_gb: 16}}
pools:
  - {name: training, kind: training, gpu_type: V100, servers: 4, gpus_per_server: 8}
  - {name: inference, kind: inference, gpu_type: T4, servers: 6, gpus_per_server: 4}
"""

pytestmark = pytest.mark.django_db


@pytest.fixture
def cluster():
    cluster = cluster_create_from_spec(spec_text=SPEC, source="test")
    training = Server.objects.filter(pool__name="training").order_by("id")
    inference = Server.objects.filter(pool__name="inference").order_by("id")
    Server.objects.filter(pk__in=[s.pk for s in training[:3]]).update(status=ServerStatus.BUSY)
    Server.objects.filter(pk__in=[s.pk for s in inference[:2]]).update(
        status=ServerStatus.ON_LOAN)
    Server.objects.filter(pk=inference[5].pk).update(status=ServerStatus.OFFLINE)
    return cluster


def _figure(html: str, slug: str) -> dict:
    match = re.search(rf'<script id="data-{slug}" type="application/json">(.*?)</script>', html,
                      re.S)
    assert match, f"no figure data for {slug}"
    return json.loads(match.group(1))


def test_empty_cluster_list_says_how_to_add_one(viewer):
    response = viewer.get(reverse("dashboard:cluster-list"))
    assert response.status_code == 200
    assert "No clusters yet" in response.content.decode()


def test_cluster_list_links_each_cluster(viewer, cluster):
    html = viewer.get(reverse("dashboard:cluster-list")).content.decode()
    assert reverse("dashboard:cluster-detail", args=[cluster.pk]) in html
    assert ">10<" in html  # servers


def test_overview_counts_servers_by_state_per_pool(viewer, cluster):
    response = viewer.get(reverse("dashboard:cluster-detail", args=[cluster.pk]))
    assert response.status_code == 200
    pools = {p.name: p for p in response.context["pools"]}
    assert pools["training"].by_status["busy"] == 3
    assert pools["training"].by_status["idle"] == 1
    assert pools["inference"].by_status["on_loan"] == 2
    assert pools["inference"].utilization == pytest.approx(2 / 5)  # the offline one excluded
    assert response.context["totals"]["on_loan"] == 2
    html = response.content.decode()
    live_url = reverse("dashboard:cluster-live", args=[cluster.pk])
    assert f'data-refresh-url="{live_url}"' in html
    figure = _figure(html, "server-states")
    assert [t["name"] for t in figure["data"]] == ["idle", "busy", "on loan", "reclaiming",
                                                   "offline"]
    assert "vendor/plotly.min.js" in html
    # nothing loads from another host (a CDN); not `"cdn" in html`, which a random CSRF
    # token may contain
    assert not re.search(r'(?:src|href)="(?:https?:)?//', html)


def test_live_fragment_reflects_a_state_change(viewer, cluster):
    url = reverse("dashboard:cluster-live", args=[cluster.pk])
    Server.objects.filter(pool__name="training").update(status=ServerStatus.IDLE)
    response = viewer.get(url)
    assert response.status_code == 200
    assert "<html" not in response.content.decode()
    pools = {p.name: p for p in response.context["pools"]}
    assert pools["training"].by_status["busy"] == 0


def test_unknown_cluster_is_a_readable_404(viewer):
    response = viewer.get(reverse("dashboard:cluster-detail", args=[999999]))
    assert response.status_code == 404


def test_pages_ask_anonymous_visitors_to_sign_in(client):
    response = client.get(reverse("dashboard:cluster-list"))
    assert response.status_code == 302
    assert response["Location"].startswith(reverse("dashboard:login"))
    assert client.get(reverse("dashboard:login")).status_code == 200


def test_overview_lists_live_jobs_with_placement_and_the_decision_log(viewer, cluster):
    from planner.live.models import Decision, Job, Placement

    job = Job.objects.create(cluster=cluster, name="job-a", status="running", num_gpus=8,
                             min_workers=4, max_workers=8, duration_seconds=600,
                             remaining_seconds=300)
    servers = Server.objects.filter(pool__name="inference").order_by("id")
    Placement.objects.create(job=job, server=servers[0], gpus=4)
    Placement.objects.create(job=job, server=servers[1], gpus=4, flexible=True)
    Job.objects.create(cluster=cluster, name="job-done", status="finished", num_gpus=1,
                       duration_seconds=60, remaining_seconds=0)
    Decision.objects.create(cluster=cluster, kind="reclaim", stateful=True, request={},
                            response={"strategy": "aryl", "servers": ["inf-1", "inf-2"],
                                      "preempted_jobs": ["job-b"],
                                      "scaled_in": [{"job": "job-a", "workers": 2}],
                                      "collateral_gpus": 0})

    response = viewer.get(reverse("dashboard:cluster-live", args=[cluster.pk]))
    html = response.content.decode()
    jobs = response.context["jobs"]
    (row,) = jobs["rows"]
    assert (jobs["running"], jobs["queued"]) == (1, 0)
    assert row["job"].name == "job-a" and row["gpus"] == 8
    assert row["placement"] == [f"{servers[0].name}: 4", f"{servers[1].name}: 4 (flexible)"]
    assert row["remaining"] == "5.0 min"
    assert "job-done" not in html
    assert ("reclaimed 2 server(s): inf-1, inf-2; preempted 1: job-b; scaled in 1: job-a"
            in response.context["decisions"][0]["summary"])


@pytest.mark.django_db
def test_the_operator_page_shows_running_jobs_first_and_names_a_few_per_decision(viewer,
                                                                                  cluster):
    from planner.dashboard.selectors import cluster_live_jobs, decision_summary
    from planner.live.models import Job

    for i, status in enumerate(["queued", "running", "queued", "running"]):
        Job.objects.create(cluster=cluster, name=f"j{i}", status=status, num_gpus=1,
                           duration_seconds=36000, remaining_seconds=9000)
    jobs = cluster_live_jobs(cluster=cluster, limit=1)
    # One of each status, running first; 9,000 s (two hours or more) reads as 2.5 h.
    assert [(r["job"].name, r["remaining"]) for r in jobs["rows"]] == [("j1", "2.5 h"),
                                                                        ("j0", "2.5 h")]
    assert (jobs["running"], jobs["queued"]) == (2, 2)
    launched = {"launch": [{"job": f"j{i}"} for i in range(9)]}
    assert decision_summary(kind="schedule", response=launched) == (
        "launched 9: j0, j1, j2, j3, j4, j5 and 3 more")


def test_overview_without_jobs_or_decisions_says_so(viewer, cluster):
    html = viewer.get(reverse("dashboard:cluster-detail", args=[cluster.pk])).content.decode()
    assert "No job is queued or running" in html
    assert "No decision has been taken" in html
