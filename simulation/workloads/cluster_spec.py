"""Cluster specs: the YAML/JSON contract of DESIGN.md, and the Tiresias/Muri spec CSV.

Errors name the field as a path into the document (``pools[1].servers``, 0-based like JSON
paths) and, for YAML/JSON text, the line it sits on.

Default GPU types (used when ``gpu_types`` is omitted, or when a pool names a type the spec
does not declare). Speeds are relative to a V100 for DL training and are ASSUMPTIONS, rough
averages of published ResNet/BERT training throughputs, not measurements: V100 1.0 (the
reference), T4 0.25 (Aryl treats a T4 as 1/4 of a V100), A100 2.0, H100 3.0, P100 0.55,
P40 0.5, K80 0.2. Memory is the common SKU's.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from simulation.errors import InputError
from simulation.limits import (
    MAX_GPU_MEMORY_GB,
    MAX_GPU_SPEED,
    MAX_GPUS_PER_SERVER,
    MAX_POOLS,
    MAX_SERVERS,
    MAX_SERVERS_PER_POOL,
    check_text,
)
from simulation.model import ClusterSpec, GpuType, PoolKind, PoolSpec
from simulation.workloads._rows import Table, parse_int, positive, read_text_file

DEFAULT_GPU_TYPES: dict[str, GpuType] = {
    g.name: g for g in (
        GpuType("V100", 1.0, 32),
        GpuType("T4", 0.25, 16),
        GpuType("A100", 2.0, 40),
        GpuType("H100", 3.0, 80),
        GpuType("P100", 0.55, 16),
        GpuType("P40", 0.5, 24),
        GpuType("K80", 0.2, 12),
    )
}
_TOP_KEYS = frozenset({"name", "description", "gpu_types", "pools"})
_POOL_KEYS = frozenset({"name", "kind", "gpu_type", "servers", "gpus_per_server",
                        "lending_limit", "quota_gpus"})
_GPU_KEYS = frozenset({"speed", "memory_gb"})
_SPEC_CSV_COLUMNS = ("num_switch", "num_node_p_switch", "num_gpu_p_node")


def load_cluster_spec(path: str | Path) -> ClusterSpec:
    """Read a cluster spec file: ``.yaml``/``.yml``/``.json``, or the Tiresias/Muri CSV."""
    path = Path(path)
    text = read_text_file(path)
    return parse_cluster_spec_text(text, str(path), name=path.stem)


def parse_cluster_spec_text(text: str, source: str = "upload", name: str = "cluster",
                            ) -> ClusterSpec:
    """Parse spec text (an upload): YAML, JSON or the spec CSV, told apart by content.

    `name` is used when the document has no ``name`` key (the CSV never has one).
    """
    text = text.removeprefix("\ufeff")
    if not text.strip():
        raise InputError("the file is empty", source=source)
    first_line = text.lstrip().split("\n", 1)[0]
    if first_line.replace(" ", "").lower().startswith("num_switch,"):
        return _from_spec_csv(text, source, name)
    if text.lstrip().startswith("{"):
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise InputError(f"invalid JSON: {exc.msg}", source=source,
                             line=exc.lineno) from None
        except RecursionError:  # the decoder recurses once per level of nesting
            raise InputError("invalid JSON: nested too deeply", source=source) from None
    else:
        try:
            data = yaml.safe_load(text)
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            problem = getattr(exc, "problem", None) or str(exc)
            raise InputError(f"invalid YAML: {problem}", source=source,
                             line=mark.line + 1 if mark else None) from None
        except RecursionError:  # PyYAML's composer recurses once per level of nesting
            raise InputError("invalid YAML: nested too deeply", source=source) from None
    try:
        return cluster_spec_from_dict(data, source, default_name=name)
    except InputError as exc:
        if exc.line is not None or not exc.field:
            raise
        raise InputError(exc.message, source=source, line=_line_of(text, exc.field),
                         field=exc.field) from None


def cluster_spec_from_dict(data: Any, source: str = "upload", default_name: str = "cluster",
                           ) -> ClusterSpec:
    """Validate an already-parsed spec (e.g. a JSON request body) into a ClusterSpec."""
    if not isinstance(data, Mapping):
        raise InputError("a cluster spec must be a mapping with 'pools'", source=source)
    _no_unknown_keys(data, _TOP_KEYS, "", source)
    name = data.get("name", default_name)
    if not isinstance(name, str) or not name.strip():
        raise InputError("must be a non-empty string", source=source, field="name")
    check_text(name.strip(), field="name", source=source)
    gpu_types = _gpu_types(data.get("gpu_types"), source)
    pools_data = data.get("pools")
    if not isinstance(pools_data, list) or not pools_data:
        raise InputError("must be a non-empty list of pools", source=source, field="pools")
    if len(pools_data) > MAX_POOLS:
        raise InputError(f"{len(pools_data)} pools; a cluster is limited to {MAX_POOLS}",
                         source=source, field="pools")
    pools = []
    seen: dict[str, int] = {}
    for i, pool_data in enumerate(pools_data):
        pool = _pool(pool_data, f"pools[{i}]", source)
        if pool.name in seen:
            raise InputError(f"duplicate pool name '{pool.name}' (also pools[{seen[pool.name]}])",
                             source=source, field=f"pools[{i}].name")
        seen[pool.name] = i
        if pool.gpu_type not in gpu_types:
            if pool.gpu_type not in DEFAULT_GPU_TYPES:
                known = sorted(set(gpu_types) | set(DEFAULT_GPU_TYPES))
                raise InputError(f"unknown gpu_type '{pool.gpu_type}' (declare it under "
                                 f"gpu_types; known: {', '.join(known)})", source=source,
                                 field=f"pools[{i}].gpu_type")
            gpu_types[pool.gpu_type] = DEFAULT_GPU_TYPES[pool.gpu_type]
        pools.append(pool)
    total = sum(pool.servers for pool in pools)
    if total > MAX_SERVERS:
        raise InputError(f"{total:,} servers; a cluster is limited to {MAX_SERVERS:,}",
                         source=source, field="pools")
    return ClusterSpec(name=name.strip(), gpu_types=gpu_types, pools=tuple(pools))


def _gpu_types(data: Any, source: str) -> dict[str, GpuType]:
    if data is None:
        return dict(DEFAULT_GPU_TYPES)
    if not isinstance(data, Mapping):
        raise InputError("must map GPU names to {speed, memory_gb}", source=source,
                         field="gpu_types")
    types = {}
    for gpu_name, attrs in data.items():
        where = f"gpu_types.{gpu_name}"
        _scalar(gpu_name, where, source)
        check_text(str(gpu_name), field=where, source=source)
        if not isinstance(attrs, Mapping):
            raise InputError("must be a mapping with speed and memory_gb", source=source,
                             field=where)
        _no_unknown_keys(attrs, _GPU_KEYS, where + ".", source)
        default = DEFAULT_GPU_TYPES.get(str(gpu_name), GpuType(str(gpu_name)))
        speed = _number(attrs.get("speed", default.speed), f"{where}.speed", source,
                        maximum=MAX_GPU_SPEED)
        memory = _number(attrs.get("memory_gb", default.memory_gb), f"{where}.memory_gb",
                         source, maximum=MAX_GPU_MEMORY_GB)
        types[str(gpu_name)] = GpuType(str(gpu_name), speed, memory)
    return types


def _pool(data: Any, where: str, source: str) -> PoolSpec:
    if not isinstance(data, Mapping):
        raise InputError("must be a mapping", source=source, field=where)
    _no_unknown_keys(data, _POOL_KEYS, where + ".", source)
    for key in ("name", "kind", "gpu_type", "servers", "gpus_per_server"):
        if data.get(key) is None:
            raise InputError("missing", source=source, field=f"{where}.{key}")
    name, kind, gpu_type = (str(_scalar(data[k], f"{where}.{k}", source)).strip()
                            for k in ("name", "kind", "gpu_type"))
    if not name:
        raise InputError("must not be empty", source=source, field=f"{where}.name")
    check_text(name, field=f"{where}.name", source=source)
    check_text(gpu_type, field=f"{where}.gpu_type", source=source)
    if kind not in {k.value for k in PoolKind}:
        raise InputError(f"unknown kind '{kind}' (one of: "
                         f"{', '.join(k.value for k in PoolKind)})", source=source,
                         field=f"{where}.kind")
    servers = _count(data["servers"], f"{where}.servers", source,
                     maximum=MAX_SERVERS_PER_POOL)
    lending = data.get("lending_limit")
    if lending is not None:
        lending = _count(lending, f"{where}.lending_limit", source, allow_zero=True,
                         maximum=MAX_SERVERS_PER_POOL)
        if lending > servers:
            raise InputError(f"lending_limit {lending} exceeds the pool's {servers} servers",
                             source=source, field=f"{where}.lending_limit")
    quota = data.get("quota_gpus")
    return PoolSpec(
        name=name, kind=PoolKind(kind), gpu_type=gpu_type, servers=servers,
        gpus_per_server=_count(data["gpus_per_server"], f"{where}.gpus_per_server", source,
                               maximum=MAX_GPUS_PER_SERVER),
        lending_limit=lending,
        quota_gpus=None if quota is None else _count(
            quota, f"{where}.quota_gpus", source,
            maximum=MAX_SERVERS_PER_POOL * MAX_GPUS_PER_SERVER),
    )


def _scalar(value: Any, field: str, source: str) -> Any:
    """`value` when it is text or a number; a list or mapping is refused (never `str()`ed:
    a YAML alias bomb would expand to gigabytes)."""
    if not isinstance(value, str | int | float):
        raise InputError(f"expected text, got a {type(value).__name__}", source=source,
                         field=field)
    return value


def _count(value: Any, field: str, source: str, allow_zero: bool = False, *,
           maximum: int) -> int:
    """A whole number > 0 (>= 0 with allow_zero) up to `maximum`; YAML booleans are
    rejected."""
    integral = isinstance(value, float) and value.is_integer()
    if isinstance(value, bool) or not (isinstance(value, int) or integral):
        shown = repr(value) if isinstance(value, str | float) else type(value).__name__
        raise InputError(f"expected a whole number, got {shown}", source=source, field=field)
    if int(value) < 0 or (int(value) == 0 and not allow_zero):
        raise InputError(f"must be {'non-negative' if allow_zero else 'positive'}, got "
                         f"{value!r}", source=source, field=field)
    if int(value) > maximum:
        raise InputError(f"{int(value):,} is over the limit of {maximum:,}", source=source,
                         field=field)
    return int(value)


def _number(value: Any, field: str, source: str, *, maximum: float) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0:
        shown = repr(value) if isinstance(value, str | int | float) else type(value).__name__
        raise InputError(f"expected a positive number, got {shown}", source=source,
                         field=field)
    if not value <= maximum:
        raise InputError(f"{value:g} is over the limit of {maximum:g}", source=source,
                         field=field)
    return float(value)


def _no_unknown_keys(data: Mapping[Any, Any], allowed: frozenset[str], prefix: str,
                     source: str) -> None:
    for key in data:
        if key not in allowed:
            raise InputError(f"unknown field (allowed: {', '.join(sorted(allowed))})",
                             source=source, field=f"{prefix}{key}")


def _from_spec_csv(text: str, source: str, name: str) -> ClusterSpec:
    """Tiresias/Muri ``cluster_spec.csv``: one V100 training pool of switches x nodes."""
    table = Table(text, source)
    indexes = table.require(*_SPEC_CSV_COLUMNS)
    rows = list(table)
    if len(rows) != 1:
        raise InputError(f"expected exactly one spec row, found {len(rows)}", source=source,
                         line=rows[1][0] if rows else None)
    line, cells = rows[0]
    switches, nodes, gpus = (positive(parse_int(cells[i], source, line, column), source, line,
                                      column)
                             for i, column in zip(indexes, _SPEC_CSV_COLUMNS, strict=True))
    for field, value, maximum in (("num_node_p_switch", switches * nodes, MAX_SERVERS_PER_POOL),
                                  ("num_gpu_p_node", gpus, MAX_GPUS_PER_SERVER)):
        if value > maximum:
            what = "servers" if field == "num_node_p_switch" else "GPUs per server"
            raise InputError(f"{value:,} {what} is over the limit of {maximum:,}",
                             source=source, line=line, field=field)
    check_text(name, field="name", source=source)
    pool = PoolSpec(name="training", kind=PoolKind.TRAINING, gpu_type="V100",
                    servers=switches * nodes, gpus_per_server=gpus)
    return ClusterSpec(name=name, gpu_types={"V100": DEFAULT_GPU_TYPES["V100"]},
                       pools=(pool,))


def _line_of(text: str, field: str) -> int | None:
    """The 1-based line of `field` (a path like ``pools[1].servers``) in YAML/JSON text."""
    try:
        node = yaml.compose(text)
    except yaml.YAMLError:
        return None
    line = None
    for part in field.replace("[", ".[").split("."):
        if not part or node is None:
            continue
        if part.startswith("[") and isinstance(node, yaml.SequenceNode):
            index = int(part[1:-1])
            node = node.value[index] if index < len(node.value) else None
        elif isinstance(node, yaml.MappingNode):
            match = [(k, v) for k, v in node.value if k.value == part]
            node = match[0][1] if match else None
            if match:
                line = match[0][0].start_mark.line + 1
                continue
        else:
            node = None
        if node is not None:
            line = node.start_mark.line + 1
    return line
