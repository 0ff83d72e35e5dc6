"""A policy that cannot run on a scenario's inputs is refused before anything is saved.

`sia` needs a queue (a quota or training pool); a cluster of inference pools has none. The
service names the policy's entry (`policies[i]`), the launch API answers 400 without
creating runs, and the builder shows the reason next to the policies and saves nothing.
"""

import pytest
from django.urls import reverse
from rest_framework.test import APIClient

from planner.clusters.models import Cluster
from planner.clusters.services import cluster_create_from_spec
from planner.scenarios.models import Run, Scenario, Workload
from planner.scenarios.services import scenario_create
from simulation.errors import InputError
from tests.planner.factories import cluster_make, user_with_role, workload_make

pytestmark = pytest.mark.django_db

INFERENCE_ONLY = """
name: lenders
gpu_types: {T4: {speed: 0.25, memory_gb: 16}}
pools:
  - {name: inference, kind: inference, gpu_type: T4, servers: 2, gpus_per_server: 8}
"""
REASON = "sia cannot run on cluster 'lenders': it schedules one queue per quota or training pool"


def _lenders() -> Cluster:
    return cluster_create_from_spec(spec_text=INFERENCE_ONLY)


def test_scenario_create_names_the_policy_entry_and_saves_nothing():
    with pytest.raises(InputError) as refused:
        scenario_create(name="what if", cluster=_lenders(), workload=workload_make(),
                        policies=["fifo", "sia"], seeds=[0])
    assert refused.value.field == "policies[1]"
    assert refused.value.message.startswith(REASON)
    assert not Scenario.objects.exists()


def test_a_parameter_value_the_policy_rejects_is_refused_at_creation():
    with pytest.raises(InputError) as refused:
        scenario_create(name="what if", cluster=cluster_make(), workload=workload_make(),
                        policies=[{"policy": "sia", "params": {"windows": "soon"}}], seeds=[0])
    assert refused.value.field == "policies[0].windows"
    assert not Scenario.objects.exists()


def test_a_value_the_policy_constructor_rejects_is_an_input_error_not_a_crash():
    # AntMan checks `guaranteed_interference < 1` with a plain ValueError in its constructor
    # (1 is inside the parameter's bounds, which only say it is a share)
    with pytest.raises(InputError) as refused:
        scenario_create(
            name="what if", cluster=cluster_make(), workload=workload_make(),
            policies=["fifo", {"policy": "antman", "params": {"guaranteed_interference": 1}}],
            seeds=[0])
    assert refused.value.field == "policies[1]"
    assert refused.value.message == "antman: guaranteed_interference must lie in [0, 1)"
    assert not Scenario.objects.exists()


def test_a_value_outside_a_parameters_bounds_names_the_parameter():
    with pytest.raises(InputError) as refused:
        scenario_create(name="what if", cluster=cluster_make(), workload=workload_make(),
                        policies=["fifo", {"policy": "themis", "params": {"lease": "0"}}],
                        seeds=[0])
    assert refused.value.field == "policies[1].lease"
    assert not Scenario.objects.exists()


def test_launch_api_refuses_a_scenario_saved_around_the_check():
    # e.g. added in the Django admin, which writes the row without the service's checks
    scenario = Scenario.objects.create(name="admin-made", cluster=_lenders(),
                                       workload=workload_make(),
                                       policies=[{"policy": "sia", "params": {}}], seeds=[0])
    api = APIClient()
    api.force_authenticate(user_with_role("planner", "planner"))
    response = api.post(f"/api/v1/scenarios/{scenario.pk}/launch")
    assert response.status_code == 400
    (message,) = response.json()["policies[0]"]
    assert REASON in message
    assert not Run.objects.exists()


def test_builder_shows_the_refusal_next_to_the_policies_and_saves_nothing(client,
                                                                          django_user_model):
    client.force_login(user_with_role("planner", "planner"))
    response = client.post(reverse("dashboard:scenario-new"), {
        "name": "what if", "cluster": "", "cluster_spec": INFERENCE_ONLY,
        "workload_source": "generator", "gen_num_jobs": "4", "gen_arrival_rate_per_hour": "30",
        "gen_median_duration_minutes": "10", "gen_elastic_fraction": "0", "gen_seed": "1",
        "inference_source": "none", "policies": ["fifo", "sia"], "seeds": "0",
        "engine_settings": ""})
    assert response.status_code == 400
    assert REASON in " ".join(response.context["form"].errors["policies"])
    assert 'id="error-policies"' in response.content.decode()
    assert not Scenario.objects.exists() and not Cluster.objects.exists()
    assert not Workload.objects.exists() and not Run.objects.exists()
