"""The placement stage `gandiva-pack`: Gandiva's packing under a priority ordering (issue #20).

Table 1 gives the packed rates: n jobs on a GPU run at C/n each, C = min(n, mean of 1 + packing
gain): rhn (+0.46) with scrnn (+0.39) gives C = 1.425, 0.7125 each; lstm (-0.16) twice gives
C = 0.84, 0.42 each. Tiresias' thresholds are set out of reach here, so its order is
submit order (every job stays in its first queue).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simulation.composition import create_policy
from simulation.engine import Simulation
from simulation.metrics import check_invariants
from simulation.model import JobSpec, Workload
from simulation.runner import run_simulation
from simulation.workloads import load_cluster_spec, load_trace
from tests.simulation.builders import training_cluster, workload

TRACES = Path(__file__).resolve().parents[3] / "shared" / "traces"
FIFO_ORDER = {"thresholds": "1000000"}


def _ends(result) -> dict[str, float]:
    return {row["job_id"]: round(row["end"], 6) for row in result.jobs}


def test_a_packing_that_beats_one_gpu_is_kept() -> None:
    """b waits behind a on the one GPU, packs onto it, and the trial keeps the pair (1.425 >
    1). By hand: b ends at 600 / 0.7125 = 842.105263; a has then done 600 s of work and runs
    its last 2,400 alone: 3242.105263. Tiresias alone: 3000 and 3600."""
    jobs = workload(JobSpec("a", 0, 1, 3000, model="rhn"), JobSpec("b", 0, 1, 600, model="scrnn"))
    alone = run_simulation(training_cluster(1, 1), jobs, "tiresias", settings=FIFO_ORDER)
    packed = run_simulation(training_cluster(1, 1), jobs, "tiresias+gandiva-pack",
                            settings=FIFO_ORDER)
    assert _ends(alone) == {"a": 3000.0, "b": 3600.0}
    assert _ends(packed) == {"a": 3242.105263, "b": 842.105263}
    assert packed.summary["policy_counters"] == {
        "packings": 1, "packings_kept": 1, "packings_undone": 0, "unpacks": 0}


def test_a_packing_that_loses_is_undone_and_its_models_never_pack_again() -> None:
    """Two lstm jobs make 0.84 of a GPU: after the 60 s trial b goes back to the queue with
    60 × 0.42 = 25.2 s done, and a (also 25.2 done) ends alone at 60 + 2974.8 = 3034.8. The
    combination is not tried again, so b waits and restarts then, paying the 63 s restart:
    3034.8 + 63 + 574.8 = 3672.6."""
    jobs = workload(JobSpec("a", 0, 1, 3000, model="lstm"), JobSpec("b", 0, 1, 600, model="lstm"))
    result = run_simulation(training_cluster(1, 1), jobs, "tiresias+gandiva-pack",
                            settings=FIFO_ORDER)
    assert _ends(result) == {"a": 3034.8, "b": 3672.6}
    assert {row["job_id"]: row["preemptions"] for row in result.jobs} == {"a": 0, "b": 1}
    assert result.summary["policy_counters"]["packings_undone"] == 1
    assert result.summary["policy_counters"]["packings"] == 1


def test_a_trial_measures_from_the_newcomers_first_progress() -> None:
    """`pack_trial` sets the measured span: with 120 s the lstm pair is undone at 120, b
    having done 50.4 s; a ends at 120 + 3000 - 50.4 = 3069.6, b at 3069.6 + 63 + 549.6."""
    jobs = workload(JobSpec("a", 0, 1, 3000, model="lstm"), JobSpec("b", 0, 1, 600, model="lstm"))
    result = run_simulation(training_cluster(1, 1), jobs, "tiresias+gandiva-pack",
                            settings={**FIFO_ORDER, "pack_trial": 120})
    assert _ends(result) == {"a": 3069.6, "b": 3682.2}


def test_a_restarted_newcomer_is_measured_after_its_restart() -> None:
    """SRTF on one GPU: b (scrnn, 1,000 s) runs alone until a (rhn, 300 s) arrives at 100;
    b is preempted with 900 s left and packs onto a at once, restarting until 163. Its trial
    runs from 163 to 223 (1.425: kept); measured from 100 it would count b's restart as lost
    progress (0.7125) and undo the pack. By hand: a ends at 100 + 300 / 0.7125 =
    521.052632; b has then done 0.7125 × 358.052632 = 255.1125 and ends at 521.052632 +
    644.8875 = 1165.940132."""
    jobs = workload(JobSpec("b", 0, 1, 1000, model="scrnn"),
                    JobSpec("a", 100, 1, 300, model="rhn"))
    result = run_simulation(training_cluster(1, 1), jobs, "srtf+gandiva-pack")
    assert _ends(result) == {"a": 521.052632, "b": 1165.940132}
    assert result.summary["policy_counters"]["packings_kept"] == 1


def test_a_gpu_freed_on_its_server_unpacks_the_newest_member() -> None:
    """Two GPUs: a (rhn) and c run, b (scrnn) packs onto a, the lower-utilisation host. When
    c ends at 300, b takes its GPU and runs alone: by then a and b have each done 300 ×
    0.7125 = 213.75 s, so b ends at 300 + 386.25 = 686.25 and a at 300 + 2786.25."""
    jobs = workload(JobSpec("a", 0, 1, 3000, model="rhn"), JobSpec("c", 0, 1, 300),
                    JobSpec("b", 0, 1, 600, model="scrnn"))
    result = run_simulation(training_cluster(1, 2), jobs, "tiresias+gandiva-pack",
                            settings=FIFO_ORDER)
    assert _ends(result) == {"a": 3086.25, "b": 686.25, "c": 300.0}
    assert result.summary["policy_counters"]["unpacks"] == 1


def test_a_pack_holds_one_gpu_in_the_orderings_count() -> None:
    """SRTF on one 3-GPU server: a (rhn, 1,000 s) and d (2 GPUs, 3,000 s) run, b (scrnn,
    5,000 s) packs onto a. At 100 c (2 GPUs, 2,000 s) arrives: SRTF keeps a (928.75 left),
    then c; d is preempted for c, and b rides on a's GPU at no cost, so it keeps running.
    By hand: a ends at 100 + 928.75 / 0.7125 = 1403.508772; b then runs alone with 4,000 s
    left: 5403.508772; c 2100; d restarts then: 2100 + 63 + 2900 = 5063."""
    jobs = workload(JobSpec("a", 0, 1, 1000, model="rhn"), JobSpec("d", 0, 2, 3000),
                    JobSpec("b", 0, 1, 5000, model="scrnn"), JobSpec("c", 100, 2, 2000))
    result = run_simulation(training_cluster(1, 3), jobs, "srtf+gandiva-pack")
    assert _ends(result) == {"a": 1403.508772, "b": 5403.508772, "c": 2100.0, "d": 5063.0}
    assert {row["job_id"]: row["preemptions"] for row in result.jobs} == {
        "a": 0, "b": 0, "c": 0, "d": 1}


@pytest.mark.parametrize("case", ["tiresias60", "muri3"])
@pytest.mark.parametrize("policy", ["tiresias", "srtf", "srsf"])
def test_nothing_packable_gives_the_policys_own_results(case: str, policy: str) -> None:
    """These traces' models are not in Table 1, so no job packs: the stage's walk and best
    fit must then decide exactly as the policy's own `schedule_by_priority` does."""
    if case == "tiresias60":
        spec = load_cluster_spec(TRACES / "tiresias_cluster_spec_n16g4.csv")
        jobs = load_trace(TRACES / "tiresias_60_job.csv")
    else:
        spec = load_cluster_spec(TRACES / "muri_cluster_spec_n8g8.csv")
        jobs = load_trace(TRACES / "muri_trace3.csv")
    own = run_simulation(spec, jobs, policy)
    staged = run_simulation(spec, jobs, f"{policy}+gandiva-pack")
    assert staged.summary["policy_counters"]["packings"] == 0
    assert staged.jobs == own.jobs


class _Checked:
    """After every round: no server runs more jobs than it has GPUs once a pack counts as
    one, no pack sits beside a GPU free on its server, every pack member is a running
    one-GPU job on the pack's server."""

    def __init__(self, policy) -> None:
        self.policy = policy
        self.rounds_with_packs = 0

    def check(self, view) -> None:
        policy = self.policy
        free = policy._physical_free(view)
        for sid, server in view.servers.items():
            if server.available:
                assert 0 <= free[sid] <= server.gpus, (view.now, sid, free[sid])
        for pack in policy._packs.values():
            assert len(pack.members) >= 2
            assert free[pack.server] == 0, (view.now, pack)
            for job_id in pack.members:
                job = view.running[job_id]
                assert job.placement == (type(job.placement[0])(pack.server, 1),)
        self.rounds_with_packs += bool(policy._packs)


_MODELS = ("rhn", "scrnn", "lstm", "vae", "resnet50", "generic")


def _run_checked(jobs: list[tuple[int, int, int, str]], base: str) -> _Checked:
    """Run `base+gandiva-pack` on two 4-GPU servers with `_Checked` after every round; every
    job must finish once and the run's utilisation stay within [0, 1]."""
    specs = [JobSpec(f"j{i}", float(t), g, float(d), model=m)
             for i, (t, g, d, m) in enumerate(jobs)]
    policy = create_policy(f"{base}+gandiva-pack")
    checker = _Checked(policy)
    original = policy.schedule

    def schedule(view):
        yield from original(view)
        checker.check(view)

    policy.schedule = schedule
    workload_ = Workload(tuple(sorted(specs, key=lambda j: j.submit_time)), source="test")
    result = Simulation(training_cluster(2, 4), workload_, policy).run()
    assert sorted(row["job_id"] for row in result.jobs if row["end"] is not None) == sorted(
        spec.job_id for spec in specs)
    check_invariants(result, first_submit=workload_.jobs[0].submit_time)
    return checker


@settings(max_examples=40, deadline=None, derandomize=True)
@given(st.lists(st.tuples(st.integers(0, 2000), st.sampled_from((1, 1, 1, 2, 4)),
                          st.integers(60, 4000), st.sampled_from(_MODELS)),
                min_size=2, max_size=14),
       st.sampled_from(("tiresias", "srtf", "srsf")))
def test_packs_never_overcommit_a_server_and_every_job_finishes_once(jobs, base) -> None:
    _run_checked(jobs, base)


@pytest.mark.parametrize("base", ["tiresias", "srtf"])
def test_the_checked_runs_do_pack(base: str) -> None:
    """The property above means something: on a crowded pair of servers packs form."""
    jobs = [(10 * i, 1 if i % 4 else 2, 500 + 150 * i, _MODELS[i % 4]) for i in range(14)]
    assert _run_checked(jobs, base).rounds_with_packs > 0
