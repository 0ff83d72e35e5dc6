"""Themis (finish-time fairness with leases) and AntMan (guaranteed/opportunistic sharing),
Muri's duration-unaware baselines: hand-computed runs on one GPU, determinism, and
muri_trace3 on 8×8."""

from __future__ import annotations

from pathlib import Path

import pytest

from simulation.composition import create_policy
from simulation.engine import EngineConfig, Simulation
from simulation.model import JobSpec, ResourceProfile, Workload
from simulation.policies.antman import gpu_stage_fraction
from simulation.policies.themis import auction_participants
from simulation.runner import run_simulation
from simulation.workloads import load_cluster_spec, load_trace
from tests.simulation.builders import training_cluster, workload

TRACES = Path(__file__).resolve().parents[3] / "shared" / "traces"
NO_RESTART = EngineConfig(restart_overhead=0.0)


def _ends(result) -> dict[str, float]:
    return {row["job_id"]: row["end"] for row in result.jobs}


def _run(jobs: Workload, policy: str, params: dict | None = None,
         config: EngineConfig = NO_RESTART):
    sim = Simulation(training_cluster(1, 1), jobs, create_policy(policy, params), config=config)
    return sim.run()


# -- Themis ---------------------------------------------------------------------------------


def test_themis_gives_the_gpu_to_the_worst_rho_at_lease_ends():
    # One GPU, leases of 600 s, f = .8. A runs from 0; B (3000 s) and C (200 s) arrive at 100
    # and wait: arrivals never preempt. At 600 A's lease ends (N=3, T_id = 3·d): A 1000/3000
    # = .33, B 3500/9000 = .39, C 700/600 = 1.17; ⌈.2·3⌉ = 1 bids, C, and takes the GPU until
    # 800. At 800 (N=2, T_id = 2·d) the free GPU goes to the worse waiting job: A (800+400)/2000
    # = .60 < B (700+3000)/6000 = .617 -> B, leased 800-1400. At 1400 B's lease ends: A
    # (1400+400)/2000 = .90 > B (1300+2400)/6000 = .62, A bids and wins: A runs 1400-1800,
    # B ends at 1800 + 2400.
    jobs = workload(JobSpec("A", 0.0, 1, 1000.0), JobSpec("B", 100.0, 1, 3000.0),
                    JobSpec("C", 100.0, 1, 200.0))
    result = _run(jobs, "themis")
    assert _ends(result) == pytest.approx({"C": 800.0, "A": 1800.0, "B": 4200.0})
    assert {row["job_id"]: row["preemptions"] for row in result.jobs} == {"A": 1, "B": 1, "C": 0}


def test_themis_waiting_job_overtakes_only_at_a_lease_end():
    # A alone has ρ = 1000/2000 = .5 whenever it runs from submission; any waiting job is worse,
    # but it gets the GPU at the next lease end (600), not on arrival (100).
    jobs = workload(JobSpec("A", 0.0, 1, 1000.0), JobSpec("B", 100.0, 1, 100.0))
    assert _ends(_run(jobs, "themis", {"lease": 600.0})) == pytest.approx(
        {"B": 700.0, "A": 1100.0})
    assert _ends(_run(jobs, "themis", {"lease": 300.0})) == pytest.approx(
        {"B": 400.0, "A": 1100.0})


def test_themis_auction_takes_the_least_fair_1_minus_f():
    # Themis §5.2: the 1 - f fraction of the jobs with the worst ρ bid, at least one.
    assert auction_participants(5, 0.8) == 1
    assert auction_participants(10, 0.8) == 2
    assert auction_participants(11, 0.8) == 3
    assert auction_participants(10, 0.25) == 8
    assert auction_participants(3, 0.0) == 3
    assert auction_participants(3, 1.0) == 1


def _running_at_first_lease_end(fraction: float, seed: int) -> set[str]:
    # One server of 2 GPUs: P (2 GPUs, 10,000 s) runs from 0; X (100 s), Y (400 s), Z (5000 s),
    # 1 GPU each, arrive at 100. At 600 P's lease ends (N=4, G=2: a share is .5 GPU):
    # X (500+100)/200 = 3.0, Y (500+400)/800 = 1.125, Z (500+5000)/10000 = .55,
    # P (600+9400)/40000 = .25.
    jobs = workload(JobSpec("P", 0.0, 2, 10000.0), JobSpec("X", 100.0, 1, 100.0),
                    JobSpec("Y", 100.0, 1, 400.0), JobSpec("Z", 100.0, 1, 5000.0))
    sim = Simulation(training_cluster(1, 2), jobs,
                     create_policy("themis", {"fairness_fraction": fraction}, seed=seed),
                     config=EngineConfig(max_time=600.0))
    sim.run()
    return set(sim.state.running)


def test_themis_leftover_goes_to_non_bidders_in_seeded_random_order():
    # f = 0: all four bid, greedy by ρ: X and Y win. f = .8: only X (⌈.2·4⌉ = 1) bids and
    # takes one of P's GPUs; P cannot keep 2 of the 1 left and is preempted; the GPU left
    # over goes to Y or Z, drawn from the policy's seeded RNG.
    assert all(_running_at_first_lease_end(0.0, seed) == {"X", "Y"} for seed in range(5))
    runs = [_running_at_first_lease_end(0.8, seed) for seed in range(12)]
    assert all("X" in run and len(run) == 2 and "P" not in run for run in runs)
    assert {frozenset(run) for run in runs} == {frozenset("XY"), frozenset("XZ")}
    assert runs == [_running_at_first_lease_end(0.8, seed) for seed in range(12)]


def test_themis_rejects_bad_parameters():
    with pytest.raises(ValueError):
        create_policy("themis", {"fairness_fraction": 1.5})
    with pytest.raises(ValueError):
        create_policy("themis", {"lease": 0.0})


# -- AntMan ---------------------------------------------------------------------------------

# Three Muri-trace stages (data, GPU, network): the GPU is busy 1/4 of an iteration.
QUARTER_GPU = ResourceProfile((2.0, 1.0, 1.0))


def test_gpu_stage_fraction_reads_three_and_four_stage_profiles():
    assert gpu_stage_fraction(JobSpec("a", 0.0, 1, 1.0, profile=QUARTER_GPU)) == 0.25
    four = ResourceProfile((1.0, 1.0, 2.0, 0.0))
    assert gpu_stage_fraction(JobSpec("b", 0.0, 1, 1.0, profile=four)) == 0.5
    assert gpu_stage_fraction(JobSpec("c", 0.0, 1, 1.0, model="no-such-model")) is None


def test_antman_opportunistic_job_uses_idle_capacity_without_slowing_the_guaranteed_one():
    guaranteed = JobSpec("G", 0.0, 1, 1000.0, priority=0, profile=QUARTER_GPU)
    guest = JobSpec("O", 0.0, 1, 300.0, priority=1)
    sim = Simulation(training_cluster(1, 1), workload(guaranteed, guest),
                     create_policy("antman"), config=EngineConfig(max_time=0.0))
    sim.run()
    assert sim.state.running["O"].placement == sim.state.running["G"].placement
    assert sim.state.running["G"].share == 1.0
    assert sim.state.running["O"].share == pytest.approx(0.75)
    # G as if alone (1000 s); O at 3/4 speed: 300 / 0.75 = 400 s.
    assert _ends(_run(workload(guaranteed, guest), "antman")) == pytest.approx(
        {"G": 1000.0, "O": 400.0})


def test_antman_guest_gets_the_whole_gpu_when_its_host_ends():
    guaranteed = JobSpec("G", 0.0, 1, 1000.0, priority=0, profile=QUARTER_GPU)
    guest = JobSpec("O", 0.0, 1, 900.0, priority=1)
    # 750 s of work by 1000 at share .75, the last 150 s alone.
    assert _ends(_run(workload(guaranteed, guest), "antman")) == pytest.approx(
        {"G": 1000.0, "O": 1150.0})


def test_antman_default_idle_share_and_interference():
    guaranteed = JobSpec("G", 0.0, 1, 1000.0, priority=0, model="no-such-model")
    guest = JobSpec("O", 0.0, 1, 300.0, priority=1)
    assert _ends(_run(workload(guaranteed, guest), "antman")) == pytest.approx(
        {"G": 1000.0, "O": 600.0})
    slowed = _run(workload(guaranteed, guest), "antman",
                  {"guaranteed_interference": 0.2, "default_idle_share": 0.25})
    # O at .25 ends at 300 / .25 = 1200; G at .8 has done 960 s by then, 40 s alone after.
    assert _ends(slowed) == pytest.approx({"O": 1200.0, "G": 1240.0})


def test_antman_is_non_preemptive():
    # O (opportunistic) holds the only GPU alone; G (guaranteed) arrives later and waits.
    guest = JobSpec("O", 0.0, 1, 500.0, priority=1)
    guaranteed = JobSpec("G", 10.0, 1, 100.0, priority=0, profile=QUARTER_GPU)
    result = _run(workload(guest, guaranteed), "antman", config=EngineConfig())
    assert _ends(result) == pytest.approx({"O": 500.0, "G": 600.0})
    assert result.summary["preemptions"] == 0


def test_antman_shares_only_equal_gpu_counts_one_guest_per_host():
    host = JobSpec("G", 0.0, 2, 1000.0, priority=0, profile=QUARTER_GPU)
    small = JobSpec("S", 0.0, 1, 100.0, priority=1)
    pair = JobSpec("P", 0.0, 2, 100.0, priority=1)
    third = JobSpec("T", 0.0, 2, 100.0, priority=1)
    sim = Simulation(training_cluster(1, 2), workload(host, small, pair, third),
                     create_policy("antman"), config=EngineConfig(max_time=0.0))
    sim.run()
    assert set(sim.state.running) == {"G", "P"}
    assert sim.state.running["P"].placement == sim.state.running["G"].placement


# -- both -----------------------------------------------------------------------------------


@pytest.mark.parametrize("policy", ["themis", "antman"])
def test_runs_are_deterministic(policy):
    trace = load_trace(TRACES / "muri_trace3.csv")
    jobs = Workload(trace.jobs[:120], source="muri_trace3")
    cluster = load_cluster_spec(TRACES / "muri_cluster_spec_n8g8.csv")
    runs = [run_simulation(cluster, jobs, policy, seed=5) for _ in range(2)]
    assert runs[0].jobs == runs[1].jobs


@pytest.mark.parametrize("policy", ["themis", "antman"])
def test_muri_trace3_finishes_every_job(policy):
    trace = load_trace(TRACES / "muri_trace3.csv")
    cluster = load_cluster_spec(TRACES / "muri_cluster_spec_n8g8.csv")
    result = run_simulation(cluster, trace, policy)
    assert result.summary["jobs"] == len(trace.jobs) == 992
    assert all(row["end"] is not None for row in result.jobs)
