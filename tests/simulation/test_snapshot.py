"""Snapshot parsing and state building: the fast paths answer exactly as the plain ones.

`parse_snapshot` validates common entries in one pass (`_job_fast`, and a shortcut for
well-formed servers) and falls back to the field-naming helpers otherwise; a job or server
given as a read-only mapping instead of a dict always takes the helpers, so parsing a state
and its copy with every entry wrapped must give the same snapshot or the same error.
`snapshot_simulation` places running jobs with `ClusterState.occupy_many`, which must leave
the state `check_placement` + `occupy` leave job by job, down to the order of servers in the
free-GPU index, and refuse the same first job with the same message.
"""

from __future__ import annotations

import copy
import math
from dataclasses import FrozenInstanceError, fields
from types import MappingProxyType
from typing import Any
from unittest.mock import patch

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simulation.decisions import Placement, Slot
from simulation.errors import InputError, InvalidDecision
from simulation.model import JobSpec, PoolKind
from simulation.policies.base import Policy
from simulation.snapshot import (
    SnapshotJob,
    _job,
    _job_fast,
    _new_job_spec,
    parse_snapshot,
    snapshot_simulation,
)
from simulation.state import ClusterState, JobState, PlacementRefused
from tests.simulation.builders import cluster

ODD_VALUES = st.one_of(
    st.none(), st.booleans(), st.integers(-3, 10), st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from(["", " ", "x", "8"]), st.just([]), st.just({}),
)
# Per key, values a snapshot may plausibly get wrong (or right), beside ODD_VALUES.
NUMBERS = [-1.0, math.nan, math.inf, True, "1", 0, 5, 2.5]
NEAR_MISSES: dict[str, list[Any]] = {
    "id": ["", " ", 7, "t0", "i0", "j0"], "pool": ["", 3, "training", "inference"],
    "kind": ["quota", "inference", "training", "gpu", 1], "gpus": [0, -1, True, 2.0, 3, 4, 8],
    "gpu_type": ["", "T4", "V100", 4], "on_loan": [True, False, 1, 0, "yes"],
    "status": ["running", "queued", "done", ""], "gpus_per_worker": [0, 2, 3, True, 1.0],
    "min_workers": [0, 1, 3, True, 2.0], "max_workers": [0, 1, 6, True, 2.0],
    "num_gpus": [0, 1, 3, 4, True, 4.0], "remaining_seconds": NUMBERS, "duration": NUMBERS,
    "submit_time": NUMBERS, "model": ["", " ", 3, "bert"], "preemptible": [0, 1, "no", False],
    "priority": [True, 1.5, -(2**31) - 1, -(2**31), 3], "server": ["nowhere", "", 3, "i0", "t0"],
    "placement": [[], {}, "x", [7], [{}], [{"server": "i0", "gpus": 1}]],
    "flexible": [0, 1, True, "no"],
}
JOB_KEYS = ("id", "status", "gpus_per_worker", "min_workers", "max_workers", "num_gpus",
            "remaining_seconds", "duration", "submit_time", "model", "gpu_type", "preemptible",
            "priority", "placement")
SERVER_KEYS = ("id", "pool", "kind", "gpus", "gpu_type", "on_loan")
SLOT_KEYS = ("server", "gpus", "flexible")


def _odd(key: str) -> st.SearchStrategy[Any]:
    return st.sampled_from(NEAR_MISSES[key]) | ODD_VALUES


@st.composite
def states(draw: st.DrawFn, *, mistakes: int = 0) -> dict[str, Any]:
    """A small, busy snapshot, sometimes over-committed or with a job the engine refuses
    (on a server not on loan, of the wrong GPU type, outside its worker range); with
    `mistakes`, up to that many values are odd or missing."""
    gpus = {"training": draw(st.sampled_from([4, 8])), "inference": draw(st.sampled_from([4, 8]))}
    servers = [{"id": f"t{k}", "pool": "training", "kind": "training", "gpus": gpus["training"],
                "gpu_type": "V100"} for k in range(draw(st.integers(0, 3)))]
    servers += [{"id": f"i{k}", "pool": "inference", "kind": "inference",
                 "gpus": gpus["inference"], "gpu_type": "T4",
                 "on_loan": draw(st.sampled_from([True, True, True, False]))}
                for k in range(draw(st.integers(1, 4)))]
    usable = [s["id"] for s in servers if s.get("on_loan", True)] or [servers[0]["id"]]
    # Mostly servers that may host training; now and then any server, or one listed twice.
    hosts = st.integers(0, 9).flatmap(lambda k: st.lists(
        st.sampled_from(usable), min_size=1, max_size=3, unique=True) if k else st.lists(
        st.sampled_from([s["id"] for s in servers]), min_size=1, max_size=2))
    jobs = []
    for j in range(draw(st.integers(0, 12))):
        per_worker = draw(st.sampled_from([1, 1, 2]))
        entry: dict[str, Any] = {
            "id": f"j{j}", "status": "queued", "gpus_per_worker": per_worker,
            "remaining_seconds": draw(st.sampled_from([0.0, 60.0, 600.0, 7200.5])),
            "submit_time": draw(st.sampled_from([0, 0.0, 1.0, 2.5])),
        }
        if draw(st.integers(0, 3)):
            slots = [{"server": host, "gpus": per_worker * draw(st.integers(1, 2))}
                     for host in draw(hosts)]
            base = sum(slot["gpus"] for slot in slots) // per_worker
            if draw(st.integers(0, 3)) == 0:  # elastic, with flexible workers on one more host
                slots.append({"server": draw(st.sampled_from(usable)), "gpus": per_worker,
                              "flexible": True})
                entry["min_workers"] = base
                entry["max_workers"] = base + draw(st.integers(1, 3))
            entry.update(status="running", placement=slots)
        for key, values, odds in (("gpu_type", st.sampled_from(["V100", "T4"]), 20),
                                  ("duration", st.sampled_from([1, 900.0]), 4),
                                  ("preemptible", st.booleans(), 4),
                                  ("priority", st.integers(-1, 2), 4)):
            if draw(st.integers(1, odds)) == 1:
                entry[key] = draw(values)
        jobs.append(entry)
    state: dict[str, Any] = {"servers": servers, "jobs": jobs}
    if draw(st.booleans()):
        state["now"] = 100.0
    for _ in range(draw(st.integers(0, mistakes))):
        _mistake(draw, state)
    return state


def _mistake(draw: st.DrawFn, state: dict[str, Any]) -> None:
    """Set one key of a server, job or slot to an odd value, or drop it."""
    targets: list[tuple[dict[str, Any], tuple[str, ...]]] = [
        (server, SERVER_KEYS) for server in state["servers"]]
    for job in state["jobs"]:
        targets.append((job, JOB_KEYS))
        if isinstance(job.get("placement"), list):
            targets += [(slot, SLOT_KEYS) for slot in job["placement"] if isinstance(slot, dict)]
    entry, keys = draw(st.sampled_from(targets))
    key = draw(st.sampled_from(keys))
    if draw(st.integers(0, 4)) == 0:
        entry.pop(key, None)
    else:
        entry[key] = draw(_odd(key))


ANY_KEY = [None, True, False, 0, 1, -1, 1.0, 2.5, math.nan, math.inf, "", " ", "x", [], {}]
DROP = object()
BASE_STATE: dict[str, Any] = {
    "servers": [{"id": "t0", "pool": "training", "kind": "training", "gpus": 8, "gpu_type": "V100"},
                {"id": "t1", "pool": "training", "gpus": 8},
                {"id": "i0", "pool": "inference", "kind": "inference", "gpus": 4,
                 "gpu_type": "T4", "on_loan": True},
                {"id": "i1", "pool": "inference", "gpus": 4, "gpu_type": "T4", "on_loan": True}],
    "jobs": [
        {"id": "a", "status": "running", "gpus_per_worker": 1, "min_workers": 2,
         "max_workers": 2, "num_gpus": 2, "duration": 3600.0, "remaining_seconds": 600.0,
         "model": "generic", "preemptible": True, "priority": 0, "submit_time": 0.5,
         "placement": [{"server": "i0", "gpus": 2, "flexible": False}]},
        {"id": "b", "status": "running", "gpus_per_worker": 2, "min_workers": 2,
         "max_workers": 4, "remaining_seconds": 60, "gpu_type": "V100",
         "placement": [{"server": "t0", "gpus": 2}, {"server": "t1", "gpus": 2},
                       {"server": "t0", "gpus": 2, "flexible": True}]},
        {"id": "c", "remaining_seconds": 5.0},
        {"id": "d", "status": "queued", "gpus_per_worker": 2, "num_gpus": 4, "max_workers": 3,
         "remaining_seconds": 0, "submit_time": 2, "model": "bert", "priority": -1},
    ],
}


def _variants(entry: dict[str, Any], keys: tuple[str, ...]) -> list[dict[str, Any]]:
    """`entry` with each of `keys` dropped or set to each odd value in turn."""
    variants = []
    for key in keys:
        for value in [DROP, *NEAR_MISSES[key], *ANY_KEY]:
            changed = {k: v for k, v in entry.items() if k != key}
            if value is not DROP:
                changed[key] = value
            variants.append(changed)
    return variants


def _wrapped(state: dict[str, Any]) -> dict[str, Any]:
    """The state with every server, job and slot a read-only mapping, not a dict."""
    state = copy.deepcopy(state)
    for job in state["jobs"]:
        if isinstance(job.get("placement"), list):
            job["placement"] = [MappingProxyType(s) if isinstance(s, dict) else s
                                for s in job["placement"]]
    state["servers"] = [MappingProxyType(s) for s in state["servers"]]
    state["jobs"] = [MappingProxyType(j) for j in state["jobs"]]
    return state


def _parsed(state: dict[str, Any]) -> tuple[str, ...]:
    """What parsing answers, typed: `repr` tells 1 from 1.0 and True from 1."""
    try:
        return ("ok", repr(parse_snapshot(state)))
    except InputError as exc:
        return ("error", str(exc.field), exc.message)


@settings(max_examples=300, deadline=None)
@given(states(mistakes=3))
def test_parsing_takes_the_same_answer_with_or_without_the_fast_paths(state) -> None:
    assert _parsed(state) == _parsed(_wrapped(state))


@settings(max_examples=300, deadline=None)
@given(states(), st.data())
def test_job_fast_builds_what_job_builds_or_leaves_it_to_job(state, data) -> None:
    servers = {server["id"] for server in state["servers"]}
    slots: dict[tuple[str, int, bool], Slot] = {}
    for i, entry in enumerate(state["jobs"]):
        if data.draw(st.integers(0, 2)) == 0:
            key = data.draw(st.sampled_from(JOB_KEYS))
            entry = {**entry, key: data.draw(_odd(key))}
        elif entry.get("placement") and data.draw(st.booleans()):
            key = data.draw(st.sampled_from(SLOT_KEYS))
            placement = [{**entry["placement"][0], key: data.draw(_odd(key))}]
            entry = {**entry, "placement": placement + entry["placement"][1:]}
        forced = data.draw(st.sampled_from([None, "queued"]))
        fast = _job_fast(entry, f"jobs[{i}]", forced, servers, slots)
        try:
            plain = _job(entry, f"jobs[{i}]", forced, servers)
        except InputError:
            assert fast is None
            continue
        if fast is not None:
            assert repr(fast) == repr(plain)
            assert _field_values(fast.spec) == _field_values(plain.spec)


@pytest.mark.parametrize("index", range(len(BASE_STATE["jobs"])))
def test_job_fast_agrees_with_job_on_every_odd_value_of_each_key(index: int) -> None:
    servers = {server["id"] for server in BASE_STATE["servers"]}
    base = BASE_STATE["jobs"][index]
    entries = _variants(base, JOB_KEYS)
    for i, slot in enumerate(base.get("placement", [])):
        entries += [{**base, "placement": [*base["placement"][:i], changed,
                                           *base["placement"][i + 1:]]}
                    for changed in _variants(slot, SLOT_KEYS)]
    slots: dict[tuple[str, int, bool], Slot] = {}
    for entry in entries:
        for forced in (None, "queued"):
            fast = _job_fast(entry, "job", forced, servers, slots)
            try:
                plain = _job(entry, "job", forced, servers)
            except InputError:
                assert fast is None, entry
                continue
            assert fast is None or repr(fast) == repr(plain), entry


@pytest.mark.parametrize("index", range(len(BASE_STATE["servers"])))
def test_well_formed_servers_shortcut_agrees_on_every_odd_value_of_each_key(index: int) -> None:
    for changed in _variants(BASE_STATE["servers"][index], SERVER_KEYS):
        servers = [*BASE_STATE["servers"][:index], changed, *BASE_STATE["servers"][index + 1:]]
        state = {**BASE_STATE, "servers": servers}
        assert _parsed(state) == _parsed(_wrapped(state)), changed


def _field_values(spec: JobSpec) -> list[tuple[str, type, Any]]:
    return [(f.name, type(getattr(spec, f.name)), getattr(spec, f.name)) for f in fields(spec)]


def test_the_job_spec_constructor_builds_what_jobspec_builds() -> None:
    kwargs = {"job_id": "j", "submit_time": 1.5, "num_gpus": 4, "duration": 60.0,
              "gpus_per_worker": 2, "min_workers": 1, "max_workers": 3, "gpu_type": "T4",
              "preemptible": False, "priority": -2}
    built = _new_job_spec(**kwargs)
    assert type(built) is JobSpec
    assert _field_values(built) == _field_values(JobSpec(**kwargs))
    assert built == JobSpec(**kwargs) and hash(built) == hash(JobSpec(**kwargs))
    with pytest.raises(FrozenInstanceError):
        built.num_gpus = 8  # type: ignore[misc]


def test_jobs_placing_the_same_gpus_on_a_server_share_one_slot() -> None:
    state = {"servers": [{"id": "s", "pool": "p", "gpus": 8}],
             "jobs": [{"id": f"j{k}", "status": "running", "remaining_seconds": 1.0,
                       "placement": [{"server": "s", "gpus": 2}]} for k in range(2)]}
    first, second = parse_snapshot(state).jobs
    assert first.placement[0] is second.placement[0]
    assert isinstance(first, SnapshotJob) and first.placement == (Slot("s", 2),)


# What `occupy_many` stands for: check then occupy, job by job (its own fallback).
_sequential_occupy = ClusterState._occupy_one_by_one


def _state_of(state: ClusterState) -> dict[str, Any]:
    """Everything a decision may read from the state, in its order."""
    return {
        "servers": [(sid, s.used, list(s.jobs.items()), s.on_loan)
                    for sid, s in state.servers.items()],
        "free_index": {pool: [list(bucket) for bucket in buckets]
                       for pool, buckets in state.free_index.items()},
        "pool_busy": list(state.pool_busy.items()),
        "jobs": [(job_id, j.index, j.status, j.placement, j.gpus, j.remaining_work,
                  j.last_update, j.queued_since, j.first_start)
                 for job_id, j in state.jobs.items()],
        "queue": list(state.queue),
        "running": list(state.running),
    }


def _built(snapshot, policy: Policy) -> tuple[Any, ...]:
    try:
        sim = snapshot_simulation(snapshot, policy)
    except InputError as exc:
        return ("error", exc.field, exc.message)
    return ("ok", _state_of(sim.state), list(sim.view.running), list(sim.view.queue))


class _SharingPolicy(Policy):
    shares_gpus = True


@settings(max_examples=300, deadline=None)
@given(states(), st.booleans())
def test_bulk_build_leaves_the_state_and_errors_of_the_sequential_one(state, shares) -> None:
    try:
        snapshot = parse_snapshot(state)
    except InputError:
        return
    policy = _SharingPolicy() if shares else Policy()
    bulk = _built(snapshot, policy)
    with patch.object(ClusterState, "occupy_many", _sequential_occupy):
        sequential = _built(snapshot, policy)
    assert bulk == sequential


def test_an_over_committed_server_names_the_first_job_that_does_not_fit() -> None:
    state = {"servers": [{"id": "s", "pool": "p", "gpus": 4}],
             "jobs": [{"id": f"j{k}", "status": "running", "remaining_seconds": 1.0,
                       "submit_time": float(3 - k), "placement": [{"server": "s", "gpus": 2}]}
                      for k in range(3)]}
    with pytest.raises(InputError) as caught:
        snapshot_simulation(parse_snapshot(state), Policy())
    assert caught.value.field == "state.jobs[0].placement"  # submitted last
    assert caught.value.message == "job j0: 2 GPUs on s would over-commit it (4 of 4 in use)"


@settings(max_examples=200, deadline=None)
@given(st.data())
def test_occupy_many_on_a_busy_cluster_matches_occupying_one_by_one(data) -> None:
    """Also with GPUs already in use, shared GPUs, and a job placed twice in one call."""
    spec = cluster(("training", PoolKind.TRAINING, 2, 4), ("inference", PoolKind.INFERENCE, 3, 4))
    state = ClusterState(spec, allow_oversubscription=data.draw(st.booleans()))
    for sid in data.draw(st.lists(st.sampled_from(state.pool_servers["inference"]),
                                  unique=True)):
        state.set_on_loan(sid, True)
    ids = list(state.servers)

    def placements() -> st.SearchStrategy[Placement]:
        slot = st.builds(Slot, st.sampled_from(ids + ["nowhere"]), st.integers(0, 3),
                         st.booleans())
        return st.lists(slot, max_size=3).map(tuple)

    def job(k: int) -> JobState:
        return state.add_job(JobSpec(f"j{k}", 0.0, 2, 1.0, min_workers=1, max_workers=6))

    for k in range(data.draw(st.integers(0, 4))):  # already running
        record, placement = job(k), data.draw(placements())
        try:
            state.check_placement(record, placement)
        except InvalidDecision:
            continue
        state.occupy(record, placement)
    new = [job(k) for k in range(10, 10 + data.draw(st.integers(0, 6)))]
    pairs = [(data.draw(st.sampled_from(new)), data.draw(placements())) for _ in new]
    sequential = copy.deepcopy((state, pairs))

    def outcome(state: ClusterState, pairs: list[tuple[JobState, Placement]], occupy) -> Any:
        try:
            occupy(state, pairs)
        except PlacementRefused as exc:
            return ("refused", exc.index, str(exc))
        return ("ok", _state_of(state))

    assert (outcome(state, pairs, ClusterState.occupy_many)
            == outcome(*sequential, _sequential_occupy))


def test_occupy_many_orders_each_free_gpu_bucket_by_the_servers_last_change() -> None:
    spec = cluster(("inference", PoolKind.INFERENCE, 3, 4))
    state = ClusterState(spec)
    for sid in ("inference-3", "inference-1", "inference-2"):
        state.set_on_loan(sid, True)
    jobs = [state.add_job(JobSpec(f"j{k}", 0.0, gpus, 1.0))
            for k, gpus in enumerate((1, 2, 1))]
    state.occupy_many([(jobs[0], (Slot("inference-1", 1),)), (jobs[1], (Slot("inference-2", 2),)),
                       (jobs[2], (Slot("inference-1", 1),))])
    assert [list(bucket) for bucket in state.free_index["inference"]] == [
        [], [], ["inference-2", "inference-1"], [], ["inference-3"]]
    assert state.pool_busy == {"inference": 4}
    assert state.servers["inference-1"].jobs == {"j0": 1, "j2": 1}


def test_known_parses_are_kept_only_for_the_very_same_entry_on_listed_servers() -> None:
    servers = [{"id": f"s{k}", "pool": "p", "gpus": 4} for k in range(3)]
    jobs = [{"id": f"j{k}", "status": "running", "remaining_seconds": 60.0,
             "placement": [{"server": f"s{k}", "gpus": 2}]} for k in range(3)]
    state = {"now": 1.0, "servers": servers, "jobs": jobs}
    first = parse_snapshot(state)
    known = {job.spec.job_id: (raw, job) for raw, job in zip(jobs, first.jobs, strict=True)}
    equal_copy = {**jobs[1]}
    again = parse_snapshot({**state, "jobs": [jobs[0], equal_copy, jobs[2]]}, known=known)
    assert again == first
    assert again.jobs[0] is first.jobs[0] and again.jobs[2] is first.jobs[2]
    assert again.jobs[1] is not first.jobs[1]  # an equal entry is parsed anew
    moved = parse_snapshot({**state, "jobs": [jobs[1], jobs[2]]}, known=known)
    assert moved.jobs[0] is not first.jobs[1] and moved.jobs[0].path == "state.jobs[0]"
    with pytest.raises(InputError) as refused:
        parse_snapshot({**state, "servers": servers[1:]}, known=known)
    assert refused.value.field == "state.jobs[0].placement[0].server"
    corrupt = {**jobs[0], "placement": [{"server": "s0", "gpus": True}]}
    with pytest.raises(InputError):
        parse_snapshot({**state, "jobs": [corrupt]}, known=known)
