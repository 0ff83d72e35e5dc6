"""Sweep variants reshape the engine's inputs; pure functions, no database."""

import pytest

from planner.scenarios.inputs import cluster_scale, elastic_share_apply, variant_apply
from simulation.errors import InputError
from simulation.workloads import GeneratorSpec, generate_workload, parse_cluster_spec_text
from tests.planner.factories import SPEC_YAML

CLUSTER = parse_cluster_spec_text(SPEC_YAML.format(name="c"))
WORKLOAD = generate_workload(GeneratorSpec(num_jobs=200, duration_days=1), seed=4)


def test_cluster_scale_scales_servers_and_keeps_the_lending_limit_within_the_pool():
    scaled = cluster_scale(cluster=CLUSTER, factor=0.4)

    assert [p.servers for p in scaled.pools] == [1, 1]
    assert scaled.pool("inference").lending_limit == 0
    assert [p.servers for p in cluster_scale(cluster=CLUSTER, factor=3).pools] == [6, 6]


def test_load_scale_compresses_arrivals():
    _, faster = variant_apply(variant={"load_scale": 2}, cluster=CLUSTER, workload=WORKLOAD,
                              seed=0)

    assert [j.submit_time for j in faster.jobs] == [j.submit_time / 2 for j in WORKLOAD.jobs]


@pytest.mark.parametrize("share", [0.0, 0.3, 1.0])
def test_elastic_share_makes_that_share_of_jobs_elastic_deterministically(share):
    first = elastic_share_apply(workload=WORKLOAD, share=share, seed=7)
    again = elastic_share_apply(workload=WORKLOAD, share=share, seed=7)

    elastic = sum(job.elastic for job in first.jobs) / len(first.jobs)
    assert first == again
    assert elastic == pytest.approx(share, abs=0.08)
    assert all(j.min_workers <= j.requested_workers <= j.max_workers for j in first.jobs)


def test_generator_spec_refuses_an_unknown_knob():
    from planner.scenarios.inputs import generator_spec_from_dict

    with pytest.raises(InputError) as error:
        generator_spec_from_dict({"num_jobs": 5, "warp": 1})

    assert error.value.field == "warp"


def test_a_generated_workload_draws_one_sample_per_run_seed():
    """Generator seed + run seed: run seed 0 is the workload's own sample, seed 2 with
    generator seed 5 is the generator's seed-7 sample; an uploaded trace would not vary."""
    from planner.scenarios.inputs import workload_to_simulation
    from planner.scenarios.models import Workload, WorkloadKind

    spec = {"num_jobs": 30, "duration_days": 1}
    workload = Workload(name="w", kind=WorkloadKind.GENERATOR, generator_spec=spec,
                        generator_seed=5)
    sample = {seed: generate_workload(GeneratorSpec(num_jobs=30, duration_days=1), seed=seed)
              for seed in (5, 7)}

    assert workload_to_simulation(workload=workload).jobs == sample[5].jobs
    assert workload_to_simulation(workload=workload, run_seed=2).jobs == sample[7].jobs
    assert sample[5].jobs != sample[7].jobs
