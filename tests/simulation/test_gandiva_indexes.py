"""Gandiva's per-server figures and indexes answer as the plain computations they replace.

The policy keeps each server's time-sliced load in a tally updated as jobs come, go and
pack, and indexes the servers by free GPUs; these tests compare them with a recomputation
from scratch, and check decisions that a stale figure would get wrong.
"""

from __future__ import annotations

import itertools

from simulation.composition import create_policy
from simulation.decisions import Launch, Migrate
from simulation.engine import EngineConfig, Simulation
from simulation.model import JobSpec, Workload
from simulation.policies.gandiva_index import ServerIndex, ServerTally
from simulation.workloads.gandiva_edl import gandiva_cluster, gandiva_eight_model_workload
from tests.simulation.test_gandiva import Recording, cluster


class CheckedRounds(Recording):
    """Runs the policy and, after every round, compares its figures with `_units`, every
    running job's share in the engine (a share cycle read at this instant) with the share
    the policy's rotation plans give it, and its trial packs with the packs."""

    def __init__(self, policy):
        super().__init__(policy)
        self.rounds = 0
        self.packs: set[tuple[str, tuple[str, ...]]] = set()  # (server, members) seen

    def schedule(self, view):
        yield from super().schedule(view)
        self.rounds += 1
        policy = self.policy
        for sid, server in view.servers.items():
            units = policy._units(view, sid)
            load = sum(units.values())
            assert policy._load(view, sid) == load, (view.now, sid)
            assert policy._index.units[sid] == len(units), (view.now, sid)
            assert policy._free(view, sid) == max(0, server.gpus - load), (view.now, sid)
            assert (sid in policy._index.overloaded) == (load > server.gpus), (view.now, sid)
        for job_id, servers in policy._where.items():
            job = view.job(job_id)
            planned = policy._job_share(view, job, min(
                policy._slice_share(view, sid, policy._unit_of(job_id, sid)) for sid in servers))
            assert job.share == planned, (view.now, job_id)
        assert policy._trials == {pid for pid, p in policy._packs.items() if not p.kept}
        # A pack holds distinct jobs on one GPU of its server, and a job counts in one pack.
        members = [(j, pid) for pid, pack in policy._packs.items() for j in pack.members]
        assert len({j for j, _ in members}) == len(members), view.now
        assert all(policy._pack_of[j] == pid for j, pid in members), view.now
        assert len(members) == len(policy._pack_of), view.now
        self.packs.update((p.server, tuple(p.members)) for p in policy._packs.values())


def test_figures_match_a_recount_through_packing_and_migration():
    """The §6.3 mix packs, unpacks, migrates and time-slices; every round's figures must be
    those of a recount (a tally missed by any of these changes would drift)."""
    workload = gandiva_eight_model_workload(seed=0)
    jobs = Workload(tuple(workload.jobs[:200]))
    policy = CheckedRounds(create_policy("gandiva"))
    result = Simulation(gandiva_cluster(), jobs, policy,
                        config=EngineConfig(migration_pause=1.0)).run()
    counters = result.summary["policy_counters"]
    assert counters["packings"] > 0 and counters["migrations"] > 0
    assert policy.rounds > 100


def test_a_job_spread_over_servers_hosts_no_pack():
    """2 × 4 GPUs. r0-r2 and s0 fill gpu-1, r3-r5 and s1 gpu-2; s0 and s1 end at 100, so
    the 2-GPU VAE job w takes one GPU on each server (Algorithm 1, relaxed) at 150. At 200
    v0 and v1 (VAE, 1 GPU) over-subscribe gpu-1 and gpu-2. w has the lowest utilisation on
    both, but a job spread over servers has no GPU of its own to share (§4.2.2 packs jobs
    on a GPU): each v packs with its server's first ResNet-50 job instead (equal
    utilisation, ties to the smaller id). ResNet-50 + VAE pack at C = 2 (Table 1), one GPU
    each: no time-slicing, so r and v run at full speed. Packing onto w put it in two packs
    at once, and its second pack replaced the first in the policy's index."""
    r = [JobSpec(f"r{i}", 0.0, 1, 9000.0, model="resnet50") for i in range(6)]
    s = [JobSpec(f"s{i}", 0.0, 1, 100.0, model="resnet50") for i in range(2)]
    jobs = [*r[:3], s[0], *r[3:], s[1], JobSpec("w", 150.0, 2, 9000.0, model="vae")]
    jobs += [JobSpec(f"v{i}", 200.0, 1, 3000.0, model="vae") for i in range(2)]
    policy = CheckedRounds(create_policy("gandiva", {"migration": False,
                                                     "grow_shrink": False}))
    result = Simulation(cluster(2, 4), Workload(tuple(jobs)), policy,
                        config=EngineConfig(migration_pause=1.0)).run()
    w = next(d for _, d in policy.decisions if isinstance(d, Launch) and d.job_id == "w")
    assert [s.server for s in w.placement] == ["gpu-1", "gpu-2"]
    assert policy.packs == {("gpu-1", ("r0", "v0")), ("gpu-2", ("r3", "v1"))}
    jct = {row["job_id"]: row["jct"] for row in result.jobs}
    assert [jct[j] for j in ("r0", "r1", "r3", "v0", "v1")] == [9000.0] * 3 + [3000.0] * 2


def test_a_completion_between_rounds_opens_a_defragmentation_move():
    """2 × 4 GPUs, threshold 2. a-d (1 GPU) fill gpu-1; e, f take gpu-2 (free 2). Nothing can
    move: the only other server with jobs has no free GPU. c ends at 100: gpu-1 has one free
    GPU, so e (first of gpu-2's jobs) moves there. A cached free count of gpu-1, or a
    remembered "nothing to move", would miss it."""
    jobs = [JobSpec(name, 0.0, 1, 100.0 if name == "c" else 9000.0, model="resnet50")
            for name in "abcdef"]
    policy = CheckedRounds(create_policy("gandiva", {"defrag_threshold": 2}))
    sim = Simulation(cluster(2, 4), Workload(tuple(jobs)), policy,
                     config=EngineConfig(max_time=200.0))
    sim.run()
    moves = [(t, d.job_id, d.placement[0].server) for t, d in policy.decisions
             if isinstance(d, Migrate)]
    assert moves == [(100.0, "e", "gpu-1")]


def test_a_job_that_surely_waits_does_not_hold_up_the_queue():
    """1 × 4 GPUs held by four 1-GPU jobs (affinity 1). `big` (2 GPUs) has no free GPUs and
    no server of its affinity: it waits. `small` (1 GPU), behind it, over-subscribes the
    affinity-1 server at once (with a fluid share, so it ends before r0). Only when r0 and
    r1 have both ended are two GPUs free for `big`."""
    jobs = [JobSpec(f"r{i}", 0.0, 1, 100.0 if i < 2 else 9000.0, model="resnet50")
            for i in range(4)]
    jobs += [JobSpec("big", 1.0, 2, 500.0, model="resnet50"),
             JobSpec("small", 1.0, 1, 50.0, model="resnet50")]
    sim = Simulation(cluster(1, 4), Workload(tuple(jobs)),
                     create_policy("gandiva", {"introspective": False,
                                               "time_slicing": "fluid"}),
                     config=EngineConfig(max_time=1000.0))
    sim.run()
    jobs = sim.state.jobs
    assert jobs["small"].first_start == 1.0
    assert jobs["small"].end_time < jobs["r0"].end_time
    assert jobs["big"].first_start == max(jobs["r0"].end_time, jobs["r1"].end_time)


def _plain_fullest(free, busy, gpus, exclude, fewer_than):
    """`Gandiva._scan_destination` over all servers: (free, id) best fit."""
    fits = [(f, sid) for sid, f in free.items()
            if sid not in exclude and f >= gpus
            and (fewer_than is None or (busy[sid] and f < fewer_than))]
    return min(fits)[1] if fits else None


def _plain_may_defragment(free, busy, need, threshold):
    return any(busy[s] and free[s] >= threshold and need[s] is not None
               and any(busy[d] and need[s] <= free[d] < free[s] for d in free)
               for s in free)


class FakeServer:
    def __init__(self, sid, gpus, busy):
        self.id, self.gpus, self.pool, self.available = sid, gpus, "gpu", True
        self.jobs = {"job": 1} if busy else {}


def test_server_index_answers_as_a_scan_over_all_servers():
    """Every combination of three 4-GPU servers' loads (idle, or with jobs at load 0-6),
    re-put in place: the index's best fit and its defragmentation test equal a scan."""
    states = [(False, 0, None), *((True, load, 1) for load in range(7)), (True, 2, None),
              (True, 1, 3)]
    index = ServerIndex()
    for combo in itertools.product(states, repeat=3):
        free, busy, need = {}, {}, {}
        for i, (has_jobs, load, smallest) in enumerate(combo):
            sid = f"s{i}"
            index.put(FakeServer(sid, 4, has_jobs), load, load, smallest, False)
            free[sid], busy[sid], need[sid] = max(0, 4 - load), has_jobs, smallest
        for gpus, exclude, fewer_than in itertools.product(
                (1, 2, 4), ({"s0"}, {"s1"}, set()), (None, 0, 2, 4)):
            assert index.fullest_with_room(gpus, exclude, fewer_than) == \
                _plain_fullest(free, busy, gpus, exclude, fewer_than)
        for threshold in (0, 2, 3):
            assert index.may_defragment(threshold) == \
                _plain_may_defragment(free, busy, need, threshold)
        assert index.max_free() == max(free.values())
        assert index.pool_free["gpu"] == sum(free.values())


def test_a_tallys_unit_sizes_count_a_pack_as_one_gpu():
    # parts: (server, GPUs there, pack or None, movable GPUs, elastic)
    tally = ServerTally()
    assert tally.size_range == (0, 0)
    two, four, packed = ("s", 2, None, 2, 0), ("s", 4, None, 4, 0), ("s", 1, 7, 0, 0)
    for part in (two, four, packed):
        tally.count(part, 1)
    assert tally.size_range == (1, 4)  # the pack is one 1-GPU unit
    tally.count(packed, -1)
    tally.count(four, -1)
    assert tally.size_range == (2, 2)  # what left takes its size with it
