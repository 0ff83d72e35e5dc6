"""Themis' leases (NSDI'20 §4-§5): only the GPUs of a lease that ends are re-auctioned, a job
that keeps them is not restarted, and the leftover goes first to the jobs that hold it. With
`leases=rounds` (Muri §6's rounds) every lease ends on a global clock at k·lease and the whole
cluster goes to the same auction."""

from __future__ import annotations

import pytest

from simulation.composition import create_policy
from simulation.engine import EngineConfig, Simulation
from simulation.model import JobSpec
from tests.simulation.builders import training_cluster, workload


def test_only_an_ending_lease_is_re_auctioned():
    # Two GPUs, leases of 600 s, f = 0 (every job bids). P (10,000 s) starts at 0, its lease
    # ends at 600; Q (10,000 s) arrives at 300 on the free GPU, its lease ends at 900; X (100 s)
    # arrives at 400 and waits. At 600 (N = 3, G = 2: T_id = 1.5·d): P ran since submission,
    # ρ = d / 1.5d = .667; X (200+100)/150 = 2. Only P's GPU is auctioned, between P and X:
    # X wins, P is preempted, and Q (ρ .667 too, the best off) keeps its GPU until 900.
    # Mutation guarded: auctioning every running job's GPUs at any lease end (Q loses).
    jobs = workload(JobSpec("P", 0.0, 1, 10_000.0), JobSpec("Q", 300.0, 1, 10_000.0),
                    JobSpec("X", 400.0, 1, 100.0))
    sim = Simulation(training_cluster(1, 2), jobs,
                     create_policy("themis", {"fairness_fraction": 0.0}),
                     config=EngineConfig(max_time=600.0, restart_overhead=0.0))
    sim.run()
    assert set(sim.state.running) == {"Q", "X"}


def test_a_job_that_wins_its_own_gpus_back_is_not_restarted():
    # One GPU, leases of 600 s, f = .8, restarts of 63 s. W (300 s) runs from 0; A (1000 s)
    # arrives at 10 and starts at 300 when W ends, leased until 900; B (10,000 s) arrives at
    # 400. At 900 A's lease ends (N = 2, G = 1: T_id = 2·d): A (890 + 400) / 2000 = .645,
    # B (500 + 10,000) / 20,000 = .525. ⌈.2·2⌉ = 1 bids, A, which keeps its GPU with a new
    # lease and no restart: it ends at 300 + 1000 = 1300, then B runs to 11,300.
    # Mutation guarded: preempting and relaunching every job whose lease ends (A ends at 1363).
    jobs = workload(JobSpec("W", 0.0, 1, 300.0), JobSpec("A", 10.0, 1, 1000.0),
                    JobSpec("B", 400.0, 1, 10_000.0))
    result = Simulation(training_cluster(1, 1), jobs, create_policy("themis")).run()
    rows = {row["job_id"]: (row["end"], row["preemptions"]) for row in result.jobs}
    assert rows == {"W": (300.0, 0), "A": (1300.0, 0), "B": (11_300.0, 0)}


@pytest.mark.parametrize("leases", ["per-job", "rounds"])
def test_the_leftover_goes_first_to_the_jobs_whose_leases_end(leases):
    # Two GPUs, leases of 600 s, f = .8. P and Q (10,000 s) start at 0, both leases end at
    # 600; X (100 s), Y (400 s), Z (5000 s) arrive at 100. At 600 (N = 5, G = 2: T_id = 2.5·d)
    # X 600/250 = 2.4, Y 900/1000 = .90, Z 5500/12500 = .44, P and Q 10000/25000 = .40.
    # ⌈.2·5⌉ = 1 bids, X, and takes one GPU; the other stays with a job whose lease ended
    # (P, the first of the tie by job id), not with Y or Z, whatever the seed.
    # Mutation guarded: the leftover to every non-bidder in random order (Y or Z wins for
    # some seeds).
    jobs = workload(JobSpec("P", 0.0, 1, 10_000.0), JobSpec("Q", 0.0, 1, 10_000.0),
                    JobSpec("X", 100.0, 1, 100.0), JobSpec("Y", 100.0, 1, 400.0),
                    JobSpec("Z", 100.0, 1, 5000.0))
    for seed in range(8):
        sim = Simulation(training_cluster(1, 2), jobs,
                         create_policy("themis", {"leases": leases}, seed=seed),
                         config=EngineConfig(max_time=600.0))
        sim.run()
        assert set(sim.state.running) == {"P", "X"}


def test_a_round_auctions_every_running_job():
    # The first test's jobs with `leases=rounds`. At 600 every lease ends, Q's too (it got
    # its GPU at 300): P, Q and X bid (f = 0). N = 3, G = 2: T_id = 1.5·d. P (600 + 9400) /
    # 15,000 = .667, Q (300 + 9700) / 15,000 = .667, a tie the earlier submission (P) wins;
    # X (200 + 100) / 150 = 2. X and P take the two GPUs, Q is preempted.
    # Mutation guarded: auctioning only the leases that ran `lease` s (Q keeps, P loses).
    jobs = workload(JobSpec("P", 0.0, 1, 10_000.0), JobSpec("Q", 300.0, 1, 10_000.0),
                    JobSpec("X", 400.0, 1, 100.0))
    sim = Simulation(training_cluster(1, 2), jobs,
                     create_policy("themis", {"fairness_fraction": 0.0, "leases": "rounds"}),
                     config=EngineConfig(max_time=600.0, restart_overhead=0.0))
    sim.run()
    assert set(sim.state.running) == {"P", "X"}


def test_rounds_end_on_the_global_clock():
    # One GPU, rounds of 600 s, f = .8, no restart cost. W (300 s) runs from 0; A (1000 s)
    # arrives at 10 and starts at 300 when W ends; B (100 s) arrives at 400. The round ends
    # at 600, though A got its GPU at 300 (N = 2, G = 1: T_id = 2·d): A (590 + 700) / 2000 =
    # .645, B (200 + 100) / 200 = 1.5; ⌈.2·2⌉ = 1 bids, B, which takes the GPU: B runs
    # 600-700, A is preempted and resumes at 700 with 700 s left, ending at 1400.
    # Mutation guarded: a lease of 600 s from launch (A's ends at 900: B runs 900-1000).
    jobs = workload(JobSpec("W", 0.0, 1, 300.0), JobSpec("A", 10.0, 1, 1000.0),
                    JobSpec("B", 400.0, 1, 100.0))
    result = Simulation(training_cluster(1, 1), jobs,
                        create_policy("themis", {"leases": "rounds"}),
                        config=EngineConfig(restart_overhead=0.0)).run()
    rows = {row["job_id"]: (row["start"], row["end"], row["preemptions"])
            for row in result.jobs}
    assert rows == {"W": (0.0, 300.0, 0), "A": (300.0, 1400.0, 1), "B": (600.0, 700.0, 0)}
