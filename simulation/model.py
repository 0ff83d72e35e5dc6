"""Static model of a GPU cluster and its workload: what the inputs *are*.

These are immutable value objects shared by every layer: loaders build them, the engine
turns them into runtime state, policies read them through the view. Nothing here changes
during a run.
"""

from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass, field
from enum import StrEnum

REFERENCE_GPU = "V100"


class PoolKind(StrEnum):
    TRAINING = "training"
    INFERENCE = "inference"  # lendable to training (Aryl)
    QUOTA = "quota"  # a tenant's share of one physical cluster (SIA)


@dataclass(frozen=True, slots=True)
class GpuType:
    """A GPU model; `speed` is relative to the reference GPU (Aryl: a T4 is 1/4 of a V100)."""

    name: str
    speed: float = 1.0
    memory_gb: float = 32.0


@dataclass(frozen=True, slots=True)
class PoolSpec:
    """A pool of identical servers.

    `lending_limit` caps how many servers an inference pool may lend at once (Kueue's
    lendingLimit); `None` means every server may be lent. `quota_gpus` is a quota pool's
    nominal guarantee (SIA); it defaults to the pool's own GPUs.
    """

    name: str
    kind: PoolKind
    gpu_type: str
    servers: int
    gpus_per_server: int
    lending_limit: int | None = None
    quota_gpus: int | None = None

    @property
    def gpus(self) -> int:
        return self.servers * self.gpus_per_server

    def server_ids(self) -> list[str]:
        return [f"{self.name}-{i}" for i in range(1, self.servers + 1)]


@dataclass(frozen=True, slots=True)
class ClusterSpec:
    name: str
    gpu_types: dict[str, GpuType]
    pools: tuple[PoolSpec, ...]

    def pool(self, name: str) -> PoolSpec:
        for pool in self.pools:
            if pool.name == name:
                return pool
        raise KeyError(name)

    def pools_of_kind(self, kind: PoolKind) -> tuple[PoolSpec, ...]:
        return tuple(p for p in self.pools if p.kind == kind)

    @property
    def total_gpus(self) -> int:
        return sum(p.gpus for p in self.pools)

    def speed_of(self, pool: PoolSpec) -> float:
        return self.gpu_types[pool.gpu_type].speed


@dataclass(frozen=True, slots=True)
class ResourceProfile:
    """Per-iteration time (seconds) a job spends on each resource stage (Muri §3).

    Stages are ordered as the job executes them, e.g. (storage IO, CPU, GPU, network).
    """

    stage_seconds: tuple[float, ...]

    @property
    def iteration_seconds(self) -> float:
        return sum(self.stage_seconds)


@dataclass(frozen=True, slots=True)
class JobSpec:
    """A training job as submitted.

    `duration` is the running time (s) at `num_gpus` GPUs of the reference type. Workers hold
    `gpus_per_worker` GPUs each; the job is elastic when `max_workers > min_workers` and it
    was measured at `num_gpus // gpus_per_worker` workers, which lies in that range.
    """

    job_id: str
    submit_time: float
    num_gpus: int
    duration: float
    model: str = "generic"
    gpus_per_worker: int = 1
    min_workers: int = 0  # 0 = the requested worker count
    max_workers: int = 0  # 0 = the requested worker count
    pool: str | None = None
    gpu_type: str | None = None
    preemptible: bool = True
    checkpoint: bool = True
    priority: int = 0
    user: str = ""
    experiment: str = ""
    iterations: int | None = None
    profile: ResourceProfile | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        requested = self.num_gpus // self.gpus_per_worker if self.gpus_per_worker else 0
        if self.min_workers == 0:
            object.__setattr__(self, "min_workers", requested)
        if self.max_workers == 0:
            object.__setattr__(self, "max_workers", requested)

    @property
    def requested_workers(self) -> int:
        return self.num_gpus // self.gpus_per_worker

    @property
    def elastic(self) -> bool:
        return self.max_workers > self.min_workers

    @property
    def min_gpus(self) -> int:
        return self.min_workers * self.gpus_per_worker

    @property
    def max_gpus(self) -> int:
        return self.max_workers * self.gpus_per_worker

    @property
    def gpu_seconds(self) -> float:
        return self.duration * self.num_gpus


@dataclass(frozen=True, slots=True)
class Workload:
    """A trace: jobs sorted by submit time, and where they came from."""

    jobs: tuple[JobSpec, ...]
    source: str = ""
    format: str = "canonical"

    def __len__(self) -> int:
        return len(self.jobs)


@dataclass(frozen=True, slots=True)
class InferenceLoad:
    """The inference cluster's own demand: busy inference servers over time (step function)."""

    times: tuple[float, ...]
    busy_servers: tuple[int, ...]
    source: str = ""

    def busy_at(self, t: float) -> int:
        i = bisect_right(self.times, t) - 1
        return self.busy_servers[max(i, 0)] if self.busy_servers else 0
