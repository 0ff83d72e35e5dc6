"""Aryl's production setup: the speed-normalised cluster (§5.2, Table 7)."""

from __future__ import annotations

import dataclasses

from simulation.model import GpuType, InferenceLoad, JobSpec, Workload
from simulation.runner import run_simulation
from simulation.scenarios import load_named_scenarios
from simulation.workloads.aryl_trace import NORMALISED_T4, aryl_cluster
from simulation.workloads.cluster_spec import cluster_spec_from_dict


def test_named_scenarios_use_the_normalised_production_cluster() -> None:
    cluster = aryl_cluster()
    named = cluster_spec_from_dict(load_named_scenarios()["aryl-basic"].cluster)
    assert named.pools == cluster.pools
    assert named.gpu_types == cluster.gpu_types
    assert cluster.pool("inference").gpus == 4160 // 4  # 520 x 8 T4 = 1,040 V100-eq.


def _one_loaned_job_end(speed: float, gpus_per_server: int) -> float:
    """A (V100, 8 GPUs, 1,000 s) fills the training server; B (any GPU, 2 GPUs, 2,000 s)
    goes to the server lent at 0; the inference side takes it back at the 600 s loan tick."""
    cluster = aryl_cluster(training_servers=1, inference_servers=1)
    inference = dataclasses.replace(cluster.pool("inference"), gpus_per_server=gpus_per_server)
    cluster = dataclasses.replace(
        cluster, pools=(cluster.pool("training"), inference),
        gpu_types={**cluster.gpu_types, NORMALISED_T4: GpuType(NORMALISED_T4, speed)})
    jobs = Workload((JobSpec("a", 0.0, 8, 1000.0, gpu_type="V100"),
                     JobSpec("b", 0.0, 2, 2000.0)))
    load = InferenceLoad(times=(0.0, 500.0), busy_servers=(0, 1))
    result = run_simulation(cluster, jobs, "aryl", settings={"elastic": False},
                            inference_load=load)
    rows = {row["job_id"]: row for row in result.jobs}
    assert rows["b"]["preemptions"] == 1
    assert result.summary["makespan"] == rows["b"]["end"]
    return rows["b"]["end"]


def test_a_job_on_a_loaned_server_runs_at_its_training_speed() -> None:
    # Normalised: B does 600 s of work on the loaned server, is preempted at 600 s, restarts
    # on the V100s A frees at 1,000 s after the 63 s restart overhead: 1,000 + 63 + 1,400.
    assert _one_loaned_job_end(1.0, 2) == 2463.0
    # Literal 8 T4 at 1/4 speed: only 150 s of work by 600 s, so 1,000 + 63 + 1,850.
    assert _one_loaned_job_end(0.25, 8) == 2913.0
