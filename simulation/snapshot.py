"""A cluster state snapshot (DESIGN.md's JSON) turned into engine state.

The live decision API, the CLI's `decide` and the planner's stateful decisions all describe
"now" the same way: servers (with pool, GPUs, GPU type and whether an inference server is on
loan) and the jobs placed on them. `parse_snapshot` validates that document and raises
`InputError` naming the JSON path of the first bad value (`state.jobs[3].placement[0].server`);
`snapshot_simulation` builds a `Simulation` whose state holds those servers and jobs, placing
every running job through the engine's own checks so an impossible snapshot (an over-committed
server, a worker count outside its range) is refused exactly as a policy's decision would be.

Choices where DESIGN.md is silent:
- A pool's kind comes from `state.pools[].kind`, else from its servers' `kind`, else it is
  `inference` when one of its servers is on loan and `training` otherwise.
- `num_gpus` (the size `remaining_seconds` is measured at) defaults to the GPUs a running job
  holds, and to its minimum for a queued job; `submit_time` defaults to 0 (queue order is
  then the order of the list).
- Servers keep the snapshot's order within their pool: reclaim strategies break ties by it.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import MISSING, dataclass, fields
from typing import Any, TypeVar

from simulation.decisions import Placement, Slot
from simulation.engine import EngineConfig, Simulation
from simulation.errors import InputError
from simulation.limits import (
    MAX_GPU_MEMORY_GB,
    MAX_GPU_SPEED,
    MAX_GPUS_PER_JOB,
    MAX_GPUS_PER_SERVER,
    MAX_INT,
    MAX_JOBS,
    MAX_SERVERS,
    MAX_SNAPSHOT_SECONDS,
)
from simulation.model import ClusterSpec, GpuType, JobSpec, PoolKind, PoolSpec, Workload
from simulation.policies.base import Policy
from simulation.state import JobState, JobStatus, PlacementRefused

SOURCE = "request"
JOB_STATUSES = ("queued", "running")
T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class SnapshotPool(PoolSpec):
    """A pool whose servers keep the ids the snapshot gave them."""

    ids: tuple[str, ...] = ()

    def server_ids(self) -> list[str]:
        return list(self.ids)


@dataclass(frozen=True, slots=True)
class SnapshotJob:
    spec: JobSpec
    status: str
    placement: Placement
    remaining_seconds: float
    path: str  # JSON path of the job, for errors found later


@dataclass(frozen=True, slots=True)
class Snapshot:
    spec: ClusterSpec
    on_loan: tuple[str, ...]
    jobs: tuple[SnapshotJob, ...]
    now: float


def _fail(path: str, message: str) -> InputError:
    return InputError(message, source=SOURCE, field=path)


def _at(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _object(value: Any, path: str) -> Mapping[str, Any]:
    if type(value) is not dict and not isinstance(value, Mapping):  # dict: the fast path
        raise _fail(path, f"expected an object, got {type(value).__name__}")
    return value


def _list(value: Any, path: str) -> Sequence[Any]:
    if not isinstance(value, list):
        raise _fail(path, f"expected a list, got {type(value).__name__}")
    return value


def _str(data: Mapping[str, Any], key: str, path: str, default: str | None = None) -> str:
    value = data.get(key, default)
    if value is None:
        raise _fail(_at(path, key), "is required")
    if not isinstance(value, str) or not value.strip():
        raise _fail(_at(path, key), f"expected a non-empty string, got {value!r}")
    return value


def _int(data: Mapping[str, Any], key: str, path: str, default: int | None = None, *,
         minimum: int = 0, maximum: int = MAX_INT) -> int:
    value = data.get(key, default)
    if value is None:
        raise _fail(_at(path, key), "is required")
    if isinstance(value, bool) or not isinstance(value, int):
        raise _fail(_at(path, key), f"expected an integer, got {_shown(value)}")
    if value < minimum:
        raise _fail(_at(path, key), f"must be at least {minimum}, got {value}")
    if value > maximum:
        raise _fail(_at(path, key), f"{value} is over the limit of {maximum:,}")
    return value


def _float(data: Mapping[str, Any], key: str, path: str, default: float | None = None, *,
           maximum: float = MAX_SNAPSHOT_SECONDS) -> float:
    value = data.get(key, default)
    if value is None:
        raise _fail(_at(path, key), "is required")
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise _fail(_at(path, key), f"expected a number, got {_shown(value)}")
    if value < 0:
        raise _fail(_at(path, key), f"must not be negative, got {value}")
    if value > maximum:
        raise _fail(_at(path, key), f"{value:g} is over the limit of {maximum:g}")
    return float(value)


def _shown(value: Any) -> str:
    """A value for an error message: scalars as written, containers by type (never repr'd:
    a deeply nested one would exhaust the recursion limit)."""
    if isinstance(value, str | int | float | bool) or value is None:
        return repr(value)
    return f"a {type(value).__name__}"


def _bool(data: Mapping[str, Any], key: str, path: str, default: bool) -> bool:
    value = data.get(key, default)
    if not isinstance(value, bool):
        raise _fail(_at(path, key), f"expected true or false, got {value!r}")
    return value


def _kind(value: Any, path: str) -> PoolKind:
    try:
        return PoolKind(value)
    except ValueError:
        raise _fail(path, f"{value!r} is not one of {', '.join(PoolKind)}") from None


def parse_snapshot(state: Any, *, queue: Any = None, path: str = "state",
                   known: Mapping[str, tuple[Any, SnapshotJob]] | None = None) -> Snapshot:
    """Validate a snapshot (and an optional queue of waiting jobs) into typed values.

    `known` maps job ids to an entry parsed before and its parse: a job whose entry is that
    very object (not merely equal: `1 == True`), at the same path and on servers this state
    still lists, keeps its parse. The live API passes the previous decision's parses, as it
    shares the unchanged entries of one state with the next and never mutates them.
    """
    data = _object(state, path)
    gpu_types = _gpu_types(data.get("gpu_types", {}), f"{path}.gpu_types")
    pool_meta = _pool_meta(data.get("pools", []), f"{path}.pools")
    servers = _list(data.get("servers"), f"{path}.servers") if "servers" in data else None
    if servers is None:
        raise _fail(f"{path}.servers", "is required")
    if len(servers) > MAX_SERVERS:
        raise _fail(f"{path}.servers", f"{len(servers):,} servers; a snapshot is limited to "
                    f"{MAX_SERVERS:,}")
    by_pool: dict[str, list[tuple[int, Mapping[str, Any]]]] = {}
    seen: set[str] = set()
    on_loan: list[str] = []
    for i, raw in enumerate(servers):
        where = f"{path}.servers[{i}]"
        server = _object(raw, where)
        sid = _str(server, "id", where)
        if sid in seen:
            raise _fail(f"{where}.id", f"server {sid!r} is listed twice")
        seen.add(sid)
        by_pool.setdefault(_str(server, "pool", where), []).append((i, server))
        if _bool(server, "on_loan", where, False):
            on_loan.append(sid)
    pools: list[SnapshotPool] = []
    loaned = set(on_loan)
    for name, members in by_pool.items():
        first_i, first = members[0]
        where = f"{path}.servers[{first_i}]"
        gpus = _int(first, "gpus", where, minimum=1, maximum=MAX_GPUS_PER_SERVER)
        gpu_type = _str(first, "gpu_type", where, "V100")
        meta = pool_meta.get(name, {})
        kind = meta.get("kind") or (
            _kind(first["kind"], f"{where}.kind") if "kind" in first
            else PoolKind.INFERENCE if any(s["id"] in loaned for _, s in members)
            else PoolKind.TRAINING
        )
        lendable = kind == PoolKind.INFERENCE
        for i, server in members:
            if type(server) is dict:  # skip the checks below when they would all pass
                listed_type = server.get("gpu_type", "V100")
                listed_kind = server.get("kind", kind)
                if (type(server.get("gpus")) is int and server["gpus"] == gpus
                        and type(listed_type) is str and listed_type == gpu_type
                        and (listed_kind is kind
                             or type(listed_kind) is str and listed_kind == kind)
                        and (lendable or server["id"] not in loaned)):
                    continue
            here = f"{path}.servers[{i}]"
            if _int(server, "gpus", here, minimum=1) != gpus:
                raise _fail(f"{here}.gpus", f"pool {name!r} mixes servers of {gpus} and "
                            f"{server['gpus']} GPUs")
            if _str(server, "gpu_type", here, "V100") != gpu_type:
                raise _fail(f"{here}.gpu_type", f"pool {name!r} mixes GPU types")
            if "kind" in server and _kind(server["kind"], f"{here}.kind") != kind:
                raise _fail(f"{here}.kind", f"pool {name!r} is {kind}")
            if server["id"] in loaned and not lendable:
                raise _fail(f"{here}.on_loan", f"only inference servers are lent; pool "
                            f"{name!r} is {kind}")
        gpu_types.setdefault(gpu_type, GpuType(gpu_type))
        pools.append(SnapshotPool(
            name=name, kind=kind, gpu_type=gpu_type, servers=len(members), gpus_per_server=gpus,
            lending_limit=meta.get("lending_limit"),
            ids=tuple(server["id"] for _, server in members),
        ))
    spec = ClusterSpec(name="snapshot", gpu_types=gpu_types, pools=tuple(pools))
    jobs: list[SnapshotJob] = []
    job_ids: set[str] = set()
    raw_jobs = _list(data.get("jobs", []), f"{path}.jobs")
    entries = [(f"{path}.jobs[{i}]", raw, None) for i, raw in enumerate(raw_jobs)]
    if queue is not None:
        entries += [(f"queue[{i}]", raw, "queued") for i, raw in
                    enumerate(_list(queue, "queue"))]
    if len(entries) > MAX_JOBS:
        raise _fail(f"{path}.jobs", f"{len(entries):,} jobs (queue included); a snapshot is "
                    f"limited to {MAX_JOBS:,}")
    slots: dict[tuple[str, int, bool], Slot] = {}
    for where, raw, forced in entries:
        job = (known is not None and _known_job(known, raw, where, seen)
               or _job_fast(raw, where, forced, seen, slots)
               or _job(_object(raw, where), where, forced, seen))
        if job.spec.job_id in job_ids:
            raise _fail(f"{where}.id", f"job {job.spec.job_id!r} is listed twice")
        job_ids.add(job.spec.job_id)
        jobs.append(job)
    latest = None if "now" in data else max((j.spec.submit_time for j in jobs), default=0.0)
    now = _float(data, "now", path, latest)
    return Snapshot(spec=spec, on_loan=tuple(on_loan), jobs=tuple(jobs), now=now)


def _known_job(known: Mapping[str, tuple[Any, SnapshotJob]], raw: Any, path: str,
               servers: set[str]) -> SnapshotJob | None:
    """The earlier parse of this very entry (see `parse_snapshot`), if it still holds."""
    job_id = raw.get("id") if type(raw) is dict else None
    earlier = known.get(job_id) if type(job_id) is str else None
    if earlier is None or earlier[0] is not raw or earlier[1].path != path:
        return None
    job = earlier[1]
    return job if all(slot.server in servers for slot in job.placement) else None


def _job_fast(data: Any, path: str, forced: str | None, servers: set[str],
              slots: dict[tuple[str, int, bool], Slot]) -> SnapshotJob | None:
    """`_job` for the common, valid entry in one pass without per-field helper calls.

    Returns None on anything unusual (a missing, mistyped or out-of-range value, a bool
    where a number goes), and the caller then runs `_job`, which names the error; so both
    paths accept exactly the same entries and build equal `SnapshotJob`s. `slots` shares one
    `Slot` (immutable) among the entries that place the same GPUs on the same server.
    """
    if type(data) is not dict:
        return None
    get = data.get
    job_id = get("id")
    status = forced or get("status", "queued")
    per_worker = get("gpus_per_worker", 1)
    if (type(job_id) is not str or not job_id.strip() or status not in JOB_STATUSES
            or type(per_worker) is not int or not 1 <= per_worker <= MAX_GPUS_PER_JOB):
        return None
    raw = get("placement", [])
    if type(raw) is not list:
        return None
    placement = []
    held = 0
    for entry in raw:
        if type(entry) is not dict:
            return None
        server = entry.get("server")
        gpus = entry.get("gpus")
        flexible = entry.get("flexible", False)
        # Types first: True == 1 and 0 == False would find another entry's slot.
        if (type(server) is not str or type(gpus) is not int or not 1 <= gpus <= MAX_INT
                or type(flexible) is not bool):
            return None
        key = (server, gpus, flexible)
        slot = slots.get(key)
        if slot is None:
            if server not in servers:
                return None
            slot = slots[key] = Slot(server, gpus, flexible)
        placement.append(slot)
        held += gpus
    if (status == "running") != bool(placement):
        return None
    held_workers = held // per_worker
    min_workers = get("min_workers", held_workers or 1)
    if type(min_workers) is not int or min_workers < 1:
        return None
    # max() spelled out, here and for the duration: a builtin call per job is ~5% of it
    max_workers = get("max_workers", held_workers if held_workers > min_workers else min_workers)
    if type(max_workers) is not int or not min_workers <= max_workers <= MAX_GPUS_PER_JOB:
        return None
    num_gpus = get("num_gpus", (held_workers or min_workers) * per_worker)
    if (type(num_gpus) is not int or not per_worker <= num_gpus <= MAX_GPUS_PER_JOB
            or num_gpus % per_worker
            or not min_workers <= num_gpus // per_worker <= max_workers):
        return None
    remaining = get("remaining_seconds")
    if type(remaining) not in _NUMBER or not 0 <= remaining <= MAX_SNAPSHOT_SECONDS:
        return None
    duration = get("duration", remaining)
    submit = get("submit_time", 0.0)
    model = get("model", "generic")
    gpu_type = get("gpu_type")
    preemptible = get("preemptible", True)
    priority = get("priority", 0)
    if (type(duration) not in _NUMBER or not 0 <= duration <= MAX_SNAPSHOT_SECONDS
            or type(submit) not in _NUMBER or not 0 <= submit <= MAX_SNAPSHOT_SECONDS
            or type(model) is not str or not model.strip()
            or (gpu_type and (type(gpu_type) is not str or not gpu_type.strip()))
            or type(preemptible) is not bool
            or type(priority) is not int or not -(2**31) <= priority <= MAX_INT):
        return None
    remaining, duration = float(remaining), float(duration)
    spec = _new_job_spec(  # min_workers, max_workers >= 1: JobSpec.__post_init__ is a no-op
        job_id=job_id, submit_time=float(submit), num_gpus=num_gpus,
        duration=remaining if remaining > duration else duration, model=model,
        gpus_per_worker=per_worker, min_workers=min_workers, max_workers=max_workers,
        gpu_type=gpu_type, preemptible=preemptible, priority=priority,
    )
    return _new_snapshot_job(spec, status, tuple(placement), remaining, path)


def _constructor(cls: type[T]) -> Callable[..., T]:
    """`cls(...)` for a frozen slots dataclass at under half the cost, without `__post_init__`.

    A frozen dataclass's `__init__` stores each field through `object.__setattr__` by name;
    this one, generated the way `dataclasses` generates `__init__` (same signature and
    defaults), calls each slot's descriptor: 1.3 µs instead of 3 for a JobSpec's 17 fields,
    once per job of a snapshot. Since it skips `__post_init__`, it may only build values that
    `__post_init__` would leave as they are.
    """
    params = []
    namespace: dict[str, Any] = {"__new": object.__new__, "__cls": cls}
    for field in fields(cls):
        if field.default_factory is not MISSING:
            raise TypeError(f"{cls.__name__}.{field.name} has a default factory")
        if field.default is MISSING:
            params.append(field.name)
        else:
            namespace[f"__default_{field.name}"] = field.default
            params.append(f"{field.name}=__default_{field.name}")
        namespace[f"__set_{field.name}"] = cls.__dict__[field.name].__set__
    body = "".join(f"    __set_{field.name}(__obj, {field.name})\n" for field in fields(cls))
    exec(f"def new_{cls.__name__}({', '.join(params)}):\n    __obj = __new(__cls)\n{body}"
         "    return __obj\n", namespace)
    return namespace[f"new_{cls.__name__}"]


_new_job_spec = _constructor(JobSpec)
_new_snapshot_job = _constructor(SnapshotJob)
_NUMBER = (int, float)


def _gpu_types(raw: Any, path: str) -> dict[str, GpuType]:
    types: dict[str, GpuType] = {}
    for name, value in _object(raw, path).items():
        entry = _object(value, f"{path}.{name}")
        speed = _float(entry, "speed", f"{path}.{name}", 1.0, maximum=MAX_GPU_SPEED)
        if speed <= 0:
            raise _fail(f"{path}.{name}.speed", "must be positive")
        types[name] = GpuType(name, speed, _float(entry, "memory_gb", f"{path}.{name}", 32.0,
                                                  maximum=MAX_GPU_MEMORY_GB))
    return types


def _pool_meta(raw: Any, path: str) -> dict[str, dict[str, Any]]:
    meta: dict[str, dict[str, Any]] = {}
    for i, value in enumerate(_list(raw, path)):
        where = f"{path}[{i}]"
        entry = _object(value, where)
        name = _str(entry, "name", where)
        limit = entry.get("lending_limit")
        meta[name] = {
            "kind": _kind(entry["kind"], f"{where}.kind") if "kind" in entry else None,
            "lending_limit": None if limit is None else _int(entry, "lending_limit", where),
        }
    return meta


def _job(data: Mapping[str, Any], path: str, forced: str | None, servers: set[str]) -> SnapshotJob:
    job_id = _str(data, "id", path)
    status = forced or _str(data, "status", path, "queued")
    if status not in JOB_STATUSES:
        raise _fail(f"{path}.status", f"{status!r} is not one of {', '.join(JOB_STATUSES)}")
    per_worker = _int(data, "gpus_per_worker", path, 1, minimum=1, maximum=MAX_GPUS_PER_JOB)
    placement = _placement(data.get("placement", []), f"{path}.placement", servers)
    if status == "running" and not placement:
        raise _fail(f"{path}.placement", "a running job needs a placement")
    if status == "queued" and placement:
        raise _fail(f"{path}.placement", "a queued job has no placement")
    held_workers = sum(slot.gpus for slot in placement) // per_worker
    min_workers = _int(data, "min_workers", path, held_workers or 1, minimum=1,
                       maximum=MAX_GPUS_PER_JOB)
    max_workers = _int(data, "max_workers", path, max(min_workers, held_workers), minimum=1,
                       maximum=MAX_GPUS_PER_JOB)
    if max_workers < min_workers:
        raise _fail(f"{path}.max_workers", f"{max_workers} is below min_workers {min_workers}")
    default_gpus = (held_workers or min_workers) * per_worker
    num_gpus = _int(data, "num_gpus", path, default_gpus, minimum=per_worker,
                    maximum=MAX_GPUS_PER_JOB)
    if not min_workers <= num_gpus // per_worker <= max_workers or num_gpus % per_worker:
        raise _fail(f"{path}.num_gpus", f"{num_gpus} GPUs is not a worker count within "
                    f"[{min_workers}, {max_workers}] of {per_worker}-GPU workers")
    remaining = _float(data, "remaining_seconds", path)
    duration = _float(data, "duration", path, remaining)
    spec = JobSpec(
        job_id=job_id, submit_time=_float(data, "submit_time", path, 0.0), num_gpus=num_gpus,
        duration=max(duration, remaining), model=_str(data, "model", path, "generic"),
        gpus_per_worker=per_worker, min_workers=min_workers, max_workers=max_workers,
        gpu_type=data.get("gpu_type") and _str(data, "gpu_type", path),
        preemptible=_bool(data, "preemptible", path, True),
        priority=_int(data, "priority", path, 0, minimum=-(2**31)),
    )
    return SnapshotJob(spec, status, placement, remaining, path)


def _placement(raw: Any, path: str, servers: set[str]) -> Placement:
    slots = []
    for i, value in enumerate(_list(raw, path)):
        where = f"{path}[{i}]"
        entry = _object(value, where)
        server = _str(entry, "server", where)
        if server not in servers:
            raise _fail(f"{where}.server", f"unknown server {server!r}")
        slots.append(Slot(server, _int(entry, "gpus", where, minimum=1),
                          _bool(entry, "flexible", where, False)))
    return tuple(slots)


def snapshot_simulation(snapshot: Snapshot, policy: Policy, *,
                        config: EngineConfig | None = None) -> Simulation:
    """A `Simulation` paused at `snapshot.now` holding the snapshot's loans and jobs.

    Running jobs are placed in submit order with the engine's own checks
    (`ClusterState.occupy_many`: `check_placement` then `occupy` for each, in one pass), so a
    refused placement becomes an `InputError` naming the job's placement exactly as
    `Simulation.apply(Launch)` would refuse it. They are put straight into the running
    set rather than launched through `apply`: a decision never advances the clock, so the
    completion events and rates a launch computes would never be read (a resize or
    preemption in the decision recomputes its job's own).
    """
    ordered = sorted(snapshot.jobs, key=lambda j: j.spec.submit_time)
    capacity: dict[str | None, int] = {None: snapshot.spec.total_gpus}
    for pool in snapshot.spec.pools:
        capacity[pool.gpu_type] = capacity.get(pool.gpu_type, 0) + pool.gpus
    for job in ordered:
        if job.spec.min_gpus > capacity.get(job.spec.gpu_type, 0):
            raise _fail(f"{job.path}.min_workers", f"job {job.spec.job_id} needs at least "
                        f"{job.spec.min_gpus} GPUs; the snapshot has "
                        f"{capacity.get(job.spec.gpu_type, 0)}")
    sim = Simulation(snapshot.spec, Workload(tuple(j.spec for j in ordered), SOURCE), policy,
                     config=config or EngineConfig(restart_overhead=0.0))
    now = snapshot.now
    sim.clock.now = now
    state = sim.state
    for sid in snapshot.on_loan:
        state.set_on_loan(sid, True)
    placed: list[SnapshotJob] = []
    pairs: list[tuple[JobState, Placement]] = []
    running = JobStatus.RUNNING  # an enum member lookup is ~0.1 µs: once, not per job
    for job in ordered:
        record = state.add_job(job.spec)
        sim.view.register(record)
        record.last_update = now
        record.remaining_work = job.remaining_seconds  # as reported, not the whole duration
        if job.status == "running":
            state.start_running(record)
            record.status = running
            record.queued_since = record.first_start = now
            placed.append(job)
            pairs.append((record, job.placement))
        else:
            state.enqueue(record, now)
    try:
        state.occupy_many(pairs)
    except PlacementRefused as exc:
        raise _fail(f"{placed[exc.index].path}.placement", str(exc)) from None
    return sim
