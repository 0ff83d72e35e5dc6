"""The shipped Aryl scenarios load, name real policies and valid settings, and run small."""

from __future__ import annotations

import dataclasses

from simulation.runner import engine_config, run_simulation, split_settings
from simulation.scenarios import load_named_scenarios
from simulation.workloads.cluster_spec import cluster_spec_from_dict
from simulation.workloads.generator import GeneratorSpec, generate_workload
from simulation.workloads.inference_load import generate_inference_load

EXPECTED = {
    "baseline", "loaning-random", "loaning-scf", "loaning-aryl", "scaling-gandiva",
    "scaling-afs", "scaling-pollux", "scaling-aryl", "aryl-basic", "aryl-advanced",
    "aryl-ideal",
}


def test_every_named_scenario_is_runnable_in_small() -> None:
    scenarios = load_named_scenarios()
    assert EXPECTED <= set(scenarios)
    for name in sorted(EXPECTED):
        scenario = scenarios[name]
        _, engine = split_settings(scenario.policy, scenario.settings)
        engine_config(engine, seed=0)
        cluster = cluster_spec_from_dict(scenario.cluster)
        assert cluster.total_gpus == 3544 + 4160 // 4  # T4 in V100-equivalents
        small = dict(scenario.workload, num_jobs=60, duration_days=0.2)
        small["gpu_types"] = tuple(tuple(x) for x in small["gpu_types"])
        spec = dataclasses.replace(GeneratorSpec(), **small)
        load = None
        if scenario.inference_load is not None:
            load = generate_inference_load(**dict(scenario.inference_load, days=0.5))
        result = run_simulation(cluster, generate_workload(spec, seed=1), scenario.policy,
                                settings=scenario.settings, inference_load=load)
        assert result.summary["jobs"] == 60, name
