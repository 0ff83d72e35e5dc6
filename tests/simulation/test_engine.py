"""Engine mechanics on hand-computed tiny cases."""

from __future__ import annotations

import pytest

from simulation.composition import create_policy
from simulation.decisions import Launch, SetShare, Slot
from simulation.engine import EngineConfig, Simulation
from simulation.errors import InputError, InvalidDecision
from simulation.model import InferenceLoad, JobSpec, PoolKind
from simulation.policies import Policy
from tests.simulation.builders import cluster, training_cluster, workload


def run(spec, jobs, policy, *, config=None, load=None, **params):
    sim = Simulation(spec, jobs, create_policy(policy, params), config=config, inference_load=load)
    return sim, sim.run()


def ends(result) -> dict[str, float]:
    return {row["job_id"]: row["end"] for row in result.jobs}


def test_fifo_versus_sjf_two_jobs_on_one_gpu():
    jobs = workload(JobSpec("long", 0, 1, 100), JobSpec("short", 0, 1, 10))
    _, fifo = run(training_cluster(1, 1), jobs, "fifo")
    _, sjf = run(training_cluster(1, 1), jobs, "sjf")
    assert ends(fifo) == {"long": 100, "short": 110}
    assert ends(sjf) == {"short": 10, "long": 110}
    assert fifo.summary["jct"]["mean"] == 105
    assert sjf.summary["jct"]["mean"] == 60
    assert fifo.summary["queuing"]["mean"] == 50
    assert sjf.summary["gpu_utilization"]["training"] == 1.0


@pytest.mark.parametrize(("checkpoint", "end"), [(True, 50 + 10 + 63 + 50), (False, 60 + 63 + 100)])
def test_srtf_preemption_restart_overhead_and_lost_progress(checkpoint, end):
    jobs = workload(
        JobSpec("long", 0, 1, 100, checkpoint=checkpoint), JobSpec("short", 50, 1, 10)
    )
    _, result = run(training_cluster(1, 1), jobs, "srtf")
    assert ends(result) == {"long": end, "short": 60}
    assert result.summary["preemptions"] == 1
    assert result.summary["preemption_ratio"] == 0.5


def test_fifo_head_blocks_unless_backfill():
    jobs = workload(
        JobSpec("a", 0, 1, 10), JobSpec("big", 1, 2, 10), JobSpec("small", 2, 1, 5)
    )
    _, strict = run(training_cluster(1, 2), jobs, "fifo")
    _, backfill = run(training_cluster(1, 2), jobs, "fifo", backfill=True)
    assert ends(strict) == {"a": 10, "big": 20, "small": 25}
    assert ends(backfill) == {"a": 10, "small": 7, "big": 20}


def test_tiresias_demotes_after_threshold_and_promotes_the_newcomer():
    jobs = workload(JobSpec("old", 0, 1, 1000), JobSpec("new", 600, 1, 100))
    _, result = run(training_cluster(1, 1), jobs, "tiresias", promote_knob=0)
    # "old" passes 500 GPU·s at t=500 (queue 1); "new" arrives in queue 0 and preempts it.
    assert ends(result)["new"] == 700
    assert ends(result)["old"] == 700 + 63 + 400
    assert result.summary["preemptions"] == 1


def test_multi_gpu_job_spans_servers_and_runs_at_requested_speed():
    jobs = workload(JobSpec("wide", 0, 8, 100))
    sim, result = run(training_cluster(2, 4), jobs, "fifo")
    assert ends(result) == {"wide": 100}
    assert result.summary["gpu_utilization"]["training"] == 1.0


def test_slower_gpu_type_stretches_running_time():
    spec = cluster(("t4", PoolKind.TRAINING, 1, 4), gpu_type="T4")
    _, result = run(spec, workload(JobSpec("j", 0, 4, 100)), "fifo")
    assert ends(result) == {"j": 400}


def test_job_larger_than_cluster_is_a_user_error():
    with pytest.raises(InputError, match="needs at least 16 GPUs"):
        run(training_cluster(1, 8), workload(JobSpec("huge", 0, 16, 10)), "fifo")


class OverCommitting(Policy):
    name = "test-overcommit"

    def schedule(self, view):
        for job_id in list(view.queue):
            yield Launch(job_id, (Slot("training-1", 1),))


def test_engine_refuses_an_over_commitment_loudly():
    sim = Simulation(
        training_cluster(1, 1),
        workload(JobSpec("a", 0, 1, 10), JobSpec("b", 0, 1, 10)),
        OverCommitting(),
    )
    with pytest.raises(InvalidDecision, match="over-commit"):
        sim.run()


class SuspendingA(Policy):
    """Launches A at 0 with share `first`; at B's arrival (50) launches B and gives A 1."""

    name = "test-suspend"

    def __init__(self, first: float) -> None:
        super().__init__()
        self.first = first

    def schedule(self, view):
        if "A" in view.queue:
            yield Launch("A", (Slot("training-1", 1),))
            yield SetShare("A", self.first)
        if "B" in view.queue:
            yield Launch("B", (Slot("training-1", 1),))
            yield SetShare("A", 1.0)


def test_a_share_of_zero_suspends_a_job_in_place():
    # A (100 s) holds its GPU but does nothing from 0 to 50, then runs at full speed: it ends
    # at 50 + 100 = 150, not preempted (a SetShare is not a restart: no restart overhead).
    jobs = workload(JobSpec("A", 0, 1, 100), JobSpec("B", 50, 1, 10))
    rows = {row["job_id"]: row for row in
            Simulation(training_cluster(1, 2), jobs, SuspendingA(0.0)).run().jobs}
    assert (rows["A"]["end"], rows["A"]["preemptions"], rows["B"]["end"]) == (150.0, 0, 60.0)
    with pytest.raises(InvalidDecision, match=r"not in \[0, 1\]"):
        Simulation(training_cluster(1, 2), jobs, SuspendingA(-0.5)).run()


def test_inference_servers_are_lent_then_reclaimed_with_preemption():
    spec = cluster(
        ("training", PoolKind.TRAINING, 1, 1), ("inference", PoolKind.INFERENCE, 2, 1)
    )
    load = InferenceLoad(times=(0.0, 600.0), busy_servers=(0, 2))
    jobs = workload(JobSpec("a", 0, 1, 1000), JobSpec("b", 0, 1, 1000), JobSpec("c", 0, 1, 1000))
    sim, result = run(spec, jobs, "fifo", load=load, config=EngineConfig(loan_interval=300))
    loaning = result.summary["loaning"]
    assert loaning["servers_lent"] == 2
    assert loaning["servers_reclaimed"] == 2
    assert loaning["reclaim_preemptions"] == 2
    assert result.summary["finished"] == 3
    # Two jobs ran on loan until t=600 (400 s of work left each, checkpointed), then queued
    # behind the training server's job, each paying the 63 s restart overhead.
    assert sorted(ends(result).values()) == [1000, 1000 + 63 + 400, 1000 + 2 * (63 + 400)]
    assert {row["action"] for row in result.loan_log} == {"loan", "reclaim"}


def test_progress_is_reported_every_percent():
    seen: list[float] = []
    jobs = workload(*(JobSpec(f"j{i}", i, 1, 5) for i in range(200)))
    Simulation(
        training_cluster(1, 4), jobs, create_policy("fifo"), progress=seen.append
    ).run()
    assert len(seen) == 100
    assert seen[-1] == 1.0


def test_progress_is_also_called_while_no_job_finishes_so_a_cancel_is_heard(monkeypatch):
    """A caller cancels by raising from `progress`; with one job that never finishes in time
    the engine must still call it (at most `_PROGRESS_QUIET_SECONDS` apart), not only per 1 %.

    Two 1-GPU jobs of 1e6 s on one GPU under Tiresias: demotion wakeups make loop iterations
    without any completion. Quiet time 0 and a check every loop: the first call reports 0.0
    and the raised error ends the run.
    """
    monkeypatch.setattr("simulation.engine._PROGRESS_QUIET_SECONDS", 0.0)
    monkeypatch.setattr("simulation.engine._PROGRESS_CHECK_LOOPS", 1)
    seen: list[float] = []

    class Cancelled(Exception):
        pass

    def cancel(fraction: float) -> None:
        seen.append(fraction)
        raise Cancelled

    jobs = workload(JobSpec("a", 0, 1, 1e6), JobSpec("b", 1, 1, 1e6))
    with pytest.raises(Cancelled):
        Simulation(training_cluster(1, 1), jobs, create_policy("tiresias"),
                   progress=cancel).run()
    assert seen == [0.0]


def test_tiresias_wakes_at_demotion_and_keeps_same_queue_jobs_running():
    jobs = workload(JobSpec("old", 0, 1, 1000), JobSpec("new", 100, 1, 100))
    _, result = run(training_cluster(1, 1), jobs, "tiresias")
    # Both start in queue 0, where the running job keeps its GPU; at t=500 "old" crosses
    # 500 GPU·s without any event, the policy's wakeup demotes it and "new" preempts it.
    assert ends(result)["new"] == 600
    assert ends(result)["old"] == 600 + 63 + 500
    assert result.summary["preemptions"] == 1


def test_tiresias_promotion_resets_service_of_a_starving_job():
    jobs = workload(JobSpec("a", 0, 1, 600), *(JobSpec(f"s{i}", 550 + i, 1, 400) for i in range(3)))
    _, off = run(training_cluster(1, 1), jobs, "tiresias")
    _, on = run(training_cluster(1, 1), jobs, "tiresias", promote_knob=1)
    assert ends(off)["a"] > max(v for k, v in ends(off).items() if k != "a")
    assert ends(on)["a"] < max(v for k, v in ends(on).items() if k != "a")


@pytest.mark.parametrize(("scaling", "end"), [("linear", 100), ("power:0.5", 50)])
def test_scaling_curve_setting_stretches_a_shrunk_job(scaling, end):
    # Measured at 4 GPUs, run on 1: linear takes 4× as long, g**0.5 only 2× (4**0.5).
    jobs = workload(JobSpec("j", 0, 4, 25, min_workers=1, max_workers=4))

    class OneGpu(Policy):
        name = "test-one-gpu"
        interval = None

        def schedule(self, view):
            for job_id in list(view.queue):
                yield Launch(job_id, (Slot("training-1", 1),))

    sim = Simulation(training_cluster(1, 4), jobs, OneGpu(),
                     config=EngineConfig(scaling=scaling))
    assert ends(sim.run()) == {"j": end}


def test_unknown_scaling_curve_is_a_user_error():
    with pytest.raises(InputError, match="unknown scaling curve"):
        Simulation(training_cluster(1, 1), workload(JobSpec("a", 0, 1, 1)),
                   create_policy("fifo"), config=EngineConfig(scaling="quadratic"))


@pytest.mark.parametrize("requeued", ["j1", "j5"])  # near the front; near the back
def test_a_requeued_job_goes_back_to_its_submit_order_place(requeued):
    """The queue stays in (submit time, trace order) when a job submitted earlier than the
    last queued one comes back, as a policy reads it: the view puts the engine's dict in
    order before an in-order read (`ClusterState.settle_queue`)."""
    from simulation.state import ClusterState
    from simulation.view import Clock, ClusterView

    state = ClusterState(training_cluster(1, 1))
    view = ClusterView(state, Clock(0.0))
    jobs = [state.add_job(JobSpec(f"j{i}", float(i), 1, 10)) for i in range(8)]
    for job in jobs:
        view.register(job)
        if job.job_id != requeued:
            state.enqueue(job, job.spec.submit_time)
    state.enqueue(state.jobs[requeued], 100.0)
    in_order = [f"j{i}" for i in range(8)]
    assert list(view.queue) == in_order and requeued in view.queue
    state.dequeue(state.jobs["j4"])
    state.enqueue(state.jobs["j4"], 200.0)
    assert len(view.queue) == 8 and "j4" in view.queue  # no order needed for these
    assert [job.job_id for job in view.queue.values()] == in_order
    state.dequeue(state.jobs["j6"])
    state.enqueue(state.jobs["j6"], 300.0)
    assert "j6" in view.queue.keys() and len(view.queue.keys()) == 8  # membership, no order
    assert list(view.queue.items())[6][0] == "j6" and list(state.queue) == in_order


class HoldingAtZero(Policy):
    """Launches each job on a GPU of training-1 at `share` (0: suspended) and then decides
    nothing, a round every 60 s; at round `resume_after` it gives every job a share of 1."""

    name = "test-hold"
    interval = 60.0

    def __init__(self, share: float = 0.0, resume_after: int | None = None) -> None:
        super().__init__()
        self.share = share
        self.resume_after = resume_after
        self.rounds = 0

    def schedule(self, view):
        self.rounds += 1
        for job_id in list(view.queue):
            yield Launch(job_id, (Slot("training-1", 1),))
            yield SetShare(job_id, self.share)
        if self.rounds == self.resume_after:
            for job_id in view.running:
                yield SetShare(job_id, 1.0)


def test_a_run_in_which_no_job_can_ever_progress_stops_with_the_jobs_named():
    """A and B hold their GPUs at share 0 from 0 s on and nothing else can happen: after
    `STALL_ROUNDS` rounds that decide nothing (one per 60 s) the run stops, naming them,
    instead of ticking until `max_time` (here 10^9 s, 16 million rounds)."""
    from simulation.engine import STALL_ROUNDS
    from simulation.errors import InvariantViolation

    sim = Simulation(training_cluster(1, 2), workload(JobSpec("A", 0, 1, 100),
                                                      JobSpec("B", 0, 1, 100)),
                     HoldingAtZero(), config=EngineConfig(max_time=1e9))
    with pytest.raises(InvariantViolation,
                       match=r"test-hold stalls at t=600000 s: 2 running jobs can never "
                             r"progress \(A, B\), 0 queued, and the policy decided nothing "
                             r"in 10,000 rounds"):
        sim.run()
    assert STALL_ROUNDS == 10_000  # the round at 0 decides; rounds 60 .. 600,000 do not


def test_a_suspension_the_policy_ends_within_stall_rounds_is_no_stall():
    """The same jobs, resumed at the 9,000th round (t = 8,999 × 60 = 539,940 s), after
    8,998 rounds that decided nothing: both end 100 s later."""
    sim = Simulation(training_cluster(1, 2), workload(JobSpec("A", 0, 1, 100),
                                                      JobSpec("B", 0, 1, 100)),
                     HoldingAtZero(resume_after=9_000), config=EngineConfig(max_time=1e9))
    assert ends(sim.run()) == {"A": 540_040.0, "B": 540_040.0}


def test_rounds_that_decide_nothing_while_a_job_runs_are_no_stall():
    """A runs at full speed for 10^6 s under a policy that decides nothing after its launch:
    16,666 rounds without a decision, but A's completion is pending, so the run ends then."""
    sim = Simulation(training_cluster(1, 2), workload(JobSpec("A", 0, 1, 1e6)),
                     HoldingAtZero(share=1.0), config=EngineConfig(max_time=1e9))
    assert ends(sim.run()) == {"A": 1e6}


@pytest.mark.parametrize("cadence", ["event", "60"])
def test_quiet_ticks_are_skipped_only_when_events_run_rounds(cadence):
    """A policy may declare a tick's round idle (`Policy.quiet_tick`); the engine skips it
    only when arrivals and completions run rounds of their own. A FIFO ticking every 60 s
    that calls every tick quiet, one 600 s job at 0: under cadence "event" its rounds are
    the arrival's (the job starts at 0) and the completion's, none of the nine ticks
    between; under a 60 s cadence only ticks run rounds, so none may be skipped: the job
    starts at the first, 60, and every tick to its end at 660 runs (11 rounds)."""
    from simulation.policies.fifo import Fifo

    class QuietFifo(Fifo):
        interval = 60.0

        def quiet_tick(self, view):
            return True

    sim = Simulation(training_cluster(1, 1), workload(JobSpec("j", 0.0, 1, 600.0)),
                     QuietFifo(), config=EngineConfig(cadence=cadence))
    result = sim.run()
    row = result.jobs[0]
    if cadence == "event":
        assert (row["start"], row["end"]) == (0.0, 600.0)
        assert result.summary["schedule_rounds"] == 2
    else:
        assert (row["start"], row["end"]) == (60.0, 660.0)
        assert result.summary["schedule_rounds"] == 11
