"""Muri's two kinds of round: a full regroup at most once per `interval` (§5), event rounds
that only start queued jobs on free GPUs in between (§3)."""

from __future__ import annotations

import pytest

from simulation.composition import create_policy
from simulation.engine import EngineConfig, Simulation
from simulation.model import JobSpec, Workload
from tests.simulation.test_muri import GPU_BOUND, IO_BOUND, _cluster, _job


def test_arrivals_start_on_free_gpus_at_once_grouped_among_themselves():
    # t=0: the full regroup starts IO-bound `j0` alone on one of two GPUs. t=100 is no
    # multiple of the 360 s interval: an event round puts `j1` (GPU-bound) and `j2` (mostly
    # IO) — together more than the one free GPU — as a pair on the free GPU and leaves `j0`
    # alone, though a full regroup would pair `j1` with `j0`, its better partner (γ 0.48
    # against 0.40).
    mostly_io = (0.7, 0.25, 0.05)
    jobs = (_job(0, IO_BOUND), _job(1, GPU_BOUND, submit=100.0),
            _job(2, mostly_io, submit=100.0))
    sim = Simulation(_cluster(1, 2), Workload(jobs), create_policy("muri-s"),
                     config=EngineConfig(max_time=100.0))
    sim.run()
    state, group_of = sim.state, sim.policy._group_of
    first, second, third = (state.jobs[f"j{i}"] for i in range(3))
    assert (first.first_start, first.share, first.preemptions) == (0.0, 1.0, 0)
    assert second.first_start == third.first_start == 100.0
    assert group_of["j1"] == group_of["j2"] != group_of["j0"]
    # The authors' 3-stage pipeline (interleaving.pipeline_period), j1 = (d 0.05, g 0.9,
    # n 0.05) in slot 0 and j2 = (0.7, 0.25, 0.05) in slot 1: T = max(d1 + g1, n2 + d2)
    # + max(n1, g2) = max(0.95, 0.75) + max(0.05, 0.25) = 1.2 s, the best of the orderings
    # (the other gives 1.85, the gapped one 1.25).
    share = 1.0 / (1.2 * 1.33)  # solo 1 s / (T_group × the 2-job overhead)
    assert second.share == third.share == pytest.approx(share)


def test_an_event_round_never_preempts_the_full_regroup_does_at_the_interval():
    # One GPU; no profiles, so nothing groups. `short` arrives at t=100 and under SRSF
    # outranks `long`, but only the full regroup may preempt: it runs at t=360.
    jobs = (JobSpec("long", 0.0, 1, 3600.0), JobSpec("short", 100.0, 1, 60.0))
    sim = Simulation(_cluster(1, 1), Workload(jobs), create_policy("muri-s"),
                     config=EngineConfig(max_time=360.0))
    sim.run()
    long, short = sim.state.jobs["long"], sim.state.jobs["short"]
    assert short.first_start == 360.0
    assert long.preemptions == 1
