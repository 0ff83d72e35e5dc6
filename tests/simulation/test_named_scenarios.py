"""The shipped named scenarios open exactly what the paper reproductions run: the same
cluster, jobs, inference load, policies and settings; and their generators refuse bad knobs."""

from __future__ import annotations

import pytest

from simulation.errors import InputError
from simulation.reproductions import aryl, edl, gandiva, muri, sia
from simulation.runner import engine_config, split_settings
from simulation.scenarios import load_named_scenarios
from simulation.scenarios.generators import named_workload
from simulation.workloads import load_cluster_spec, load_trace
from simulation.workloads.aryl_trace import ArylTraceSpec, aryl_trace_workload
from simulation.workloads.cluster_spec import cluster_spec_from_dict
from simulation.workloads.gandiva_edl import gandiva_cluster
from simulation.workloads.inference_load import generate_inference_load
from simulation.workloads.sia import generate_sia_workload, sia_cluster

# Named scenario -> the Aryl reproduction's experiment it opens.
ARYL = {"aryl-baseline": "baseline", "aryl-basic": "basic", "aryl-advanced": "advanced",
        "aryl-ideal": "ideal", "aryl-loaning-random": "loan-random",
        "aryl-loaning-scf": "loan-scf", "aryl-loaning-aryl": "loan-aryl"}
SCALING = ("baseline", "scale-gandiva", "scale-afs", "scale-pollux", "scale-aryl")


@pytest.fixture(scope="module")
def named():
    return load_named_scenarios()


def test_every_named_scenario_has_valid_policies_and_settings(named) -> None:
    assert set(ARYL) | {"aryl-scaling", "edl-table3", "gandiva-6.3", "gandiva-6.4"} <= set(named)
    for scenario in named.values():
        cluster_spec_from_dict(scenario.cluster)
        for entry in scenario.policies:
            _, engine = split_settings(entry["policy"], {**scenario.settings, **entry["params"]})
            engine_config(engine, seed=0, policy=entry["policy"])


def test_aryl_scenarios_are_the_reproductions_experiments(named) -> None:
    spec = ArylTraceSpec(scale=aryl.SCALE)
    for name, key in ARYL.items():
        scenario, experiment = named[name], aryl.EXPERIMENTS[key]
        assert [e["policy"] for e in scenario.policies] == [experiment.policy], name
        assert {**scenario.settings, **scenario.policies[0]["params"]} == experiment.settings
        assert (scenario.inference_load is not None) == experiment.loaning, name
        assert scenario.workload.get("every_job_elastic", False) == experiment.ideal, name
        assert cluster_spec_from_dict(scenario.cluster) == spec.cluster()
    assert [e["policy"] for e in named["aryl-scaling"].policies] == [
        aryl.EXPERIMENTS[key].policy for key in SCALING]
    assert named_workload(named["aryl-basic"].workload) == aryl_trace_workload(spec, aryl.SEED)
    servers = spec.cluster().pool("inference").servers
    assert generate_inference_load(servers, **named["aryl-basic"].inference_load) == \
        spec.inference_load(aryl.SEED)


def test_edl_and_gandiva_scenarios_are_their_reproductions_inputs(named) -> None:
    table3 = named["edl-table3"]
    assert cluster_spec_from_dict(table3.cluster) == edl.edl_cluster()
    assert table3.settings == edl.SETTINGS
    philly = load_trace(edl.TRACES_DIR / "pollux_philly.csv")
    assert named_workload(table3.workload) == edl.edl_philly_workload(philly, *edl.PHILLY_SLICE)
    for name, servers, params in (("gandiva-6.3", 45, gandiva.GANDIVA_63),
                                  ("gandiva-6.4", 25, gandiva.GANDIVA_64)):
        scenario = named[name]
        assert cluster_spec_from_dict(scenario.cluster).pools == gandiva_cluster(servers).pools
        assert scenario.policies[1] == {"policy": "gandiva", "params": params}
        assert scenario.settings == {"migration_pause": 1.0}


@pytest.mark.parametrize(("spec", "field"), [
    ({"generator": "nope"}, "generator"),
    ({"generator": "aryl-trace", "jobs": 5}, "jobs"),
    ({"generator": "aryl-trace", "scale": "big"}, "scale"),
    ({"generator": "aryl-trace", "scale": 2.0}, "scale"),
    ({"generator": "gandiva-trace-mix", "num_jobs": 1.5}, "num_jobs"),
    ({"generator": "gandiva-eight-model", "num_jobs": True}, "num_jobs"),
])
def test_a_bad_generator_knob_is_an_error_naming_it(spec, field) -> None:
    with pytest.raises(InputError) as error:
        named_workload(spec)
    assert error.value.field == field


def test_an_integer_is_a_float_knob() -> None:
    assert len(named_workload({"generator": "gandiva-eight-model", "num_jobs": 3, "hours": 1})) == 3


def test_muri_scenarios_run_figures_9_and_10_on_the_shipped_traces(named) -> None:
    cluster = load_cluster_spec(muri.TRACES_DIR / "muri_cluster_spec_n8g8.csv")
    for trace in muri.TRACES:
        scenario = named[f"muri-trace{trace}"]
        assert cluster_spec_from_dict(scenario.cluster) == cluster
        assert [e["policy"] for e in scenario.policies] == [
            *muri.KNOWN, "muri-s", *muri.UNKNOWN, "muri-l"]
        assert scenario.workload == {"generator": "muri-trace", "trace": trace}
    assert named_workload({"generator": "muri-trace", "trace": 3}) == load_trace(
        muri.TRACES_DIR / "muri_trace3.csv")
    with pytest.raises(InputError):
        named_workload({"generator": "muri-trace", "trace": 5})


def test_sia_scenario_is_the_reproductions_workload_and_cluster(named) -> None:
    for name, days, mix in (("sia-headline", sia.EVALUATED_DAYS, "varied"),
                            ("sia-locality", sia.EVALUATED_DAYS, "varied"),
                            ("sia-table12", sia.TABLE_12_DAYS, "table12")):
        scenario = named[name]
        spec = sia.setup(sia.HISTORY_DAYS + days, mix)
        assert cluster_spec_from_dict(scenario.cluster).pools == sia_cluster(
            spec, sia.SEED).pools
        assert named_workload(scenario.workload) == generate_sia_workload(spec, seed=sia.SEED)
    assert named["sia-headline"].policies[2] == {"policy": "sia",
                                                 "params": {"history_days": sia.HISTORY_DAYS}}
    with pytest.raises(InputError, match="alike, varied, table12"):
        named_workload({"generator": "sia-users", "mix": "odd"})
    with pytest.raises(InputError, match="4 queues"):
        named_workload({"generator": "sia-users", "mix": "table12", "queues": 3})
    with pytest.raises(InputError, match="shared, per-queue"):
        named_workload({"generator": "sia-users", "time_zones": "utc"})
