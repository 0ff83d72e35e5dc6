"""A policy refuses inputs it cannot run on before the run starts (`Policy.check_inputs`).

The SIA family schedules one queue per quota pool, else per training pool: on a cluster of
inference pools alone it has no queue (it used to stop with StopIteration, or, for gssf,
never start a job). Other policies accept the same cluster and run.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from simulation.cli import main
from simulation.composition import create_policy
from simulation.errors import InputError
from simulation.model import JobSpec, PoolKind
from simulation.runner import run_simulation
from tests.simulation.builders import cluster, workload

QUEUE_POLICIES = ("fcfs-pools", "gssf", "maxmin", "sia", "sia-vc", "ssf")
INFERENCE_ONLY = cluster(("inference", PoolKind.INFERENCE, 2, 8), gpu_type="T4")
ONE_JOB = workload(JobSpec("a", 0, 1, 600))


@pytest.mark.parametrize("policy", QUEUE_POLICIES)
def test_queue_policies_refuse_a_cluster_without_a_queue(policy: str) -> None:
    with pytest.raises(InputError) as refused:
        run_simulation(INFERENCE_ONLY, ONE_JOB, policy)
    assert refused.value.field == "policy"
    message = refused.value.message
    assert message.startswith(f"{policy} cannot run on cluster 'test'")
    assert "(its pools are inference)" in message


def test_queue_policies_accept_one_training_pool() -> None:
    # the training pool is the one queue: nothing to refuse
    one_pool = cluster(("training", PoolKind.TRAINING, 1, 8))
    for policy in QUEUE_POLICIES:
        create_policy(policy).check_inputs(one_pool, ONE_JOB)


def test_other_policies_accept_by_default() -> None:
    create_policy("fifo").check_inputs(INFERENCE_ONLY, ONE_JOB)


@pytest.mark.parametrize(("setting", "field"), [
    ({"windows": "5,soon"}, "windows"), ({"windows": "0,60"}, "windows"),
    ({"windows": ""}, "windows"), ({"duration_quantile": "1.5"}, "duration_quantile"),
])
def test_sia_refuses_parameter_values_it_cannot_use(setting: dict, field: str) -> None:
    with pytest.raises(InputError) as refused:
        create_policy("sia", setting)
    assert refused.value.field == field


def test_cli_exits_2_naming_the_policy_and_the_reason(tmp_path: Path, capsys) -> None:
    spec = tmp_path / "inference.yaml"
    spec.write_text("name: lenders\ngpu_types: {T4: {speed: 0.25, memory_gb: 16}}\npools:\n"
                    "  - {name: inference, kind: inference, gpu_type: T4, servers: 2,"
                    " gpus_per_server: 8}\n")
    trace = tmp_path / "one.csv"
    trace.write_text("job_id,submit_time,num_gpus,duration\na,0,1,600\n")
    code = main(["run", "--cluster", str(spec), "--trace", str(trace), "--policy", "sia",
                 "--out", str(tmp_path / "out")])
    assert code == 2
    error = capsys.readouterr().err
    assert "sia cannot run on cluster 'lenders'" in error and "quota or training pool" in error
    assert not (tmp_path / "out" / "summary.json").exists()
