"""SIA's predictors (§5.4): Table 9 features, the sliding-max load, duration bins, and the
WillJobsArrive classifier trained on history and scored on the rest (Table 10)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from simulation.model import JobSpec
from simulation.policies.sia.common import queue_quotas, virtual_start_times
from simulation.predictors.arrivals import (
    DAY,
    HOUR,
    PoolHistory,
    WillJobsArrive,
    arrival_labels,
    new_load_estimate,
    pool_histories,
    table9_features,
)
from simulation.predictors.durations import LAST_BIN, JobDurationPredictor, duration_bin
from simulation.workloads.sia import SiaSetup, generate_sia_workload, sia_cluster


def history() -> PoolHistory:
    # arrivals at 1 h, 2 h, 1 day and 1 day + 30 min; the jobs ran [s, e)
    return PoolHistory.of(
        arrivals=[HOUR, 2 * HOUR, DAY, DAY + 1800],
        widths=[1, 2, 4, 8],
        starts=[HOUR, 2 * HOUR, DAY, math.inf],
        ends=[2 * HOUR, DAY + 600, math.inf, math.inf],
    )


def test_table9_features_count_each_window() -> None:
    now = DAY + HOUR
    features = table9_features(history(), np.array([now]), 3600.0)[0]
    periodic_hour = features[0:3]  # (now - x h, now - x h + 1 h]
    assert list(periodic_hour) == [1, 1, 0]  # 1 day + 30 min, then 1 day
    periodic_day = features[3:6]
    assert list(periodic_day) == [1, 0, 0]  # the arrival at 2 h lies in (1 h, 2 h]
    assert list(features[6:9]) == [1, 2, 4]  # arrivals in the last 1, 10, 100 hours
    assert list(features[9:12]) == [1, 1, 2]  # completions in the last 1, 10, 100 hours
    assert list(features[12:14]) == [0, 1]  # one job running, ending after the window


def test_future_completions_split_at_the_window() -> None:
    h = PoolHistory.of([0, 0], [1, 1], [0, 0], [100, 5000])
    features = table9_features(h, np.array([50.0]), 300.0)[0]
    assert list(features[12:14]) == [1, 1]
    assert arrival_labels(h, np.array([-1.0, 0.0]), 10.0).tolist() == [1, 0]


def test_new_load_estimate_is_a_sliding_max() -> None:
    h = PoolHistory.of([10, 20, 700, 1300], [1, 2, 8, 1], [0] * 4, [0] * 4)
    assert new_load_estimate(h, 1400, 600, recent_windows=2) == 8  # (200, 800] holds 8
    assert new_load_estimate(h, 1400, 600, recent_windows=1) == 1
    assert new_load_estimate(h, 5000, 600, recent_windows=2) == 0


def test_duration_bins_and_history_fallbacks() -> None:
    assert [duration_bin(s) for s in (60, 300, 301, 3600, 43200, 43201)] == [0, 0, 1, 1, 2, 3]
    predictor = JobDurationPredictor(min_tag_jobs=2)
    spec = JobSpec("a", 0, 2, 100, pool="q1", experiment="e1")
    assert predictor.predict_bin(spec) == LAST_BIN  # nothing known: never spare
    predictor.observe(JobSpec("b", 0, 2, 0, pool="q1", experiment="e2"), 7200)
    assert predictor.predict_bin(spec) == 2  # same pool and width
    predictor.observe(JobSpec("c", 0, 1, 0, pool="q1", experiment="e1"), 120)
    predictor.observe(JobSpec("d", 0, 1, 0, pool="q1", experiment="e1"), 240)
    assert predictor.estimate(spec) == 180  # same experiment tag wins
    assert predictor.predict_bin(spec) == 0


def test_will_jobs_arrive_trains_on_history_and_scores_the_rest() -> None:
    setup = SiaSetup(queues=4, days=6.0)
    w = generate_sia_workload(setup, seed=11)
    starts = virtual_start_times(w.jobs, queue_quotas(sia_cluster(setup)))
    split = 4 * DAY
    model = WillJobsArrive(seed=0).fit(pool_histories(w.jobs, starts, until=split), 0, split)
    scores = model.evaluate(pool_histories(w.jobs, starts), split, 6 * DAY)
    assert set(scores) == {5.0, 60.0, 720.0}
    for score in scores.values():
        assert 0 <= score.precision <= 1 and 0 <= score.recall <= 1 and score.samples > 0
    assert scores[720.0].recall > 0.5  # half-day windows almost always see arrivals
    answers = model.predict(pool_histories(w.jobs, starts, until=split), split)
    assert set(answers) == {(q, m) for q in ("q1", "q2", "q3", "q4") for m in (5.0, 60.0, 720.0)}


def test_pool_histories_hide_the_future() -> None:
    jobs = [JobSpec("a", 0, 1, 100, pool="q1"), JobSpec("b", 50, 1, 100, pool="q1"),
            JobSpec("c", 500, 1, 10, pool="q1")]
    h = pool_histories(jobs, {"a": 0, "b": 100, "c": 500}, until=150)["q1"]
    assert h.arrivals.tolist() == [0, 50]
    assert h.starts.tolist() == [0, 100]
    assert h.ends.tolist() == [100, math.inf]


def test_roc_auc_ranks_periodic_arrivals_and_is_nan_for_constants() -> None:
    # a job every two hours exactly: "arrivals two hours ago in the same window" is the label
    arrivals = np.arange(0.0, 10 * DAY, 2 * HOUR)
    ends = arrivals + 600
    pools = {"q1": PoolHistory.of(arrivals, [1] * arrivals.size, arrivals, ends)}
    model = WillJobsArrive((60.0, 720.0), seed=0).fit(pools, 0, 7 * DAY)
    aucs = model.roc_auc(pools, 7 * DAY, 10 * DAY)
    assert aucs[60.0] > 0.95
    assert math.isnan(aucs[720.0])  # every 12-hour window sees arrivals: one class


def test_duration_fallback_is_a_high_quantile_of_the_pool() -> None:
    # untagged history of 9 short jobs and 1 long one: a new experiment may be the long kind
    predictor = JobDurationPredictor(fallback_quantile=0.9)
    median = JobDurationPredictor(fallback_quantile=0.5)
    for i, seconds in enumerate([600.0] * 9 + [36000.0]):
        for p in (predictor, median):
            p.observe(JobSpec(f"j{i}", 0, 1, 0, pool="q1", experiment=f"e{i}"), seconds)
    new = JobSpec("n", 0, 1, 0, pool="q1", experiment="fresh")
    assert median.predict_bin(new) == 1  # the median says "under an hour": lent, risky
    assert predictor.estimate(new) == pytest.approx(600 + 0.1 * (36000 - 600))
    assert predictor.predict_bin(new) == 2
