"""Themis' per-job leases (NSDI'20 §3): only the GPUs of an expired lease are re-auctioned."""

from __future__ import annotations

import pytest

from simulation.engine import EngineConfig, Simulation
from simulation.model import JobSpec
from simulation.policies.base import create_policy
from tests.simulation.builders import training_cluster, workload


def _running_at_600(leases: str) -> set[str]:
    # Two GPUs, leases of 600 s, f = 0 (every job bids). P (10,000 s) starts at 0, its lease
    # ends at 600;
    # Q (10,000 s) arrives at 300 on the free GPU, its lease ends at 900; X (100 s) arrives at
    # 400 and waits. At 600 (N = 3, G = 2: T_id = 1.5·d): P and Q ran since submission,
    # ρ = d / 1.5d = .667 each (ties go to the earlier submission, P); X (200+100)/150 = 2.
    jobs = workload(JobSpec("P", 0.0, 1, 10_000.0), JobSpec("Q", 300.0, 1, 10_000.0),
                    JobSpec("X", 400.0, 1, 100.0))
    sim = Simulation(training_cluster(1, 2), jobs,
                     create_policy("themis", {"fairness_fraction": 0.0, "leases": leases}),
                     config=EngineConfig(max_time=600.0, restart_overhead=0.0))
    sim.run()
    return set(sim.state.running)


@pytest.mark.parametrize(("leases", "running"), [
    # per-job: only P's lease expired, so its GPU is auctioned between P and X: X wins,
    # P is preempted, and Q keeps its GPU until its own lease ends at 900.
    ("per-job", {"Q", "X"}),
    # global: every lease ends at 600 and the whole cluster is re-auctioned in ρ order
    # X, P, Q: Q, the best off, loses its GPU 300 s into its lease.
    ("global", {"P", "X"}),
])
def test_only_an_expired_lease_is_re_auctioned(leases, running):
    assert _running_at_600(leases) == running
