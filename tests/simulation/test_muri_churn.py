"""Muri's churn rules (issue #16): sticky regrouping and restarts charged per member."""

from __future__ import annotations

import numpy as np
import pytest

from simulation.composition import create_policy
from simulation.engine import EngineConfig, Simulation
from simulation.interleaving_grouping import GroupingConfig, max_weight_pairs
from simulation.model import JobSpec, Workload
from tests.simulation.test_muri import GPU_BOUND, IO_BOUND, _cluster, _job
from tests.simulation.test_sharing_equivalence import outcome, random_muri_jobs

# With GPU_BOUND `a` (0.05, 0.9, 0.05) and IO_BOUND `c` (0.9, 0.05, 0.05), `b` below pairs
# worse with either (pipeline model, three stages over four resource types, solo 1 s each):
# T(a, c) = 1.0 s, γ = 2 / (4 × 1.0) = .50; T(b, c) = 1.1 s, γ = .45; T(a, b) = 1.45 s,
# γ = .34, still useful: 1.45 × 1.33 (the 2-job overhead) = 1.93 < 2 s of solo iterations.
HALF_GPU = (0.2, 0.5, 0.3)


def _first_regroups(**params: object) -> Simulation:
    """Two GPUs, groups of at most two, run until the regroup at t=360 is applied.

    t=0 (full regroup): SRSF order a (1000 s), b (1100), e (5000, no profile: alone). `a`
    claims the next groupable job of its bucket, `b`; `e` takes the second GPU. Three jobs
    want two GPUs, so the one groupable pair merges: {a, b} on one GPU, e on the other.
    t=100: `c` (1200 s) arrives; no GPU is free, it waits.
    t=360: a and b ran at 1 / (1.45 × 1.33) = .52, so their remaining times (813, 913 s) stay
    ahead of c (1200) and e (4640). `a` claims `b`, `c` takes the last GPU of the budget and
    e is left out (preempted). Three selected jobs on two GPUs need one merge.
    """
    jobs = (_job(0, GPU_BOUND, duration=1000.0), _job(1, HALF_GPU, duration=1100.0),
            JobSpec("e", 0.0, 1, 5000.0), _job(2, IO_BOUND, duration=1200.0, submit=100.0))
    sim = Simulation(_cluster(1, 2), Workload(jobs),
                     create_policy("muri-s", {"max_group_size": 2, **params}),
                     config=EngineConfig(max_time=360.0))
    sim.run()
    return sim


def test_sticky_group_whose_members_are_all_selected_keeps_running():
    # Sticky: {a, b} is a formed group of selected jobs and counts one GPU; with c alone the
    # demand is 2 GPUs = the cluster, so nothing merges: {a, b} keeps its GPU, unrestarted,
    # and c starts alone on the GPU e held.
    sim = _first_regroups(regroup="sticky")
    jobs, group_of = sim.state.jobs, sim.policy._group_of
    a, b, c, e = jobs["j0"], jobs["j1"], jobs["j2"], jobs["e"]
    assert (a.preemptions, b.preemptions, e.preemptions) == (0, 0, 1)
    assert group_of["j0"] == group_of["j1"] != group_of["j2"]
    assert "j2" in sim.state.running and c.share == 1.0  # slots name no GPU index


def test_full_regroup_rematches_from_scratch():
    # The default (`regroup=full`, the paper, Muri's simulator): a, b, c start alone and
    # Blossom takes the heaviest edge, a–c (γ .50 > .45 > .34). `a` keeps its GPU and c joins
    # it; b moves to e's GPU (a restart). With `restart=group` a restarts too (c joined it).
    sim = _first_regroups()
    jobs, group_of = sim.state.jobs, sim.policy._group_of
    assert group_of["j0"] == group_of["j2"] != group_of["j1"]
    assert {job_id: jobs[job_id].preemptions for job_id in ("j0", "j1", "j2", "e")} == {
        "j0": 1, "j1": 1, "j2": 0, "e": 1}
    moved_only = _first_regroups(regroup="full", restart="moved").state.jobs
    assert (moved_only["j0"].preemptions, moved_only["j1"].preemptions) == (0, 1)


@pytest.mark.parametrize(("restart", "restarts", "end"), [
    # a ran alone 0–360 (360 s of its 1000 s done). At the 360 s regroup c joins it:
    # T(a, c) = 1.0 s × 1.33 overhead, so each member runs at 1 / 1.33 of its solo speed.
    # group: a restarts (63 s restart overhead) and ends at 423 + 640 × 1.33 = 1274.2;
    # moved: a keeps running and ends at 360 + 640 × 1.33 = 1211.2.
    ("group", 1, 423.0 + 640.0 * 1.33),
    ("moved", 0, 360.0 + 640.0 * 1.33),
])
def test_restarts_are_charged_to_every_member_of_a_group_that_gains_a_job(restart, restarts,
                                                                          end):
    jobs = (_job(0, GPU_BOUND, duration=1000.0), _job(1, IO_BOUND, duration=1200.0,
                                                      submit=100.0))
    sim = Simulation(_cluster(1, 1), Workload(jobs),
                     create_policy("muri-s", {"max_group_size": 2, "restart": restart}))
    rows = {row["job_id"]: row for row in sim.run().jobs}
    assert rows["j0"]["preemptions"] == restarts
    assert rows["j1"]["preemptions"] == 0  # it joins: a first start, not a restart
    assert rows["j0"]["end"] == pytest.approx(end)


def test_sticky_group_splits_once_its_members_fit_alone():
    # Two GPUs, groups of at most two. t=0: SRSF order e (100 s, no profile), a (1000),
    # b (1100): e takes a GPU alone, a claims b; three jobs on two GPUs merge {a, b}.
    # e ends at 100. t=360: the regroup selects a and b, who alone want 2 GPUs = the
    # cluster, so the group is no longer needed and splits: a keeps its GPU (its group only
    # lost a member: no restart), b moves to the free GPU (one restart); both run at share 1.
    jobs = (JobSpec("e", 0.0, 1, 100.0), _job(0, GPU_BOUND, duration=1000.0),
            _job(1, HALF_GPU, duration=1100.0))
    sim = Simulation(_cluster(1, 2), Workload(jobs),
                     create_policy("muri-s", {"max_group_size": 2, "regroup": "sticky"}),
                     config=EngineConfig(max_time=360.0))
    sim.run()
    a, b = sim.state.jobs["j0"], sim.state.jobs["j1"]
    assert (a.preemptions, b.preemptions) == (0, 1)
    assert a.share == b.share == 1.0
    assert sim.policy._group_of["j0"] != sim.policy._group_of["j1"]


def test_blossom_ties_fall_to_the_pairs_that_run_together():
    # Four alike jobs: every pairing weighs 2 × γ 0.5. Blossom alone pairs (0, 3), (1, 2);
    # with (0, 1) and (2, 3) running together (groups 7 and 9), that equally heavy
    # matching wins.
    weights = np.full((4, 4), 0.5)
    np.fill_diagonal(weights, 0.0)
    assert max_weight_pairs(weights, GroupingConfig()) == [(0, 3), (1, 2)]
    assert max_weight_pairs(weights, GroupingConfig(), running=np.array([7, 7, 9, 9])
                            ) == [(0, 1), (2, 3)]


def test_keeping_running_pairs_never_costs_weight():
    # (0, 1) and (2, 3) weigh γ 0.501 each, the running pairs (0, 2) and (1, 3) 0.5: a
    # thousandth of γ outweighs any number of kept pairs (each gains < 1 / 5 of one here).
    weights = np.full((4, 4), 0.5)
    weights[0, 1] = weights[1, 0] = weights[2, 3] = weights[3, 2] = 0.501
    np.fill_diagonal(weights, 0.0)
    assert max_weight_pairs(weights, GroupingConfig(), running=np.array([7, 9, 7, 9])
                            ) == [(0, 1), (2, 3)]


def test_keeping_running_pairs_restarts_fewer_jobs():
    # Contended random workloads: ties=keep restarts fewer jobs than ties=any in total.
    any_ties = keep = 0
    for seed in range(3):
        jobs = random_muri_jobs(seed, count=90)
        any_ties += sum(row[3] for row in outcome(create_policy("muri-s", {"ties": "any"}),
                                                  jobs, False))
        keep += sum(row[3] for row in outcome(create_policy("muri-s"), jobs, False))
    assert keep < any_ties
