"""Live decisions on a snapshot: loan, reclaim and schedule, as DESIGN.md's JSON in and out.

The REST API (stateless and stateful forms) and `python -m simulation decide` call these same
functions, which run the simulator's own reclaim strategies and policies on a `Simulation`
built from the snapshot and apply every decision through the engine's checks, so a live
answer is exactly what the simulator would have done in that state. Each function is pure: the
same request gives the same answer (randomised strategies draw from `seed`). A caller that
already holds `parse_snapshot(request["state"])` (the live API keeps one per state version)
passes it as `snapshot` and the state is not parsed again.

Scale decisions are phrased for elastic runtimes (torchrun `--nnodes=MIN:MAX`, Horovod
Elastic, Ray Train's scaling config): the worker count the job goes from and to within
`[min_workers, max_workers]`, the hosts that join or leave with their slots (GPUs, one worker
process per GPU as Horovod counts them), the whole placement afterwards, and the grace period
a leaving host gets to finish its step (`grace_period_seconds`, default 30; 0 when no host
leaves).
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping
from typing import Any

from simulation.composition import create_policy
from simulation.decisions import Placement
from simulation.errors import InputError
from simulation.limits import MAX_SEED
from simulation.model import JobSpec, PoolKind
from simulation.policies.base import Policy
from simulation.reclaim import get_reclaim_strategy
from simulation.snapshot import (
    SOURCE,
    Snapshot,
    _fail,
    _float,
    _int,
    _object,
    _str,
    parse_snapshot,
)
from simulation.snapshot import snapshot_simulation as _simulation
from simulation.state import JobStatus

DEFAULT_GRACE_SECONDS = 30.0
DEFAULT_RECLAIM_STRATEGY = "aryl"


def _request(request: Any) -> Mapping[str, Any]:
    data = _object(request, "request")
    if "state" not in data:
        raise _fail("state", "is required")
    return data


def _slots(placement: Placement) -> list[dict[str, Any]]:
    return [{"server": s.server, "gpus": s.gpus, "flexible": s.flexible} for s in placement]


def _per_host(placement: Placement) -> dict[str, int]:
    hosts: dict[str, int] = {}
    for slot in placement:
        hosts[slot.server] = hosts.get(slot.server, 0) + slot.gpus
    return hosts


def _scale(spec: JobSpec, before: Placement, after: Placement, grace: float) -> dict[str, Any]:
    """One scale decision in the elastic runtimes' terms (module docstring)."""
    old, new = _per_host(before), _per_host(after)
    join = [{"host": h, "slots": new[h] - old.get(h, 0)} for h in new if new[h] > old.get(h, 0)]
    leave = [{"host": h, "slots": old[h] - new.get(h, 0)} for h in old if old[h] > new.get(h, 0)]
    per_worker = spec.gpus_per_worker
    from_workers = sum(old.values()) // per_worker
    target = sum(new.values()) // per_worker
    return {
        "job": spec.job_id, "workers": abs(target - from_workers),
        "from_workers": from_workers, "target_workers": target,
        "min_workers": spec.min_workers, "max_workers": spec.max_workers,
        "join_hosts": join, "leave_hosts": leave, "placement": _slots(after),
        "grace_period_seconds": grace if leave else 0.0,
    }


def decide_loan(request: Any, *, snapshot: Snapshot | None = None) -> dict[str, Any]:
    """Which inference servers go on loan: the ones named in `servers`, or the first `count`
    idle ones (snapshot order, optionally of `pool`), within each pool's `lending_limit`."""
    data = _request(request)
    snapshot = snapshot or parse_snapshot(data["state"])
    inference = {sid: pool for pool in snapshot.spec.pools if pool.kind == PoolKind.INFERENCE
                 for sid in pool.server_ids()}
    on_loan = set(snapshot.on_loan)
    if ("servers" in data) == ("count" in data):
        raise _fail("servers", "give either servers (ids) or count")
    if "servers" in data:
        chosen = _loan_ids(data["servers"], inference, on_loan, snapshot)
    else:
        count = _int(data, "count", "", minimum=1)
        pool = _str(data, "pool", "") if data.get("pool") is not None else None
        idle = [sid for sid, p in inference.items() if sid not in on_loan
                and (pool is None or p.name == pool)]
        if count > len(idle):
            raise _fail("count", f"only {len(idle)} inference servers are not on loan")
        chosen = idle[:count]
    lent: dict[str, int] = {}
    for sid in on_loan | set(chosen):
        lent[inference[sid].name] = lent.get(inference[sid].name, 0) + 1
    for pool in snapshot.spec.pools:
        if pool.lending_limit is not None and lent.get(pool.name, 0) > pool.lending_limit:
            raise _fail("servers" if "servers" in data else "count",
                        f"pool {pool.name!r} may lend {pool.lending_limit} servers at once; "
                        f"this would lend {lent[pool.name]}")
    return {"servers": chosen}


def _loan_ids(raw: Any, inference: Mapping[str, Any], on_loan: set[str], snapshot) -> list[str]:
    if not isinstance(raw, list) or not raw:
        raise _fail("servers", "expected a non-empty list of server ids")
    known = {sid for pool in snapshot.spec.pools for sid in pool.server_ids()}
    chosen: list[str] = []
    for i, sid in enumerate(raw):
        where = f"servers[{i}]"
        if not isinstance(sid, str) or sid not in known:
            raise _fail(where, f"unknown server {sid!r}")
        if sid not in inference:
            raise _fail(where, f"server {sid!r} is not an inference server")
        if sid in on_loan or sid in chosen:
            raise _fail(where, f"server {sid!r} is already on loan")
        chosen.append(sid)
    return chosen


def decide_reclaim(request: Any, *, snapshot: Snapshot | None = None) -> dict[str, Any]:
    """Which on-loan servers to give back (`count`, `strategy` default aryl), the jobs that
    stop, the elastic jobs scaled in and the collateral GPUs (DESIGN.md's answer)."""
    data = _request(request)
    snapshot = snapshot or parse_snapshot(data["state"])
    count = _int(data, "count", "", minimum=1)
    if count > len(snapshot.on_loan):
        raise _fail("count", f"asked for {count} servers; {len(snapshot.on_loan)} are on loan")
    name = _str(data, "strategy", "", DEFAULT_RECLAIM_STRATEGY)
    try:
        strategy = get_reclaim_strategy(name)
    except InputError as exc:
        raise _fail("strategy", exc.message) from None
    seed = _int(data, "seed", "", 0, maximum=MAX_SEED)
    grace = _float(data, "grace_period_seconds", "", DEFAULT_GRACE_SECONDS)
    sim = _simulation(snapshot, Policy())
    before = {job_id: job.placement for job_id, job in sim.state.running.items()}
    try:
        plan = strategy(sim.view, count, random.Random(f"reclaim:{seed}"))
    except ValueError as exc:  # e.g. the exhaustive optimum refusing a large instance
        raise _fail("strategy", str(exc)) from None
    sim.apply_reclaim(plan, count)
    returned = set(plan.servers)
    collateral = sum(slot.gpus for job_id in plan.preempt for slot in before[job_id]
                     if slot.server not in returned)
    scaled = []
    for resize in plan.scale_in:
        spec = sim.state.jobs[resize.job_id].spec
        scaled.append(_scale(spec, before[resize.job_id], resize.placement, grace))
    return {
        "strategy": name, "servers": list(plan.servers), "preempted_jobs": list(plan.preempt),
        "scaled_in": scaled, "collateral_gpus": collateral,
    }


def decide_schedule(request: Any, *, snapshot: Snapshot | None = None) -> dict[str, Any]:
    """One scheduling round of `policy` (with `params`, `seed`) on the snapshot plus `queue`:
    the jobs to launch with their placements, the elastic jobs to scale out and in, the jobs
    a preemptive policy stops or migrates, and the running jobs whose share of their GPUs'
    time a GPU-sharing policy changes (packing, time-slicing, interleaving; 1 = alone)."""
    data = _request(request)
    name = _str(data, "policy", "")
    params = _object(data.get("params", {}), "params")
    seed = _int(data, "seed", "", 0, maximum=MAX_SEED)
    grace = _float(data, "grace_period_seconds", "", DEFAULT_GRACE_SECONDS)
    try:
        policy = create_policy(name, params, seed=seed)
    except InputError as exc:
        field = "policy" if exc.field == "policy" else f"params.{exc.field}"
        raise InputError(exc.message, source=SOURCE, field=field) from None
    snapshot = snapshot or parse_snapshot(data["state"], queue=data.get("queue"))
    sim = _simulation(snapshot, policy)
    view = sim.view
    before = {job_id: (job.status, job.placement) for job_id, job in sim.state.jobs.items()}
    shares = {job_id: view.job(job_id).share for job_id in view.running}
    try:
        for decision in policy.schedule(sim.view) or ():
            sim.apply(decision)
    except Exception as exc:  # noqa: BLE001 - see below
        # Policies were written for whole simulated runs; one that keeps its own history of
        # every job (SIA) cannot start from a snapshot. Refuse the request, naming why,
        # rather than crash the caller.
        raise InputError(f"policy {name!r} cannot decide on this snapshot "
                         f"({type(exc).__name__}: {exc})", source=SOURCE,
                         field="policy") from exc
    answer: dict[str, Any] = {"policy": name, "launch": [], "scale_out": [], "scale_in": [],
                              "preempt": [], "migrate": [], "share": []}
    for job_id, job in sim.state.jobs.items():
        status, placement = before[job_id]
        if job.status == JobStatus.RUNNING and view.job(job_id).share != shares.get(job_id, 1.0):
            answer["share"].append({"job": job_id, "share": view.job(job_id).share})
        if status == JobStatus.QUEUED and job.status == JobStatus.RUNNING:
            answer["launch"].append({"job": job_id, "workers": job.workers,
                                     "placement": _slots(job.placement)})
        elif status == JobStatus.RUNNING and job.status == JobStatus.QUEUED:
            answer["preempt"].append(job_id)
        elif job.status == JobStatus.RUNNING and job.placement != placement:
            old_gpus = sum(slot.gpus for slot in placement)
            if job.gpus == old_gpus:
                answer["migrate"].append({"job": job_id, "placement": _slots(job.placement)})
            else:
                kind = "scale_out" if job.gpus > old_gpus else "scale_in"
                answer[kind].append(_scale(job.spec, placement, job.placement, grace))
    return answer


DECIDERS: dict[str, Callable[..., dict[str, Any]]] = {
    "loan": decide_loan,
    "reclaim": decide_reclaim,
    "schedule": decide_schedule,
}
