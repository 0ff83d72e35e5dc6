import pytest

from planner.clusters.models import Cluster, GpuType, Pool, Server
from planner.clusters.selectors import cluster_gpu_total
from planner.clusters.services import cluster_create_from_spec, cluster_spec_dict, cluster_to_spec
from simulation.errors import InputError
from simulation.workloads import parse_cluster_spec_text
from tests.planner.factories import SPEC_YAML, cluster_make

pytestmark = pytest.mark.django_db


def test_spec_round_trips_through_the_database():
    text = SPEC_YAML.format(name="round")

    cluster = cluster_create_from_spec(spec_text=text)

    assert cluster_spec_dict(spec=cluster_to_spec(cluster=cluster)) == cluster_spec_dict(
        spec=parse_cluster_spec_text(text))
    assert Server.objects.filter(pool__cluster=cluster).count() == 4
    assert cluster_gpu_total(cluster=cluster) == 32
    assert Pool.objects.get(cluster=cluster, name="inference").lending_limit == 1


def test_bad_spec_names_the_field_and_saves_nothing():
    text = SPEC_YAML.format(name="bad").replace("servers: 2, gpus_per_server: 8}",
                                                "servers: -2, gpus_per_server: 8}", 1)

    with pytest.raises(InputError) as error:
        cluster_create_from_spec(spec_text=text)

    assert error.value.field == "pools[0].servers"
    assert error.value.line == 4
    assert not Cluster.objects.exists()


def test_only_an_inference_pool_lends():
    text = SPEC_YAML.format(name="lend").replace(
        "servers: 2, gpus_per_server: 8}", "servers: 2, gpus_per_server: 8, lending_limit: 1}", 1)

    with pytest.raises(InputError) as error:
        cluster_create_from_spec(spec_text=text)

    assert error.value.field == "pools[0].lending_limit"
    assert not Cluster.objects.exists() and not GpuType.objects.exists()


def test_a_spec_may_not_redefine_a_shared_gpu_type():
    cluster_make(name="first")
    text = SPEC_YAML.format(name="second").replace("T4: {speed: 0.25", "T4: {speed: 0.3")

    with pytest.raises(InputError) as error:
        cluster_create_from_spec(spec_text=text)

    assert error.value.field == "gpu_types.T4"
    assert list(Cluster.objects.values_list("name", flat=True)) == ["first"]


def test_duplicate_cluster_name_is_refused():
    cluster_make(name="same")

    with pytest.raises(InputError) as error:
        cluster_make(name="same")

    assert error.value.field == "name"
