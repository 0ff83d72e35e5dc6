"""Muri (SIGCOMM'22): γ and ordering from the paper's figures, Blossom grouping, the policies."""

from __future__ import annotations

import numpy as np
import pytest

from simulation.composition import create_policy
from simulation.decisions import Slot
from simulation.engine import EngineConfig, Simulation
from simulation.errors import InputError
from simulation.interleaving import (
    group_iteration_time,
    interleaving_efficiency,
    model_profile,
    pad_stages,
)
from simulation.interleaving_grouping import Bucket, GroupingConfig, multi_round_grouping
from simulation.model import (
    ClusterSpec,
    GpuType,
    JobSpec,
    PoolKind,
    PoolSpec,
    ResourceProfile,
    Workload,
)
from simulation.policies.base import registry
from simulation.runner import run_simulation

# Figure 4: two resources (CPU, GPU). A and C are CPU-heavy, B and D GPU-heavy (fusing A and C
# gives "4 units of CPU, then 2 of GPU", §4.1).
FIG4 = {"A": (2.0, 1.0), "B": (1.0, 2.0), "C": (2.0, 1.0), "D": (1.0, 2.0)}


def test_figure4_interleaving_efficiency():
    assert interleaving_efficiency([FIG4["A"], FIG4["B"]]) == pytest.approx(1.0)
    assert interleaving_efficiency([FIG4["A"], FIG4["C"]]) == pytest.approx(0.75)


def test_figure4_grouping_pairs_each_cpu_job_with_a_gpu_job():
    names = sorted(FIG4)
    bucket = Bucket(1, np.array([FIG4[n] for n in names]), np.full(4, 3.0), [0, 1, 2, 3],
                    [True] * 4)
    (groups,) = multi_round_grouping([bucket], GroupingConfig(max_group=2))
    plan = {frozenset(names[i] for i in g) for g in groups}
    weight = sum(interleaving_efficiency([FIG4[n] for n in g]) for g in plan)
    # Plan 1 ({A,B},{C,D}) weighs 2; plan 2 ({A,C},{B,D}) 1.5. {A,D},{B,C} ties with plan 1.
    assert weight == pytest.approx(2.0)
    assert all({FIG4[n] for n in g} == {(2.0, 1.0), (1.0, 2.0)} for g in plan)
    assert frozenset({"A", "C"}) not in plan


def test_without_blossom_figure4_jobs_pair_in_priority_order():
    # Figure 11's "without Blossom": same-size jobs packed in descending priority. With the
    # priority A, C, B, D the CPU-heavy A and C pair (γ 0.75) where Blossom pairs each with
    # a GPU-heavy job (γ 1.0); with k = 4 the second round joins the two pairs.
    names = sorted(FIG4)  # A, B, C, D at indices 0-3; ranks: A 0, B 2, C 1, D 3
    bucket = Bucket(1, np.array([FIG4[n] for n in names]), np.full(4, 3.0), [0, 2, 1, 3],
                    [True] * 4)
    config = GroupingConfig(max_group=2, blossom=False)
    assert multi_round_grouping([bucket], config) == [[[0, 2], [1, 3]]]
    assert [0, 2] not in multi_round_grouping([bucket], GroupingConfig(max_group=2))[0]
    assert multi_round_grouping([bucket], GroupingConfig(max_group=4, blossom=False)) == [
        [[0, 2, 1, 3]]]
    # Merges stop once the excess GPUs are covered: the best-ranked pair merges first.
    assert multi_round_grouping([bucket], config, excess_gpus=1) == [[[0, 2], [1], [3]]]


def test_figure6_best_ordering_overlaps_perfectly():
    # Four types (storage, CPU, GPU, network): A spends 2 units on CPU, B 2 on GPU.
    a, b = (1.0, 2.0, 1.0, 1.0), (1.0, 1.0, 2.0, 1.0)
    best, shifts = group_iteration_time([a, b])
    worst, _ = group_iteration_time([a, b], worst=True)
    assert best == 5.0 and shifts == (0, 1)  # B one stage ahead: A's CPU meets B's GPU
    assert worst == 6.0
    assert interleaving_efficiency([a, b]) == pytest.approx(10 / 20)


def test_eq3_with_four_jobs_on_four_resources_is_perfect_for_complementary_jobs():
    jobs = [tuple(3.0 if i == j else 1.0 for i in range(4)) for j in range(4)]
    period, _ = group_iteration_time(jobs)
    assert period == pytest.approx(6.0)  # all heavy stages in one phase, on distinct types
    assert interleaving_efficiency(jobs) == pytest.approx(1.0)


def test_model_table_follows_table1():
    shufflenet = model_profile("shufflenet_v2_x1_0", 16).stage_seconds
    assert shufflenet[0] == pytest.approx(0.60 * 1.006)
    assert model_profile("a2c", 1).stage_seconds[3] == 0.0  # no sync on one GPU
    assert model_profile("unknown-model", 1) is None
    assert pad_stages((1.0, 2.0, 3.0), 4) == (1.0, 2.0, 3.0, 0.0)


def test_grouping_never_mixes_gpu_counts_and_respects_k():
    rng = np.random.default_rng(0)
    buckets = [
        Bucket(g, rng.uniform(0.01, 1.0, size=(12, 4)), np.full(12, 10.0), list(range(12)),
               [True] * 12)
        for g in (1, 2)
    ]
    grouped = multi_round_grouping(buckets, GroupingConfig(max_group=3))
    for groups in grouped:
        assert sorted(i for g in groups for i in g) == list(range(12))
        assert all(len(g) <= 3 for g in groups)


def _cluster(servers: int = 1, gpus: int = 4) -> ClusterSpec:
    return ClusterSpec("c", {"V100": GpuType("V100")},
                       (PoolSpec("train", PoolKind.TRAINING, "V100", servers, gpus),))


def _job(i: int, stages: tuple[float, ...], duration: float = 3600.0, gpus: int = 1,
         submit: float = 0.0) -> JobSpec:
    iteration = sum(stages)
    return JobSpec(f"j{i}", submit, gpus, duration, model="custom",
                   iterations=int(duration / iteration),
                   profile=ResourceProfile(stages))


IO_BOUND, GPU_BOUND = (0.9, 0.05, 0.05), (0.05, 0.9, 0.05)
# Four single-resource-heavy profiles over (storage, CPU, GPU, network): four interleave.
COMPLEMENTARY = [tuple(0.9 if i == j else 0.03 for i in range(4)) for j in range(4)]


def _interleavable(n: int) -> Workload:
    """Alternating IO-bound and GPU-bound single-GPU jobs."""
    return Workload(tuple(_job(i, IO_BOUND if i % 2 else GPU_BOUND, duration=3600.0 + 60 * i)
                          for i in range(n)))


def _physical_usage_ok(sim: Simulation) -> bool:
    used: dict[str, int] = {}
    groups = {(job.placement, sim.policy._group_of[job.job_id])
              for job in sim.state.running.values()}
    for placement, _ in groups:
        for slot in placement:
            used[slot.server] = used.get(slot.server, 0) + slot.gpus
    return all(used[s] <= sim.state.servers[s].gpus for s in used)


def test_muri_groups_jobs_and_sets_honest_shares():
    sim = Simulation(_cluster(1, 2), _interleavable(4), create_policy("muri-s"),
                     config=EngineConfig(max_time=360.0))  # the first 6-minute round
    sim.run()
    running = sim.state.running
    assert len(running) == 4  # 4 jobs on 2 GPUs: two interleaved pairs
    assert all(0.0 < job.share < 1.0 for job in running.values())
    policy = sim.policy
    groups: dict[int, list[str]] = {}
    for job_id in running:
        groups.setdefault(policy._group_of[job_id], []).append(job_id)
    assert len(groups) == 2
    for members in groups.values():
        profiles = {running[j].spec.profile for j in members}
        assert len(members) == 2 and len(profiles) == 2  # IO-bound with GPU-bound


def test_muri_s_beats_srsf_on_an_interleavable_workload():
    # Four kinds, each heavy on another resource: groups of four interleave well enough to
    # pay the measured overhead (× 1.37 for four jobs).
    workload = Workload(tuple(_job(i, COMPLEMENTARY[i % 4], duration=3600.0 + 60 * i)
                              for i in range(8)))
    srsf = run_simulation(_cluster(1, 2), workload, "srsf").summary
    muri = run_simulation(_cluster(1, 2), workload, "muri-s").summary
    assert muri["jct"]["mean"] < srsf["jct"]["mean"]
    assert muri["makespan"] < srsf["makespan"]


@pytest.mark.parametrize(("resource_types", "share"), [(2, 1.0), (4, 0.75)])
def test_two_resource_jobs_swap_perfectly_when_timed_over_two_resources(resource_types, share):
    # Issue #16: four jobs on 2 GPUs, two like Figure 4's A (2 s CPU, 1 s GPU), two like B
    # (1, 2), no group overhead. Over two resource types A and B swap perfectly: T = 3 s,
    # each one's own iteration time, so both run at full speed. Padded to four types, the
    # 4-phase cycle has two phases in which only one job works: T = 2 + 1 + 0 + 1 = 4 s,
    # each at 3/4. A workload profiled on two resources sets resource_types=2.
    jobs = Workload(tuple(_job(i, FIG4["A"] if i % 2 else FIG4["B"]) for i in range(4)))
    policy = create_policy("muri-s", {"resource_types": resource_types,
                                      "max_group_size": 2, "group_overhead": "none"})
    sim = Simulation(_cluster(1, 2), jobs, policy, config=EngineConfig(max_time=360.0))
    sim.run()
    running = sim.state.running
    assert len(running) == 4
    assert [job.share for job in running.values()] == pytest.approx([share] * 4)
    pairs: dict[int, set] = {}
    for job_id, job in running.items():
        pairs.setdefault(policy._group_of[job_id], set()).add(job.spec.profile.stage_seconds)
    assert all(kinds == {FIG4["A"], FIG4["B"]} for kinds in pairs.values())


def test_muri_runs_alone_when_the_cluster_has_room():
    sim = Simulation(_cluster(1, 4), _interleavable(3), create_policy("muri-l"),
                     config=EngineConfig(max_time=360.0))  # the first 6-minute round
    sim.run()
    assert len(sim.state.running) == 3
    assert all(job.share == 1.0 for job in sim.state.running.values())


def test_multi_gpu_jobs_share_whole_placements_end_to_end():
    io, gpu = (0.9, 0.05, 0.05), (0.05, 0.9, 0.05)
    jobs = [_job(i, io if i % 2 else gpu, gpus=4 if i < 4 else 1, submit=float(i))
            for i in range(8)]
    sim = Simulation(_cluster(2, 4), Workload(tuple(jobs)), create_policy("muri-s"),
                     config=EngineConfig(max_time=10.0))
    sim.run()
    assert _physical_usage_ok(sim)
    for job in sim.state.running.values():
        sharing = [o for o in sim.state.running.values() if o.placement == job.placement]
        assert {o.spec.num_gpus for o in sharing} == {job.spec.num_gpus}
    result = Simulation(_cluster(2, 4), Workload(tuple(jobs)), create_policy("muri-s")).run()
    assert all(row["end"] is not None for row in result.jobs)


def test_muri_is_deterministic_with_noise():
    workload = _interleavable(10)
    runs = [run_simulation(_cluster(1, 2), workload, "muri-l",
                           settings={"profiling_noise": 0.5}, seed=3).summary
            for _ in range(2)]
    for run in runs:
        run.pop("wall_seconds")
        run.pop("events_per_second", None)
    assert runs[0] == runs[1]


def test_four_complementary_jobs_share_one_gpu():
    jobs = tuple(_job(i, COMPLEMENTARY[i % 4]) for i in range(4))
    sim = Simulation(_cluster(1, 1), Workload(jobs), create_policy("muri-s"),
                     config=EngineConfig(max_time=360.0))  # the first 6-minute round
    sim.run()
    assert len(sim.state.running) == 4
    assert {job.placement for job in sim.state.running.values()} == {(Slot("train-1", 1),)}


# A GPU-bound and an IO-bound job (1 s solo iterations), three stages (data, GPU, network)
# over four resource types, timed by Muri's simulator's pipeline (`simulation.interleaving`):
# GPU-bound a in slot 0, IO-bound b in slot 1, T_group = max(d_a + g_a, n_b + d_b)
# + max(n_a, g_b) = max(0.05 + 0.9, 0.05 + 0.9) + max(0.05, 0.05) = 1.0 s: each one's data
# loading overlaps the other's GPU stage.
PAIR_PERIOD = 1.0


@pytest.mark.parametrize(("settings", "overhead"), [
    ({}, 1.33),  # default: Muri's simulator's factor for a 2-job group
    ({"group_overhead": "none"}, 1.0),  # the zero-overhead ablation
    ({"group_overhead": "1,1,1"}, 1.0),
])
def test_group_share_carries_the_interleaving_overhead(settings, overhead):
    jobs = (_job(0, GPU_BOUND), _job(1, IO_BOUND))
    sim = Simulation(_cluster(1, 1), Workload(jobs), create_policy("muri-s", settings),
                     config=EngineConfig(max_time=0.0))
    sim.run()
    expected = min(1.0, 1.0 / (PAIR_PERIOD * overhead))  # solo / (T_group × o_2)
    assert [job.share for job in sim.state.running.values()] == pytest.approx([expected] * 2)


@pytest.mark.parametrize(("settings", "running"), [({}, 1), ({"group_overhead": "none"}, 2)])
def test_no_group_slower_with_its_overhead_than_its_members_in_turn(settings, running):
    # Two GPU-bound jobs overlap only their small stages (pipeline model, either in slot 0):
    # T_group = max(0.05 + 0.9, 0.05 + 0.05) + max(0.05, 0.9) = 1.85 s < 2 s of solo
    # iterations (two slots apart: 2 × max(0.05, 0.95) = 1.9 s), but 1.85 × 1.33 = 2.46 s
    # > 2 s, so with the overhead one job waits instead (as Muri's simulator unpacks such a
    # group).
    jobs = (_job(0, GPU_BOUND), _job(1, GPU_BOUND))
    sim = Simulation(_cluster(1, 1), Workload(jobs), create_policy("muri-s", settings),
                     config=EngineConfig(max_time=0.0))
    sim.run()
    assert len(sim.state.running) == running


def test_two_io_bound_jobs_share_a_gpu_by_overlapping_their_data_loading():
    # Three-stage profiles over four resource types: the pipeline model lets one job's data
    # loading overlap the other's (slots 0 and 1): T_group = max(0.9 + 0.05, 0.05 + 0.9)
    # + max(0.05, 0.05) = 1.0 s, and 1.0 × 1.33 < 2 s of solo iterations, so they group
    # with the overhead and run at 1 / 1.33 each. (Padded to four stages, Eq. 3 gives
    # 1.9 s, 1.9 × 1.33 > 2 s, and one would wait.)
    jobs = (_job(0, IO_BOUND), _job(1, IO_BOUND))
    sim = Simulation(_cluster(1, 1), Workload(jobs), create_policy("muri-s"),
                     config=EngineConfig(max_time=0.0))
    sim.run()
    shares = [job.share for job in sim.state.running.values()]
    assert shares == pytest.approx([1.0 / (1.0 * 1.33)] * 2)  # solo 1 s / (T_group × o_2)


@pytest.mark.parametrize("setting", ["", "1.33,x", "0,1.5"])
def test_group_overhead_rejects_what_is_not_none_or_positive_factors(setting):
    with pytest.raises(InputError):
        create_policy("muri-s", {"group_overhead": setting})


def _queue_defaults(policy: str) -> dict[str, object]:
    return {p.name: p.default for p in registry()[policy].params
            if p.name in ("thresholds", "promote_knob")}


@pytest.mark.parametrize(("probe_at", "queue"), [(249.0, 0), (250.0, 1)])
def test_muri_l_and_tiresias_share_queue_defaults_and_demote_alike(probe_at, queue):
    assert _queue_defaults("muri-l") == _queue_defaults("tiresias")
    assert len(_queue_defaults("tiresias")) == 2
    # A 2-GPU job attains 2 GPU·s per second: 498 GPU·s at 249 s, 500 at 250 s, the first
    # default threshold, where both policies demote it to queue 1. A 1-GPU probe job's
    # arrival puts the clock there.
    jobs = (JobSpec("long", 0.0, 2, 3600.0), JobSpec("probe", probe_at, 1, 10.0))
    sim = Simulation(_cluster(1, 4), Workload(jobs), create_policy("fifo"),
                     config=EngineConfig(max_time=probe_at))
    sim.run()
    view = sim.view
    job = view.job("long")
    assert job.attained_service == pytest.approx(2 * probe_at)
    assert create_policy("tiresias").queue_index(view, job) == queue
    assert create_policy("muri-l").priority(view, job)[0] == queue
