"""Two scenario builders creating a cluster of the same name at the same moment.

`cluster_create` checks the name, then inserts; a second request that checks before the first
commits used to reach the unique constraint and answer 500 (IntegrityError). Now one
succeeds and the other gets the builder's inline error on its spec, with nothing of it saved.
"""

from __future__ import annotations

import threading

import pytest
from django.db import connection
from django.test import Client
from django.urls import reverse

from planner.clusters import services as cluster_services
from planner.clusters.models import Cluster, GpuType
from planner.scenarios.models import Scenario, Workload
from simulation.policies import registry
from tests.support import skip_or_fail

SPEC = ("name: race\npools:\n  - {name: training, kind: training, gpu_type: V100, servers: 2,"
        " gpus_per_server: 8}\n")
BUILDER = {"name": "what if", "cluster": "", "cluster_spec": SPEC,
           "workload_source": "generator", "gen_num_jobs": "12",
           "gen_arrival_rate_per_hour": "30", "gen_median_duration_minutes": "10",
           "gen_elastic_fraction": "0", "gen_seed": "1", "inference_source": "none",
           "inference_days": "1", "inference_peak_utilization": "0.95",
           "policies": ["fifo"], "seeds": "0", "engine_settings": ""}


@pytest.fixture
def no_dispatch(monkeypatch):
    """The runs stay queued: no worker here, and none should get them later."""
    monkeypatch.setattr("planner.scenarios.services.runs.runs_enqueue", lambda *, runs: None)


@pytest.mark.django_db(transaction=True)
def test_two_builders_racing_for_one_cluster_name(django_user_model, monkeypatch, no_dispatch):
    if connection.vendor != "postgresql":
        # SQLite takes the write lock when a transaction starts (transaction_mode
        # IMMEDIATE): the second builder cannot check before the first commits.
        skip_or_fail("the race needs concurrent transactions: set DATABASE_URL to PostgreSQL")
    GpuType.objects.create(name="V100", speed=1.0, memory_gb=32)
    registry()  # load every policy module first: load_all() is not safe to race (its flag
    # is set before the imports finish, so a second thread can see a partial registry)
    user = django_user_model.objects.create_user("racer", is_staff=True)
    # Both requests have checked the name (and found none) before either inserts it.
    both_checked = threading.Barrier(2, timeout=10)
    real_gpu_type = cluster_services._gpu_type_get_or_create

    def gpu_type_after_both_checked(**kwargs):
        both_checked.wait()
        return real_gpu_type(**kwargs)

    monkeypatch.setattr(cluster_services, "_gpu_type_get_or_create",
                        gpu_type_after_both_checked)
    responses = []

    def build() -> None:
        client = Client(raise_request_exception=False)
        client.force_login(user)
        try:
            responses.append(client.post(reverse("dashboard:scenario-new"), BUILDER))
        finally:
            connection.close()

    threads = [threading.Thread(target=build) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)

    assert sorted(r.status_code for r in responses) == [302, 400]
    refused = next(r for r in responses if r.status_code == 400)
    assert "already exists" in " ".join(refused.context["form"].errors["cluster_spec"])
    assert Cluster.objects.filter(name="race").count() == 1
    assert Scenario.objects.count() == 1 and Workload.objects.count() == 1


@pytest.mark.django_db
def test_a_name_taken_after_the_check_is_an_input_error_not_a_500(monkeypatch):
    """The same rule on any database: the insert's unique violation becomes the InputError
    (the check is made to miss the existing row, as a concurrent uncommitted one is)."""
    from simulation.errors import InputError

    cluster_services.cluster_create_from_spec(spec_text=SPEC)
    monkeypatch.setattr(Cluster.objects, "filter",
                        lambda **kwargs: Cluster.objects.none())

    with pytest.raises(InputError) as refused:
        cluster_services.cluster_create_from_spec(spec_text=SPEC)

    assert refused.value.field == "name" and "already exists" in refused.value.message
    assert Cluster.objects.count() == 1
