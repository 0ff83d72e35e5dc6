"""Aryl reclaim (Algorithm 1): Table 1 costs, the Figure 5 example, optimality gap, engine."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simulation.composition import create_policy
from simulation.decisions import Slot
from simulation.engine import EngineConfig, Simulation
from simulation.model import ClusterSpec, InferenceLoad, JobSpec, PoolKind, PoolSpec
from simulation.reclaim import reclaim_strategies
from simulation.reclaim.aryl import (
    HostedJob,
    select_reclaim_optimal,
    select_reclaim_servers,
    server_preemption_costs,
)
from tests.simulation.builders import GPU_TYPES, workload

SERVERS = [f"s{i}" for i in range(1, 7)]
# Figure 5: job a fills servers 1-2; b fills 3; c has 8 GPUs on 4 and 2 on 5; d has 2 on 5
# and 8 on 6 (Table 1: server 4 holds 80% of c's GPUs, server 5 holds 20% of c and of d).
FIGURE_5 = [
    HostedJob("a", (Slot("s1", 8), Slot("s2", 8))),
    HostedJob("b", (Slot("s3", 8),)),
    HostedJob("c", (Slot("s4", 8), Slot("s5", 2))),
    HostedJob("d", (Slot("s5", 2), Slot("s6", 8))),
]


def test_table_1_server_fraction_costs() -> None:
    costs = server_preemption_costs(SERVERS, FIGURE_5)
    assert costs == pytest.approx(dict(zip(SERVERS, [0.5, 0.5, 1, 0.5, 1, 0.5], strict=True)))


def test_table_1_gpu_fraction_costs() -> None:
    costs = server_preemption_costs(SERVERS, FIGURE_5, cost="gpu")
    assert costs == pytest.approx(dict(zip(SERVERS, [0.5, 0.5, 1, 0.8, 0.4, 0.8], strict=True)))


def test_figure_5_reclaiming_two_servers_preempts_one_job() -> None:
    answer = select_reclaim_servers(SERVERS, FIGURE_5, 2)
    assert sorted(answer.servers) == ["s1", "s2"]
    assert answer.preempted_jobs == ("a",)
    assert answer.collateral_gpus == 0
    assert answer.as_answer("aryl") == {
        "strategy": "aryl", "servers": ["s1", "s2"], "preempted_jobs": ["a"],
        "scaled_in": [], "collateral_gpus": 0,
    }


def test_figure_5_gpu_fraction_cost_picks_server_5_and_preempts_two() -> None:
    answer = select_reclaim_servers(SERVERS, FIGURE_5, 1, cost="gpu")
    assert answer.servers == ("s3",)  # one server: fewest jobs, whatever the cost
    answer = select_reclaim_servers(SERVERS, FIGURE_5, 2, cost="gpu")
    assert "s5" in answer.servers and len(answer.preempted_jobs) == 2


def test_one_server_takes_fewest_jobs_then_least_collateral() -> None:
    answer = select_reclaim_servers(SERVERS, FIGURE_5, 1)
    assert answer.servers == ("s3",)  # b only: one preemption, no collateral
    assert answer.collateral_gpus == 0


def test_empty_then_flexible_only_servers_go_first_without_preemption() -> None:
    jobs = [
        HostedJob("e", (Slot("s1", 4), Slot("s2", 8, flexible=True)), gpus_per_worker=2),
        HostedJob("f", (Slot("s3", 8),)),
    ]
    answer = select_reclaim_servers(["s1", "s2", "s3", "s4"], jobs, 2)
    assert answer.servers == ("s4", "s2")
    assert answer.preempted_jobs == ()
    assert [(s.job_id, s.workers) for s in answer.scaled_in] == [("e", 4)]
    assert answer.scaled_in[0].placement == (Slot("s1", 4),)


def test_flexible_workers_on_a_mixed_server_are_scaled_in_not_preempted() -> None:
    jobs = [
        HostedJob("e", (Slot("t1", 4), Slot("s1", 4, flexible=True))),
        HostedJob("g", (Slot("s1", 4),)),
    ]
    answer = select_reclaim_servers(["s1"], jobs, 1)
    assert answer.preempted_jobs == ("g",)
    assert [s.job_id for s in answer.scaled_in] == ["e"]


def test_optimal_refuses_huge_instances() -> None:
    servers = [f"s{i}" for i in range(60)]
    with pytest.raises(ValueError, match="combinations"):
        select_reclaim_optimal(servers, [], 30)


@st.composite
def instances(draw: st.DrawFn) -> tuple[list[str], list[HostedJob], int]:
    n = draw(st.integers(2, 7))
    servers = [f"s{i}" for i in range(n)]
    free = {s: 8 for s in servers}
    jobs: list[HostedJob] = []
    for k in range(draw(st.integers(0, 10))):
        span = draw(st.lists(st.sampled_from(servers), min_size=1, max_size=3, unique=True))
        slots = []
        for s in span:
            if free[s] >= 2:
                g = draw(st.integers(1, free[s] // 2))
                free[s] -= g
                slots.append(Slot(s, g, flexible=bool(slots) and draw(st.booleans())))
        if slots:
            jobs.append(HostedJob(f"j{k}", tuple(slots)))
    return servers, jobs, draw(st.integers(1, n))


def _returned_servers_are_emptied(servers: list[str], jobs: list[HostedJob], answer) -> bool:
    kept = {s.job_id: s.placement for s in answer.scaled_in}
    for job in jobs:
        if job.job_id in answer.preempted_jobs:
            continue
        slots = kept.get(job.job_id, job.slots)
        if any(slot.server in answer.servers for slot in slots):
            return False
    return True


@settings(max_examples=150, deadline=None)
@given(instances())
def test_algorithm_1_is_valid_and_never_beats_optimal(instance) -> None:
    servers, jobs, count = instance
    heuristic = select_reclaim_servers(servers, jobs, count)
    optimal = select_reclaim_optimal(servers, jobs, count)
    assert len(set(heuristic.servers)) == count
    assert _returned_servers_are_emptied(servers, jobs, heuristic)
    assert _returned_servers_are_emptied(servers, jobs, optimal)
    assert len(heuristic.preempted_jobs) >= len(optimal.preempted_jobs)


def test_algorithm_1_gap_to_optimal_is_small_on_random_instances() -> None:
    rng = random.Random(7)
    extra = 0
    total = 0
    for _ in range(200):
        servers = [f"s{i}" for i in range(8)]
        jobs = []
        for k in range(rng.randint(4, 12)):
            span = rng.sample(servers, rng.choice([1, 1, 2, 3]))
            jobs.append(HostedJob(f"j{k}", tuple(Slot(s, 2) for s in span)))
        count = rng.randint(2, 5)
        heuristic = len(select_reclaim_servers(servers, jobs, count).preempted_jobs)
        best = len(select_reclaim_optimal(servers, jobs, count).preempted_jobs)
        extra += heuristic - best
        total += best
    assert extra <= 0.15 * total


def _loan_cluster() -> ClusterSpec:
    return ClusterSpec("loan", GPU_TYPES, (
        PoolSpec("training", PoolKind.TRAINING, "V100", 1, 8),
        PoolSpec("inference", PoolKind.INFERENCE, "T4", 4, 8),
    ))


@pytest.mark.parametrize("strategy", ["aryl", "optimal", "random", "scf", "gpu-fraction"])
def test_engine_applies_every_reclaim_strategy(strategy: str) -> None:
    assert strategy in reclaim_strategies()
    jobs = [JobSpec(f"j{i}", 0.0, 8, 20000.0) for i in range(5)]
    load = InferenceLoad((0.0, 3600.0), (0, 2))
    sim = Simulation(_loan_cluster(), workload(*jobs), create_policy("fifo"),
                     config=EngineConfig(reclaim_strategy=strategy), inference_load=load)
    result = sim.run()
    assert sim.counters.servers_reclaimed == 2
    assert sim.counters.reclaim_preemptions == 2
    assert result.summary["jobs"] == 5
