"""Gandiva: Algorithm 1 placement, time-slicing, packing, migration, grow-shrink."""

from __future__ import annotations

import pytest

from simulation.composition import create_policy
from simulation.decisions import Launch, Migrate, Resize, SetShare, Slot
from simulation.engine import EngineConfig, Simulation
from simulation.model import ClusterSpec, GpuType, JobSpec, PoolKind, PoolSpec, Workload
from simulation.policies.gandiva_index import packing_capacity
from simulation.policies.time_slicing import unit_sizes


def cluster(servers: int, gpus: int) -> ClusterSpec:
    return ClusterSpec("c", {"P40": GpuType("P40", 1.0, 24.0)},
                       (PoolSpec("gpu", PoolKind.TRAINING, "P40", servers, gpus),))


class Recording:
    def __init__(self, policy):
        self.policy = policy
        self.decisions = []

    def __getattr__(self, name):
        return getattr(self.policy, name)

    def schedule(self, view):
        for decision in self.policy.schedule(view):
            self.decisions.append((view.now, decision))
            yield decision


def simulate(jobs, servers=1, gpus=4, **params):
    policy = Recording(create_policy("gandiva", params))
    result = Simulation(cluster(servers, gpus), Workload(tuple(jobs)), policy,
                        config=EngineConfig(migration_pause=1.0)).run()
    return result, policy


def walk_every_round(policy) -> None:
    """Make `policy` walk its queue at every round, as before walks were skipped."""
    schedule = policy.schedule

    def always(view):
        policy._place_idle_at = -1
        return schedule(view)

    policy.schedule = always


def jcts(result):
    return {row["job_id"]: row["jct"] for row in result.jobs}


def test_fluid_six_one_gpu_jobs_on_four_gpus_each_get_four_sixths():
    jobs = [JobSpec(f"long{i}", 0.0, 1, 6000.0, model="resnet50") for i in range(4)]
    jobs += [JobSpec(f"short{i}", 1500.0, 1, 600.0, model="resnet50") for i in range(2)]
    result, _ = simulate(jobs, switch_overhead=0.0, time_slicing="fluid")
    times = jcts(result)
    # Shorts run at 4/6: 600 s of work take 900 s; the longs lose 900 x 2/6 = 300 s.
    assert times["short0"] == pytest.approx(900.0)
    assert times["long0"] == pytest.approx(6300.0)
    assert result.summary["policy_counters"]["suspends"] == pytest.approx(
        6 * 2 / 6 * 900 / 60)  # two of six jobs swapped out per 60 s quantum


def test_fluid_switch_overhead_costs_its_share_of_each_quantum():
    jobs = [JobSpec(f"j{i}", 0.0, 1, 600.0, model="resnet50") for i in range(6)]
    result, _ = simulate(jobs, switch_overhead=1.0, time_slicing="fluid")
    # Until the first finish everyone runs at 4/6 x 59/60 of a GPU.
    assert min(jcts(result).values()) == pytest.approx(600 / (4 / 6 * 59 / 60))


def test_algorithm1_affinity_then_unallocated_then_relaxed_then_oversubscribed():
    jobs = [
        JobSpec("a", 0.0, 1, 9000.0, model="resnet50"),
        JobSpec("b", 1.0, 2, 9000.0, model="resnet50"),
        JobSpec("c", 2.0, 1, 9000.0, model="resnet50"),
        JobSpec("d", 3.0, 1, 9000.0, model="resnet50"),
        JobSpec("e", 4.0, 1, 9000.0, model="resnet50"),
        JobSpec("f", 5.0, 1, 9000.0, model="resnet50"),
        JobSpec("g", 6.0, 2, 9000.0, model="resnet50"),
    ]
    _, policy = simulate(jobs, servers=2, gpus=4, introspective=False)
    placed = {d.job_id: tuple((s.server, s.gpus) for s in d.placement)
              for _, d in policy.decisions if isinstance(d, Launch)}
    assert placed["a"] == (("gpu-1", 1),)  # unallocated server, affinity 1
    assert placed["b"] == (("gpu-2", 2),)  # no affinity-2 server: an unallocated one
    assert placed["c"] == placed["d"] == placed["e"] == (("gpu-1", 1),)  # same affinity
    assert placed["f"] == (("gpu-2", 1),)  # gpu-1 full: relax affinity
    assert placed["g"] == (("gpu-2", 2),)  # no free GPUs: over-subscribe affinity 2


def test_packing_capacity_follows_table1():
    assert packing_capacity(["vae", "vae"]) == 2.0  # 412% gain: both at full speed
    assert packing_capacity(["lstm", "lstm"]) == pytest.approx(0.84)  # -16%


def test_harmful_packing_is_undone_and_a_good_one_kept():
    bad = [JobSpec(f"lstm{i}", 0.0, 1, 3000.0, model="lstm") for i in range(2)]
    result, _ = simulate(bad, gpus=1, time_slicing="fluid")
    counters = result.summary["policy_counters"]
    assert (counters["packings"], counters["packings_undone"], counters["packings_kept"]) == (
        1, 1, 0)
    # The trial quantum ran at 0.42 each instead of 0.5 x 59/60, then time-slicing again.
    slice_rate = 0.5 * 59 / 60
    trial = 60.0
    left = 3000 - 0.42 * trial
    assert jcts(result)["lstm0"] == pytest.approx(trial + left / slice_rate, rel=1e-6)

    good = [JobSpec(f"vae{i}", 0.0, 1, 3000.0, model="vae") for i in range(2)]
    result, _ = simulate(good, gpus=1)
    counters = result.summary["policy_counters"]
    assert (counters["packings"], counters["packings_kept"]) == (1, 1)
    assert max(jcts(result).values()) == pytest.approx(3000.0)  # both at full speed


def test_departure_triggers_a_locality_migration():
    jobs = [JobSpec(f"s{i}", 0.0, 1, 9000.0, model="resnet50") for i in range(2)]
    jobs += [JobSpec("gone", 0.0, 1, 500.0, model="resnet50")]
    jobs += [JobSpec("first", 0.0, 1, 100.0, model="resnet50")]
    jobs += [JobSpec(f"t{i}", 0.0, 1, 9000.0, model="resnet50") for i in range(3)]
    jobs += [JobSpec("pair", 50.0, 2, 9000.0, model="vgg16")]
    _, policy = simulate(jobs, servers=2, gpus=4, packing=False)
    launch = next((t, d) for t, d in policy.decisions
                  if isinstance(d, Launch) and d.job_id == "pair")
    assert launch[0] == 100.0 and len(launch[1].placement) == 2  # fragmented over servers
    moves = [(t, d) for t, d in policy.decisions if isinstance(d, Migrate)]
    # `gone` leaves gpu-1 at 500: the pair moves onto one server.
    assert [(t, d.job_id) for t, d in moves] == [(500.0, "pair")]
    assert moves[0][1].placement[0].gpus == 2


def test_grow_after_idle_timeout_and_shrink_at_once():
    jobs = [
        JobSpec("long", 0.0, 1, 20000.0, model="resnet50", min_workers=1, max_workers=4),
        JobSpec("short1", 0.0, 1, 1500.0, model="resnet50"),
        JobSpec("short2", 0.0, 2, 2700.0, model="resnet50"),
        JobSpec("new2", 4500.0, 2, 3000.0, model="resnet50"),
        JobSpec("new1", 4600.0, 1, 3000.0, model="resnet50"),
    ]
    _, policy = simulate(jobs, idle_timeout=300.0)
    sizes = [(t, sum(s.gpus for s in d.placement)) for t, d in policy.decisions
             if isinstance(d, Resize) and d.job_id == "long"]
    assert sizes[0] == (pytest.approx(1800.0), 2)  # 1500 + timeout, one free GPU
    assert sizes[1] == (pytest.approx(3000.0), 4)  # short2 left at 2700
    assert sizes[2] == (4500.0, 2)  # shrinks at once for the 2-GPU job
    assert sizes[3] == (4600.0, 1)


def progress_at(sim, t):
    """Work done by each job at time `t` (the engine settles progress lazily)."""
    return {j.job_id: j.spec.duration - j.remaining_work + j.work_between(j.last_update, t)
            for j in sim.state.jobs.values()}


@pytest.mark.parametrize(("until", "expected"), [(150.0, {"a": 89.5, "b": 59.0}),
                                                 (180.0, {"a": 119.0, "b": 59.0})])
def test_quanta_round_robin_charges_the_switch_to_the_resumed_job(until, expected):
    """Two 1-GPU jobs on one GPU, 60 s quanta, 1 s suspend + resume per switch.

    a launches first and runs 0-60 (a start is no resume: no cost); b waits, suspended.
    At 60 a is suspended and b resumed: b pays 1 s of its quantum, 59 s of work by 120.
    At 120 a is resumed and pays 1 s: by 180 it has 60 + 59 = 119. Within a quantum the
    cost is spread over it (a share of 59/60), so at 150 a has 60 + 30 x 59/60 = 89.5."""
    jobs = [JobSpec(name, 0.0, 1, 1000.0, model="resnet50") for name in "ab"]
    sim = Simulation(cluster(1, 1), Workload(tuple(jobs)),
                     create_policy("gandiva", {"introspective": False}),
                     config=EngineConfig(max_time=until))
    result = sim.run()
    done = progress_at(sim, until)
    assert done["a"] == pytest.approx(expected["a"], abs=1e-6)
    assert done["b"] == pytest.approx(expected["b"], abs=1e-6)
    # suspensions: a at 60, b at 120, a at 180 (the boundary round at `until` runs too)
    assert result.summary["policy_counters"]["suspends"] == (2 if until < 180 else 3)


def test_quanta_newcomer_waits_for_its_turn_then_a_freed_gpu_goes_to_it_at_once():
    """1 × 2 GPUs, no switch cost. x, y run; z arrives at 10 and is suspended (its turn
    comes at the 60 s boundary, behind x and y, which ran). y ends at 30: the freed GPU
    goes to z at once, mid-quantum. At 60 x and z ran, nobody waits: all keep running."""
    jobs = [JobSpec("x", 0.0, 1, 1000.0, model="resnet50"),
            JobSpec("y", 0.0, 1, 30.0, model="resnet50"),
            JobSpec("z", 10.0, 1, 1000.0, model="resnet50")]
    sim = Simulation(cluster(1, 2), Workload(tuple(jobs)),
                     create_policy("gandiva", {"introspective": False, "switch_overhead": 0.0}),
                     config=EngineConfig(max_time=100.0))
    sim.run()
    done = progress_at(sim, 100.0)
    assert done["x"] == pytest.approx(100.0)
    assert done["z"] == pytest.approx(70.0, abs=1e-6)  # suspended 10-30, runs 30-100


def test_quanta_rotate_three_jobs_on_two_gpus():
    """1 × 2 GPUs, 60 s quanta, no switch cost: a, b, c in launch order. Quantum 1: a, b run
    (c suspended). Boundary 60: a, b ran and go to the back: c, a run. Boundary 120: c, a
    go back: b, c run. At 150: a 60 + 60, b 60 + 30, c 60 + 30."""
    jobs = [JobSpec(name, 0.0, 1, 1000.0, model="resnet50") for name in "abc"]
    sim = Simulation(cluster(1, 2), Workload(tuple(jobs)),
                     create_policy("gandiva", {"introspective": False, "switch_overhead": 0.0}),
                     config=EngineConfig(max_time=150.0))
    sim.run()
    done = progress_at(sim, 150.0)
    assert {j: round(w, 6) for j, w in done.items()} == {"a": 120.0, "b": 90.0, "c": 90.0}


def test_quanta_rotation_is_decided_once_per_change_not_per_quantum():
    """1 × 2 GPUs, no switch cost, a, b, c of 1,000 s each: the rotation repeats every three
    quanta (a b | c a | b c), each job running 120 s of every 180 s. After 8 periods
    (1,440 s) each has done 960 s; in the 9th period's first quantum a and b finish their
    last 40 s at 1,480, and c, suspended, takes a freed GPU at once and ends at 1,520.
    Nothing changes on the server between 0 and 1,480, so the jobs are told their shares
    for many quanta at once (share cycles), not once per quantum: plans of 2 quanta (at 0),
    4 (at 120), then 8 (at 360), where the period shows and the plan loops. The
    suspensions still count one per boundary."""
    jobs = [JobSpec(name, 0.0, 1, 1000.0, model="resnet50") for name in "abc"]
    result, policy = simulate(jobs, gpus=2, introspective=False, switch_overhead=0.0)
    ends = {row["job_id"]: row["end"] for row in result.jobs}
    assert ends == {"a": pytest.approx(1480.0), "b": pytest.approx(1480.0),
                    "c": pytest.approx(1520.0)}
    shares = [d for t, d in policy.decisions if isinstance(d, SetShare) and t < 1480.0]
    assert len(shares) <= 3 * 3
    assert {t for t, d in policy.decisions if isinstance(d, SetShare) and t < 1480.0} <= {
        0.0, 120.0, 360.0}
    # each boundary 60, 120, ..., 1,440 swaps out the one unit that ran and goes back
    assert result.summary["policy_counters"]["suspends"] == 24


def test_quanta_a_long_rotation_is_planned_once_it_repeats_not_every_32_quanta():
    """1 × 1 GPU, forty 1-GPU jobs, no switch cost: one job per quantum, the rotation repeats
    every 40 quanta (2,400 s). Plans grow 2, 4, 8, 16, 32 quanta (made at quanta 0, 2, 6, 14,
    30), then 64 from quantum 62 (3,720 s), which holds the whole period and loops: no share
    is decided after that while nothing changes (a cap of 32 quanta would re-plan every 32
    forever, re-telling all forty jobs). By 12,000 s (200 quanta, five periods) each job has
    run five quanta: 300 s."""
    jobs = [JobSpec(f"j{i:02d}", 0.0, 1, 1e6, model="resnet50") for i in range(40)]
    policy = Recording(create_policy("gandiva", {"introspective": False,
                                                 "switch_overhead": 0.0}))
    sim = Simulation(cluster(1, 1), Workload(tuple(jobs)), policy,
                     config=EngineConfig(max_time=12_000.0))
    sim.run()
    assert {t for t, d in policy.decisions if isinstance(d, SetShare)} == {
        0.0, 120.0, 360.0, 840.0, 1800.0, 3720.0}
    assert {round(w, 6) for w in progress_at(sim, 12_000.0).values()} == {300.0}


def test_quanta_a_pack_keeps_the_gpu_its_running_member_had():
    """1 × 1 GPU, no switch cost: a runs from 0, b waits (suspended). v (vae) arrives at 30
    and is packed onto a (the 1-GPU unit of lowest utilisation); a vae packs with resnet50
    at full speed (Table 1 gains: min(2, (0.87 + 5.12) / 2) = 2). The pack takes a's place
    among the running, so a and v run 30-60 and b waits for the boundary; at 60 the pack,
    having run, goes to the back and b runs 60-120."""
    jobs = [JobSpec("a", 0.0, 1, 1000.0, model="resnet50"),
            JobSpec("b", 0.0, 1, 1000.0, model="resnet50"),
            JobSpec("v", 30.0, 1, 1000.0, model="vae")]
    for until, expected in ((60.0, {"a": 60.0, "b": 0.0, "v": 30.0}),
                            (120.0, {"a": 60.0, "b": 60.0, "v": 30.0})):
        sim = Simulation(cluster(1, 1), Workload(tuple(jobs)),
                         create_policy("gandiva", {"switch_overhead": 0.0}),
                         config=EngineConfig(max_time=until))
        result = sim.run()
        assert result.summary["policy_counters"]["packings"] == 1
        assert {j: round(w, 6) for j, w in progress_at(sim, until).items()} == expected


def test_quanta_a_running_job_that_leaves_frees_its_gpu_for_the_next_in_turn():
    """1 × 2 GPUs, no switch cost, a b c d in launch order; b has 30 s of work. a and b run
    from 0; b ends at 30 and c, next in the rotation, takes its GPU at once while a keeps
    running. At 60 the units that ran (a, c) go to the back: d and a run; at 120, c and d.
    By 150: a 60 + 60, c 30 + 30, d 60 + 30."""
    jobs = [JobSpec(name, 0.0, 1, 30.0 if name == "b" else 1000.0, model="resnet50")
            for name in "abcd"]
    sim = Simulation(cluster(1, 2), Workload(tuple(jobs)),
                     create_policy("gandiva", {"introspective": False, "switch_overhead": 0.0}),
                     config=EngineConfig(max_time=150.0))
    result = sim.run()
    assert {row["job_id"]: row["end"] for row in result.jobs}["b"] == pytest.approx(30.0)
    done = progress_at(sim, 150.0)
    assert {j: round(done[j], 6) for j in "acd"} == {"a": 120.0, "c": 60.0, "d": 90.0}


@pytest.mark.parametrize("seed", range(6))
def test_a_queue_walk_that_placed_nothing_is_skipped_only_while_nothing_changed(seed):
    """Brute force: Gandiva on random arrivals of mixed sizes onto 3 × 4 GPUs, where jobs
    of 3-4 GPUs wait for servers of their affinity, with the idle walk skipped (as shipped)
    and with every round walking the queue: the same schedule, and some walks skipped."""
    import random

    from simulation.metrics import job_digest

    rng = random.Random(seed)
    models = ("resnet50", "vae", "lstm", "dcgan")
    jobs = [JobSpec(f"j{i:02d}", round(rng.uniform(0, 3000), 1), rng.choice((1, 1, 2, 3, 4)),
                    rng.uniform(100, 4000), model=rng.choice(models)) for i in range(40)]
    jobs.sort(key=lambda j: j.submit_time)
    runs = []
    for walk_always in (False, True):
        policy = create_policy("gandiva", {})
        walks = [0]
        sync = policy._sync_queue

        def counted(view, sync=sync, walks=walks):
            walks[0] += 1
            sync(view)

        policy._sync_queue = counted
        if walk_always:
            walk_every_round(policy)
        result = Simulation(cluster(3, 4), Workload(tuple(jobs)), policy,
                            config=EngineConfig(migration_pause=1.0)).run()
        runs.append((job_digest(result.jobs), walks[0]))
    (skipping, fewer), (walking, every) = runs
    assert skipping == walking
    assert fewer < every


def test_quanta_a_multi_gpu_job_on_a_server_of_mixed_sizes_is_slowed_by_locality():
    """1 × 4 GPUs, no switch cost: a (VGG16, 2 GPUs, keeps 60 % of its speed on a server of
    mixed sizes), b (1 GPU) and c (2 GPUs, over-subscribing the server of its affinity), all
    ResNet-50 but a. The rotation a b | c a | b c repeats every three quanta; a runs in two
    of them at 0.6: by 180 s a has done 72 s of work, b and c 120 s each."""
    jobs = [JobSpec("a", 0.0, 2, 1000.0, model="vgg16"),
            JobSpec("b", 0.0, 1, 1000.0, model="resnet50"),
            JobSpec("c", 0.0, 2, 1000.0, model="resnet50")]
    sim = Simulation(cluster(1, 4), Workload(tuple(jobs)),
                     create_policy("gandiva", {"introspective": False, "switch_overhead": 0.0}),
                     config=EngineConfig(max_time=180.0))
    sim.run()
    assert {j: round(w, 6) for j, w in progress_at(sim, 180.0).items()} == {
        "a": 72.0, "b": 120.0, "c": 120.0}


def test_the_runners_of_a_plan_are_its_jobs_and_the_members_of_its_packs():
    """A fresh plan's running units: a job, and a pack of b and v on this server, so the
    jobs that run are a, b and v; on a server in no pack the units are the jobs."""
    from simulation.policies.gandiva_index import Pack

    policy = create_policy("gandiva", {})
    policy._packs[0] = Pack("s", ["b", "v"], 0.0)
    policy._pack_of.update({"b": 0, "v": 0})
    cycles = {"a": (1.0, None), ("pack", 0): (1.0, None)}
    assert policy._runners(cycles, {"a": 1, "b": 1, "v": 1, "c": 1}) == {"a", "b", "v"}
    assert policy._runners({"a": (1.0, None)}, {"a": 1, "c": 1}) == {"a"}


def test_a_queue_walk_that_launched_is_walked_again_at_the_next_round():
    """A launch may make an earlier job placeable (with several pools, a job of any GPU
    type can give an empty server the affinity a job of one type lacked on k servers):
    here x, queued first, is stubbed unplaceable until y runs. 1 × 2 GPUs kept busy by a
    and b, so quantum boundaries bring rounds that change nothing: x launches at the first
    of them (60 s), as with a walk every round, not when a job ends."""
    jobs = [JobSpec("a", 0.0, 1, 500.0, model="resnet50"),
            JobSpec("b", 0.0, 1, 500.0, model="resnet50"),
            JobSpec("x", 10.0, 1, 500.0, model="resnet50"),
            JobSpec("y", 10.0, 1, 500.0, model="resnet50")]
    starts = []
    for walk_always in (False, True):
        policy = create_policy("gandiva", {"introspective": False})
        get_node = policy._get_node

        def stubbed(view, job, get_node=get_node):
            if job.job_id == "x" and "y" not in view.running:
                return None, False
            return get_node(view, job)

        policy._get_node = stubbed
        if walk_always:
            walk_every_round(policy)
        result = Simulation(cluster(1, 2), Workload(tuple(jobs)), policy).run()
        starts.append({row["job_id"]: row["start"] for row in result.jobs})
    assert starts[0] == starts[1]
    assert starts[0]["x"] == pytest.approx(60.0)


def test_quanta_jobs_spread_over_servers_out_of_step_are_owed_a_turn():
    """4 × 4 GPUs, no switch cost, ResNet-50 (0.53 of its speed over servers), 90 s of work
    each. j0 (4 GPUs) runs on gpu-1 from 70 to 160; j1, j3 (8 GPUs) take gpu-2 and gpu-3 at
    100 and share them; j6 (8) takes gpu-1 and gpu-4 at 170, j7 (8) joins it there at 200
    and j8 (8) over-subscribes gpu-1 and gpu-2 at 230. gpu-1 then turns j6 j7 j8 (a
    go-round of 12 / 4 = 3 quanta) and gpu-4 j6 j7, out of step: j6 last runs on both in
    the quantum ending at 250, j7 in the one ending at 310, where both are told 0. A
    go-round after its last run j6 is owed a turn: at 430 it goes to the front of gpu-1 and
    gpu-4 and runs on both at 0.53; j7, owed at 490, follows then. Without it j6 and j7
    stay out of step and never run again once j8 leaves (every job must end). Migration is
    off, so that only the rotation can help."""
    spec = [("j0", 70.0, 4), ("j1", 100.0, 8), ("j3", 100.0, 8), ("j6", 170.0, 8),
            ("j7", 200.0, 8), ("j8", 230.0, 8)]
    jobs = [JobSpec(name, t, gpus, 90.0, model="resnet50") for name, t, gpus in spec]
    policy = Recording(create_policy("gandiva", {"switch_overhead": 0.0, "migration": False}))
    take_looks, owed_at = policy.policy._take_looks, {}

    def recorded(view, looks):  # at every boundary with a look due, quiet or not
        owed = owed_at[view.now] = take_looks(view, looks)
        return owed

    policy.policy._take_looks = recorded
    result = Simulation(cluster(4, 4), Workload(tuple(jobs)), policy,
                        config=EngineConfig(max_time=100_000.0)).run()
    assert all(row["end"] is not None for row in result.jobs)
    told = {(t, d.job_id): d for t, d in policy.decisions if isinstance(d, SetShare)}
    assert told[(310.0, "j6")].share == told[(310.0, "j7")].share == 0.0
    assert told[(310.0, "j6")].cycle is None and told[(310.0, "j7")].cycle is None
    # (j1 and j3, spread over gpu-2 and gpu-3 with j8 there too, are owed turns as well)
    assert [[j for j in owed_at.get(t, []) if j in ("j6", "j7")]
            for t in (250.0, 310.0, 370.0, 430.0, 490.0)] == [[], [], [], ["j6"], ["j7"]]
    assert told[(430.0, "j6")].share == pytest.approx(0.53)
    assert told[(490.0, "j7")].share == pytest.approx(0.53)


@pytest.mark.parametrize(("share", "cycle", "last", "owed"), [
    (0.53, None, 300.0, False),  # runs now
    (0.0, None, 0.0, True),  # never ran since it became spread at 0
    (0.0, (100.0, (0.0, 0.53)), 220.0, False),  # ran in its cycle's quantum 1, 160-220
    (0.0, (100.0, (0.53, 0.0)), 160.0, False),  # ran in quantum 0, 100-160: 140 s ago
    (0.53, (110.0, (0.0, 0.0)), 110.0, True),  # ran 100-110, before its cycle: 190 s ago
])
def test_a_spread_job_is_owed_a_turn_a_go_round_after_it_last_ran(share, cycle, last, owed):
    """`_owed_turns` at the boundary of 300 s, quanta of 60 s, for a job on gpu-a (load 10
    on 4 GPUs: a go-round of 3 quanta, 180 s) and gpu-b (8 on 4), spread since 0 and told
    at 100 a plain share or a cycle (start, shares; silent after): owed when its last run
    on both, read from what it was told, is 180 s or more ago (160: 140 s, not owed; 110:
    190 s, owed). It is looked at again a go-round after its last run, or after now if
    owed (its turn is now)."""
    from types import SimpleNamespace

    from simulation.share_cycle import ShareCycle

    policy = create_policy("gandiva", {})
    policy._where["j"] = ("gpu-a", "gpu-b")
    policy._rank["j"] = 0
    policy._index.load.update({"gpu-a": 10, "gpu-b": 8})
    view = SimpleNamespace(now=300.0, servers={"gpu-a": SimpleNamespace(gpus=4),
                                               "gpu-b": SimpleNamespace(gpus=4)})
    policy._watch_spread(0.0, "j", True)
    if cycle is not None:
        start, shares = cycle
        cycle = ShareCycle(share, start, 60.0, shares + (0.0,), len(shares))
    policy._note_schedule(100.0, "j", share, cycle)
    assert policy._owed_turns(view) == (["j"] if owed else [])
    assert policy._turn_due_at["j"] == (300.0 if owed else last) + 180.0
    assert policy._turn_due == [(policy._turn_due_at["j"], "j")]  # the look taken off


@pytest.mark.parametrize("migration", [True, False])
def test_a_job_spread_over_over_subscribed_servers_moves_to_idle_ones(migration):
    """4 × 4 GPUs, no switch cost, ResNet-50 (0.53 of its speed over servers). x (4 GPUs,
    90 s) runs on gpu-1; a (8 GPUs) takes gpu-2 and gpu-3 at 10; b (8) finds no two free
    servers and over-subscribes the same pair at 20. When x leaves at 90, gpu-1 and gpu-4
    are idle: height reduction moves a there as Algorithm 1 would place it (unallocated
    servers), and from then on a and b each run alone at 0.53, neither suspended again.
    By 90 a ran 10-60 (50 × 0.53 of work) and b 60-90 (30 × 0.53); a pauses 1 s for its
    move. Without migration they keep taking turns on gpu-2 and gpu-3."""
    jobs = [JobSpec("x", 0.0, 4, 90.0, model="resnet50"),
            JobSpec("a", 10.0, 8, 600.0, model="resnet50"),
            JobSpec("b", 20.0, 8, 600.0, model="resnet50")]
    result, policy = simulate(jobs, servers=4, gpus=4, switch_overhead=0.0,
                              migration=migration)
    moves = [(t, d) for t, d in policy.decisions if isinstance(d, Migrate)]
    later = [d for t, d in policy.decisions if isinstance(d, SetShare) and t >= 90.0]
    if migration:
        assert moves == [(90.0, Migrate("a", (Slot("gpu-1", 4), Slot("gpu-4", 4))))]
        assert result.summary["policy_counters"]["migrations"] == 1
        assert [(d.job_id, d.share, d.cycle) for d in later] == [
            ("a", pytest.approx(0.53), None), ("b", pytest.approx(0.53), None)]
        assert jcts(result)["a"] + 10.0 == pytest.approx(91.0 + (600 - 50 * 0.53) / 0.53)
        assert jcts(result)["b"] + 20.0 == pytest.approx(90.0 + (600 - 30 * 0.53) / 0.53)
    else:
        assert moves == []
        assert any(d.share == 0.0 or d.cycle is not None for d in later)


def crowded_batches(seed: int) -> list[JobSpec]:
    """60 jobs of 1-4 GPUs (mostly 1) of four models, arriving in batches every 200 s up to
    3,800 s: on 2 × 4 GPUs, crowded servers, packs, and re-plans meeting several newcomers
    at once."""
    import random

    rng = random.Random(seed)
    models = ("resnet50", "vae", "lstm", "dcgan")
    jobs = [JobSpec(f"j{i:02d}", 200.0 * rng.randrange(20), rng.choice((1, 1, 1, 2, 4)),
                    rng.uniform(100, 3000), model=rng.choice(models)) for i in range(60)]
    return sorted(jobs, key=lambda j: j.submit_time)


@pytest.mark.parametrize("seed", range(4))
def test_a_rotation_re_planned_from_its_changes_is_the_one_rebuilt_from_every_unit(seed):
    """Brute force: on crowded servers (60 jobs of 1-4 GPUs onto 2 × 4 GPUs, packing and
    migration on), every re-plan from the jobs that changed (`_changed_rotation`) gives the
    rotation, the units that ran and each unit's share before, as rebuilding them from
    every unit does (`_rebuilt_rotation`); and the change path is the one taken."""
    jobs = crowded_batches(seed)
    policy = create_policy("gandiva", {})
    changed, checked = policy._changed_rotation, [0]

    def compared(rotation, ran, shares, members, suspects, units):
        before = set(members)
        rebuilt, rebuilt_ran, rebuilt_old = policy._rebuilt_rotation(
            list(rotation), ran, shares, units)
        rotation, ran, old = changed(rotation, ran, shares, members, suspects, units)
        assert old is not None  # every change was seen
        assert (rotation, ran) == (rebuilt, rebuilt_ran)
        assert {u: old.get(u) for u in units} == {u: rebuilt_old.get(u) for u in units}
        assert members == set(units) and before | members >= set(rebuilt_old)
        checked[0] += 1
        return rotation, ran, old

    policy._changed_rotation = compared
    result = Simulation(cluster(2, 4), Workload(tuple(jobs)), policy,
                        config=EngineConfig(migration_pause=1.0)).run()
    assert result.summary["finished"] == 60
    assert checked[0] > 10


@pytest.mark.parametrize("seed", range(3))
def test_each_servers_jobs_not_suspended_and_unit_sizes_are_kept_as_they_change(seed):
    """Brute force: after every round on crowded servers (packing and migration on), the
    jobs `_set_shares` tells on a server (`_awake`) are its jobs not noted as suspended,
    and its tally's fewest and most GPUs of a unit are its units' (a pack counts one)."""
    jobs = crowded_batches(seed)
    policy = create_policy("gandiva", {})
    schedule, rounds, packs = policy.schedule, [0], [0]

    def checked(view):
        yield from schedule(view)
        for sid, server in view.servers.items():
            awake = {j for j in server.jobs if j not in policy._suspended}
            assert policy._awake.get(sid, set()) == awake, (view.now, sid)
            if sid in policy._tally:
                units = policy._units(view, sid)
                assert policy._tally[sid].size_range == unit_sizes(units), (view.now, sid)
                packs[0] += len(units) < len(server.jobs)
        rounds[0] += bool(policy._suspended)

    policy.schedule = checked
    result = Simulation(cluster(2, 4), Workload(tuple(jobs)), policy,
                        config=EngineConfig(migration_pause=1.0)).run()
    assert result.summary["finished"] == 60
    assert rounds[0] > 10  # rounds with suspended jobs
    assert packs[0] > 0  # and servers holding a pack


def plain_height_reduction(policy, view):
    """Height reduction as first written (§4.2.2): every job of every over-subscribed
    server in id order, asking each time whether the server is still over-subscribed and
    any GPU is free, each job tried whether or not it could fit."""
    for sid in policy._overloaded(view):
        for job_id in sorted(view.servers[sid].jobs):
            if policy._load(view, sid) <= view.servers[sid].gpus:
                break
            if policy._index.max_free() == 0:
                return
            job = view.job(job_id)
            move = None
            if len(job.placement) > 1:
                move = policy._spread_move(view, job)
            elif policy._movable(view, job):
                dest = policy._destination(view, job, {sid})
                move = None if dest is None else policy._migrate(view, job, dest)
            if move is not None:
                yield move


@pytest.mark.parametrize("seed", (2, 4, 8, 11))
def test_height_reduction_skips_only_what_cannot_change_its_moves(seed):
    """Brute force: 8-40 jobs of 1-8 GPUs (those over 4 spread over servers) onto 2-5 × 4
    GPUs, with height reduction as shipped (servers and spread jobs that cannot move
    skipped, the server's load and the free GPUs asked again only after a move) and as
    first written (`plain_height_reduction`): the same schedule, with migrations. (A random
    search over 400 seeds: seed 4 needs the spread job's test, 8 the server's spread jobs.)"""
    import functools
    import random

    from simulation.metrics import job_digest

    rng = random.Random(seed)
    count, servers = rng.randrange(8, 40), rng.randrange(2, 6)
    models = ("resnet50", "vae", "lstm", "dcgan")
    jobs = [JobSpec(f"j{i:02d}", 100.0 * rng.randrange(20), rng.choice((1, 2, 3, 4, 5, 6, 8)),
                    rng.uniform(100, 4000), model=rng.choice(models)) for i in range(count)]
    jobs.sort(key=lambda j: j.submit_time)
    runs = []
    for shipped in (True, False):
        policy = create_policy("gandiva", {})
        if not shipped:
            policy._reduce_height = functools.partial(plain_height_reduction, policy)
        result = Simulation(cluster(servers, 4), Workload(tuple(jobs)), policy,
                            config=EngineConfig(migration_pause=1.0)).run()
        runs.append((job_digest(result.jobs), result.summary["migrations"]))
    assert runs[0] == runs[1]
    assert runs[0][1] > 0


def test_jobs_owed_a_turn_at_one_boundary_take_it_in_launch_order():
    """Two spread jobs that never ran, launched b (rank 0) then a (rank 1), both a
    go-round (2 quanta on 4 GPUs with a load of 8) past at 200 s: b goes first."""
    from types import SimpleNamespace

    policy = create_policy("gandiva", {})
    policy._index.load.update({"gpu-a": 8, "gpu-b": 8})
    view = SimpleNamespace(now=200.0, servers={"gpu-a": SimpleNamespace(gpus=4),
                                               "gpu-b": SimpleNamespace(gpus=4)})
    for rank, job_id in enumerate(("b", "a")):
        policy._where[job_id] = ("gpu-a", "gpu-b")
        policy._rank[job_id] = rank
        policy._watch_spread(0.0, job_id, True)
    assert policy._owed_turns(view) == ["b", "a"]
    assert policy.counters["owed_turns"] == 2


def spread_out_of_step(seed: int) -> list[JobSpec]:
    """5-13 jobs of 4 and 8 GPUs arriving within 400 s, for 4 × 4 GPUs: spread over
    over-subscribed servers out of step (seeds 15, 63 and 359 owe turns)."""
    import random

    rng = random.Random(seed)
    jobs = [JobSpec(f"j{i:02d}", 10.0 * rng.randrange(40), rng.choice((4, 8, 8, 8)),
                    rng.uniform(60, 400), model="resnet50") for i in range(rng.randrange(5, 14))]
    return sorted(jobs, key=lambda j: j.submit_time)


@pytest.mark.parametrize("seed", (15, 63, 359))
def test_owed_turns_do_not_depend_on_how_far_ahead_the_plans_look(seed, monkeypatch):
    """Brute force: 5-13 jobs of 4 and 8 GPUs arriving within 400 s on 4 × 4 GPUs, spread
    over over-subscribed servers out of step (migration off, no switch cost; seeds a
    search found turns owed in): the same schedule whether plans look ahead at most 3
    quanta or 256. How far to plan is a matter of speed; no answer may depend on it."""
    from simulation.metrics import job_digest
    from simulation.policies import gandiva_time_slicing

    jobs = spread_out_of_step(seed)
    runs = []
    for horizon in (256, 3):
        monkeypatch.setattr(gandiva_time_slicing, "HORIZON", horizon)
        policy = create_policy("gandiva", {"migration": False, "switch_overhead": 0.0})
        result = Simulation(cluster(4, 4), Workload(tuple(jobs)), policy,
                            config=EngineConfig(max_time=10_000_000.0)).run()
        runs.append((job_digest(result.jobs), result.summary["policy_counters"]["owed_turns"],
                     result.summary["decisions"]))
    assert runs[0][:2] == runs[1][:2]
    assert runs[0][1] > 0  # turns were owed
    assert runs[0][2] != runs[1][2]  # and the plans did differ


def spread_and_crowded(seed: int) -> list[JobSpec]:
    """40 jobs of 1-8 GPUs (8: spread over two 4-GPU servers) of four models, arriving in
    batches every 600 s up to 6,000 s and running up to 5 hours: crowded servers that stay
    unchanged for many quanta between arrivals and departures."""
    import random

    rng = random.Random(seed)
    models = ("resnet50", "vae", "lstm", "dcgan")
    jobs = [JobSpec(f"j{i:02d}", 600.0 * rng.randrange(11), rng.choice((1, 1, 2, 4, 8)),
                    rng.uniform(600, 18_000), model=rng.choice(models)) for i in range(40)]
    return sorted(jobs, key=lambda j: j.submit_time)


def elastic_with_gaps(seed: int) -> list[JobSpec]:
    """12 elastic jobs of 1-2 GPUs (up to 4) every 600-1,800 s on 4 × 4 GPUs: idle servers
    on which a job grows after `idle_timeout`, at a quantum boundary with nothing else."""
    import random

    rng = random.Random(seed)
    jobs, t = [], 0.0
    for i in range(12):
        t += rng.choice((600.0, 1200.0, 1800.0))
        gpus = rng.choice((1, 2))
        jobs.append(JobSpec(f"e{i:02d}", t, gpus, rng.uniform(1200, 7200), model="resnet50",
                            min_workers=1, max_workers=4))
    return jobs


QUIET_WORKLOADS = {"crowded": spread_and_crowded, "out of step": spread_out_of_step,
                   "elastic": elastic_with_gaps}
QUIET_CASES = [("elastic", 0, {})] + [("crowded", seed, {"migration": migration})
               for seed in range(3) for migration in (True, False)] + [
    ("out of step", seed, {"migration": False, "switch_overhead": 0.0}) for seed in (15, 63, 359)]


@pytest.mark.parametrize(("kind", "seed", "params"), QUIET_CASES)
def test_quiet_quantum_boundaries_are_skipped_without_changing_any_answer(kind, seed, params):
    """Brute force for `Gandiva.quiet_tick`: on crowded servers with spread jobs, packs
    and expiring plans, on spread jobs out of step that are owed turns, and on elastic jobs
    that grow into idle servers at quantum boundaries, a run whose engine skips the rounds
    of quiet quantum boundaries gives every job the record, and the policy the counters, of
    a run that holds every round; and it does skip (else the rule was never exercised)."""
    jobs = QUIET_WORKLOADS[kind](seed)
    runs = []
    for skip in (True, False):
        policy = create_policy("gandiva", params)
        quiet, skipped = policy.quiet_tick, [0]

        def counted(view, quiet=quiet, skipped=skipped, skip=skip):
            if skip and quiet(view):
                skipped[0] += 1
                return True
            return False

        policy.quiet_tick = counted
        result = Simulation(cluster(4, 4), Workload(tuple(jobs)), policy,
                            config=EngineConfig(migration_pause=1.0)).run()
        assert result.summary["finished"] == len(jobs)
        runs.append((result.jobs, dict(policy.counters), skipped[0],
                     result.summary["schedule_rounds"]))
    (records, counters, skipped, rounds), (plain, plain_counters, _, plain_rounds) = runs
    assert records == plain
    assert counters == plain_counters
    assert counters[{"crowded": "packings", "out of step": "owed_turns",
                     "elastic": "grows"}[kind]] > 0
    assert skipped > {"crowded": 500, "out of step": 5, "elastic": 1}[kind]
    assert rounds == plain_rounds - skipped


@pytest.mark.parametrize(("params", "quiet"), [
    ({}, True), ({"time_slicing": "fluid"}, False), ({"log_utilisation": True}, False)])
def test_a_boundary_after_a_server_changed_is_not_quiet(params, quiet):
    """`quiet_tick` holds a round that has marks to take: one job alone on gpu-1; after a
    round, the boundary at 60 s is quiet (and starts the quantum); once gpu-1 is marked
    (as a launch, move or pack would), the boundary at 120 s is not, and after its round
    the one at 180 s is quiet again. Fluid shares (their suspensions are counted per
    round's elapsed time) and a utilisation logged every round are never quiet."""
    from tests.simulation.hand_states import Running, hand_state, one_round

    policy = create_policy("gandiva", params)
    sim = hand_state(cluster(1, 4), policy, running=[
        Running(JobSpec("a", 0.0, 4, 600.0, model="resnet50"), [("gpu-1", 4)])])
    one_round(sim)
    sim.clock.now = 60.0
    assert policy.quiet_tick(sim.view) is quiet
    if not quiet:
        return
    assert policy._quantum_start == 60.0
    policy._mark("gpu-1")
    sim.clock.now = 120.0
    assert not policy.quiet_tick(sim.view)
    one_round(sim)
    sim.clock.now = 180.0
    assert policy.quiet_tick(sim.view) and policy._quantum_start == 180.0
