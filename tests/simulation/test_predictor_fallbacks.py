"""SIA's predictors with too little history answer by their documented simple rules.

WillJobsArrive: fewer than MIN_CLASS_SAMPLES (10) samples of either label -> a constant,
"no" when samples exist and none saw an arrival, else "yes". JobDuration: the experiment's
median, else a quantile of the pool's same-width jobs, else of the whole pool, else the last
bin. Samples are taken every 300 s in [start, end - window); with a 5-minute window a sample
at t is positive when a job arrives in (t, t + 300].
"""

from __future__ import annotations

import math

import pytest

from simulation.model import JobSpec
from simulation.predictors.arrivals import DAY, MIN_CLASS_SAMPLES, PoolHistory, WillJobsArrive
from simulation.predictors.durations import LAST_BIN, JobDurationPredictor

FIVE_MINUTES = 5.0


def arrivals_at(*times: float) -> dict[str, PoolHistory]:
    """One pool whose jobs arrived at `times` and ran for a minute from arrival."""
    return {"q1": PoolHistory.of(times, [1] * len(times), times, [t + 60 for t in times])}


def answers(model: WillJobsArrive, histories: dict[str, PoolHistory], now: float) -> bool:
    return model.predict(histories, now)[("q1", FIVE_MINUTES)]


def test_no_samples_answer_yes() -> None:
    # [0, 100) is shorter than the 300 s window: arange(0, 100 - 300, 300) holds no sample
    history = arrivals_at(50.0)
    model = WillJobsArrive((FIVE_MINUTES,)).fit(history, 0.0, 100.0)
    assert model.trained
    assert answers(model, history, 100.0) is True


def test_samples_without_any_arrival_answer_no() -> None:
    # 11 samples at 0, 300, ..., 3000 s; the only arrival (5000 s) lies after all of them
    history = arrivals_at(5000.0)
    model = WillJobsArrive((FIVE_MINUTES,)).fit(history, 0.0, 3600.0)
    assert answers(model, history, 3600.0) is False


def test_a_single_arrival_in_a_quiet_day_answers_yes_instead_of_failing() -> None:
    # muri_trace3's first day: jobs at 0 s and 1456 s. 287 samples (0 .. 85 800 s); only
    # t = 1200 s sees an arrival in (t, t + 300]. One positive used to stop the run with
    # scikit-learn's "least populated class" error.
    history = arrivals_at(0.0, 1456.0)
    model = WillJobsArrive((FIVE_MINUTES,)).fit(history, 0.0, DAY)
    assert answers(model, history, DAY) is True
    assert math.isnan(model.roc_auc(history, 0.0, DAY)[FIVE_MINUTES])  # a constant, no scores


@pytest.mark.parametrize(("positives", "classifier"), [(MIN_CLASS_SAMPLES - 1, False),
                                                       (MIN_CLASS_SAMPLES, True)])
def test_ten_arrivals_of_each_label_are_needed_to_train(positives: int, classifier: bool) -> None:
    # an arrival at 600 j + 150 s is seen by the sample at t = 600 j alone: `positives`
    # positive samples against 287 - positives negative ones
    history = arrivals_at(*(600.0 * j + 150.0 for j in range(positives)))
    model = WillJobsArrive((FIVE_MINUTES,), seed=0).fit(history, 0.0, DAY)
    auc = model.roc_auc(history, 0.0, DAY)[FIVE_MINUTES]
    assert math.isnan(auc) is not classifier


def test_duration_falls_back_from_tag_to_width_to_pool_to_the_last_bin() -> None:
    predictor = JobDurationPredictor(min_tag_jobs=2, fallback_quantile=0.9)
    new = JobSpec("n", 0, 2, 0, pool="q1", experiment="e1")
    assert predictor.estimate(new) is None  # nothing finished yet
    assert predictor.predict_bin(new) == LAST_BIN  # so it never runs on spare GPUs

    predictor.observe(JobSpec("w4a", 0, 4, 0, pool="q1"), 600.0)
    predictor.observe(JobSpec("w4b", 0, 4, 0, pool="q1"), 1200.0)
    # no 2-GPU job finished in q1: the pool's 0.9 quantile, 600 + 0.9 * (1200 - 600)
    assert predictor.estimate(new) == pytest.approx(1140.0)
    assert predictor.predict_bin(new) == 1  # 19 minutes lies in (5, 60]

    predictor.observe(JobSpec("w2", 0, 2, 0, pool="q1"), 7200.0)
    assert predictor.estimate(new) == pytest.approx(7200.0)  # same pool and width wins
    predictor.observe(JobSpec("t1", 0, 1, 0, pool="q1", experiment="e1"), 120.0)
    assert predictor.estimate(new) == pytest.approx(7200.0)  # one tagged job is too few
    predictor.observe(JobSpec("t2", 0, 1, 0, pool="q1", experiment="e1"), 240.0)
    assert predictor.estimate(new) == pytest.approx(180.0)  # the tag's median of two
