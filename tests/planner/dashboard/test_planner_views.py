"""Planner pages: builder (inline errors, nothing half-saved), run list, comparison, sweep."""

import json
import re

import pytest
from django.urls import reverse

from planner.clusters.models import Cluster
from planner.scenarios.models import Run, Scenario, Workload
from planner.scenarios.services import run_execute, scenario_launch, sweep_create
from tests.planner.factories import TRACE_CSV, scenario_make, upload

pytestmark = pytest.mark.django_db

SPEC = """
name: built
gpu_types: {V100: {speed: 1.0, memory_gb: 32}}
pools:
  - {name: training, kind: training, gpu_type: V100, servers: 2, gpus_per_server: 8}
"""


def _legend(html: str, slug: str) -> list[str]:
    match = re.search(rf'<script id="data-{slug}" type="application/json">(.*?)</script>', html,
                      re.S)
    assert match, f"no figure {slug}"
    return [t["name"] for t in json.loads(match.group(1))["data"] if t.get("showlegend", True)]


def _finished_scenario(policies=("fifo", "sjf", "srtf"), seeds=(0,)) -> Scenario:
    scenario = scenario_make(policies=list(policies), seeds=list(seeds), inference=True)
    for run in scenario_launch(scenario=scenario):
        assert run_execute(run_id=run.pk) == "succeeded"
    return scenario


def _builder_data(**overrides):
    data = {"name": "what if", "cluster": "", "cluster_spec": SPEC,
            "workload_source": "generator", "gen_num_jobs": "12",
            "gen_arrival_rate_per_hour": "30", "gen_median_duration_minutes": "10",
            "gen_elastic_fraction": "0", "gen_seed": "1", "inference_source": "none",
            "inference_days": "1", "inference_peak_utilization": "0.95",
            "policies": ["fifo", "sjf"], "seeds": "0, 1", "engine_settings": ""}
    data.update(overrides)
    return data


def test_builder_page_lists_every_registered_policy(planner):
    from simulation.policies import registry

    response = planner.get(reverse("dashboard:scenario-new"))
    assert response.status_code == 200
    html = response.content.decode()
    for name in registry():
        assert f'value="{name}"' in html


def test_builder_creates_and_launches_the_scenario(planner):
    response = planner.post(reverse("dashboard:scenario-new"), _builder_data())
    scenario = Scenario.objects.get()
    assert response.status_code == 302
    assert response["Location"] == f"{reverse('dashboard:run-list')}?scenario={scenario.pk}"
    assert scenario.cluster.name == "built" and scenario.seeds == [0, 1]
    assert sorted(Run.objects.values_list("policy", "seed")) == [
        ("fifo", 0), ("fifo", 1), ("sjf", 0), ("sjf", 1)]


def test_builder_accepts_an_uploaded_trace_and_policy_parameters(planner):
    data = _builder_data(workload_source="upload", trace=upload("five.csv", TRACE_CSV),
                         policies=["tiresias"], param__tiresias__promote_knob="4")
    response = planner.post(reverse("dashboard:scenario-new"), data)
    assert response.status_code == 302, response.context["form"].errors
    assert Workload.objects.get().num_jobs == 5


@pytest.mark.parametrize(("overrides", "field", "words"), [
    ({"name": ""}, "name", "required"),
    ({"seeds": "0, x"}, "seeds", "'x' is not a non-negative whole number"),
    ({"policies": []}, "policies", "required"),
    ({"cluster_spec": ""}, "cluster_spec", "choose a cluster"),
    ({"cluster_spec": "name: x\npools: 3\n"}, "cluster_spec", "cluster spec"),
    ({"gen_num_jobs": "-4"}, "gen_num_jobs", "greater than or equal to 1"),
    ({"workload_source": "upload"}, "trace", "choose a trace file"),
    ({"engine_settings": "warp_speed=9"}, "engine_settings", "unknown setting 'warp_speed'"),
    ({"engine_settings": "oops"}, "engine_settings", "expected key=value"),
    ({"param__sjf__nonsense": "1"}, None, None),
])
def test_builder_shows_errors_inline_and_saves_nothing(planner, overrides, field, words):
    response = planner.post(reverse("dashboard:scenario-new"), _builder_data(**overrides))
    if field is None:  # an unknown input name is simply ignored
        assert response.status_code == 302
        return
    assert response.status_code == 400
    errors = response.context["form"].errors
    assert field in errors, errors
    assert words in " ".join(errors[field])
    assert f'id="error-{field}"' in response.content.decode()
    assert not Scenario.objects.exists() and not Cluster.objects.exists()
    assert not Workload.objects.exists()


def test_a_bad_trace_names_its_line_and_leaves_no_cluster_behind(planner):
    bad = "job_id,submit_time,num_gpus,duration\na,0,1,600\nb,10,two,60\n"
    response = planner.post(reverse("dashboard:scenario-new"), _builder_data(
        workload_source="upload", trace=upload("bad.csv", bad)))
    assert response.status_code == 400
    message = " ".join(response.context["form"].errors["trace"])
    assert "bad.csv" in message and "line 3" in message
    assert not Cluster.objects.exists() and not Scenario.objects.exists()


def test_a_bad_policy_parameter_is_shown_next_to_that_parameter(planner):
    response = planner.post(reverse("dashboard:scenario-new"), _builder_data(
        policies=["tiresias"], param__tiresias__promote_knob="many"))
    assert response.status_code == 400
    assert "param__tiresias__promote_knob" in response.context["form"].errors


def test_empty_run_and_scenario_lists_explain_what_to_do(viewer):
    assert "No runs yet" in viewer.get(reverse("dashboard:run-list")).content.decode()
    assert "No scenarios yet" in viewer.get(reverse("dashboard:scenario-list")).content.decode()


def test_run_list_polls_the_run_api_for_each_run(viewer):
    scenario = scenario_make(policies=["fifo", "sjf"])
    runs = scenario_launch(scenario=scenario)
    response = viewer.get(reverse("dashboard:run-list"), {"scenario": scenario.pk})
    html = response.content.decode()
    assert response.status_code == 200
    for run in runs:
        assert f'data-progress-url="{reverse("run-detail", args=[run.pk])}"' in html
    assert viewer.get(reverse("dashboard:run-list"), {"scenario": "x"}).status_code == 404


def test_comparison_has_one_trace_per_policy_on_every_chart(viewer):
    scenario = _finished_scenario()
    response = viewer.get(reverse("dashboard:scenario-compare", args=[scenario.pk]))
    assert response.status_code == 200
    html = response.content.decode()
    slugs = re.findall(r'<script id="data-([\w-]+)" type="application/json">', html)
    assert {"jct-cdf", "queuing-cdf", "jct-percentiles", "series-util-overall",
            "series-on-loan-servers", "preemptions", "scaling", "speedups"} <= set(slugs)
    for slug in slugs:
        assert _legend(html, slug) == ["fifo", "sjf", "srtf"], slug
    run = Run.objects.filter(policy="sjf").get()
    assert reverse("run-export-csv", args=[run.pk]) in html
    assert reverse("run-export-json", args=[run.pk]) in html
    assert "Download PNG" in html


def test_comparison_query_reopens_the_same_view(viewer):
    scenario = _finished_scenario()
    url = reverse("dashboard:scenario-compare", args=[scenario.pk])
    response = viewer.get(url, {"policy": ["srtf", "fifo"], "baseline": "srtf", "seed": "0"})
    html = response.content.decode()
    assert _legend(html, "jct-cdf") == ["fifo", "srtf"]
    assert response.context["baseline"] == "srtf"
    assert "Speedup and slowdown against srtf" in html


def test_comparison_explains_bad_query_values_instead_of_failing(viewer):
    scenario = _finished_scenario(policies=("fifo", "sjf"))
    url = reverse("dashboard:scenario-compare", args=[scenario.pk])
    response = viewer.get(url, {"policy": "gandalf", "baseline": "nobody", "seed": "7"})
    assert response.status_code == 200
    notices = " ".join(response.context["notices"])
    assert "seed '7'" in notices and "gandalf" in notices and "'nobody'" in notices
    assert _legend(response.content.decode(), "jct-cdf") == ["fifo", "sjf"]


def test_comparison_before_any_run_finished_is_an_empty_state(viewer):
    scenario = scenario_make()
    scenario_launch(scenario=scenario)
    response = viewer.get(reverse("dashboard:scenario-compare", args=[scenario.pk]))
    assert response.status_code == 200
    assert "Nothing to compare yet" in response.content.decode()
    assert viewer.get(reverse("dashboard:scenario-compare", args=[999999])).status_code == 404


def test_sweep_page_plots_the_metric_against_the_parameter(viewer):
    scenario = scenario_make(policies=["fifo", "sjf"], seeds=[0, 1])
    sweep = sweep_create(scenario=scenario, grid={"load_scale": [1, 2]})
    for run in sweep.runs.all():
        run_execute(run_id=run.pk)
    url = reverse("dashboard:sweep-detail", args=[sweep.pk])
    response = viewer.get(url, {"metric": "queuing_mean", "parameter": "load_scale"})
    assert response.status_code == 200
    html = response.content.decode()
    assert _legend(html, "sweep") == ["fifo", "sjf"]
    bad = viewer.get(url, {"metric": "happiness", "parameter": "moon"})
    assert bad.status_code == 200
    assert "Unknown metric 'happiness'" in " ".join(bad.context["notices"])
    assert viewer.get(reverse("dashboard:sweep-detail", args=[999999])).status_code == 404


def test_summary_cells_read_in_one_unit_per_column_with_the_exact_value_behind():
    from planner.dashboard.views import summary_cells

    slow = {"jct": {"mean": 181483.76, "p95": 90.0}, "makespan": 8171961.0,
            "preempted_share": 0.25, "preemption_ratio": 2.0 / 3, "preemptions": 1234}
    fast = {"jct": {"mean": 3588.0, "p95": 30.0}, "makespan": 7200.0, "preempted_share": 0.0,
            "preemption_ratio": 0.0, "preemptions": 0}
    titles, (first, second) = summary_cells([slow, fast])
    column = {title: i for i, title in enumerate(titles)}
    # The column's largest value picks the unit: 181,484 s -> hours for both rows.
    assert first[column["JCT mean (h)"]] == {"text": "50.4", "ci": "", "exact": "181483.76 s"}
    assert second[column["JCT mean (h)"]]["text"] == "1.0"
    assert second[column["JCT p95 (s)"]]["text"] == "30.0"
    assert first[column["makespan (h)"]]["text"] == "2,270.0"
    assert first[column["jobs preempted"]]["text"] == "25.0%"
    assert first[column["preemptions per job"]]["text"] == "0.67"
    assert first[column["preemptions"]]["text"] == "1,234"
    assert first[column["JCT median (s)"]] == {"text": "—", "ci": "", "exact": ""}  # not there
