"""From database rows to the engine's inputs, and the content hash that names a run.

Everything a run computes from is gathered here: the cluster spec, the workload (an uploaded
file parsed again, or the generator re-run with its seed), the inference load sized to the
cluster's inference pools, the sweep variant applied on top, and the settings. The content
hash covers all of it plus a fingerprint of the simulator's source, so a changed engine never
reuses an old result. The same inputs are shown to each policy before a scenario is saved or
launched, so one that cannot run on them is refused up front instead of failing in a worker.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from planner.clusters.models import Cluster
from planner.clusters.services import cluster_spec_dict, cluster_to_spec
from planner.scenarios.models import (
    InferenceLoadKind,
    InferenceLoadProfile,
    Run,
    Workload,
    WorkloadKind,
)
from simulation.capacity import pools_resize
from simulation.composition import create_policy
from simulation.errors import InputError
from simulation.limits import MAX_SEED, MAX_SERVERS, MAX_SERVERS_PER_POOL
from simulation.model import ClusterSpec, InferenceLoad, JobSpec, PoolKind
from simulation.model import Workload as SimWorkload
from simulation.runner import split_settings
from simulation.scenarios.generators import is_named, named_workload
from simulation.workloads import (
    GeneratorSpec,
    generate_inference_load,
    generate_workload,
    parse_inference_load_text,
    parse_trace_text,
)

# Sweep axes that reshape the inputs rather than set an engine or policy parameter.
VARIANT_AXES = ("cluster_scale", "load_scale", "elastic_share")
INFERENCE_LOAD_PARAMS = ("days", "step_seconds", "peak_to_trough", "peak_hour", "trough_hour",
                         "peak_utilization", "noise", "seed")
_PAIR_FIELDS = ("gpu_sizes", "models", "pools", "gpu_types")


@dataclass(frozen=True)
class RunInputs:
    cluster: ClusterSpec
    workload: SimWorkload
    inference_load: InferenceLoad | None


@functools.lru_cache(maxsize=1)
def engine_fingerprint() -> str:
    """SHA-256 over the simulator's Python source: the engine and policy code version."""
    root = Path(__file__).resolve().parents[2] / "simulation"
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*.py")):
        digest.update(str(path.relative_to(root)).encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()


def sha256_json(data: Any) -> str:
    return hashlib.sha256(json.dumps(data, sort_keys=True, default=str).encode()).hexdigest()


def generator_spec_from_dict(data: Any) -> GeneratorSpec:
    """A GeneratorSpec from JSON (lists for the weighted pairs); InputError names the knob."""
    if not isinstance(data, dict):
        raise InputError("must be a JSON object of generator settings", source="generator")
    known = {f.name for f in dataclasses.fields(GeneratorSpec)}
    values: dict[str, Any] = {}
    for key, value in data.items():
        if key not in known:
            raise InputError(f"unknown generator setting (known: {', '.join(sorted(known))})",
                             source="generator", field=key)
        if key in _PAIR_FIELDS:
            try:
                value = tuple((choice, float(weight)) for choice, weight in value)
            except (TypeError, ValueError):
                raise InputError("expected a list of [value, weight] pairs",
                                 source="generator", field=key) from None
        values[key] = value
    spec = GeneratorSpec(**values)
    try:
        spec.validate()
    except TypeError as exc:
        raise InputError(f"wrong type ({exc})", source="generator") from None
    return spec


def generated_workload(*, spec: Any, seed: int) -> SimWorkload:
    """The jobs of a generator spec: a reproduction's named generator or a GeneratorSpec."""
    if is_named(spec):
        return named_workload(spec, seed)
    return generate_workload(generator_spec_from_dict(spec), seed=seed)


def workload_to_simulation(*, workload: Workload, run_seed: int = 0) -> SimWorkload:
    """The workload's jobs for a run of seed `run_seed`.

    A generated workload is a distribution, so each run seed draws its own sample (generator
    seed + run seed): a scenario's seeds then vary the jobs as well as the policies' random
    choices, and the mean over seeds has a meaningful interval. Run seed 0 is the workload's
    own sample, the one its summary describes. An uploaded trace is the same for every seed.
    """
    if workload.kind == WorkloadKind.GENERATOR:
        seed = (workload.generator_seed + run_seed) % (MAX_SEED + 1)
        return generated_workload(spec=workload.generator_spec, seed=seed)
    with workload.file.open("rb") as handle:
        text = handle.read().decode("utf-8-sig")
    return parse_trace_text(text, workload.name, format=workload.format or None)


def inference_load_to_simulation(*, profile: InferenceLoadProfile | None,
                                 cluster: ClusterSpec) -> InferenceLoad | None:
    """The profile sized to the cluster's inference servers (None without a profile)."""
    if profile is None:
        return None
    servers = sum(p.servers for p in cluster.pools_of_kind(PoolKind.INFERENCE))
    if servers == 0:
        raise InputError("an inference load needs an inference pool in the cluster",
                         source=profile.name, field="inference_load")
    if profile.kind == InferenceLoadKind.GENERATED:
        return generate_inference_load(servers, **profile.params)
    with profile.file.open("rb") as handle:
        text = handle.read().decode("utf-8-sig")
    return parse_inference_load_text(text, profile.name, total_servers=servers)


def variant_apply(*, variant: dict[str, Any], cluster: ClusterSpec, workload: SimWorkload,
                  seed: int) -> tuple[ClusterSpec, SimWorkload]:
    """Reshape the inputs for one sweep grid point (the axes in VARIANT_AXES), or for a
    capacity search's level (`pool_servers`: pool name -> servers)."""
    if "cluster_scale" in variant:
        cluster = cluster_scale(cluster=cluster, factor=float(variant["cluster_scale"]))
    if "pool_servers" in variant:  # a capacity search's level: servers per named pool
        cluster = pools_resize(cluster, variant["pool_servers"])
    if "load_scale" in variant:
        factor = float(variant["load_scale"])
        workload = dataclasses.replace(workload, jobs=tuple(
            dataclasses.replace(job, submit_time=job.submit_time / factor)
            for job in workload.jobs))
    if "elastic_share" in variant:
        workload = elastic_share_apply(workload=workload, share=float(variant["elastic_share"]),
                                       seed=seed)
    return cluster, workload


def cluster_scale(*, cluster: ClusterSpec, factor: float) -> ClusterSpec:
    """Every pool with `factor` times its servers (at least one); limits scale along. A pool
    or cluster grown past MAX_SERVERS_PER_POOL or MAX_SERVERS is refused."""
    pools = []
    if sum(max(1, round(p.servers * factor)) for p in cluster.pools) > MAX_SERVERS:
        raise InputError(f"x{factor:g} makes the cluster larger than {MAX_SERVERS:,} servers",
                         field="grid.cluster_scale")
    for pool in cluster.pools:
        servers = max(1, round(pool.servers * factor))
        if servers > MAX_SERVERS_PER_POOL:
            raise InputError(f"x{factor:g} gives pool {pool.name!r} {servers:,} servers; a pool "
                             f"is limited to {MAX_SERVERS_PER_POOL:,}", field="grid.cluster_scale")
        lending = None if pool.lending_limit is None else min(
            servers, round(pool.lending_limit * factor))
        quota = None if pool.quota_gpus is None else max(1, round(pool.quota_gpus * factor))
        pools.append(dataclasses.replace(pool, servers=servers, lending_limit=lending,
                                         quota_gpus=quota))
    return dataclasses.replace(cluster, pools=tuple(pools))


def elastic_share_apply(*, workload: SimWorkload, share: float, seed: int) -> SimWorkload:
    """Make about `share` of the jobs elastic, the rest rigid, chosen by a seeded RNG.

    Elastic jobs may run between half and twice their requested workers, as the workload
    generator makes them (Aryl §2.2).
    """
    rng = random.Random(f"elastic-share-{seed}")
    return dataclasses.replace(workload, jobs=tuple(
        _elastic(job, rng.random() < share) for job in workload.jobs))


def _elastic(job: JobSpec, elastic: bool) -> JobSpec:
    requested = job.requested_workers
    low, high = (max(1, requested // 2), 2 * requested) if elastic else (requested, requested)
    return dataclasses.replace(job, min_workers=low, max_workers=high)


def run_inputs(*, run: Run) -> RunInputs:
    scenario = run.scenario
    cluster = cluster_to_spec(cluster=scenario.cluster)
    workload = workload_to_simulation(workload=scenario.workload, run_seed=run.seed)
    cluster, workload = variant_apply(variant=run.variant, cluster=cluster, workload=workload,
                                      seed=run.seed)
    load = inference_load_to_simulation(profile=scenario.inference_load, cluster=cluster)
    return RunInputs(cluster=cluster, workload=workload, inference_load=load)


def policies_check_inputs(*, cluster: Cluster, workload: Workload,
                          policies: Sequence[Mapping[str, Any]],
                          engine_settings: Mapping[str, Any]) -> None:
    """Refuse a policy that cannot run on the scenario's cluster and workload.

    Each `{policy, params}` entry is built as its runs would build it, with the scenario's
    shared settings under its own (so parameter values the policy rejects are refused too),
    and asked `Policy.check_inputs`; the InputError names the entry, `policies[i]`, and its
    message the policy and the reason.
    """
    spec = cluster_to_spec(cluster=cluster)
    loaded = workload_to_simulation(workload=workload)
    for i, entry in enumerate(policies):
        where = f"policies[{i}]"
        try:
            params, _ = split_settings(entry["policy"],
                                       {**engine_settings, **(entry.get("params") or {})})
            create_policy(entry["policy"], params).check_inputs(spec, loaded)
        except InputError as exc:
            field = where if exc.field in (None, "policy") else f"{where}.{exc.field}"
            raise InputError(exc.message, field=field) from None
        except ValueError as exc:  # a constructor refusing a value, e.g. themis' lease <= 0
            raise InputError(f"{entry['policy']}: {exc}", field=where) from None


def run_content_hash(*, cluster: ClusterSpec, workload: Workload,
                     inference_load: InferenceLoadProfile | None, policy: str,
                     settings: dict[str, Any], variant: dict[str, Any], seed: int) -> str:
    """Names a run by everything that determines its numbers (DESIGN.md: runs are pure)."""
    return sha256_json({
        "cluster": cluster_spec_dict(spec=cluster),
        "workload": [workload.content_sha256, workload.format],
        "inference_load": inference_load.content_sha256 if inference_load else None,
        "policy": policy,
        "settings": settings,
        "variant": variant,
        "seed": seed,
        "workload_seeding": "generator seed + run seed",
        "engine": engine_fingerprint(),
    })
