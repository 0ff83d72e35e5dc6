"""The scenario builder's one-pass checks, kept uploads, warnings, typed parameters and
clone; the scenario page and its actions (launch again, delete, new sweep)."""

import re
from pathlib import Path

import pytest
from django.conf import settings
from django.urls import reverse

from planner.clusters.models import Cluster
from planner.dashboard.forms import EXAMPLE_SPECS, ScenarioBuilderForm
from planner.scenarios.models import InferenceLoadProfile, Run, Scenario, Sweep, Workload
from planner.scenarios.services import (
    inference_load_create_generated,
    scenario_create,
    scenario_launch,
)
from simulation.model import PoolKind
from simulation.workloads import parse_cluster_spec_text
from tests.planner.factories import TRACE_CSV, cluster_make, scenario_make, upload, workload_make

pytestmark = pytest.mark.django_db

NEW = "/scenarios/new/"
SPEC = """
name: built
gpu_types: {V100: {speed: 1.0, memory_gb: 32}, T4: {speed: 0.25, memory_gb: 16}}
pools:
  - {name: training, kind: training, gpu_type: V100, servers: 2, gpus_per_server: 8}
  - {name: inference, kind: inference, gpu_type: T4, servers: 2, gpus_per_server: 8}
"""
# Three jobs whose arrivals span exactly 3 days (0 s to 259,200 s).
THREE_DAY_TRACE = ("job_id,submit_time,num_gpus,duration\n"
                   "a,0,1,600\nb,86400,2,600\nc,259200,4,600\n")


def _data(**overrides):
    data = {"name": "what if", "cluster": "", "cluster_spec": SPEC,
            "workload_source": "generator", "gen_num_jobs": "12",
            "gen_arrival_rate_per_hour": "30", "gen_median_duration_minutes": "10",
            "gen_elastic_fraction": "0", "gen_seed": "1", "inference_source": "none",
            "inference_days": "1", "inference_peak_utilization": "0.95",
            "policies": ["fifo", "sjf"], "seeds": "0", "engine_settings": ""}
    data.update(overrides)
    return data


def _nothing_saved() -> bool:
    return not (Scenario.objects.exists() or Cluster.objects.exists()
                or Workload.objects.exists() or InferenceLoadProfile.objects.exists())


def _kept_token(html: str, field: str) -> str:
    match = re.search(rf'name="{field}_kept" value="([^"]+)"', html)
    assert match, f"no kept {field}"
    return match.group(1)


# --- One pass, every error -------------------------------------------------------------------

def test_errors_of_the_form_the_spec_the_trace_and_a_parameter_come_in_one_response(planner):
    bad_trace = "job_id,submit_time,num_gpus,duration\na,0,1,600\nb,10,two,60\n"
    response = planner.post(NEW, _data(
        name="", cluster_spec="name: x\npools: 3\n", workload_source="upload",
        trace=upload("bad.csv", bad_trace), policies=["tiresias"],
        param__tiresias__promote_knob="5000"))
    assert response.status_code == 400
    errors = response.context["form"].errors
    assert set(errors) == {"name", "cluster_spec", "trace", "param__tiresias__promote_knob"}
    assert "line 3" in " ".join(errors["trace"])
    assert "1000" in " ".join(errors["param__tiresias__promote_knob"])  # bounds 0 to 1000
    assert "fix the 4 fields" in response.content.decode()
    assert _nothing_saved()
    assert 'name="trace_kept"' not in response.content.decode()  # a bad trace is not kept


def test_a_policy_refusal_is_shown_with_the_other_errors(planner):
    # SIA needs a training or quota pool: the refusal is reported although the name is
    # missing too.
    lenders = ("gpu_types: {T4: {speed: 0.25, memory_gb: 16}}\npools:\n  - {name: inference, "
               "kind: inference, gpu_type: T4, servers: 2, gpus_per_server: 8}\n")
    response = planner.post(NEW, _data(name="", cluster_spec=lenders, policies=["sia"]))
    errors = response.context["form"].errors
    assert set(errors) == {"name", "policies"}
    assert "sia cannot run on cluster 'scenario cluster'" in " ".join(errors["policies"])
    assert _nothing_saved()


# --- Kept uploads ----------------------------------------------------------------------------

def test_the_upload_survives_an_error_and_the_second_submit_needs_no_file(planner):
    first = planner.post(NEW, _data(name="", workload_source="upload",
                                    trace=upload("five.csv", TRACE_CSV)))
    assert first.status_code == 400 and set(first.context["form"].errors) == {"name"}
    html = first.content.decode()
    assert "Kept from the last submit: <strong>five.csv</strong>" in html
    token = _kept_token(html, "trace")
    assert _nothing_saved()

    second = planner.post(NEW, _data(workload_source="upload", trace_kept=token))
    assert second.status_code == 302, second.context["form"].errors
    workload = Workload.objects.get()
    assert workload.num_jobs == 5
    with workload.file.open("rb") as handle:
        assert handle.read().decode() == TRACE_CSV
    kept = list((Path(settings.MEDIA_ROOT) / "builder-uploads").glob("*/five.csv"))
    assert kept == []  # removed once used


def test_a_tampered_or_stale_kept_upload_is_refused_by_name(planner):
    response = planner.post(NEW, _data(workload_source="upload", trace_kept="forged:token"))
    assert response.status_code == 400
    assert "no longer available" in " ".join(response.context["form"].errors["trace"])
    assert _nothing_saved()


# --- Warnings --------------------------------------------------------------------------------

def test_a_one_day_load_against_a_three_day_trace_asks_before_creating(planner):
    data = _data(workload_source="upload", trace=upload("three.csv", THREE_DAY_TRACE),
                 inference_source="generated", inference_days="1")
    first = planner.post(NEW, data)
    assert first.status_code == 200
    (warning,) = first.context["warnings"]
    assert warning.startswith("The inference load covers 24.0 hours but the jobs arrive over "
                              "3.0 days")
    assert _nothing_saved()

    token = _kept_token(first.content.decode(), "trace")
    accepted = planner.post(NEW, _data(workload_source="upload", trace_kept=token,
                                       inference_source="generated", inference_days="1",
                                       accept_warnings=first.context["warnings_key"]))
    assert accepted.status_code == 302
    assert Scenario.objects.get().inference_load.params["days"] == 1.0


def test_a_load_as_long_as_the_trace_creates_at_once(planner):
    response = planner.post(NEW, _data(
        workload_source="upload", trace=upload("three.csv", THREE_DAY_TRACE),
        inference_source="generated", inference_days="3"))
    assert response.status_code == 302
    assert Scenario.objects.count() == 1


def test_a_job_wider_than_the_largest_pool_is_a_warning(planner):
    trace = "job_id,submit_time,num_gpus,duration\na,0,24,600\nb,10,1,600\n"
    response = planner.post(NEW, _data(workload_source="upload", trace=upload("w.csv", trace)))
    assert response.status_code == 200
    assert response.context["warnings"] == [
        "The largest job asks for 24 GPUs; the largest pool, training, has 16 (the cluster "
        "32): such jobs run only where a policy spans pools, else they wait."]
    assert 'name="accept_warnings"' in response.content.decode()
    assert _nothing_saved()


# --- Typed parameters, groups, examples, cluster names ---------------------------------------

def test_parameters_get_inputs_of_their_declared_type(planner):
    html = planner.get(NEW).content.decode()
    assert re.search(r'<input type="checkbox" name="param__fifo__backfill"', html)
    select = re.search(r'<select name="param__gandiva__time_slicing".*?</select>', html, re.S)
    assert re.findall(r'<option value="(\w+)"', select.group(0)) == ["quanta", "fluid"]
    number = re.search(r'<input type="number" name="param__gandiva__time_slice"[^>]*>', html)
    assert 'min="1.0"' in number.group(0) and 'max="86400.0"' in number.group(0)


def test_only_parameters_changed_from_their_defaults_are_stored(planner):
    # aryl's elastic defaults to True: an unchecked box stores False; tiresias'
    # promote_knob left at its default 0 is not stored at all.
    response = planner.post(NEW, _data(policies=["aryl", "tiresias"],
                                       param__aryl__group_flexible="on",
                                       param__tiresias__promote_knob="0",
                                       param__tiresias__thresholds="500,10000"))
    assert response.status_code == 302, response.context["form"].errors
    assert Scenario.objects.get().policies == [{"policy": "aryl", "params": {"elastic": False}},
                                               {"policy": "tiresias", "params": {}}]


def test_each_capacity_stage_ticked_for_a_policy_is_an_entry_of_its_own(planner):
    """The boxes offer every capacity stage, the policy's own (its paper's reclaim) first and
    ticked; each stage ticked is one entry, its own the plain policy's name."""
    html = planner.get(NEW).content.decode()
    boxes = re.findall(r'<input type="checkbox" name="stage__aryl__capacity" value="([\w-]+)"'
                       r'[^>]*?( checked)?>', html)
    assert boxes == [("aryl-loan", " checked"), ("no-loan", ""), ("gpu-fraction-loan", ""),
                     ("optimal-loan", ""), ("random-loan", ""), ("scf-loan", "")]
    response = planner.post(NEW, _data(policies=["elastic-tiresias", "aryl"], **{
        "stage__elastic-tiresias__capacity": ["scf-loan", "aryl-loan"],
        "stage__aryl__capacity": ["aryl-loan", "no-loan"]}))
    assert response.status_code == 302, response.context["form"].errors
    assert [e["policy"] for e in Scenario.objects.get().policies] == [
        "elastic-tiresias", "elastic-tiresias+aryl-loan", "aryl", "aryl+no-loan"]


def test_a_baseline_offers_allocation_stages_and_runs_each_combination(planner):
    """SRTF runs jobs at their requested size, so it also offers EDL's expansion; the papers'
    policies decide their allocation themselves and offer no such boxes."""
    html = planner.get(NEW).content.decode()
    assert 'name="stage__srtf__allocation" value="edl-expand"' in html
    assert 'name="stage__aryl__allocation"' not in html
    response = planner.post(NEW, _data(policies=["srtf"], **{
        "stage__srtf__capacity": ["scf-loan", "no-loan"],
        "stage__srtf__allocation": ["requested", "edl-expand"]}))
    assert response.status_code == 302, response.context["form"].errors
    assert [e["policy"] for e in Scenario.objects.get().policies] == [
        "srtf", "srtf+edl-expand", "srtf+no-loan", "srtf+no-loan+edl-expand"]


def test_a_stage_parameter_goes_with_the_runs_that_take_the_stage(planner):
    """Tiresias' placement boxes offer Gandiva's packing, whose trial length is an input of
    its own: set to 30 s it goes to the packed run only (the plain run would refuse it)."""
    html = planner.get(NEW).content.decode()
    assert 'name="stage__tiresias__placement" value="gandiva-pack"' in html
    assert "pack_trial (gandiva-pack)" in html
    response = planner.post(NEW, _data(policies=["tiresias"], **{
        "stage__tiresias__placement": ["best-fit", "gandiva-pack"],
        "param__tiresias__pack_trial": "30"}))
    assert response.status_code == 302, response.context["form"].errors
    scenario = Scenario.objects.get()
    assert scenario.policies == [{"policy": "tiresias", "params": {}},
                                 {"policy": "tiresias+gandiva-pack",
                                  "params": {"pack_trial": 30.0}}]
    form = planner.get(NEW, {"from": scenario.pk}).context["form"]  # Clone brings it back
    assert form["param__tiresias__pack_trial"].value() == 30.0
    assert form["stage__tiresias__placement"].value() == ["best-fit", "gandiva-pack"]


def test_policies_are_grouped_by_paper_in_the_papers_order(planner):
    groups = ScenarioBuilderForm().policy_groups()
    assert [g["paper"] for g in groups] == ["Baselines", "Aryl", "EDL", "Gandiva", "Muri",
                                            "SIA"]
    members = {g["paper"]: [p["name"] for p in g["policies"]] for g in groups}
    assert members["Aryl"] == ["afs", "aryl", "gandiva-elastic", "pollux-lite"]
    assert members["EDL"] == ["elastic-tiresias"]
    assert "fifo" in members["Baselines"] and "tiresias" in members["Baselines"]
    assert members["Muri"] == ["muri-l", "muri-s"]


def test_the_example_specs_parse_and_the_second_has_a_lending_inference_pool():
    small = parse_cluster_spec_text(EXAMPLE_SPECS["small"][1], "example")
    assert [(p.name, p.servers * p.gpus_per_server) for p in small.pools] == [("training", 32)]
    mixed = parse_cluster_spec_text(EXAMPLE_SPECS["heterogeneous"][1], "example")
    (inference,) = mixed.pools_of_kind(PoolKind.INFERENCE)
    assert (inference.gpu_type, inference.lending_limit) == ("T4", 6)


def test_a_spec_without_a_name_names_the_cluster_after_the_scenario(planner):
    spec = EXAMPLE_SPECS["small"][1]
    assert planner.post(NEW, _data(cluster_spec=spec)).status_code == 302
    assert planner.post(NEW, _data(cluster_spec=spec)).status_code == 302
    assert sorted(Cluster.objects.values_list("name", flat=True)) == [
        "what if cluster", "what if cluster 2"]


# --- Clone -----------------------------------------------------------------------------------

def _submitted(form: ScenarioBuilderForm) -> dict:
    """What a browser would submit for the form as rendered (checkboxes only when on)."""
    data = {}
    for name in form.fields:
        value = form[name].value()
        if value is None or value is False or name in ("trace", "inference_file"):
            continue
        data[name] = "on" if value is True else value
    return data


def test_clone_opens_the_builder_with_the_source_inputs(planner):
    source = scenario_create(
        name="source", cluster=cluster_make(), workload=workload_make(),
        inference_load=inference_load_create_generated(name="d", params={"days": 2}),
        policies=[{"policy": "fifo", "params": {"backfill": True}},
                  {"policy": "tiresias+aryl-loan", "params": {"promote_knob": 4.0}},
                  {"policy": "tiresias", "params": {"promote_knob": 4.0}}],
        seeds=[0, 3], engine_settings={"restart_overhead": "30"})
    form = planner.get(NEW, {"from": source.pk}).context["form"]
    assert form["name"].value() == "source (copy)"
    assert form["stage__tiresias__capacity"].value() == ["aryl-loan", "scf-loan"]

    response = planner.post(NEW, _submitted(form))
    assert response.status_code == 302, response.context["form"].errors
    clone = Scenario.objects.exclude(pk=source.pk).get()
    assert (clone.cluster, clone.workload, clone.inference_load) == (
        source.cluster, source.workload, source.inference_load)
    assert sorted(clone.policies, key=str) == sorted(source.policies, key=str)
    assert (clone.seeds, clone.engine_settings) == ([0, 3], {"restart_overhead": "30"})
    assert planner.get(NEW, {"from": 999999}).status_code == 404


# --- The scenario page and its actions -------------------------------------------------------

def test_scenario_page_shows_its_inputs_runs_and_sweeps(viewer):
    scenario = scenario_make(policies=[{"policy": "tiresias", "params": {"promote_knob": 4.0}}],
                             seeds=[0, 2], inference=True)
    scenario_launch(scenario=scenario)
    html = viewer.get(reverse("dashboard:scenario-detail", args=[scenario.pk])).content.decode()
    assert re.search(r"<th scope=\"row\">inference</th><td>inference</td><td>T4</td>\s*"
                     r"<td class=\"num\">2</td><td class=\"num\">8</td><td class=\"num\">16</td>",
                     html)
    assert "<dt>jobs</dt><dd>5</dd>" in html
    assert "<code>promote_knob=4.0</code>" in html
    assert "<dt>seeds</dt><dd>0, 2</dd>" in html
    assert "diurnal generator: days=2" in html
    assert "2 runs: 0 succeeded, 2 queued or running" in html
    assert reverse("dashboard:scenario-compare", args=[scenario.pk]) in html
    assert 'id="delete"' not in html  # a viewer sees no write actions
    listing = viewer.get(reverse("dashboard:scenario-list")).content.decode()
    assert f'href="{reverse("dashboard:scenario-detail", args=[scenario.pk])}"' in listing


def test_delete_asks_then_removes_the_scenario_and_its_runs(planner):
    scenario = scenario_make(policies=["fifo", "sjf"])
    scenario_launch(scenario=scenario)
    url = reverse("dashboard:scenario-delete", args=[scenario.pk])
    assert "its 2 runs with their results" in planner.get(url).content.decode()
    assert Scenario.objects.exists()  # GET only asks
    response = planner.post(url)
    assert response.status_code == 302 and response["Location"] == reverse(
        "dashboard:scenario-list")
    assert not Scenario.objects.exists() and not Run.objects.exists()
    assert Cluster.objects.count() == 1  # kept for other scenarios
    assert "Deleted the scenario “what if”" in planner.get(
        reverse("dashboard:scenario-list")).content.decode()


def test_launch_again_adds_one_run_per_policy_and_seed(planner):
    scenario = scenario_make(policies=["fifo", "sjf"], seeds=[0])
    scenario_launch(scenario=scenario)
    response = planner.post(reverse("dashboard:scenario-launch", args=[scenario.pk]))
    assert response["Location"] == f"{reverse('dashboard:run-list')}?scenario={scenario.pk}"
    assert scenario.runs.count() == 4


def test_new_sweep_creates_the_grid_and_opens_the_sweep_page(planner):
    scenario = scenario_make(policies=["fifo", "sjf"], seeds=[0, 1])
    url = reverse("dashboard:sweep-new", args=[scenario.pk])
    response = planner.post(url, {"name": "load", "axis_0": "load_scale", "values_0": "1, 2.5",
                                  "axis_1": "restart_overhead", "values_1": "0, 63"})
    sweep = Sweep.objects.get()
    assert response["Location"] == reverse("dashboard:sweep-detail", args=[sweep.pk])
    assert sweep.grid == {"load_scale": [1, 2.5], "restart_overhead": [0, 63]}
    assert sweep.runs.count() == 2 * 2 * 2 * 2  # grid points x policies x seeds


def test_a_bad_sweep_value_is_shown_next_to_its_axis_and_nothing_is_created(planner):
    scenario = scenario_make()
    response = planner.post(reverse("dashboard:sweep-new", args=[scenario.pk]),
                            {"axis_0": "cluster_scale", "values_0": "0, 2"})
    assert response.status_code == 400
    assert "expected a positive number up to 100, got 0" in " ".join(
        response.context["form"].errors["values_0"])
    assert not Sweep.objects.exists() and not Run.objects.exists()


@pytest.mark.parametrize("action", ["scenario-delete", "scenario-launch", "sweep-new"])
def test_a_viewer_cannot_change_a_scenario(viewer, action):
    scenario = scenario_make()
    response = viewer.post(reverse(f"dashboard:{action}", args=[scenario.pk]),
                           {"axis_0": "load_scale", "values_0": "2"})
    assert response.status_code == 403
    assert Scenario.objects.count() == 1 and not Run.objects.exists()
