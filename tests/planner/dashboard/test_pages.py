"""The runs page, the sweep page, live and what-if clusters apart, sign-out, the home page."""

import base64
import json
import re
from datetime import timedelta

import numpy as np
import pytest
from django.urls import reverse
from django.utils import timezone

from planner.clusters.models import Cluster, ClusterKind
from planner.clusters.services import cluster_create_from_spec
from planner.dashboard import readable, selectors
from planner.dashboard.views import runs as runs_views
from planner.live.services import job_submit
from planner.scenarios.models import Run, RunStatus
from planner.scenarios.services import run_execute, scenario_launch, sweep_create
from tests.planner.factories import SPEC_YAML, scenario_make

pytestmark = pytest.mark.django_db

TRACEBACK = """Traceback (most recent call last):
  File "/srv/simulation/engine.py", line 412, in _apply
    raise InvalidDecision(message)
simulation.errors.InvalidDecision: policy sjf launched job j7 on 9 GPUs of a server with 8
"""


# --- Rules without a database ------------------------------------------------------------------


def test_eta_is_the_time_left_at_the_rate_so_far():
    # 25 % in 60 s: the whole run takes 240 s, so 180 s are left.
    assert selectors.run_eta_seconds(progress=0.25, elapsed_seconds=60) == 180
    assert selectors.run_eta_seconds(progress=0.0, elapsed_seconds=60) is None


@pytest.mark.parametrize(("text", "headline"), [
    (TRACEBACK, "simulation.errors.InvalidDecision: policy sjf launched job j7 on 9 GPUs of a "
                "server with 8"),
    ("InputError: trace.csv, line 3, field num_gpus: 'two' is not a number",
     "trace.csv, line 3, field num_gpus: 'two' is not a number"),
    ("Traceback (most recent call last):\n  File \"x.py\", line 1\n"
     "simulation.errors.InputError: cluster spec, field pools: expected a list",
     "cluster spec, field pools: expected a list"),
    ("worker lost: no heartbeat for over 300 s\n(attempt 2 of 3)",
     "worker lost: no heartbeat for over 300 s"),
])
def test_a_failure_reads_as_the_line_a_person_understands(text, headline):
    assert selectors.error_headline(text) == headline


def test_grid_points_and_durations_read_as_people_write_them():
    assert readable.grid_point_text({"cluster_scale": 0.5, "load_scale": 2.0}) == \
        "cluster_scale = 0.5 · load_scale = 2"
    assert readable.grid_text({"load_scale": [1, 2]}) == "load_scale ∈ {1, 2}"
    assert readable.duration_text(4070766.18) == "1,130.8 h"  # 4,070,766 s / 3,600
    assert readable.duration_text(180) == "3.0 min"
    assert readable.metric_title("jct_mean", "h") == "Mean JCT (h)"


# --- Runs page ---------------------------------------------------------------------------------


@pytest.fixture
def four_runs():
    """fifo and sjf, seeds 0 and 1, queued, oldest first: (fifo 0, fifo 1, sjf 0, sjf 1)."""
    return scenario_launch(scenario=scenario_make(policies=["fifo", "sjf"], seeds=[0, 1]))


def _row_ids(response) -> list[int]:
    return [row.run.pk for row in response.context["rows"]]


def test_runs_page_filters_by_status_policy_and_scenario(viewer, four_runs):
    fifo0, fifo1, sjf0, sjf1 = four_runs
    Run.objects.filter(pk__in=[fifo1.pk, sjf1.pk]).update(status=RunStatus.FAILED,
                                                          error="InputError: bad seed")
    other = scenario_launch(scenario=scenario_make(policies=["fifo"], cluster_name="other"))[0]
    url = reverse("dashboard:run-list")

    assert _row_ids(viewer.get(url, {"status": "failed"})) == [sjf1.pk, fifo1.pk]
    assert _row_ids(viewer.get(url, {"policy": "sjf"})) == [sjf1.pk, sjf0.pk]
    assert _row_ids(viewer.get(url, {"policy": "fifo", "status": "queued",
                                     "scenario": fifo0.scenario_id})) == [fifo0.pk]
    assert _row_ids(viewer.get(url, {"policy": "fifo"})) == [other.pk, fifo1.pk, fifo0.pk]
    html = viewer.get(url, {"status": "failed"}).content.decode()
    assert '<span class="error-headline">bad seed</span>' in html

    unknown = viewer.get(url, {"status": "exploded", "policy": "warp"})
    assert unknown.status_code == 200
    assert "There is no run status 'exploded'" in " ".join(unknown.context["notices"])
    assert "No run used the policy 'warp'" in " ".join(unknown.context["notices"])
    assert len(_row_ids(unknown)) == 5


def test_runs_page_pages_newest_first_and_keeps_the_filters(viewer, four_runs, monkeypatch):
    monkeypatch.setattr(runs_views, "RUNS_PER_PAGE", 2)
    url = reverse("dashboard:run-list")
    first = viewer.get(url)
    second = viewer.get(url, {"page": 2})
    ids = [run.pk for run in four_runs]
    assert _row_ids(first) == ids[:1:-1]  # the two newest
    assert _row_ids(second) == ids[1::-1]
    scenario = four_runs[0].scenario_id
    html = viewer.get(url, {"scenario": scenario}).content.decode()
    assert f'href="?scenario={scenario}&amp;page=2"' in html
    assert "Page 1 of 2" in html


def test_a_running_run_shows_its_duration_and_eta(viewer, four_runs):
    run = four_runs[0]
    Run.objects.filter(pk=run.pk).update(status=RunStatus.RUNNING, progress=0.25,
                                         started_at=timezone.now() - timedelta(seconds=60))
    response = viewer.get(reverse("dashboard:run-list"))
    row = next(r for r in response.context["rows"] if r.run.pk == run.pk)
    assert row.elapsed_seconds == pytest.approx(60, abs=2)
    assert row.eta_seconds == pytest.approx(180, abs=6)  # 60 s x 0.75 / 0.25
    assert re.search(rf'id="eta-{run.pk}"[^>]*>ETA: 3\.0 min left<', response.content.decode())


def test_planner_cancels_and_reruns_from_the_runs_page(planner, four_runs):
    run = four_runs[0]
    back = f"{reverse('dashboard:run-list')}?policy=fifo"
    response = planner.post(reverse("dashboard:run-cancel", args=[run.pk]), {"next": back})
    assert response.status_code == 302 and response["Location"] == back
    assert Run.objects.get(pk=run.pk).status == RunStatus.CANCELLED

    again = planner.post(reverse("dashboard:run-cancel", args=[run.pk]), {"next": back})
    assert again.status_code == 400
    assert f"Run {run.pk}: run {run.pk} already cancelled" in " ".join(again.context["notices"])

    rerun = planner.post(reverse("dashboard:run-rerun", args=[run.pk]),
                         {"next": "https://evil.example/"})
    assert rerun.status_code == 302 and rerun["Location"] == reverse("dashboard:run-list")
    elsewhere = planner.post(reverse("dashboard:run-cancel", args=[four_runs[1].pk]),
                             {"next": "/admin/"})
    assert elsewhere["Location"] == reverse("dashboard:run-list")  # back to runs pages only
    newest = Run.objects.latest("id")
    assert (newest.pk, newest.policy, newest.seed) == (four_runs[-1].pk + 1, "fifo", 0)
    page = planner.get(reverse("dashboard:run-list")).content.decode()
    assert f"Run {run.pk} started again as run {newest.pk}." in page
    assert planner.post(reverse("dashboard:run-rerun", args=[999999])).status_code == 404


def test_a_viewer_sees_no_buttons_and_may_not_cancel(viewer, four_runs):
    run = four_runs[0]
    html = viewer.get(reverse("dashboard:run-list")).content.decode()
    assert reverse("dashboard:run-cancel", args=[run.pk]) not in html
    assert viewer.post(reverse("dashboard:run-cancel", args=[run.pk])).status_code == 403
    assert Run.objects.get(pk=run.pk).status == RunStatus.QUEUED


# --- Sweep page --------------------------------------------------------------------------------


def test_sweep_page_reads_metrics_by_name_with_units_and_grid_points_plainly(viewer):
    scenario = scenario_make(policies=["fifo", "sjf"])
    sweep = sweep_create(scenario=scenario, grid={"load_scale": [2]})
    sweep.aggregate = [{"variant": {"load_scale": 2}, "policy": "fifo", "runs": 2,
                        "succeeded": 2, "failed": 0, "cancelled": 0,
                        "metrics": {"jct_mean": {"mean": 4070766.18, "ci95": 7200.0, "n": 2}}}]
    sweep.save()
    html = viewer.get(reverse("dashboard:sweep-detail", args=[sweep.pk])).content.decode()
    table = html[html.index('id="aggregate"'):]
    assert "Mean JCT (h), mean" in table and "± 95 % CI (h)" in table
    assert "<td>load_scale = 2</td>" in table
    # 4,070,766.18 s / 3,600 = 1,130.77 h; 7,200 s = 2 h; the exact seconds on hover.
    assert '<td class="num" title="4070766.18 s">1,130.8</td>' in table
    assert '<td class="num" title="7200.0 s">2.0</td>' in table
    assert "{&#x27;load_scale&#x27;" not in html and "{'load_scale'" not in html
    assert "Grid load_scale ∈ {2}" in html
    summary = re.search(r'id="sweep-summary">(.*?)</p>', html, re.S).group(1)
    assert summary.strip().endswith("runs: 2 queued")  # no dangling comma
    assert '<option value="jct_mean" selected>Mean JCT</option>' in html


def test_sweep_chart_axes_name_the_metric_and_parameter_with_units(viewer):
    scenario = scenario_make(policies=["fifo"])
    sweep = sweep_create(scenario=scenario, grid={"load_scale": [1, 2]})
    for run in sweep.runs.all():
        assert run_execute(run_id=run.pk) == "succeeded"
    html = viewer.get(reverse("dashboard:sweep-detail", args=[sweep.pk]),
                      {"metric": "gpu_utilization_overall"}).content.decode()
    figure = json.loads(re.search(r'<script id="data-sweep" type="application/json">(.*?)'
                                  r"</script>", html, re.S).group(1))
    assert figure["layout"]["yaxis"]["title"]["text"] == "Overall GPU utilisation (%)"
    assert figure["layout"]["xaxis"]["title"]["text"] == "load_scale (× arrival rate)"
    run = sweep.runs.get(variant={"load_scale": 1})
    share = run.result.summary["gpu_utilization"]["overall"]
    curve = next(t for t in figure["data"] if t["name"] == "fifo")
    y = np.frombuffer(base64.b64decode(curve["y"]["bdata"]), dtype=curve["y"]["dtype"])
    assert y[0] == pytest.approx(100 * share, rel=1e-6)  # shown in %


def test_sweep_list_explains_how_to_start_one_and_lists_them(viewer):
    url = reverse("dashboard:sweep-list")
    assert "No sweeps yet" in viewer.get(url).content.decode()
    sweep = sweep_create(scenario=scenario_make(), grid={"cluster_scale": [0.5, 1]})
    html = viewer.get(url).content.decode()
    assert reverse("dashboard:sweep-detail", args=[sweep.pk]) in html
    assert "cluster_scale ∈ {0.5, 1}" in html


# --- Live and what-if clusters, navigation, sign-out, home ------------------------------------


def test_a_what_if_cluster_is_kept_off_the_live_pages(planner):
    from tests.planner.dashboard.test_planner_views import _builder_data

    assert planner.post(reverse("dashboard:scenario-new"), _builder_data()).status_code == 302
    what_if = Cluster.objects.get(name="built")
    live = cluster_create_from_spec(spec_text=SPEC_YAML.format(name="prod-east"))
    assert (what_if.kind, live.kind) == (ClusterKind.WHAT_IF, ClusterKind.LIVE)

    listed = planner.get(reverse("dashboard:cluster-list")).content.decode()
    assert reverse("dashboard:cluster-detail", args=[live.pk]) in listed
    assert reverse("dashboard:cluster-detail", args=[what_if.pk]) not in listed
    home = planner.get("/")
    assert [state.cluster.name for state in home.context["clusters"]] == ["prod-east"]
    assert "built" in home.content.decode()  # its scenario's cluster, under recent studies
    detail = planner.get(reverse("dashboard:cluster-detail", args=[what_if.pk]))
    assert detail.status_code == 200 and 'id="what-if-cluster"' in detail.content.decode()


def test_clusters_made_for_scenarios_are_what_if():
    from planner.scenarios.services import demo_load, scenario_create_from_specs

    api_made = scenario_create_from_specs(
        name="from specs", cluster_spec_text=SPEC_YAML.format(name="spec-made"),
        policies=["fifo"], seeds=[0], generator={"num_jobs": 5, "duration_days": 0.1})
    demo = demo_load()
    assert api_made.cluster.kind == ClusterKind.WHAT_IF
    assert demo.cluster.kind == ClusterKind.WHAT_IF
    assert cluster_create_from_spec(spec_text=SPEC_YAML.format(name="x")).kind == ClusterKind.LIVE


def test_header_says_who_is_signed_in_and_sign_out_ends_the_session(planner):
    html = planner.get(reverse("dashboard:run-list")).content.decode()
    assert re.search(r"Signed in as <strong>planner</strong>\s*<span[^>]*>\(planner\)</span>",
                     html)
    assert f'action="{reverse("dashboard:logout")}"' in html
    assert planner.post(reverse("dashboard:logout")).status_code == 302
    after = planner.get(reverse("dashboard:run-list"))
    assert after.status_code == 302 and after["Location"].startswith(reverse("dashboard:login"))


def test_home_shows_live_clusters_now_and_recent_studies(viewer):
    live = cluster_create_from_spec(spec_text=SPEC_YAML.format(name="prod-east"))
    job_submit(cluster=live, name="train-1", num_gpus=4, duration_seconds=3600)
    scenario = scenario_make(policies=["fifo", "sjf"])
    first, second = scenario_launch(scenario=scenario)
    Run.objects.filter(pk=second.pk).update(status=RunStatus.FAILED, error="boom")

    response = viewer.get("/")
    (state,) = [s for s in response.context["clusters"] if s.cluster.name == "prod-east"]
    assert (state.servers, state.by_status["idle"], state.queued, state.running) == (4, 4, 1, 0)
    (recent,) = response.context["scenarios"]
    assert (recent.run_count, recent.runs_queued, recent.runs_failed) == (2, 1, 1)
    html = response.content.decode()
    assert f"?scenario={scenario.pk}&amp;status=failed\">1 failed</a>" in html
    assert 'id="health-line"' in html
