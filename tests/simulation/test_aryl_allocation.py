"""Aryl allocation (Algorithm 2), the knapsack, the exact allocator and §5.3 placement."""

from __future__ import annotations

import itertools
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simulation.composition import create_policy
from simulation.engine import EngineConfig, Simulation
from simulation.model import ClusterSpec, InferenceLoad, JobSpec, PoolKind, PoolSpec
from simulation.policies.aryl import Aryl
from simulation.policies.aryl_exact import (
    EXAMPLE_WORKERS,
    TABLE_2,
    TABLE_4,
    heuristic_allocation,
    jct_of_split,
    optimal_allocation,
)
from simulation.policies.aryl_knapsack import (
    FlexibleGroup,
    flexible_group,
    solve_multiple_choice_knapsack,
)
from simulation.state import JobStatus
from simulation.view import ClusterView
from tests.simulation.builders import GPU_TYPES, workload


@pytest.mark.parametrize(("split", "jcts"), [
    ((6, 2), (50.0, 53.33)), ((2, 6), (63.33, 20.0)), ((4, 4), (60.0, 30.0)),
])
def test_table_3_jcts(split, jcts) -> None:
    assert jct_of_split(TABLE_2, EXAMPLE_WORKERS, split) == pytest.approx(jcts, abs=0.01)


@pytest.mark.parametrize(("split", "jcts"), [((3, 5), (100.0, 24.0)), ((2, 6), (106.67, 20.0))])
def test_table_4_jcts(split, jcts) -> None:
    assert jct_of_split(TABLE_4, EXAMPLE_WORKERS, split) == pytest.approx(jcts, abs=0.01)


def test_exact_allocator_finds_the_paper_optima() -> None:
    assert optimal_allocation(TABLE_2, EXAMPLE_WORKERS) == ((2, 6), pytest.approx(41.67, abs=0.01))
    assert optimal_allocation(TABLE_4, EXAMPLE_WORKERS) == ((3, 5), pytest.approx(62.0))


def test_two_phase_heuristic_on_the_paper_examples() -> None:
    # Table 4: the knapsack favours A, the counter-example SJF gets wrong: optimal.
    assert heuristic_allocation(TABLE_4, EXAMPLE_WORKERS) == ((3, 5), pytest.approx(62.0))
    # Table 2: base 2+2, then the knapsack gives 3 to A and 1 to B: 48.33 vs the optimum 41.67.
    split, jct = heuristic_allocation(TABLE_2, EXAMPLE_WORKERS)
    assert split == (5, 3) and jct == pytest.approx(48.33, abs=0.01)


def test_figure_6_items_are_algorithm_2_values() -> None:
    a = flexible_group("A", 150.0, [2, 3], 2)  # Table 4's A: T_max 150, 2 GPUs per worker
    b = flexible_group("B", 60.0, [2, 3, 4, 5, 6], 1)
    assert a.weights == (2,) and a.values == pytest.approx((50.0,))
    assert b.weights == (1, 2, 3, 4)
    assert b.values == pytest.approx([60 * w / (w + 2) for w in range(1, 5)])


def _brute_force(groups: list[FlexibleGroup], capacity: int) -> float:
    best = 0.0
    for choice in itertools.product(*[range(len(g.weights) + 1) for g in groups]):
        weight = sum(g.weights[c - 1] for g, c in zip(groups, choice, strict=True) if c)
        if weight <= capacity:
            best = max(best, sum(g.values[c - 1] for g, c in zip(groups, choice, strict=True)
                                 if c))
    return best


@settings(max_examples=80, deadline=None)
@given(st.lists(st.tuples(st.integers(1, 4), st.integers(1, 3), st.floats(1, 1000)),
                min_size=1, max_size=4), st.integers(0, 20))
def test_knapsack_matches_brute_force(specs, capacity) -> None:
    groups = [flexible_group(f"j{k}", t, [base + w for w in range(extra + 1)], d)
              for k, (extra, d, t) in enumerate(specs) for base in [2]]
    chosen = solve_multiple_choice_knapsack(groups, capacity)
    weight = sum(g.weights[chosen[g.job_id] - 1] for g in groups if chosen[g.job_id])
    value = sum(g.values[chosen[g.job_id] - 1] for g in groups if chosen[g.job_id])
    assert weight <= capacity
    assert value == pytest.approx(_brute_force(groups, capacity))


def test_knapsack_honours_non_linear_curves() -> None:
    flat = flexible_group("flat", 100.0, [1.0, 1.0, 1.0], 1)  # no speedup from scaling
    linear = flexible_group("lin", 100.0, [2.0, 3.0, 4.0], 1)
    assert solve_multiple_choice_knapsack([flat, linear], 2) == {"flat": 0, "lin": 2}


def _cluster(training: int = 1, inference: int = 0) -> ClusterSpec:
    pools = [PoolSpec("training", PoolKind.TRAINING, "V100", training, 8)]
    if inference:
        pools.append(PoolSpec("inference", PoolKind.INFERENCE, "T4", inference, 8))
    return ClusterSpec("aryl", GPU_TYPES, tuple(pools))


def test_policy_splits_table_2_like_algorithm_2() -> None:
    jobs = [JobSpec("A", 0.0, 6, 5000.0, min_workers=2, max_workers=6),
            JobSpec("B", 0.0, 6, 2000.0, min_workers=2, max_workers=6)]
    sim = Simulation(_cluster(), workload(*jobs), create_policy("aryl"),
                     config=EngineConfig(max_time=61.0))
    sim.run()
    assert {j: sim.state.jobs[j].gpus for j in "AB"} == {"A": 5, "B": 3}
    assert sum(s.gpus for s in sim.state.jobs["A"].placement if s.flexible) == 3


def test_sjf_phase_one_and_non_preemption() -> None:
    jobs = [JobSpec("long", 0.0, 8, 9000.0), JobSpec("short", 0.0, 8, 100.0),
            JobSpec("later", 200.0, 8, 10.0)]
    result = Simulation(_cluster(), workload(*jobs), create_policy("aryl")).run()
    starts = {row["job_id"]: row["start"] for row in result.jobs}
    assert starts["short"] < starts["long"] < starts["later"]
    assert result.summary["preemptions"] == 0


class _CheckedAryl(Aryl):
    """Aryl that checks §5.3's placement invariants after every round it schedules."""

    def schedule(self, view: ClusterView):
        yield from super().schedule(view)
        base: set[str] = set()
        flexible: set[str] = set()
        for job in view.running.values():
            spec = job.spec
            assert spec.min_workers <= job.workers <= spec.max_workers
            for slot in job.placement:
                server = view.servers[slot.server]
                assert spec.gpu_type is None or server.gpu_type == spec.gpu_type
                if self.heterogeneous is False:
                    assert len({view.servers[s.server].gpu_type for s in job.placement}) == 1
                if server.kind == PoolKind.INFERENCE:
                    (flexible if slot.flexible else base).add(slot.server)
                    assert not (slot.flexible and not spec.elastic)
        assert not base & flexible, "base and flexible workers share an inference server"


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 10_000), st.booleans())
def test_placement_properties_on_random_workloads(seed: int, heterogeneous: bool) -> None:
    rng = random.Random(seed)
    jobs = []
    for k in range(25):
        per_worker = rng.choice([1, 1, 2, 4])
        workers = rng.choice([1, 2, 4])
        elastic = rng.random() < 0.5
        jobs.append(JobSpec(
            f"j{k}", rng.uniform(0, 3000), per_worker * workers, rng.uniform(300, 5000),
            gpus_per_worker=per_worker,
            min_workers=max(1, workers // 2) if elastic else 0,
            max_workers=workers * 2 if elastic else 0,
            gpu_type=rng.choice([None, "V100"]),
        ))
    load = InferenceLoad((0.0, 1500.0, 3000.0), (0, 2, 1))
    policy = _CheckedAryl(rng=random.Random(seed), heterogeneous=heterogeneous)
    sim = Simulation(_cluster(2, 3), workload(*jobs), policy,
                     config=EngineConfig(reclaim_strategy="aryl"), inference_load=load)
    result = sim.run()
    assert all(j.status == JobStatus.DONE for j in sim.state.jobs.values())
    assert result.summary["preemptions"] == sim.counters.reclaim_preemptions
