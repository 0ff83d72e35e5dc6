"""Aryl's decisions pinned before its performance work, so speed-ups change no decision.

Each digest was recorded with the unoptimised implementation (commit 46beb67): reclaim answers
on seeded random instances (both cost definitions, several counts), knapsack answers on
seeded random groups, and whole runs of the policy on a small contended cluster (loaning,
reclaim preemptions, scale-ins and knapsack growth all happen there); the three elastic
baselines' digests came one commit later, after the knapsack rewrite (pinned itself) but
before any change to the shared policy code. A changed digest means
a changed decision; the readable figures next to each digest show what moved.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import random

import pytest

from simulation.decisions import Slot
from simulation.policies import aryl_knapsack
from simulation.policies.aryl import Aryl
from simulation.policies.aryl_knapsack import flexible_group, solve_multiple_choice_knapsack
from simulation.reclaim.aryl import HostedJob, select_reclaim_servers
from simulation.runner import run_simulation
from simulation.view import ClusterView, JobView
from simulation.workloads.cluster_spec import cluster_spec_from_dict
from simulation.workloads.generator import GeneratorSpec, generate_workload
from simulation.workloads.inference_load import generate_inference_load


def _digest(value: object) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True).encode()).hexdigest()[:16]


def random_reclaim_instance(
    seed: int, servers: int, jobs: int
) -> tuple[list[str], list[HostedJob]]:
    """Jobs on 8-GPU on-loan servers and on training servers; some span, some flexible."""
    rng = random.Random(seed)
    ids = [f"inference-{i}" for i in range(1, servers + 1)]
    training = [f"training-{i}" for i in range(1, 5)]
    free = dict.fromkeys(ids + training, 8)
    hosted = []
    for k in range(jobs):
        width = rng.choice([1, 1, 1, 2, 3])
        span = rng.sample(ids + training, width)
        d = rng.choice([1, 1, 2])
        slots = []
        for i, sid in enumerate(span):
            gpus = min(free[sid] // d, rng.choice([1, 2, 4])) * d
            if gpus > 0:
                free[sid] -= gpus
                slots.append(Slot(sid, gpus, flexible=bool(i) and rng.random() < 0.4))
        if slots:
            hosted.append(HostedJob(f"j{k}", tuple(slots), d))
    return ids, hosted


RECLAIM_CASES = [(seed, servers, jobs) for seed in range(6) for servers, jobs in
                 ((6, 10), (20, 50), (60, 200))]


def _reclaim_answers(seed: int, servers: int, jobs: int) -> list[object]:
    ids, hosted = random_reclaim_instance(seed, servers, jobs)
    answers: list[object] = []
    for cost in ("server", "gpu"):
        for count in sorted({0, 1, 2, servers // 3, servers // 2, servers}):
            answer = select_reclaim_servers(ids, hosted, count, cost=cost)
            scaled = [(s.job_id, s.workers, [(x.server, x.gpus, x.flexible) for x in s.placement])
                      for s in answer.scaled_in]
            answers.append([answer.servers, answer.preempted_jobs, scaled,
                            answer.collateral_gpus])
    return answers


RECLAIM_DIGEST = "c0a32e110489b7cb"


def test_reclaim_decisions_are_pinned() -> None:
    answers = [_reclaim_answers(*case) for case in RECLAIM_CASES]
    assert _digest(answers) == RECLAIM_DIGEST


def _knapsack_answers(seed: int) -> dict[str, int]:
    rng = random.Random(seed)
    groups = []
    for k in range(rng.randint(1, 40)):
        base = rng.choice([1, 2, 4, 8])
        extra = rng.choice([0, 1, 2, 4, 8])
        d = rng.choice([1, 2, 4])
        rates = [float(base + w) ** rng.choice([1.0, 0.8]) for w in range(extra + 1)]
        seconds = rng.choice([600.0, 3600.0, rng.uniform(60, 86400)])
        groups.append(flexible_group(f"j{k}", seconds, rates, d))
    return solve_multiple_choice_knapsack(groups, rng.randint(0, 200))


KNAPSACK_DIGEST = "dc30680ee826ff3b"


@pytest.mark.parametrize("row_limit", [aryl_knapsack.ROW_CELL_LIMIT, 0])
def test_knapsack_decisions_are_pinned(row_limit, monkeypatch) -> None:
    """Both the float-row solver and the memory-bounded choice-index solver."""
    monkeypatch.setattr(aryl_knapsack, "ROW_CELL_LIMIT", row_limit)
    assert _digest([_knapsack_answers(seed) for seed in range(40)]) == KNAPSACK_DIGEST


SMALL_CLUSTER = {
    "name": "aryl-small",
    "gpu_types": {"V100": {"speed": 1.0, "memory_gb": 32}, "T4": {"speed": 0.25, "memory_gb": 16}},
    "pools": [
        {"name": "training", "kind": "training", "gpu_type": "V100", "servers": 6,
         "gpus_per_server": 8},
        {"name": "inference", "kind": "inference", "gpu_type": "T4", "servers": 12,
         "gpus_per_server": 8},
    ],
}

# Re-pinned when the engine got fair defaults ("Trustworthy numbers"): Aryl and its §7.1
# baselines run at every event plus their 60 s tick (a tick since dropped: with no event
# since the last round it decided nothing, and every digest stayed), reclaim with Algorithm 1
# and resize stop-free by default, and the run ends at the last completion (loans and
# reclaims after it are no longer counted). With cadence=60 and scaling_mode=none every
# job's start and end were checked equal to the previous pins; only the loaning counters
# after the makespan moved.
SCENARIOS = {  # name: (policy, settings, digest)
    "basic": ("aryl", {"reclaim_strategy": "aryl"}, "3acd7170456812d6"),
    # Re-pinned when jobs that may span GPU types got one knapsack over every type's free
    # GPUs (not the first type with one) and the knapsack charged the cross-type efficiency
    # to a base spread over types: mean JCT 7,903 -> 7,840 s, mean queuing 940 -> 913 s.
    "advanced": ("aryl", {"reclaim_strategy": "aryl", "heterogeneous": True},
                 "594fd44d7119ddcb"),
    "ungrouped": ("aryl", {"reclaim_strategy": "aryl", "group_flexible": False},
                  "d571cbc39940b1bb"),
    "inelastic": ("aryl", {"reclaim_strategy": "aryl", "elastic": False}, "15993c4ec3d9aeae"),
    "step-loss": ("aryl", {"reclaim_strategy": "aryl", "step_loss": 0.05,
                           "elastic_step_loss": 0.05}, "4fb02e583ff480dd"),
    "afs": ("afs", {"reclaim_strategy": "aryl"}, "4d43ebf12deb9575"),
    "gandiva-elastic": ("gandiva-elastic", {"reclaim_strategy": "aryl"}, "cfc527d4f5500ba0"),
    "pollux-lite": ("pollux-lite", {"reclaim_strategy": "aryl"}, "5be2eea247cade21"),
}


@pytest.fixture(scope="module")
def small_run_inputs():
    cluster = cluster_spec_from_dict(SMALL_CLUSTER)
    spec = dataclasses.replace(
        GeneratorSpec(), num_jobs=300, duration_days=0.5, elastic_fraction=0.3,
        gpu_types=(("V100", 0.6), ("any", 0.4)),
        gpu_sizes=((1, 0.6), (2, 0.15), (4, 0.15), (8, 0.1)),
    )
    load = generate_inference_load(total_servers=12, days=2.0, peak_utilization=0.95, seed=5)
    return cluster, generate_workload(spec, seed=5), load


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_small_scenario_runs_are_pinned(name, small_run_inputs) -> None:
    cluster, workload, load = small_run_inputs
    policy, settings, expected = SCENARIOS[name]
    result = run_simulation(cluster, workload, policy, settings=settings, inference_load=load,
                            seed=1)
    jobs = [[j["job_id"], j["start"], j["end"], j["preemptions"], j["scaling_ops"]]
            for j in result.jobs]
    summary = {k: result.summary[k] for k in ("jct", "queuing", "preemptions", "scaling_ops",
                                                "loaning", "decisions")}
    assert _digest([jobs, summary]) == expected, summary


@pytest.mark.parametrize("name", ["basic", "advanced"])
def test_phase_one_keeps_waiting_jobs_keys_as_a_fresh_sort_gives_them(
        name, small_run_inputs, monkeypatch) -> None:
    """Phase one keeps each waiting job's SJF key across rounds (dropped when the allocation
    log names the job) and bounds its walk by the fewest GPUs a waiting job needs: in every
    round the order must be a fresh sort's and the bound the plain minimum. Reclaims here
    requeue jobs with less work left, whose kept key would be stale."""
    kept = Aryl.phase_one_order
    rounds: list[int] = []

    def checked(self: Aryl, view: ClusterView) -> list[JobView]:
        order = kept(self, view)
        assert order == sorted(view.queue.values(),
                               key=lambda j: (self._sort_time(view, j), j.submit_time))
        assert self._smallest_base_demand(order) == min(
            (self._base_gpus(job.spec) for job in order), default=0)
        rounds.append(len(order))
        return order

    monkeypatch.setattr(Aryl, "phase_one_order", checked)
    cluster, workload, load = small_run_inputs
    policy, settings, _ = SCENARIOS[name]
    result = run_simulation(cluster, workload, policy, settings=settings, inference_load=load,
                            seed=1)
    assert result.summary["preemptions"] > 0 and sum(n > 1 for n in rounds) > 50
