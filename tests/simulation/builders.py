"""Small builders for hand-made clusters and workloads used across simulation tests."""

from __future__ import annotations

from simulation.model import ClusterSpec, GpuType, JobSpec, PoolKind, PoolSpec, Workload

GPU_TYPES = {"V100": GpuType("V100", 1.0, 32.0), "T4": GpuType("T4", 0.25, 16.0)}


def cluster(*pools: tuple[str, PoolKind, int, int], gpu_type: str = "V100") -> ClusterSpec:
    """`cluster(("training", PoolKind.TRAINING, servers, gpus_per_server), ...)`."""
    return ClusterSpec(
        "test",
        GPU_TYPES,
        tuple(PoolSpec(name, kind, gpu_type, servers, gpus) for name, kind, servers, gpus in pools),
    )


def training_cluster(servers: int, gpus_per_server: int) -> ClusterSpec:
    return cluster(("training", PoolKind.TRAINING, servers, gpus_per_server))


def workload(*jobs: JobSpec) -> Workload:
    return Workload(tuple(sorted(jobs, key=lambda j: j.submit_time)), source="test")
