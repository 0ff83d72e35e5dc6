"""The search axis: an integer level mapped to a cluster and settings, capacity growing with it."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from simulation.capacity.targets import CostModel
from simulation.errors import InputError
from simulation.limits import MAX_SERVERS_PER_POOL
from simulation.model import ClusterSpec, PoolKind, Workload

AXIS_SERVERS, AXIS_LOAN, AXIS_PARAM = "servers", "loan", "param"


def pools_resize(cluster: ClusterSpec, servers: Mapping[str, int]) -> ClusterSpec:
    """The cluster with the named pools at the given server counts; an inference pool's
    lending limit scales along (as `cluster_scale` does) and a quota pool's quota too."""
    pools = []
    for pool in cluster.pools:
        if pool.name not in servers:
            pools.append(pool)
            continue
        count = int(servers[pool.name])
        if not 1 <= count <= MAX_SERVERS_PER_POOL:
            raise InputError(f"pool {pool.name!r} would have {count:,} servers; a pool holds "
                             f"1 to {MAX_SERVERS_PER_POOL:,}", field="pool_servers")
        factor = count / pool.servers
        lending = None if pool.lending_limit is None else min(
            count, round(pool.lending_limit * factor))
        quota = None if pool.quota_gpus is None else max(1, round(pool.quota_gpus * factor))
        pools.append(dataclasses.replace(pool, servers=count, lending_limit=lending,
                                         quota_gpus=quota))
    return dataclasses.replace(cluster, pools=tuple(pools))


@dataclass(frozen=True, slots=True)
class Axis:
    """What the search sizes; see the module docstring for each kind's level."""

    kind: str
    pools: tuple[str, ...] = ()
    param: str = ""

    def check(self, cluster: ClusterSpec, *, field: str = "axis") -> None:
        names = [p.name for p in cluster.pools]
        if self.kind == AXIS_SERVERS:
            if not self.pools:
                raise InputError("name at least one pool to size", field=f"{field}.pools")
            for name in self.pools:
                if name not in names:
                    raise InputError(f"no pool {name!r} in the cluster (pools: "
                                     f"{', '.join(names)})", field=f"{field}.pools")
            if len(set(self.pools)) != len(self.pools):
                raise InputError("a pool is named twice", field=f"{field}.pools")
        elif self.kind == AXIS_LOAN:
            if not cluster.pools_of_kind(PoolKind.INFERENCE):
                raise InputError("the loan axis needs an inference pool", field=f"{field}.kind")
        elif self.kind == AXIS_PARAM:
            if not self.param:
                raise InputError("name the integer policy parameter to size",
                                 field=f"{field}.param")
        else:
            raise InputError(f"unknown axis {self.kind!r} (known: {AXIS_SERVERS}, {AXIS_LOAN}, "
                             f"{AXIS_PARAM})", field=f"{field}.kind")

    def check_range(self, cluster: ClusterSpec, low: int, high: int) -> None:
        """A range every level of which the axis can build (InputError on `min`/`max`)."""
        if not 0 <= low <= high:
            raise InputError(f"the range {low} to {high} is empty or negative", field="min")
        top = {AXIS_SERVERS: MAX_SERVERS_PER_POOL,
               AXIS_LOAN: _inference_servers(cluster)}.get(self.kind)
        if top is not None and high > top:
            what = "servers a pool holds" if self.kind == AXIS_SERVERS else "inference servers"
            raise InputError(f"{high} is over the {top:,} {what}", field="max")
        if self.kind == AXIS_SERVERS and low < 1:
            raise InputError("a pool needs at least 1 server", field="min")

    def pool_servers(self, cluster: ClusterSpec, level: int) -> dict[str, int]:
        """Servers axis: the lead pool has `level` servers, the others keep their ratio."""
        lead = cluster.pool(self.pools[0])
        return {name: level if i == 0 else max(1, round(
            cluster.pool(name).servers * level / lead.servers))
            for i, name in enumerate(self.pools)}

    def settings(self, cluster: ClusterSpec, level: int) -> dict[str, Any]:
        """The engine setting or policy parameter the level sets (none on the servers axis)."""
        if self.kind == AXIS_LOAN:
            return {"loan_headroom": _inference_servers(cluster) - level}
        if self.kind == AXIS_PARAM:
            return {self.param: level}
        return {}

    def apply(self, cluster: ClusterSpec, level: int) -> tuple[ClusterSpec, dict[str, Any]]:
        if self.kind == AXIS_SERVERS:
            return pools_resize(cluster, self.pool_servers(cluster, level)), {}
        return cluster, self.settings(cluster, level)

    def reference(self, cluster: ClusterSpec, settings: Mapping[str, Any]) -> int | None:
        """The level of the inputs as given (None when the parameter is not set)."""
        if self.kind == AXIS_SERVERS:
            return cluster.pool(self.pools[0]).servers
        if self.kind == AXIS_LOAN:
            return _inference_servers(cluster) - int(settings.get("loan_headroom", 0))
        value = settings.get(self.param)
        return None if value is None else int(value)

    def default_range(self, cluster: ClusterSpec, workload: Workload) -> tuple[int, int]:
        """Servers: from the least that holds the widest job to twice the pool as given;
        loan: from lending nothing to lending every inference server."""
        if self.kind == AXIS_SERVERS:
            high = min(MAX_SERVERS_PER_POOL, 2 * cluster.pool(self.pools[0]).servers)
            return self.fitting_level(cluster, workload, high), high
        if self.kind == AXIS_LOAN:
            return 0, _inference_servers(cluster)
        raise InputError(f"give the range of {self.param} to search", field="range")

    def fitting_level(self, cluster: ClusterSpec, workload: Workload, high: int) -> int:
        """The least level whose cluster holds every job's least GPUs of its type (the
        engine refuses a smaller one, `Simulation._check_fits`); `high` when none does."""
        need: dict[str | None, int] = {}
        for job in workload.jobs:
            need[job.gpu_type] = max(need.get(job.gpu_type, 0), job.min_gpus)

        def fits(level: int) -> bool:
            resized, _ = self.apply(cluster, level)
            have: dict[str | None, int] = {None: resized.total_gpus}
            for pool in resized.pools:
                have[pool.gpu_type] = have.get(pool.gpu_type, 0) + pool.gpus
            return all(have.get(kind, 0) >= gpus for kind, gpus in need.items())

        low, top = 1, high
        while low < top:
            mid = (low + top) // 2
            low, top = (low, mid) if fits(mid) else (mid + 1, top)
        return low

    def cost(self, cluster: ClusterSpec, level: int, costs: CostModel) -> float:
        resized, _ = self.apply(cluster, level)
        if self.kind == AXIS_LOAN:
            charged = {p.name: min(level, p.lending_limit if p.lending_limit is not None
                                   else p.servers)
                       for p in cluster.pools_of_kind(PoolKind.INFERENCE)}
            return costs.per_hour(resized, charged=charged)
        return costs.per_hour(resized)

    def gpus(self, cluster: ClusterSpec, level: int) -> dict[str, int]:
        """GPUs of the sized pools (servers axis) or lendable (loan axis), per GPU type."""
        out: dict[str, int] = {}
        if self.kind == AXIS_SERVERS:
            resized, _ = self.apply(cluster, level)
            for name in self.pools:
                pool = resized.pool(name)
                out[pool.gpu_type] = out.get(pool.gpu_type, 0) + pool.gpus
        elif self.kind == AXIS_LOAN:
            for pool in cluster.pools_of_kind(PoolKind.INFERENCE):
                out[pool.gpu_type] = out.get(pool.gpu_type, 0) + level * pool.gpus_per_server
        return out

    def describe(self, cluster: ClusterSpec, level: int) -> str:
        if self.kind == AXIS_SERVERS:
            resized, _ = self.apply(cluster, level)
            return ", ".join(f"{resized.pool(n).servers} {n} servers "
                             f"({resized.pool(n).gpus} {resized.pool(n).gpu_type})"
                             for n in self.pools)
        if self.kind == AXIS_LOAN:
            return (f"{level} inference servers lendable "
                    f"(loan_headroom={_inference_servers(cluster) - level})")
        return f"{self.param}={level}"

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "pools": list(self.pools), "param": self.param}


def _inference_servers(cluster: ClusterSpec) -> int:
    return sum(p.servers for p in cluster.pools_of_kind(PoolKind.INFERENCE))
