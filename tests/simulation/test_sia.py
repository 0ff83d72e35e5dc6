"""SIA policies: hand-built sharing cases, the virtual clock, and Theorem 1 as a property."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simulation.metrics import speedups
from simulation.model import ClusterSpec, GpuType, JobSpec, PoolKind, PoolSpec, Workload
from simulation.policies.sia.common import (
    ResourceTimePlan,
    queue_quotas,
    virtual_start_times,
)
from simulation.policies.sia.sia_vc import SiaVirtualClock
from simulation.predictors.arrivals import DAY, WillJobsArrive, pool_histories
from simulation.runner import run_simulation
from simulation.view import ClusterView
from simulation.workloads.sia import (
    A1_MEDIAN_MINUTES,
    TABLE_12_QUEUES,
    TIME_ZONES,
    WIDTHS,
    QueueProfile,
    SiaSetup,
    _burst_widths,
    generate_sia_workload,
    queue_names,
    queue_profiles,
    sia_cluster,
    working_time,
)

MIN = 60.0


def cluster(queues: int = 2, gpus: int = 4) -> ClusterSpec:
    pools = tuple(PoolSpec(f"q{i}", PoolKind.QUOTA, "V100", 1, gpus) for i in range(1, queues + 1))
    return ClusterSpec("test", {"V100": GpuType("V100")}, pools)


def job(job_id: str, pool: str, submit: float, gpus: int, minutes: float, **kw) -> JobSpec:
    return JobSpec(job_id, submit, gpus, minutes * MIN, pool=pool, preemptible=False, **kw)


def workload(*jobs: JobSpec) -> Workload:
    return Workload(tuple(sorted(jobs, key=lambda j: j.submit_time)))


def by_id(result) -> dict[str, dict]:
    return {row["job_id"]: row for row in result.jobs}


PERFECT = {"arrivals": "perfect", "durations": "perfect"}


def test_fcfs_pools_keeps_each_queue_in_its_quota_and_strict_order() -> None:
    w = workload(job("a", "q1", 0, 4, 30), job("b", "q1", 0, 2, 10), job("c", "q1", 1, 1, 5),
                 job("d", "q2", 100, 4, 10))
    rows = by_id(run_simulation(cluster(), w, "fcfs-pools"))
    assert rows["a"]["start"] == 0
    assert rows["b"]["start"] == 30 * MIN  # q2's idle GPUs are not borrowed
    assert rows["c"]["start"] == 30 * MIN  # strict FCFS: c waits behind b
    assert rows["d"]["start"] == 100


def test_virtual_clock_reproduces_fcfs_pools() -> None:
    setup = SiaSetup(queues=3, days=1.0)
    w = generate_sia_workload(setup, seed=3)
    result = run_simulation(sia_cluster(setup), w, "fcfs-pools")
    starts = virtual_start_times(w.jobs, queue_quotas(sia_cluster(setup)))
    for row in result.jobs:
        assert row["start"] == pytest.approx(starts[row["job_id"]], abs=1e-5)


def test_resource_time_plan_peak_over_interval() -> None:
    plan = ResourceTimePlan(8)
    plan.reserve(4, 0, 10)
    plan.reserve(2, 5, 10)
    plan.reserve(3, 20, 5)
    assert plan.max_reservation(0, 5) == 4
    assert plan.max_reservation(0, 6) == 6
    assert plan.max_reservation(15, 5) == 0
    assert plan.max_reservation(12, 10) == 3
    assert plan.fits(2, 0, 10) and not plan.fits(3, 0, 10)


@pytest.mark.parametrize("seed", range(20))
def test_plan_checks_from_its_origin_equal_the_peak_over_the_interval(seed: int) -> None:
    """`fits` from the origin reads the first moment the plan is full (kept between
    reservations that start after it); it must answer as MaxReservation does, while
    reservations (at the origin, later, of zero length, tied) arrive between checks."""
    rng = np.random.default_rng(seed)
    origin = 100.0
    plan = ResourceTimePlan(8, origin=origin)
    for _ in range(60):
        if rng.random() < 0.6:
            start = origin if rng.random() < 0.3 else origin + float(rng.choice([0, 5, 10, 40]))
            plan.reserve(int(rng.integers(1, 4)), start + float(rng.integers(0, 3)) * 5,
                         float(rng.choice([0.0, 5.0, 10.0, 25.0, 60.0])))
        gpus, duration = int(rng.integers(1, 9)), float(rng.choice([0.0, 5.0, 12.0, 30.0, 200.0]))
        expected = plan.max_reservation(origin, duration) + gpus <= plan.capacity
        assert plan.fits(gpus, origin, duration) == expected, (gpus, duration)
        assert plan.held_at_origin == plan.max_reservation(origin, 0.0)
    with pytest.raises(ValueError, match="before the plan's origin"):
        plan.reserve(1, origin - 1, 10)


@pytest.mark.parametrize("seed", range(3))
def test_sia_vc_decides_as_with_the_plans_definition(monkeypatch: pytest.MonkeyPatch,
                                                     seed: int) -> None:
    """sia-vc's plan checks read the first full moment and a round stops once the plan is
    full at now (issue #16); with every check a MaxReservation and no early stop, every job
    must start and end at the same times."""
    setup = SiaSetup(queues=3, days=2.0, load_range=(1.2, 1.6))
    w = generate_sia_workload(setup, seed=seed)
    fast = run_simulation(sia_cluster(setup), w, "sia-vc", seed=seed).jobs
    monkeypatch.setattr(ResourceTimePlan, "fits", lambda plan, gpus, start, duration:
                        plan.max_reservation(start, duration) + gpus <= plan.capacity)
    monkeypatch.setattr(ResourceTimePlan, "full_at_origin", property(lambda plan: False))
    slow = run_simulation(sia_cluster(setup), w, "sia-vc", seed=seed).jobs
    assert [(r["job_id"], r["start"], r["end"]) for r in fast] == [
        (r["job_id"], r["start"], r["end"]) for r in slow]
    assert sum(r["start"] > r["submit"] for r in fast) > len(w) // 3  # jobs wait: plans matter


@pytest.mark.parametrize("seed", range(2))
def test_sia_vc_keeps_the_waiting_jobs_visits_as_a_fresh_sort_gives_them(
        monkeypatch: pytest.MonkeyPatch, seed: int) -> None:
    """sia-vc keeps the waiting jobs' visits sorted across rounds from the engine's logs
    (issue #16); in every round they must be the waiting jobs' (VST, submit time, 0, id)
    sorted afresh, and the kept durations theirs."""
    setup = SiaSetup(queues=3, days=2.0, load_range=(1.2, 1.6))
    w = generate_sia_workload(setup, seed=seed)
    kept = SiaVirtualClock._pending
    waiting: list[int] = []

    def checked(self: SiaVirtualClock, view: ClusterView, vst: dict[str, float]):
        visits = kept(self, view, vst)
        jobs = view.queue.values()
        assert list(visits) == sorted((vst[j.job_id], j.submit_time, 0, j.job_id) for j in jobs)
        assert list(self._durations) == sorted((j.spec.duration, j.job_id) for j in jobs)
        waiting.append(len(visits))
        return visits

    monkeypatch.setattr(SiaVirtualClock, "_pending", checked)
    run_simulation(sia_cluster(setup), w, "sia-vc", seed=seed)
    assert sum(n > 3 for n in waiting) > 50  # queues form: the kept order is read


def test_sia_lends_idle_quota_when_no_job_will_arrive() -> None:
    w = workload(job("a", "q1", 0, 4, 30), job("b", "q1", 0, 4, 30), job("x", "q2", 7200, 4, 10))
    result = run_simulation(cluster(), w, "sia", settings=PERFECT)
    rows = by_id(result)
    assert rows["b"]["start"] == 0  # q2's idle GPUs, lent within the 60-minute window
    assert rows["x"]["start"] == 7200  # back in time for q2's own job
    base = run_simulation(cluster(), w, "fcfs-pools")
    assert speedups(base.jobs, result.jobs)["slowed_share"] == 0


def test_sia_keeps_quota_for_jobs_about_to_arrive() -> None:
    w = workload(job("a", "q1", 0, 4, 30), job("b", "q1", 0, 4, 30), job("x", "q2", 2400, 4, 10))
    rows = by_id(run_simulation(cluster(), w, "sia", settings=PERFECT))
    assert rows["b"]["start"] == 30 * MIN  # q2 expects load within every window
    assert rows["x"]["start"] == 2400


def test_sia_lends_only_to_jobs_predicted_to_fit_the_window() -> None:
    w = workload(job("a", "q1", 0, 4, 30), job("long", "q1", 0, 4, 800),
                 job("x", "q2", 13 * 3600, 4, 10))
    rows = by_id(run_simulation(cluster(), w, "sia", settings=PERFECT))
    assert rows["long"]["start"] == 30 * MIN  # longer than 720 min: never spare


def test_maxmin_lends_and_slows_the_donor() -> None:
    w = workload(job("a", "q1", 0, 4, 120), job("b", "q1", 0, 4, 600), job("x", "q2", 3600, 4, 10))
    base = run_simulation(cluster(), w, "fcfs-pools")
    shared = run_simulation(cluster(), w, "maxmin")
    rows = by_id(shared)
    assert rows["b"]["start"] == 0  # q2 is idle, so max-min hands its GPUs to q1
    assert rows["x"]["start"] == 120 * MIN  # q2's own job waits for a to finish
    assert speedups(base.jobs, shared.jobs)["slowed_share"] > 0


def test_ssf_prefers_short_service_within_quota_and_gssf_shares() -> None:
    w = workload(job("big", "q1", 0, 4, 60), job("long", "q1", 1, 4, 60),
                 job("short", "q1", 2, 4, 5))
    ssf = by_id(run_simulation(cluster(), w, "ssf"))
    assert ssf["short"]["start"] == 60 * MIN and ssf["long"]["start"] == 65 * MIN
    gssf = by_id(run_simulation(cluster(), w, "gssf"))
    assert gssf["long"]["start"] == 1  # q2's idle server is one global pool
    assert gssf["short"]["start"] == 60 * MIN


def test_sia_vc_starts_early_only_without_delaying_others() -> None:
    w = workload(job("a", "q1", 0, 4, 30), job("b", "q1", 0, 4, 30), job("x", "q2", 600, 4, 10),
                 job("s", "q1", 0, 2, 5))
    rows = by_id(run_simulation(cluster(), w, "sia-vc"))
    assert rows["b"]["start"] == 20 * MIN  # not over x's reservation [600, 1200) s, but
    # right after it, still before its virtual start (30 min)
    assert rows["s"]["start"] == 0  # 5 minutes on q2's GPUs end before x arrives
    assert rows["x"]["start"] == 600


jobs_strategy = st.lists(
    st.tuples(
        st.integers(0, 2),  # queue
        st.integers(0, 240),  # submit minute
        st.sampled_from([1, 1, 2, 4]),  # width
        st.integers(1, 180),  # duration minutes
    ),
    min_size=1,
    max_size=25,
)


@settings(max_examples=60, deadline=None)
@given(jobs_strategy)
def test_theorem_1_sia_vc_never_slows_a_job(specs) -> None:
    w = workload(*(
        job(f"j{i}", f"q{q + 1}", minute * MIN, width, minutes)
        for i, (q, minute, width, minutes) in enumerate(specs)
    ))
    c = cluster(queues=3)
    base = by_id(run_simulation(c, w, "fcfs-pools"))
    shared = by_id(run_simulation(c, w, "sia-vc"))
    for job_id, row in base.items():
        assert shared[job_id]["jct"] <= row["jct"] + 1e-6


def test_sia_learned_predictors_train_online_and_are_deterministic() -> None:
    setup = SiaSetup(queues=4, days=2.0)
    w = generate_sia_workload(setup, seed=5)
    settings_ = {"train_hours": 12.0, "retrain_hours": 12.0}
    first = run_simulation(sia_cluster(setup), w, "sia", settings=settings_, seed=1)
    second = run_simulation(sia_cluster(setup), w, "sia", settings=settings_, seed=1)
    assert first.summary["finished"] == len(w)
    assert first.jobs == second.jobs


def test_learned_predictions_are_made_when_read_as_if_made_at_the_slots_first_call(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A slot's TotalNewLoad is predicted only when a queue's pending jobs leave part of its
    unused quota to reserve, from what the slot's first call saw (history, model). Reading
    every slot's prediction at once, as SIA did before, gives the same schedule with more
    predictions and fits."""
    from simulation.policies.sia.sia import Sia

    setup = SiaSetup(queues=3, days=2.0)  # 436 slots predicted, 343 read, 1 after its first call
    w = generate_sia_workload(setup, seed=1)
    settings_ = {"train_hours": 12.0, "retrain_hours": 6.0}
    calls = {"predict": 0, "fit": 0}
    predict, fit = WillJobsArrive.predict, WillJobsArrive.fit

    def counted_predict(self, *args):
        calls["predict"] += 1
        return predict(self, *args)

    def counted_fit(self, *args):
        calls["fit"] += 1
        return fit(self, *args)

    monkeypatch.setattr(WillJobsArrive, "predict", counted_predict)
    monkeypatch.setattr(WillJobsArrive, "fit", counted_fit)
    deferred = run_simulation(sia_cluster(setup), w, "sia", settings=settings_, seed=1)
    lazy = dict(calls)
    total_new_load = Sia._total_new_load

    def read_at_once(self, view, quotas):
        load = total_new_load(self, view, quotas)
        dict(load)
        return load

    monkeypatch.setattr(Sia, "_total_new_load", read_at_once)
    calls.update(predict=0, fit=0)
    eager = run_simulation(sia_cluster(setup), w, "sia", settings=settings_, seed=1)
    assert deferred.jobs == eager.jobs
    assert 0 < lazy["predict"] < calls["predict"]
    assert 0 < lazy["fit"] <= calls["fit"]


def test_sia_random_predictors_run() -> None:
    setup = SiaSetup(queues=4, days=1.0)
    w = generate_sia_workload(setup, seed=2)
    result = run_simulation(sia_cluster(setup), w, "sia",
                            settings={"arrivals": "random", "durations": "random"})
    assert result.summary["finished"] == len(w)


def test_generator_follows_the_setup() -> None:
    setup = SiaSetup(queues=6, days=2.0)
    w = generate_sia_workload(setup, seed=7)
    assert w.jobs == generate_sia_workload(setup, seed=7).jobs
    assert {j.pool for j in w.jobs} == {f"q{i}" for i in range(1, 7)}
    assert {j.num_gpus for j in w.jobs} <= {1, 2, 4, 8}
    assert all(j.submit_time < 2 * 86400 + 60 for j in w.jobs)
    minutes = np.array([j.duration for j in w.jobs]) / MIN
    assert np.median(minutes) < 100 < np.percentile(minutes, 95)
    assert len(sia_cluster(setup).pools) == 6


def test_arrival_answers_are_monotone_in_the_window() -> None:
    from simulation.policies.sia.sia import monotone_in_window

    answers = monotone_in_window({("q1", 5.0): True, ("q1", 60.0): False, ("q1", 720.0): False,
                                  ("q2", 5.0): False, ("q2", 60.0): True, ("q2", 720.0): False})
    assert answers == {("q1", 5.0): True, ("q1", 60.0): True, ("q1", 720.0): True,
                       ("q2", 5.0): False, ("q2", 60.0): True, ("q2", 720.0): True}


def test_sia_history_period_does_not_lend_then_trains() -> None:
    setup = SiaSetup(queues=4, days=1.5)
    w = generate_sia_workload(setup, seed=3)
    c = sia_cluster(setup)
    base = by_id(run_simulation(c, w, "fcfs-pools"))
    for arrivals in ("learned", "random"):
        shared = by_id(run_simulation(c, w, "sia", seed=1, settings={
            "history_days": 1.0, "arrivals": arrivals}))
        history = [j for j in w.jobs if base[j.job_id]["start"] < 86400 - 3600]
        assert history
        for spec in history:  # scheduled as without sharing, up to the end of history
            assert shared[spec.job_id]["start"] == pytest.approx(base[spec.job_id]["start"])
        assert any(shared[j]["start"] < base[j]["start"] - 1 for j in base)


# --- closed-loop users (SIA §3, issue #16) ---------------------------------------------------

NO_OVERTIME = SiaSetup(off_hours_share=0.0)


@pytest.mark.parametrize(("day", "hour", "expected_day"), [
    (0, 10.0, None),  # Monday 10:00, working hours: at once
    (1, 3.0, 1),      # Tuesday 03:00: Tuesday morning
    (4, 20.0, 7),     # Friday 20:00: next Monday morning
    (5, 12.0, 7),     # Saturday noon: Monday morning
])
def test_users_submit_in_working_hours_or_the_next_working_morning(day, hour, expected_day):
    t = day * 86400.0 + hour * 3600.0
    at = working_time(t, NO_OVERTIME, np.random.default_rng(0))
    if expected_day is None:
        assert at == t
    else:
        assert expected_day * 86400.0 + 9 * 3600.0 <= at < expected_day * 86400.0 + 10 * 3600.0


def test_a_users_working_hours_are_on_their_own_clock():
    # 9 hours ahead: Monday 01:00 in the simulation is 10:00 for the user, at once; Monday
    # 12:00 is 21:00, so the user submits on Tuesday 9-10 local, Tuesday 00:00-01:00 here.
    ahead = 9 * 3600.0
    rng = np.random.default_rng(0)
    assert working_time(3600.0, NO_OVERTIME, rng, ahead) == 3600.0
    at = working_time(12 * 3600.0, NO_OVERTIME, rng, ahead)
    assert 86400.0 <= at < 86400.0 + 3600.0


def test_per_queue_time_zones_give_each_queue_its_own_working_hours():
    """Without overtime every submission of a queue lies in one clock's working hours (9-19,
    plus up to an hour of morning arrivals and a minute of burst spread), and with a clock
    per queue the queues' clocks differ; with a shared one, only UTC fits every queue."""
    def fitting_offsets(jobs) -> set[int]:
        fits = set()
        for hours in range(24):
            local = np.array([j.submit_time for j in jobs]) + hours * 3600.0
            day, hour = np.divmod(local, DAY)
            if ((day % 7 < 5) & (hour >= 9 * 3600.0) & (hour < 19 * 3600.0 + 60.0)).all():
                fits.add(hours)
        return fits

    for zones in TIME_ZONES:
        setup = SiaSetup(queues=4, days=7.0, arrivals="closed-loop", off_hours_share=0.0,
                         time_zones=zones)
        jobs = generate_sia_workload(setup, seed=3).jobs
        fits = [fitting_offsets([j for j in jobs if j.pool == q]) for q in queue_names(setup)]
        assert all(fits)
        if zones == "shared":
            assert all(0 in f for f in fits)
        else:
            assert not set.intersection(*fits)
    with pytest.raises(ValueError, match="time_zones"):
        generate_sia_workload(SiaSetup(arrivals="closed-loop", time_zones="mars"))


def test_closed_loop_users_wait_for_their_results_before_the_next_burst():
    setup = SiaSetup(queues=2, days=14.0, arrivals="closed-loop")
    jobs = generate_sia_workload(setup, seed=4).jobs
    assert jobs == generate_sia_workload(setup, seed=4).jobs
    by_user: dict[str, list[list]] = {}
    for job in jobs:  # experiment tags are <queue>-u<user>-e<n>; a burst spans < 60 s
        bursts = by_user.setdefault(job.experiment.rsplit("-", 1)[0], [])
        if not bursts or job.submit_time - bursts[-1][0].submit_time > 60.0:
            bursts.append([])
        bursts[-1].append(job)
    gaps = 0
    for bursts in by_user.values():
        for burst, following in zip(bursts, bursts[1:], strict=False):
            longest = max(job.duration for job in burst)
            # jobs of a burst arrive within 60 s of its start (burst_spread_seconds)
            assert following[0].submit_time >= burst[0].submit_time + longest - 60.0
            gaps += 1
    assert gaps > 100
    weekend = [j for j in jobs if int(j.submit_time // 86400) % 7 >= 5]
    assert len(weekend) < 0.05 * len(jobs)  # only users working on from Friday


def test_arrival_predictor_learns_closed_loop_arrivals():
    # With Poisson bursts the features carry nothing (ROC AUC ~0.5, benchmarks/README.md);
    # users who submit after their results and in working hours are predictable.
    setup = SiaSetup(queues=4, days=21.0, arrivals="closed-loop")
    workload = generate_sia_workload(setup, seed=0)
    starts = virtual_start_times(workload.jobs, queue_quotas(sia_cluster(setup)))
    split = 14 * DAY
    model = WillJobsArrive((60.0,), seed=0).fit(
        pool_histories(workload.jobs, starts, until=split), 0.0, split)
    auc = model.roc_auc(pool_histories(workload.jobs, starts), split, 21 * DAY)[60.0]
    assert auc > 0.8


def test_closed_loop_crowd_meets_each_queues_load() -> None:
    """§6.1: a queue's average load is the drawn one (0.8 here: 0.8 × 8 GPUs × 14 days of
    GPU-time); whole users alone missed it by up to a quarter, a part-time user closes it."""
    setup = SiaSetup(queues=3, days=14.0, arrivals="closed-loop", load_range=(0.8, 0.8))
    w = generate_sia_workload(setup, seed=1)
    capacity = setup.gpus_per_queue * setup.days * DAY
    for queue in ("q1", "q2", "q3"):
        work = sum(j.num_gpus * j.duration for j in w.jobs if j.pool == queue)
        assert work / capacity == pytest.approx(0.8, rel=0.05)


def test_a1_median_duration_is_five_eighths_into_the_short_mode():
    # 0.8 of the mass is uniform on [sqrt(10), 100]: the median is 0.5 / 0.8 of the way.
    assert A1_MEDIAN_MINUTES == pytest.approx(10 ** 0.5 + 0.625 * (100 - 10 ** 0.5))
    assert QueueProfile(8, median_minutes=2 * A1_MEDIAN_MINUTES).duration_scale == 2.0


def test_burst_widths_stop_at_the_first_job_that_does_not_fit():
    rng = np.random.default_rng(0)
    eights = QueueProfile(16, width_weights=(0.0, 0.0, 0.0, 1.0), fill_burst=False)
    assert _burst_widths(12, eights, rng) == [8]  # a second 8 does not fit the 4 left
    assert _burst_widths(16, eights, rng) == [8, 8]
    assert _burst_widths(3, eights, rng) == [8]  # the first job always goes in
    ones = QueueProfile(8, width_weights=(1.0, 0.0, 0.0, 0.0))  # A.1's filling
    assert _burst_widths(5, ones, rng) == [1] * 5


def test_table12_mix_has_the_papers_queues():
    setup = SiaSetup(queues=4, days=8.0, arrivals="closed-loop", queue_mix="table12")
    quotas = [pool.quota_gpus for pool in sia_cluster(setup).pools]
    assert quotas == [3, 16, 2, 8]
    jobs = generate_sia_workload(setup, seed=0).jobs
    for queue, (width, _minutes, quota, load) in zip(queue_names(setup), TABLE_12_QUEUES,
                                                    strict=True):
        mine = [j for j in jobs if j.pool == queue]
        assert max(j.num_gpus for j in mine) <= quota
        assert np.median([j.num_gpus for j in mine]) == width
        if len(mine) >= 100:  # a queue of a few day-long bursts meets its load only roughly
            gpu_seconds = sum(j.num_gpus * j.duration for j in mine)
            assert gpu_seconds / (quota * 8 * DAY) == pytest.approx(load, rel=0.1)
    short = [j.duration / MIN for j in jobs if j.pool == "q3"]
    assert np.median(short) == pytest.approx(2.0, rel=0.1)  # Table 12's 2-minute queue


def test_varied_mix_draws_each_queue_from_the_seed():
    setup = SiaSetup(queues=6, queue_mix="varied")
    profiles = queue_profiles(setup, seed=4)
    assert profiles == queue_profiles(setup, seed=4)
    assert profiles != queue_profiles(setup, seed=5)
    for profile in profiles:
        width = int(WIDTHS[int(np.argmax(profile.width_weights))])
        assert profile.quota == max(8, 2 * width)
        assert 2.0 <= profile.median_minutes <= 1340.0 and not profile.fill_burst
    assert queue_profiles(SiaSetup(queues=3), seed=4) == [QueueProfile(8)] * 3
    with pytest.raises(ValueError, match="table12' has 4 queues"):
        queue_profiles(SiaSetup(queues=3, queue_mix="table12"))


@pytest.mark.parametrize(("policy", "settings_"), [
    ("sia", {"preemption": True, "train_hours": 12.0}),
    ("hived", {"preemption": True}),
    ("maxmin", {}),
])
def test_kept_queues_equal_a_pass_over_the_queue(monkeypatch: pytest.MonkeyPatch, policy: str,
                                                 settings_: dict) -> None:
    """`PendingByQueue` keeps each queue's waiting jobs from the engine's logs; every round
    it must give what a pass over the whole queue gives (`QueueUsage.of`), jobs put back in
    the queue by preemption included (their queue is re-sorted by submit time)."""
    from simulation.policies.sia.common import PendingByQueue, QueueUsage
    from simulation.reproductions.sia import preemptible_share

    usage = PendingByQueue.usage
    rounds = []

    def compared(self, view, quotas):
        kept = usage(self, view, quotas)
        fresh = QueueUsage.of(view, quotas)
        assert kept.allocation == fresh.allocation, view.now
        assert ({q: [j.job_id for j in jobs] for q, jobs in kept.pending.items()}
                == {q: [j.job_id for j in jobs] for q, jobs in fresh.pending.items()}), view.now
        assert ({q: jobs.gpus for q, jobs in kept.pending.items()}
                == {q: jobs.gpus for q, jobs in fresh.pending.items()}), view.now
        rounds.append(sum(map(len, kept.pending.values())))
        return kept

    monkeypatch.setattr(PendingByQueue, "usage", compared)
    setup = SiaSetup(queues=3, days=2.0)
    w = preemptible_share(generate_sia_workload(setup, seed=1), 0.5, seed=1)
    result = run_simulation(sia_cluster(setup), w, policy, settings=settings_, seed=1)
    assert result.summary["finished"] == len(w)
    assert len(rounds) > 100 and max(rounds) > 10
    if policy != "maxmin":
        assert result.summary["preemptions"] > 0


def test_waiting_jobs_read_as_a_list_less_the_jobs_taken() -> None:
    from simulation.policies.sia.common import WaitingJobs

    class Waiting:
        def __init__(self, job_id: str, gpus: int) -> None:
            self.job_id = job_id
            self.spec = JobSpec(job_id, 0.0, gpus, 60.0)

    a, b, c = Waiting("a", 1), Waiting("b", 2), Waiting("c", 4)
    waiting = WaitingJobs({"a": a, "b": b, "c": c})
    assert waiting.gpus == 7
    assert waiting.pop(0) is a
    assert [j.job_id for j in waiting] == ["b", "c"] and len(waiting) == 2 and waiting.gpus == 6
    assert waiting[-1] is c and waiting[1] is c
    waiting.remove(c)
    assert [j.job_id for j in waiting] == ["b"] and waiting[0] is b and bool(waiting)
    assert waiting.gpus == 2
    with pytest.raises(ValueError):
        waiting.remove(a)
    with pytest.raises(IndexError):
        waiting[1]
    assert waiting.pop() is b and not waiting


def test_observed_queue_builds_the_history_of_an_earlier_moment() -> None:
    """SIA builds a slot's history only if a prediction reads it, later: starts and ends
    set since, and jobs seen since, must not show in it."""
    from simulation.policies.sia.sia import _ObservedQueue

    seen = _ObservedQueue()
    a, b = seen.add(0.0, 1), seen.add(10.0, 2)
    seen.set(seen.starts, a, 5.0)
    mark = seen.mark()
    seen.set(seen.starts, b, 20.0)
    seen.set(seen.ends, a, 30.0)
    seen.set(seen.ends, a, 31.0)  # twice since the mark: the history keeps the first value
    seen.add(40.0, 4)
    then = seen.history(mark, {b: 99.0})
    assert then.arrivals.tolist() == [0.0, 10.0] and then.widths.tolist() == [1, 2]
    assert then.starts.tolist() == [5.0, math.inf]
    assert then.ends.tolist() == [math.inf, 99.0]  # b's end as expected at the mark
    now = seen.history(seen.mark(), {})
    assert now.starts.tolist() == [5.0, 20.0, math.inf] and now.ends.tolist()[0] == 31.0


def test_sia_observes_each_jobs_first_start_and_its_end() -> None:
    """The history SIA learns from holds, per job in arrival order, when it first started
    (recorded in the round that starts it) and when it finished."""
    from simulation.composition import create_policy
    from simulation.engine import Simulation

    setup = SiaSetup(queues=3, days=1.0)
    w = generate_sia_workload(setup, seed=2)
    policy = create_policy("sia", {"arrivals": "random"}, seed=2)
    rows = by_id(Simulation(sia_cluster(setup), w, policy).run())
    for queue, seen in policy._queues.items():
        jobs = sorted((j for j in w.jobs if j.pool == queue),
                      key=lambda j: (j.submit_time, w.jobs.index(j)))
        assert seen.starts == pytest.approx([rows[j.job_id]["start"] for j in jobs], abs=1e-5)
        assert seen.ends == pytest.approx([rows[j.job_id]["end"] for j in jobs], abs=1e-5)
