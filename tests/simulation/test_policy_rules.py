"""The rule that makes each policy that policy, on one round of a hand-built state.

Each test names the rule it protects and derives the expected decisions by hand (in its
docstring) from the paper's definition, on a cluster small enough to follow. A plausible
one-line slip in the rule (ordering by the wrong key, a comparison the wrong way, a
parameter ignored) changes the decisions: each docstring names the slip ("Mutation
guarded") the test was checked to fail under. One round of `policy.schedule` is the unit,
so none of this depends on when the engine calls a policy.
"""

from __future__ import annotations

import random

import numpy as np
import pytest

from simulation.composition import create_policy
from simulation.decisions import Launch, Preempt, Resize, SetShare, Slot
from simulation.engine import EngineConfig, Simulation
from simulation.interleaving import interleaving_efficiency
from simulation.interleaving_grouping import Bucket, GroupingConfig, multi_round_grouping
from simulation.model import ClusterSpec, GpuType, JobSpec, PoolKind, PoolSpec, ResourceProfile
from simulation.policies.aryl_knapsack import FlexibleGroup
from simulation.policies.pollux_lite import noise_factor
from simulation.policies.srtf import remaining_seconds
from simulation.policies.themis import finish_time_fairness
from simulation.reclaim import get_reclaim_strategy
from simulation.throughput import Amdahl, Linear, ThroughputModel
from tests.simulation.builders import GPU_TYPES, training_cluster, workload
from tests.simulation.hand_states import Queued, Running, gpus_of, hand_state, one_round

MIN = 60.0


def launched(decisions) -> list[str]:
    return [d.job_id for d in decisions if isinstance(d, Launch)]


def preempted(decisions) -> list[str]:
    return [d.job_id for d in decisions if isinstance(d, Preempt)]


# -- SRTF / SRSF ------------------------------------------------------------------------------


def test_srsf_orders_by_remaining_time_times_gpus_not_time_alone():
    """SRSF's key is remaining time × GPUs (Tiresias/Muri's SRSF). Mutation guarded: ordering
    by remaining time only (that is SRTF).

    4 GPUs, nothing running. A: 4 GPUs, 100 s left (service 400). B: 1 GPU, 300 s (service
    300). Both do not fit together (5 > 4). SRSF runs B (300 < 400) and A no longer fits;
    SRTF runs A (100 < 300) and B no longer fits.
    """
    jobs = [Queued(JobSpec("A", 0.0, 4, 100.0)), Queued(JobSpec("B", 0.0, 1, 300.0))]
    srsf = hand_state(training_cluster(1, 4), create_policy("srsf"), queued=jobs)
    assert launched(one_round(srsf)) == ["B"]
    srtf = hand_state(training_cluster(1, 4), create_policy("srtf"), queued=jobs)
    assert launched(one_round(srtf)) == ["A"]


def test_srsf_preempts_a_running_job_with_more_remaining_service():
    """SRSF is preemptive on remaining service. Mutation guarded: SRSF keyed on time alone.

    2 GPUs. R runs on both with 100 s left (service 200); Q waits for 1 GPU with 150 s
    (service 150). SRSF: Q (150) before R (200); Q takes 1 GPU, R's 2 no longer fit, so R is
    preempted and Q launched. SRTF: R (100) before Q (150) and keeps both GPUs.
    """
    running = [Running(JobSpec("R", 0.0, 2, 1000.0), [("training-1", 2)], remaining=100.0)]
    queued = [Queued(JobSpec("Q", 10.0, 1, 150.0))]
    srsf = hand_state(training_cluster(1, 2), create_policy("srsf"), now=900.0,
                      running=running, queued=queued)
    decisions = one_round(srsf)
    assert preempted(decisions) == ["R"] and launched(decisions) == ["Q"]
    srtf = hand_state(training_cluster(1, 2), create_policy("srtf"), now=900.0,
                      running=running, queued=queued)
    assert one_round(srtf) == []


def test_remaining_time_is_the_predicted_duration_scaled_by_work_left():
    """SRTF knows remaining work exactly but believes the *predicted* duration: remaining =
    work left × predicted / true duration. Mutation guarded: the scale dropped (true time).

    X: true 100 s, predicted 300 s. Y: true 200 s, predicted 150 s. One GPU: SRTF believes
    Y is shorter and runs it. X half done (50 of 100 s left) believes 150 s remain.
    """
    jobs = [Queued(JobSpec("X", 0.0, 1, 100.0)), Queued(JobSpec("Y", 0.0, 1, 200.0))]
    sim = hand_state(training_cluster(1, 1), create_policy("srtf"), queued=jobs,
                     predicted={"X": 300.0, "Y": 150.0})
    assert launched(one_round(sim)) == ["Y"]
    half = hand_state(training_cluster(1, 1), create_policy("srtf"),
                      queued=[Queued(JobSpec("X", 0.0, 1, 100.0), remaining=50.0)],
                      predicted={"X": 300.0})
    assert remaining_seconds(half.view.job("X")) == pytest.approx(150.0)


# -- SJF ---------------------------------------------------------------------------------------


def test_sjf_orders_by_predicted_duration_and_skips_what_does_not_fit():
    """SJF: shortest *predicted* duration first, and a job that does not fit is skipped
    (greedy, non-blocking). Mutations guarded: ordering by true duration; blocking on the
    first job that does not fit.

    One GPU: X (true 100, predicted 300) and Y (true 200, predicted 150): Y runs.
    2 GPUs with one busy: W (2 GPUs, predicted 10 s) cannot fit; V (1 GPU, 50 s) starts.
    """
    jobs = [Queued(JobSpec("X", 0.0, 1, 100.0)), Queued(JobSpec("Y", 0.0, 1, 200.0))]
    sim = hand_state(training_cluster(1, 1), create_policy("sjf"), queued=jobs,
                     predicted={"X": 300.0, "Y": 150.0})
    assert launched(one_round(sim)) == ["Y"]
    busy = [Running(JobSpec("busy", 0.0, 1, 1000.0), [("training-1", 1)])]
    jobs = [Queued(JobSpec("W", 0.0, 2, 10.0)), Queued(JobSpec("V", 0.0, 1, 50.0))]
    sim = hand_state(training_cluster(1, 2), create_policy("sjf"), running=busy, queued=jobs)
    assert launched(one_round(sim)) == ["V"]


# -- Tiresias -----------------------------------------------------------------------------------


def test_tiresias_queues_by_attained_gpu_seconds_and_the_lower_queue_yields():
    """2D-LAS: a job's queue is set by attained service in GPU-seconds (GPUs × time, Tiresias
    §4.2), and a job of a higher queue preempts one of a lower queue. Mutation guarded:
    attained service read as executed seconds (one dimension).

    R has run 200 s on 4 GPUs: 800 GPU·s ≥ 500, queue 1 (in seconds, 200 < 500: queue 0).
    Q (1 GPU, new) is in queue 0: Q takes a GPU, R's 4 no longer fit and R is preempted.
    """
    running = [Running(JobSpec("R", 0.0, 4, 5000.0), [("training-1", 4)], remaining=4800.0,
                       attained=800.0, executed=200.0)]
    queued = [Queued(JobSpec("Q", 150.0, 1, 100.0))]
    sim = hand_state(training_cluster(1, 4), create_policy("tiresias"), now=200.0,
                     running=running, queued=queued)
    decisions = one_round(sim)
    assert preempted(decisions) == ["R"] and launched(decisions) == ["Q"]


def test_tiresias_thresholds_bound_queues_from_below():
    """Queue i holds attained service in [threshold_{i-1}, threshold_i): 500 GPU·s is already
    queue 1 and 10,000 queue 2 (EDL §6's 500,10000). Mutation guarded: bisect_left."""
    policy = create_policy("tiresias")
    specs = {a: JobSpec(f"a{int(a)}", 0.0, 1, 20000.0) for a in (499.0, 500.0, 9999.0, 10000.0)}
    sim = hand_state(training_cluster(1, 4), policy, now=1.0,
                     running=[Running(s, [("training-1", 1)], attained=a)
                              for a, s in specs.items()])
    queues = [policy.queue_index(sim.view, sim.view.job(s.job_id)) for s in specs.values()]
    assert queues == [0, 1, 1, 2]


@pytest.mark.parametrize(("now", "promoted"), [(1799.0, False), (1800.0, True)])
def test_tiresias_promotes_a_job_that_waited_knob_times_its_run_time(now, promoted):
    """Starvation (Tiresias' simulator): a waiting job that has run before is promoted to
    queue 0 once it has waited `promote_knob` × its execution time, and its service counts
    from the promotion on. Mutations guarded: the wait measured or compared wrongly, the
    reset forgotten.

    One GPU, knob 2. W ran 600 s (600 GPU·s, queue 1) and waits since 600; R runs since 600
    (queue 1 too). At 1799 W has waited 1199 < 1200: inside queue 1 the running R stays. At
    1800 it has waited 1200: W is promoted, preempts R, and counts as queue 0 afterwards.
    """
    policy = create_policy("tiresias", {"promote_knob": 2.0})
    sim = hand_state(
        training_cluster(1, 1), policy, now=now,
        running=[Running(JobSpec("R", 500.0, 1, 9000.0), [("training-1", 1)],
                         attained=now - 600.0, executed=now - 600.0)],
        queued=[Queued(JobSpec("W", 0.0, 1, 9000.0), since=600.0, attained=600.0,
                       executed=600.0)])
    decisions = one_round(sim)
    if promoted:
        assert preempted(decisions) == ["R"] and launched(decisions) == ["W"]
        assert policy.queue_index(sim.view, sim.view.job("W")) == 0
    else:
        assert decisions == []


def test_tiresias_wakes_at_the_next_demotion_or_promotion():
    """With jobs waiting, Tiresias asks to run again when a running job crosses its queue's
    threshold, (threshold - attained) / GPUs from now, or a waiting job becomes due for
    promotion, queued since + knob × executed. Mutations guarded: the GPU count multiplied,
    the promotion time subtracted, promotion times counted with promotion off.

    t = 1000. R (4 GPUs, 100 GPU·s): 400 more GPU·s at 4 per second -> 1100. W (ran 300 s,
    waits since 800). Promotion off: 1100. With knob 2 and R on 1 GPU with nothing
    attained (-> 1500), W's promotion at 800 + 600 = 1400 comes first.
    """
    waiting = Queued(JobSpec("W", 0.0, 1, 9000.0), since=800.0, attained=300.0, executed=300.0)
    off = create_policy("tiresias")
    sim = hand_state(training_cluster(1, 4), off, now=1000.0, queued=[waiting],
                     running=[Running(JobSpec("R", 900.0, 4, 9000.0), [("training-1", 4)],
                                      attained=100.0, executed=25.0)])
    assert off.next_wakeup(sim.view) == pytest.approx(1100.0)
    on = create_policy("tiresias", {"promote_knob": 2.0})
    sim = hand_state(training_cluster(1, 4), on, now=1000.0, queued=[waiting],
                     running=[Running(JobSpec("R", 1000.0, 1, 9000.0), [("training-1", 1)])])
    assert on.next_wakeup(sim.view) == pytest.approx(1400.0)


def test_tiresias_keeps_running_jobs_ahead_of_waiting_ones_inside_a_queue():
    """Inside one queue, running jobs come before waiting ones, then submit order (so two
    jobs of one queue do not preempt each other back and forth). Mutation guarded: waiting
    and running ranked alike.

    One GPU. R (queue 0, submitted at 10) runs; Q (queue 0, submitted earlier, at 5) waits:
    nothing changes.
    """
    sim = hand_state(training_cluster(1, 1), create_policy("tiresias"), now=20.0,
                     running=[Running(JobSpec("R", 10.0, 1, 900.0), [("training-1", 1)],
                                      attained=10.0, executed=10.0)],
                     queued=[Queued(JobSpec("Q", 5.0, 1, 900.0))])
    assert one_round(sim) == []


def test_tiresias_ranks_waiting_jobs_by_their_attained_gpu_seconds():
    """A waiting job keeps the queue its attained GPU-seconds put it in. Mutation guarded:
    waiting jobs ranked by executed seconds.

    4 GPUs, idle. X (4 GPUs) ran 200 s: 800 GPU·s, queue 1 (200 s would be queue 0). Y
    (4 GPUs, new, submitted later) is in queue 0 and starts; X waits.
    """
    queued = [Queued(JobSpec("X", 0.0, 4, 900.0), attained=800.0, executed=200.0),
              Queued(JobSpec("Y", 1.0, 4, 900.0))]
    sim = hand_state(training_cluster(1, 4), create_policy("tiresias"), now=300.0,
                     queued=queued)
    assert launched(one_round(sim)) == ["Y"]


# -- Elastic-Tiresias (EDL) ---------------------------------------------------------------------

EDL_CURVES = ThroughputModel(curves={"flat": Amdahl(0.5), "linear": Linear()})


def test_edl_compaction_never_shrinks_a_queue_0_job():
    """EDL Algorithm 1 compaction scales in only jobs of the lower-priority queues G_i, i != 0.
    Mutation guarded: queue-0 jobs counted as victims.

    8 GPUs full: `young` (4 GPUs, 100 GPU·s attained: queue 0, flat Amdahl(0.5) curve, the
    cheapest to shrink) and `old` (4 GPUs, 20,000 GPU·s: queue 2, linear). `new` (2 GPUs)
    waits with compaction on (N = 0). Only `old` may give GPUs: 4 → 2 (r = 0.5 of 4), loss
    (4-3)/4 + (3-2)/3 = 0.58 < 1, so `new` starts on the 2 freed GPUs; `young` keeps 4.
    """
    running = [
        Running(JobSpec("young", 0.0, 4, 5000.0, model="flat", min_workers=1, max_workers=4),
                [("training-1", 4)], attained=100.0, executed=25.0),
        Running(JobSpec("old", 0.0, 4, 50000.0, model="linear", min_workers=1, max_workers=4),
                [("training-1", 4)], attained=20000.0, executed=5000.0),
    ]
    sim = hand_state(training_cluster(1, 8), create_policy(
        "elastic-tiresias", {"compaction_threshold": 0}), now=5000.0, running=running,
        queued=[Queued(JobSpec("new", 4990.0, 2, 100.0))], throughput=EDL_CURVES)
    decisions = one_round(sim)
    assert [d.job_id for d in decisions if isinstance(d, Resize)] == ["old"]
    assert launched(decisions) == ["new"] and preempted(decisions) == []
    assert gpus_of(sim) == {"young": 4, "old": 2, "new": 2}


# -- Themis -------------------------------------------------------------------------------------


def test_themis_rho_is_shared_over_independent_finish_time():
    """ρ = T_shared / T_independent (Themis §3.2): T_independent = duration × max(1, g·N/G),
    T_shared = time since submission + remaining time at the current rate.

    One GPU, t = 400: A (submitted 0, 1000 s, 600 s left) runs; B (submitted 100, 200 s)
    waits. N = 2 on G = 1: each share is half a GPU, so T_independent = 2 × duration.
    A: (400 + 600) / 2000 = 0.5. B: (300 + 200) / 400 = 1.25.
    """
    sim = hand_state(training_cluster(1, 1), create_policy("themis"), now=400.0,
                     running=[Running(JobSpec("A", 0.0, 1, 1000.0), [("training-1", 1)],
                                      remaining=600.0)],
                     queued=[Queued(JobSpec("B", 100.0, 1, 200.0))])
    view = sim.view
    assert finish_time_fairness(view, view.job("A"), 2, 1) == pytest.approx(0.5)
    assert finish_time_fairness(view, view.job("B"), 2, 1) == pytest.approx(1.25)


def test_themis_gives_free_gpus_to_the_worst_rho_between_lease_ends():
    """Between lease ends nothing is preempted and a freed GPU goes to the waiting job with
    the worst (largest) ρ. Mutation guarded: waiting jobs ranked best ρ first.

    2 GPUs at t = 300 (leases of 600 s): A runs on one. B (100 s) and C (1000 s) arrived at
    100. N = 3 on G = 2: T_independent = 1.5 × duration. B: (200 + 100) / 150 = 2.0;
    C: (200 + 1000) / 1500 = 0.8. B takes the free GPU; A keeps its own.
    """
    sim = hand_state(training_cluster(1, 2), create_policy("themis"), now=300.0,
                     running=[Running(JobSpec("A", 0.0, 1, 1000.0), [("training-1", 1)],
                                      remaining=700.0)],
                     queued=[Queued(JobSpec("B", 100.0, 1, 100.0)),
                             Queued(JobSpec("C", 100.0, 1, 1000.0))])
    decisions = one_round(sim)
    assert launched(decisions) == ["B"] and preempted(decisions) == []


def test_themis_skips_a_waiting_job_that_does_not_fit_between_lease_ends():
    """Between lease ends the waiting jobs are tried in decreasing ρ and one that does not fit
    the free GPUs is skipped (work-conserving). Mutation guarded: blocking at that job.

    2 GPUs at t = 300, A runs on one. B (2 GPUs, 100 s) and C (1 GPU, 1000 s) arrived at 100.
    N = 3 on G = 2: B's T_independent = 100 × max(1, 2 / (2/3)) = 300, ρ = (200 + 100) / 300
    = 1.0; C's ρ = (200 + 1000) / 1500 = 0.8. B goes first but needs 2 GPUs; C starts.
    """
    sim = hand_state(training_cluster(1, 2), create_policy("themis"), now=300.0,
                     running=[Running(JobSpec("A", 0.0, 1, 1000.0), [("training-1", 1)],
                                      remaining=700.0)],
                     queued=[Queued(JobSpec("B", 100.0, 2, 100.0)),
                             Queued(JobSpec("C", 100.0, 1, 1000.0))])
    assert launched(one_round(sim)) == ["C"]


# -- AntMan -------------------------------------------------------------------------------------


def test_antman_guests_join_the_hosts_leaving_the_most_idle_gpu_time():
    """AntMan (as Muri's simulator): an opportunistic job shares the GPUs of a running
    guaranteed job with the same GPU count and no guest yet, the one whose GPU stage leaves
    the most idle time, and runs at that idle share. Mutations guarded: stopping the host
    scan at an unsuitable host, stopping after the first guest.

    One 4-GPU server, full: H (guaranteed, 2 GPUs), G1 (guaranteed, 1 GPU, GPU stage 1/2 of
    its iteration), G2 (guaranteed, 1 GPU, GPU stage 1/4). O1 then O2 (opportunistic, 1 GPU)
    wait. O1 skips H (2 GPUs) and joins G2 (idle 3/4); O2 joins G1 (G2 is taken; idle 1/2).
    """
    half, quarter = ResourceProfile((1.0, 1.0, 0.0)), ResourceProfile((2.0, 1.0, 1.0))
    running = [
        Running(JobSpec("H", 0.0, 2, 9000.0, priority=0), [("training-1", 2)]),
        Running(JobSpec("G1", 1.0, 1, 9000.0, priority=0, profile=half), [("training-1", 1)]),
        Running(JobSpec("G2", 2.0, 1, 9000.0, priority=0, profile=quarter),
                [("training-1", 1)]),
    ]
    queued = [Queued(JobSpec("O1", 3.0, 1, 900.0, priority=1)),
              Queued(JobSpec("O2", 4.0, 1, 900.0, priority=1))]
    sim = hand_state(training_cluster(1, 4), create_policy("antman"), now=5.0,
                     running=running, queued=queued)
    assert launched(one_round(sim)) == ["O1", "O2"]
    shares = {j: sim.state.running[j].share for j in ("G1", "G2", "O1", "O2")}
    assert shares == pytest.approx({"G1": 1.0, "G2": 1.0, "O1": 0.75, "O2": 0.5})


# -- AFS, Pollux-lite, Gandiva-elastic, Aryl (Aryl §7.1) ---------------------------------------


def _aryl_cluster(inference: int = 0) -> ClusterSpec:
    pools = [PoolSpec("training", PoolKind.TRAINING, "V100", 1, 8)]
    if inference:
        pools.append(PoolSpec("inference", PoolKind.INFERENCE, "T4", inference, 8))
    return ClusterSpec("aryl", GPU_TYPES, tuple(pools))


@pytest.mark.parametrize(("policy", "first"), [
    ("aryl", "short"), ("afs", "long"), ("gandiva-elastic", "long"), ("pollux-lite", "long"),
])
def test_base_demand_is_sjf_for_aryl_and_fifo_for_its_baselines(policy, first):
    """Aryl's phase one serves base demand shortest-job-first (Algorithm 2 `SortJobs`); its
    §7.1 baselines serve it in arrival order. Mutation guarded: the order swapped in either.

    8 GPUs; `long` (8 GPUs, 9000 s) arrived before `short` (8 GPUs, 100 s): one fits.
    """
    jobs = [Queued(JobSpec("long", 0.0, 8, 9000.0)), Queued(JobSpec("short", 1.0, 8, 100.0))]
    sim = hand_state(_aryl_cluster(), create_policy(policy), now=1.0, queued=jobs)
    assert launched(one_round(sim)) == [first]


def test_afs_gives_each_worker_to_the_largest_gain_per_gpu():
    """AFS: one worker at a time to the job with the largest throughput gain *per GPU*.
    Mutation guarded: the gain not divided by the worker's GPUs.

    A: 2-GPU workers, rates [1, 1.9]: +0.9 for 2 GPUs = 0.45/GPU. B: 1-GPU workers, rates
    [1, 1.5, 1.9]: +0.5, then +0.4 per GPU. 2 GPUs: B (0.5) first; A (0.45) needs 2 of
    the 1 left and is skipped; B (0.4) takes the last. Per worker instead, A (0.9) would win.
    """
    groups = [FlexibleGroup("A", (2,), (0.0,)), FlexibleGroup("B", (1, 2), (0.0, 0.0))]
    rates = {"A": [1.0, 1.9], "B": [1.0, 1.5, 1.9]}
    chosen = create_policy("afs").split_flexible(None, groups, rates, 2)
    assert chosen == {"A": 0, "B": 2}


def test_pollux_lite_maximises_the_harmonic_mean_of_speedups_within_twice_the_peak():
    """Pollux-lite: each worker goes where Σ speedup^-1 falls most (p = -1), and a job holds
    at most twice the most workers it ever held. Mutations guarded: p = +1 (every gain turns
    negative, nothing is given) and a looser cap.

    Linear rates, the same model (noise σ in [0.05, 0.3], from `noise_factor`). A: base 1
    worker, holds 1, rates [1, 2, 3]; B: base 2, holds 2, rates [2, 3, 4]. Goodput is
    rate / (1 + w/base · σ). First workers: A gains 1 - (1+σ)/2 = (1-σ)/2, B gains
    1 - (2+σ)/3 = (1-σ)/3 < A's, so one GPU goes to A. With 5 GPUs A is capped at
    2·1 - 1 = 1 extra worker and B at 2·2 - 2 = 2: {A: 1, B: 2}.
    """
    sigma = noise_factor("m")
    assert 0.05 <= sigma <= 0.3
    running = [
        Running(JobSpec("A", 0.0, 1, 1000.0, model="m", min_workers=1, max_workers=3),
                [("training-1", 1)]),
        Running(JobSpec("B", 0.0, 2, 1000.0, model="m", min_workers=2, max_workers=4),
                [("training-1", 2)]),
    ]
    groups = [FlexibleGroup("A", (1, 2), (0.0, 0.0)), FlexibleGroup("B", (1, 2), (0.0, 0.0))]
    rates = {"A": [1.0, 2.0, 3.0], "B": [2.0, 3.0, 4.0]}
    for capacity, expected in ((1, {"A": 1, "B": 0}), (5, {"A": 1, "B": 2})):
        policy = create_policy("pollux-lite")
        sim = hand_state(_aryl_cluster(), policy, running=running)
        assert policy.split_flexible(sim.view, groups, rates, capacity) == expected


def test_gandiva_elastic_fills_jobs_in_arrival_order_ignoring_scalability():
    """Gandiva's growth fills jobs one at a time in arrival order up to their maximum
    (Aryl Appendix F: "it neglects the scalability of the jobs"). Mutation guarded: an item
    that exactly fills the capacity refused.

    4 GPUs: A (items of 1, 2, 3 GPUs) takes 3, then B (1, 2) takes the 1 left, whatever
    their rates. A job whose smallest step does not fit takes nothing and leaves all the
    GPUs to the next one: C (5 GPUs) gets 0 of 4, D (1 to 4) all 4.
    """
    policy = create_policy("gandiva-elastic")
    groups = [FlexibleGroup("A", (1, 2, 3), (1.0, 1.1, 1.2)),
              FlexibleGroup("B", (1, 2), (50.0, 100.0))]
    assert policy.split_flexible(None, groups, {}, 4) == {"A": 3, "B": 1}
    groups = [FlexibleGroup("C", (5,), (9.0,)), FlexibleGroup("D", (1, 2, 3, 4), (1.0,) * 4)]
    assert policy.split_flexible(None, groups, {}, 4) == {"C": 0, "D": 4}


@pytest.mark.parametrize(("waiting", "policy", "grown"), [
    (True, "gandiva-elastic", 2), (False, "gandiva-elastic", 6), (True, "aryl", 6),
])
def test_gandiva_elastic_grows_only_when_nothing_waits(waiting, policy, grown):
    """Gandiva grows a job only while no job waits; Aryl's knapsack grows it regardless.
    Mutation guarded: the "someone waits" check inverted or dropped.

    8 GPUs; E (elastic, 2 to 6 workers) runs on 2. W (8 GPUs) waits and cannot fit. The 6
    free GPUs go to E's 4 extra workers, except under gandiva-elastic while W waits.
    """
    elastic = JobSpec("E", 0.0, 2, 5000.0, min_workers=2, max_workers=6)
    queued = [Queued(JobSpec("W", 10.0, 8, 100.0))] if waiting else []
    sim = hand_state(_aryl_cluster(), create_policy(policy), now=10.0,
                     running=[Running(elastic, [("training-1", 2)])], queued=queued)
    one_round(sim)
    assert gpus_of(sim)["E"] == grown


def test_aryl_places_inelastic_jobs_on_training_and_elastic_ones_on_loaned_servers():
    """Aryl §5.3: elastic jobs prefer on-loan inference servers, inelastic jobs training
    servers, and on inference servers base and flexible workers never share a server.
    Mutation guarded: the pool preference inverted.

    Training: 1 × 8 V100; inference: 2 × 8 T4, both on loan. I (inelastic, 2 GPUs) goes to
    training-1. E (elastic, base 2 workers, up to 4) gets its base on an inference server
    and its 2 flexible workers on the other one.
    """
    queued = [Queued(JobSpec("I", 0.0, 2, 1000.0)),
              Queued(JobSpec("E", 0.0, 2, 1000.0, min_workers=2, max_workers=4))]
    sim = hand_state(_aryl_cluster(inference=2), create_policy("aryl"), queued=queued,
                     on_loan=["inference-1", "inference-2"])
    one_round(sim)
    placements = {j: sim.state.jobs[j].placement for j in ("I", "E")}
    assert placements["I"] == (Slot("training-1", 2),)
    base = {s.server for s in placements["E"] if not s.flexible}
    flexible = {s.server for s in placements["E"] if s.flexible}
    assert len(base) == 1 and base <= {"inference-1", "inference-2"}
    assert flexible == {"inference-1", "inference-2"} - base
    assert sim.state.jobs["E"].gpus == 4


# -- Gandiva ------------------------------------------------------------------------------------


def _gandiva_cluster(servers: int, gpus: int) -> ClusterSpec:
    return ClusterSpec("c", {"P40": GpuType("P40", 1.0, 24.0)},
                       (PoolSpec("gpu", PoolKind.TRAINING, "P40", servers, gpus),))


def test_gandiva_packs_a_job_onto_the_least_used_gpu():
    """Gandiva §4.2.2 packing: during overload the lowest-utilisation job is packed onto the
    GPU of its server with the *lowest* utilisation. Mutation guarded: the busiest GPU.

    One P40 server with 2 GPUs time-slices three 1-GPU jobs (Table 1 utilisation: vae 8.7%,
    superresolution 14.1%, rhn 61.6%). vae goes first and joins superresolution (14.1% <
    61.6%); the server then carries two units on two GPUs and nothing more is packed.
    """
    running = [Running(JobSpec(name, 0.0, 1, 9000.0, model=name), [("gpu-1", 1)])
               for name in ("vae", "superresolution", "rhn")]
    policy = create_policy("gandiva")
    sim = hand_state(_gandiva_cluster(1, 2), policy, running=running)
    one_round(sim)
    packs = [sorted(pack.members) for pack in policy._packs.values()]
    assert packs == [["superresolution", "vae"]]


def test_gandiva_places_a_job_on_the_least_loaded_same_affinity_server():
    """Algorithm 1 `getNode`: among servers of the job's affinity with free GPUs, the least
    loaded. Mutation guarded: the most loaded.

    2 × 4 GPUs, reactive mode only. j1-j4 (1 GPU) fill gpu-1 (affinity 1); j5 (t=1) finds
    no free same-affinity GPU and takes the unallocated gpu-2. j1 ends at 10: gpu-1 has load
    3, gpu-2 load 1, both with free GPUs; j6 (t=20) goes to gpu-2.
    """
    jobs = [JobSpec("j1", 0.0, 1, 10.0, model="resnet50")]
    jobs += [JobSpec(f"j{i}", 0.0, 1, 9000.0, model="resnet50") for i in (2, 3, 4)]
    jobs += [JobSpec("j5", 1.0, 1, 9000.0, model="resnet50"),
             JobSpec("j6", 20.0, 1, 9000.0, model="resnet50")]
    sim = Simulation(_gandiva_cluster(2, 4), workload(*jobs),
                     create_policy("gandiva", {"introspective": False}),
                     config=EngineConfig(max_time=30.0))
    sim.run()
    assert sim.state.jobs["j5"].placement == (Slot("gpu-2", 1),)
    assert sim.state.jobs["j6"].placement == (Slot("gpu-2", 1),)


def test_gandiva_keeps_a_job_on_one_server_when_one_holds_it():
    """Gandiva §3.1 locality: a job that fits on one server runs on one server (ResNet-50
    keeps 53% of its speed across servers). Two 4-GPU servers (pool `small`, listed first)
    and one empty 8-GPU server (pool `big`): an 8-GPU job belongs on big-1."""
    cluster = ClusterSpec("mixed", {"P40": GpuType("P40", 1.0, 24.0)}, (
        PoolSpec("small", PoolKind.TRAINING, "P40", 2, 4),
        PoolSpec("big", PoolKind.TRAINING, "P40", 1, 8)))
    sim = hand_state(cluster, create_policy("gandiva"),
                     queued=[Queued(JobSpec("J", 0.0, 8, 1000.0, model="resnet50"))])
    one_round(sim)
    assert sim.state.jobs["J"].placement == (Slot("big-1", 8),)


# -- Muri ---------------------------------------------------------------------------------------

# Figure 6: four resource types; A spends 2 units on CPU, B 2 on GPU, 1 on every other type.
FIG6_A, FIG6_B = (1.0, 2.0, 1.0, 1.0), (1.0, 1.0, 2.0, 1.0)


def _muri_job(job_id: str, stages: tuple[float, ...], gpus: int = 1, duration: float = 5000.0,
              submit: float = 0.0) -> JobSpec:
    return JobSpec(job_id, submit, gpus, duration, model="custom",
                   iterations=int(duration / sum(stages)), profile=ResourceProfile(stages))


@pytest.mark.parametrize(("ordering", "share"), [("best", 1.0), ("worst", 5.0 / 6.0)])
def test_muri_sets_shares_from_the_best_stage_ordering(ordering, share):
    """Muri §4.2, Figure 6: a group runs its stages in the ordering with the shortest group
    iteration (Eq. 3), and each member's rate is its solo iteration time over that period.
    Mutation guarded: the worst ordering used by default.

    A and B (5 s solo iterations) share the one GPU (no interleaving overhead, the paper's
    own model; `group_overhead=none`). Shifting B one phase ahead overlaps A's
    CPU with B's GPU: T = 1+2+1+1 = 5, so each runs at 5/5 = 1. The worst ordering (no
    shift) has T = 1+2+2+1 = 6 and shares 5/6.
    """
    queued = [Queued(_muri_job("A", FIG6_A)), Queued(_muri_job("B", FIG6_B))]
    policy = create_policy("muri-s", {"ordering": ordering, "group_overhead": "none"})
    sim = hand_state(training_cluster(1, 1), policy, queued=queued)
    one_round(sim)
    running = sim.state.running
    assert set(running) == {"A", "B"}
    assert {running[j].placement for j in running} == {(Slot("training-1", 1),)}
    assert running["A"].share == pytest.approx(share)
    assert running["B"].share == pytest.approx(share)


def test_muri_s_priority_is_remaining_service():
    """Muri-S orders jobs by SRSF, remaining time × GPUs (§6.1). Mutation guarded: the GPU
    factor dropped.

    2 GPUs, k = 1 (no sharing). A: 2 GPUs × 100 s = 200; B: 1 × 150 = 150; C: 1 × 1000.
    Walking B, A, C with 2 GPUs: B takes 1, A's 2 do not fit, C takes the last.
    """
    queued = [Queued(JobSpec("A", 0.0, 2, 100.0)), Queued(JobSpec("B", 0.0, 1, 150.0)),
              Queued(JobSpec("C", 0.0, 1, 1000.0))]
    sim = hand_state(training_cluster(1, 2), create_policy("muri-s", {"max_group_size": 1}),
                     queued=queued)
    assert sorted(launched(one_round(sim))) == ["B", "C"]


@pytest.mark.parametrize(("thresholds", "preempts"), [("500,10000", True),
                                                      ("1000,10000", False)])
def test_muri_l_priority_is_the_2d_las_queue(thresholds, preempts):
    """Muri-L orders jobs by Tiresias' discretised 2D-LAS queue (durations unknown, §6.1),
    with its own `thresholds`. Mutations guarded: priority by submission alone; the
    thresholds parameter not passed on.

    One GPU, k = 1. R (submitted first) has attained 600 GPU·s; Q (new) is in queue 0.
    Split at 500, R is in queue 1 and Q takes the GPU (R preempted); split at 1000, R is in
    queue 0 too and, submitted first, keeps it.
    """
    policy = create_policy("muri-l", {"max_group_size": 1, "thresholds": thresholds})
    sim = hand_state(training_cluster(1, 1), policy, now=600.0,
                     running=[Running(JobSpec("R", 0.0, 1, 5000.0), [("training-1", 1)],
                                      attained=600.0, executed=600.0)],
                     queued=[Queued(JobSpec("Q", 590.0, 1, 100.0))])
    decisions = one_round(sim)
    if preempts:
        assert preempted(decisions) == ["R"] and launched(decisions) == ["Q"]
    else:
        assert decisions == []
    assert not [d for d in decisions if isinstance(d, SetShare)]


def test_muri_regroup_that_finds_the_same_groups_restarts_nobody():
    """A regroup keeps a group that is selected again on the GPUs it holds (Muri's executor
    restarts only what moves). Mutation guarded: every running job treated as moved (each
    regroup would preempt and restart the whole cluster).

    One GPU: A and B (Figure 6) are grouped and launched at 0, each at share 5 / (5 × 1.25)
    = 0.8 under an interleaving overhead of 1.25. At the next regroup, 360 s later, the same two
    jobs are the whole demand: nothing is preempted, launched or reshared.
    """
    queued = [Queued(_muri_job("A", FIG6_A)), Queued(_muri_job("B", FIG6_B))]
    policy = create_policy("muri-s", {"group_overhead": "1.25"})
    sim = hand_state(training_cluster(1, 1), policy, queued=queued)
    assert sorted(launched(one_round(sim))) == ["A", "B"]
    assert {j: sim.state.running[j].share for j in "AB"} == pytest.approx({"A": 0.8, "B": 0.8})
    sim.clock.now = policy.interval
    assert one_round(sim) == []
    assert set(sim.state.running) == {"A", "B"}


def _bucket(*stages: tuple[float, ...]) -> Bucket:
    return Bucket(1, np.array(stages, dtype=float), np.array([sum(s) for s in stages]),
                  list(range(len(stages))), [True] * len(stages))


def test_gamma_divides_busy_resource_time_by_k_resource_types():
    """Eq. 4: γ = busy resource-time / (k · T), k the resource *types* (4), whatever the group
    size; a grouping edge needs γ > floor × group size / k. Mutation guarded: γ divided by
    the number of jobs in the group instead of k (in the efficiency or the edge weights).

    One unit of storage (X) and one of CPU (Y): shifted one phase apart both run in the same
    phase, T = 1, busy = 2, γ = 2 / (4 · 1) = 0.5 (GPU and network idle all the time).
    With floor 0.9 the edge needs γ > 0.45 and X, Y group; with floor 1.1 it needs > 0.55
    and they stay apart. (Divided by the 2 jobs, γ would be 1.0 and pass both.)
    """
    x, y = (1.0, 0.0, 0.0, 0.0), (0.0, 1.0, 0.0, 0.0)
    assert interleaving_efficiency([x, y]) == pytest.approx(0.5)
    grouped = multi_round_grouping([_bucket(x, y)], GroupingConfig(max_group=2, weight_floor=0.9))
    apart = multi_round_grouping([_bucket(x, y)], GroupingConfig(max_group=2, weight_floor=1.1))
    assert grouped == [[[0, 1]]]
    assert apart == [[[0], [1]]]


def test_grouping_weighs_a_pair_at_its_best_stage_ordering():
    """Muri §4.2: the grouping graph's edge for a pair is computed at the pair's *best*
    ordering, and exists only if interleaving beats running them one after another.
    Mutation guarded: the worst ordering used when building the graph.

    A = (1, 1, 0, 0), B = (1, 0, 0, 0), solo 2 + 1 = 3 s. With B three phases ahead its
    storage stage meets A's CPU stage: T = 1 + 1 + 0 + 0 = 2 < 3, so they group. Every other
    shift overlaps nothing (T = 3, not < 3): under the worst ordering they stay apart.
    """
    a, b = (1.0, 1.0, 0.0, 0.0), (1.0, 0.0, 0.0, 0.0)
    assert multi_round_grouping([_bucket(a, b)], GroupingConfig(max_group=2)) == [[[0, 1]]]
    worst = GroupingConfig(max_group=2, worst_ordering=True)
    assert multi_round_grouping([_bucket(a, b)], worst) == [[[0], [1]]]


# -- reclaim strategies (Aryl §7.1 baselines) ---------------------------------------------------


def _lent_servers_state():
    """Three on-loan 4-GPU inference servers: inference-1 hosts a, b, e (3 jobs),
    inference-2 hosts c (1 job), inference-3 hosts c and d (2 jobs); c spans 2 and 3."""
    running = [
        Running(JobSpec("a", 0.0, 1, 900.0), [("inference-1", 1)]),
        Running(JobSpec("b", 0.0, 1, 900.0), [("inference-1", 1)]),
        Running(JobSpec("e", 0.0, 2, 900.0), [("inference-1", 2)]),
        Running(JobSpec("c", 0.0, 4, 900.0), [("inference-2", 2), ("inference-3", 2)]),
        Running(JobSpec("d", 0.0, 2, 900.0), [("inference-3", 2)]),
    ]
    cluster = ClusterSpec("lend", GPU_TYPES, (
        PoolSpec("training", PoolKind.TRAINING, "V100", 1, 4),
        PoolSpec("inference", PoolKind.INFERENCE, "T4", 3, 4)))
    return hand_state(cluster, create_policy("fifo"), running=running,
                      on_loan=["inference-1", "inference-2", "inference-3"])


def test_scf_reclaims_the_servers_with_the_fewest_jobs_first():
    """SCF (Aryl §7.2 baseline): return the on-loan servers hosting the fewest jobs, and
    preempt every job on them wherever else it runs. Mutation guarded: the most jobs first.

    Two servers: inference-2 (1 job) and inference-3 (2 jobs); c and d are preempted (c also
    gives up its GPUs on inference-3). One server: inference-2, only c.
    """
    scf = get_reclaim_strategy("scf")
    sim = _lent_servers_state()
    two = scf(sim.view, 2, random.Random(0))
    assert (two.servers, two.preempt, two.scale_in) == (("inference-2", "inference-3"),
                                                        ("c", "d"), ())
    one = scf(sim.view, 1, random.Random(0))
    assert (one.servers, one.preempt) == (("inference-2",), ("c",))


def test_random_reclaim_preempts_everything_on_the_drawn_servers():
    """Random (Aryl §7.1): servers drawn uniformly from the run's RNG, every job on them
    preempted, nobody scaled in. All three drawn: all five jobs stop; one drawn: exactly the
    jobs on it."""
    pick = get_reclaim_strategy("random")
    sim = _lent_servers_state()
    every = pick(sim.view, 3, random.Random(0))
    assert sorted(every.servers) == ["inference-1", "inference-2", "inference-3"]
    assert sorted(every.preempt) == ["a", "b", "c", "d", "e"] and every.scale_in == ()
    hosted = {"inference-1": ["a", "b", "e"], "inference-2": ["c"], "inference-3": ["c", "d"]}
    for seed in range(6):
        plan = pick(sim.view, 1, random.Random(seed))
        assert sorted(plan.preempt) == hosted[plan.servers[0]] and plan.scale_in == ()


# -- preemptive ordering, SIA's baselines -------------------------------------------------------


def test_a_non_preemptible_running_job_keeps_its_gpus_whatever_its_priority():
    """Preemptive policies (SRSF here) never stop a non-preemptible running job: its GPUs
    are taken off the budget before anyone is ranked. Mutation guarded: the job ranked like
    any other (the engine would refuse its preemption).

    2 GPUs: P (non-preemptible, 2 GPUs, 1000 s left: service 2000) runs; Q (1 GPU, 10 s)
    waits. Without the rule SRSF would stop P for Q; with it nothing changes.
    """
    running = [Running(JobSpec("P", 0.0, 2, 1000.0, preemptible=False), [("training-1", 2)])]
    sim = hand_state(training_cluster(1, 2), create_policy("srsf"), now=1.0,
                     running=running, queued=[Queued(JobSpec("Q", 1.0, 1, 10.0))])
    assert one_round(sim) == []


def test_a_non_preemptible_job_does_not_stop_the_ranking_of_the_others():
    """The non-preemptible job is skipped in the ranking, not where the ranking stops.
    Mutation guarded: `break` instead of `continue` at a kept job.

    4 GPUs, SRSF. P (non-preemptible, 1 GPU, 10 s left) and R (1 GPU, 500 s) run; Q (3 GPUs,
    100 s: service 300) waits and does not fit the 2 free GPUs. Budget 4 - 1 = 3; order
    P (10), Q (300), R (500): Q takes the 3, R is preempted for it.
    """
    running = [Running(JobSpec("P", 0.0, 1, 1000.0, preemptible=False), [("training-1", 1)],
                       remaining=10.0),
               Running(JobSpec("R", 0.0, 1, 1000.0), [("training-1", 1)], remaining=500.0)]
    sim = hand_state(training_cluster(1, 4), create_policy("srsf"), now=1.0, running=running,
                     queued=[Queued(JobSpec("Q", 1.0, 3, 100.0))])
    decisions = one_round(sim)
    assert preempted(decisions) == ["R"] and launched(decisions) == ["Q"]


@pytest.mark.parametrize(("pool", "server"), [(None, "training-1"), ("inference", "inference-1")])
def test_jobs_go_to_their_own_pool_then_training_then_loaned_inference(pool, server):
    """Shared placement order (`pool_preference`): the job's own pool first, then training
    pools, then on-loan inference servers. Mutations guarded: inference before training,
    the own pool last.

    training-1 (4 V100) has 2 GPUs busy; inference-1 (4 T4) is on loan and empty. A 2-GPU
    job with no pool goes to training-1; one that names the inference pool to inference-1.
    """
    cluster = ClusterSpec("two", GPU_TYPES, (
        PoolSpec("training", PoolKind.TRAINING, "V100", 1, 4),
        PoolSpec("inference", PoolKind.INFERENCE, "T4", 1, 4)))
    sim = hand_state(cluster, create_policy("fifo"), now=1.0, on_loan=["inference-1"],
                     running=[Running(JobSpec("busy", 0.0, 2, 900.0), [("training-1", 2)])],
                     queued=[Queued(JobSpec("A", 1.0, 2, 100.0, pool=pool))])
    one_round(sim)
    assert sim.state.jobs["A"].placement == (Slot(server, 2),)


def _quota_cluster(queues: int = 3) -> ClusterSpec:
    pools = tuple(PoolSpec(f"q{i}", PoolKind.QUOTA, "V100", 1, 4) for i in range(1, queues + 1))
    return ClusterSpec("quota", GPU_TYPES, pools)


def test_fcfs_pools_starts_a_job_wider_than_its_quota_once_its_queue_is_empty():
    """fcfs-pools (SIA §4.1): a queue stays within its quota, except that a job wider than
    the quota starts once its queue holds nothing (else it would wait forever). Mutation
    guarded: the exception dropped.

    Two 4-GPU queues, all idle. W (q1, 8 GPUs) starts at once on both servers.
    """
    sim = hand_state(_quota_cluster(2), create_policy("fcfs-pools"),
                     queued=[Queued(JobSpec("W", 0.0, 8, 600.0, pool="q1"))])
    assert launched(one_round(sim)) == ["W"]
    assert set(sim.state.jobs["W"].placement) == {Slot("q1-1", 4), Slot("q2-1", 4)}


def test_ssf_starts_a_job_wider_than_its_quota_once_its_queue_is_empty():
    """Like fcfs-pools (its no-sharing sibling, SIA §4.1), ssf must let a job wider than its
    queue's quota start once that queue holds nothing, or it waits forever. Two idle 4-GPU
    queues: W (q1, 8 GPUs) starts at once."""
    sim = hand_state(_quota_cluster(2), create_policy("ssf"),
                     queued=[Queued(JobSpec("W", 0.0, 8, 600.0, pool="q1"))])
    assert launched(one_round(sim)) == ["W"]


def test_maxmin_gives_idle_gpus_to_the_queue_with_the_smallest_share_first():
    """maxmin (SIA §4.1 MMFS): idle GPUs go, one job at a time, to the queue with the
    smallest allocation / quota whose FCFS head fits. Mutation guarded: the largest first.

    Three 4-GPU queues. q1 runs 4 GPUs (share 1), q2 runs 2 (share 0.5), q3 nothing; 6 GPUs
    idle. Heads: q1's A (4 GPUs), q2's B (4 GPUs). q2 goes first: B takes 4, leaving 2, too
    few for A.
    """
    running = [Running(JobSpec("r1", 0.0, 4, 900.0, pool="q1"), [("q1-1", 4)]),
               Running(JobSpec("r2", 0.0, 2, 900.0, pool="q2"), [("q2-1", 2)])]
    queued = [Queued(JobSpec("A", 1.0, 4, 600.0, pool="q1")),
              Queued(JobSpec("B", 2.0, 4, 600.0, pool="q2"))]
    sim = hand_state(_quota_cluster(3), create_policy("maxmin"), now=2.0, running=running,
                     queued=queued)
    assert launched(one_round(sim)) == ["B"]
