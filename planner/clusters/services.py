"""Writes for clusters, and the one place DB rows and `simulation.model.ClusterSpec` meet."""

from __future__ import annotations

from typing import Any

from django.db import IntegrityError, transaction
from django.db.models import Count

from planner.clusters.models import Cluster, ClusterKind, GpuType, Pool, PoolKind, Server
from simulation.errors import InputError
from simulation.limits import check_text
from simulation.model import ClusterSpec, PoolSpec
from simulation.model import GpuType as SpecGpuType
from simulation.model import PoolKind as SpecPoolKind
from simulation.workloads import parse_cluster_spec_text


def cluster_to_spec(*, cluster: Cluster) -> ClusterSpec:
    """The engine's view of a cluster: a pool's size is the number of its Server rows."""
    pools = cluster.pools.select_related("gpu_type").annotate(server_count=Count("servers"))
    pool_specs = []
    gpu_types: dict[str, SpecGpuType] = {}
    for pool in pools.order_by("id"):
        gpu = pool.gpu_type
        gpu_types[gpu.name] = SpecGpuType(gpu.name, gpu.speed, gpu.memory_gb)
        pool_specs.append(PoolSpec(
            name=pool.name,
            kind=SpecPoolKind(pool.kind),
            gpu_type=gpu.name,
            servers=pool.server_count,
            gpus_per_server=pool.gpus_per_server,
            lending_limit=pool.lending_limit,
            quota_gpus=pool.nominal_quota,
        ))
    return ClusterSpec(name=cluster.name, gpu_types=gpu_types, pools=tuple(pool_specs))


def cluster_spec_dict(*, spec: ClusterSpec) -> dict[str, Any]:
    """The spec as DESIGN.md's JSON document (stable key order): for export and content hashes."""
    pools = []
    for pool in spec.pools:
        entry: dict[str, Any] = {
            "name": pool.name, "kind": pool.kind.value, "gpu_type": pool.gpu_type,
            "servers": pool.servers, "gpus_per_server": pool.gpus_per_server,
        }
        if pool.lending_limit is not None:
            entry["lending_limit"] = pool.lending_limit
        if pool.quota_gpus is not None:
            entry["quota_gpus"] = pool.quota_gpus
        pools.append(entry)
    return {
        "name": spec.name,
        "gpu_types": {name: {"speed": g.speed, "memory_gb": g.memory_gb}
                      for name, g in sorted(spec.gpu_types.items())},
        "pools": pools,
    }


def cluster_create_from_spec(*, spec_text: str, source: str = "upload",
                             name: str | None = None, description: str = "",
                             kind: str = ClusterKind.LIVE) -> Cluster:
    """Parse a cluster spec (YAML, JSON or the Tiresias CSV) and store it; InputError if bad."""
    spec = parse_cluster_spec_text(spec_text, source, name=name or "cluster")
    return cluster_create(spec=spec, name=name, description=description, source=source,
                          kind=kind)


@transaction.atomic
def cluster_create(*, spec: ClusterSpec, name: str | None = None, description: str = "",
                   source: str = "spec", kind: str = ClusterKind.LIVE) -> Cluster:
    """Store a validated spec: GPU types (shared, must agree), the cluster, pools, servers.

    `kind` is what-if for a cluster made for a scenario, so the Live pages leave it out.
    """
    cluster_name = check_text((name or spec.name).strip(), field="name", source=source)
    taken = InputError(f"a cluster named {cluster_name!r} already exists", source=source,
                       field="name")
    if Cluster.objects.filter(name=cluster_name).exists():
        raise taken
    types = {gpu_name: _gpu_type_get_or_create(gpu=gpu, source=source)
             for gpu_name, gpu in spec.gpu_types.items()
             if any(p.gpu_type == gpu_name for p in spec.pools)}
    try:
        # The check above misses a cluster of that name that a concurrent request has
        # created but not yet committed; the unique constraint does not (PostgreSQL makes
        # this insert wait for that transaction). A savepoint keeps the caller's
        # transaction usable, and the caller rolls it back on the InputError.
        with transaction.atomic():
            cluster = Cluster.objects.create(name=cluster_name, description=description,
                                             kind=kind)
    except IntegrityError:
        raise taken from None
    servers = []
    for i, pool_spec in enumerate(spec.pools):
        if pool_spec.lending_limit is not None and pool_spec.kind != SpecPoolKind.INFERENCE:
            raise InputError("only an inference pool lends servers", source=source,
                             field=f"pools[{i}].lending_limit")
        pool = Pool.objects.create(
            cluster=cluster, name=pool_spec.name, kind=PoolKind(pool_spec.kind.value),
            gpu_type=types[pool_spec.gpu_type], gpus_per_server=pool_spec.gpus_per_server,
            nominal_quota=pool_spec.quota_gpus, lending_limit=pool_spec.lending_limit,
        )
        servers += [Server(pool=pool, name=server_id) for server_id in pool_spec.server_ids()]
    Server.objects.bulk_create(servers, batch_size=1000)
    return cluster


def _gpu_type_get_or_create(*, gpu: SpecGpuType, source: str) -> GpuType:
    """GPU types are shared by every cluster, so a spec may not redefine an existing one."""
    row, created = GpuType.objects.get_or_create(
        name=gpu.name, defaults={"speed": gpu.speed, "memory_gb": gpu.memory_gb}
    )
    if not created and (row.speed, row.memory_gb) != (gpu.speed, gpu.memory_gb):
        raise InputError(
            f"GPU type {gpu.name} is already defined with speed {row.speed:g} and memory_gb "
            f"{row.memory_gb:g}; this spec says {gpu.speed:g} and {gpu.memory_gb:g}",
            source=source, field=f"gpu_types.{gpu.name}",
        )
    return row
