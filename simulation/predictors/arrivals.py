"""WillJobsArrive and NewLoadEstimate (SIA §5.4.1, Tables 9 and 10).

WillJobsArrive(pool, k) says whether any job will arrive in a pool within the next k
minutes; one gradient-boosted classifier per window, shared by all pools (pool specifics
flow through the features). Features (Table 9), for a sample time t and window k:

- periodic: arrivals in (t - x p, t - x p + k] for x in 1, 2, 3 and p in one hour, one day;
- recent arrivals: arrivals in (t - x k, t] for x in 1, 10, 100;
- recent completions: completions in (t - x k, t] for x in 1, 10, 100;
- future completions: running jobs expected to end in (t, t + k] and after t + k.

The classifier is scikit-learn's HistGradientBoostingClassifier (the paper used XGBoost
with default parameters "for skewed datasets"; histogram boosting is the same family) with
balanced class weights, because a missed arrival (predicting none when jobs come) is what
causes slowdowns, and early stopping on a 10% validation split (always on, not only above
10,000 samples: the policy retrains online and full 100-round fits cost seconds each).
In history, "expected" completions are the actual ones; online, the scheduler passes its
estimates.

Too little history to learn from: a window whose training samples hold fewer than
`MIN_CLASS_SAMPLES` of either label (no samples, one label only, or a handful of arrivals
in a quiet day) is answered by a constant instead of a classifier: "no" when samples exist
and none of them saw an arrival, else "yes". Ten of each label is what the 10 % validation
split of early stopping needs to hold out at least one of each; with fewer it scores on one
label only, and a single member cannot be split at all (scikit-learn's "least populated
class" error). "Yes" is the conservative answer (SIA §5.4 prefers a missed share to a slowdown):
it reserves only NewLoadEstimate, the GPUs that recently arrived, and reserves nothing when
no job arrived in the last `recent_windows` windows.

NewLoadEstimate(pool, k) is a sliding maximum: the largest number of GPUs that arrived in
the pool in any of the last `recent_windows` windows of k minutes.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass

import numpy as np

from simulation.model import JobSpec

HOUR = 3600.0
DAY = 86400.0
WINDOWS_MINUTES = (5.0, 60.0, 720.0)
SAMPLE_STEP = 300.0  # one prediction every 5 minutes per pool, as in Figure 21
MIN_CLASS_SAMPLES = 10  # fewer of either label: a constant answer (see the module docstring)


@dataclass(frozen=True, slots=True)
class PoolHistory:
    """What a scheduler has seen of one pool: arrivals, and when those jobs ran.

    `starts`/`ends` are per job in arrival order; `inf` marks not started / not finished
    (online, `ends` of running jobs may hold expected completion times).
    """

    arrivals: np.ndarray
    widths: np.ndarray
    starts: np.ndarray
    ends: np.ndarray

    @classmethod
    def of(cls, arrivals: Sequence[float], widths: Sequence[int], starts: Sequence[float],
           ends: Sequence[float]) -> PoolHistory:
        order = np.argsort(np.asarray(arrivals, dtype=float), kind="stable")
        return cls(*(np.asarray(values, dtype=float)[order]
                     for values in (arrivals, widths, starts, ends)))


def pool_histories(
    jobs: Iterable[JobSpec], starts: Mapping[str, float], *, until: float = np.inf
) -> dict[str, PoolHistory]:
    """Histories per pool from a trace and its start times (e.g. the no-sharing schedule).

    Only what is visible at `until` is kept: later arrivals are dropped, later starts and
    ends become `inf`.
    """
    rows: dict[str, tuple[list[float], list[int], list[float], list[float]]] = {}
    for spec in jobs:
        if spec.submit_time > until:
            continue
        arrivals, widths, begun, ended = rows.setdefault(spec.pool or "", ([], [], [], []))
        start = starts.get(spec.job_id, np.inf)
        end = start + spec.duration
        arrivals.append(spec.submit_time)
        widths.append(spec.num_gpus)
        begun.append(start if start <= until else np.inf)
        ended.append(end if end <= until else np.inf)
    return {pool: PoolHistory.of(*columns) for pool, columns in sorted(rows.items())}


def _count(sorted_values: np.ndarray, low: np.ndarray, high: np.ndarray) -> np.ndarray:
    """How many values lie in (low, high], elementwise."""
    return (np.searchsorted(sorted_values, high, side="right")
            - np.searchsorted(sorted_values, low, side="right"))


def table9_features(history: PoolHistory, times: np.ndarray, window: float) -> np.ndarray:
    """Table 9's 14 features at each of `times` for a window of `window` seconds."""
    times = np.asarray(times, dtype=float)
    arrivals = history.arrivals
    ends = np.sort(history.ends)
    columns = [
        _count(arrivals, times - x * period, times - x * period + window)
        for period in (HOUR, DAY) for x in (1, 2, 3)
    ]
    columns += [_count(arrivals, times - x * window, times) for x in (1, 10, 100)]
    columns += [_count(ends, times - x * window, times) for x in (1, 10, 100)]
    started = np.searchsorted(np.sort(history.starts), times, side="right")
    ended = np.searchsorted(ends, times, side="right")
    # started by t and ended by t + window  <=>  max(start, end - window) <= t
    by_window = np.searchsorted(
        np.sort(np.maximum(history.starts, history.ends - window)), times, side="right")
    within = by_window - ended
    columns += [within, started - ended - within]
    return np.column_stack(columns).astype(float)


def arrival_labels(history: PoolHistory, times: np.ndarray, window: float) -> np.ndarray:
    """1 where at least one job arrives in (t, t + window]."""
    return (_count(history.arrivals, times, times + window) > 0).astype(int)


def new_load_estimate(
    history: PoolHistory, now: float, window: float, recent_windows: int = 12
) -> float:
    """Most GPUs that arrived in any of the last `recent_windows` windows (a sliding max)."""
    edges = now - window * np.arange(recent_windows + 1)[::-1]
    cumulative = np.concatenate(([0.0], np.cumsum(history.widths)))
    index = np.searchsorted(history.arrivals, edges, side="right")
    return float(np.diff(cumulative[index]).max(initial=0.0))


_threadpools = None


def _one_thread() -> AbstractContextManager[object]:
    """Run scikit-learn single-threaded: OpenMP start-up dominates on one-row predictions
    and oversubscribes a small shared machine. The controller is built once (cheap reuse)."""
    global _threadpools
    if _threadpools is None:
        from threadpoolctl import ThreadpoolController

        _threadpools = ThreadpoolController()
    return _threadpools.limit(limits=1)


@dataclass(frozen=True, slots=True)
class WindowScore:
    precision: float
    recall: float
    f_score: float
    samples: int
    positives: int


class WillJobsArrive:
    """One classifier per window (minutes), trained on all pools' history at once."""

    def __init__(self, windows_minutes: Sequence[float] = WINDOWS_MINUTES, *, seed: int = 0,
                 step: float = SAMPLE_STEP) -> None:
        self.windows_minutes = tuple(windows_minutes)
        self.seed = seed
        self.step = step
        self._models: dict[float, object] = {}
        self._constants: dict[float, int] = {}

    def _dataset(self, histories: Mapping[str, PoolHistory], start: float, end: float,
                 window: float) -> tuple[np.ndarray, np.ndarray]:
        times = np.arange(start, end - window, self.step)
        if times.size == 0:
            return np.empty((0, 14)), np.empty(0, dtype=int)
        features = [table9_features(h, times, window) for h in histories.values()]
        labels = [arrival_labels(h, times, window) for h in histories.values()]
        return np.vstack(features), np.concatenate(labels)

    def fit(self, histories: Mapping[str, PoolHistory], start: float, end: float
            ) -> WillJobsArrive:
        """Train on samples every `step` seconds in [start, end - window) of every pool
        (a window with too little history gets a constant answer, as the module says)."""
        from sklearn.ensemble import HistGradientBoostingClassifier

        self._models.clear()
        self._constants.clear()
        for minutes in self.windows_minutes:
            features, labels = self._dataset(histories, start, end, minutes * 60.0)
            arrived = int(labels.sum())
            if min(arrived, labels.size - arrived) < MIN_CLASS_SAMPLES:
                self._constants[minutes] = int(labels.size == 0 or arrived > 0)
                continue
            model = HistGradientBoostingClassifier(
                class_weight="balanced", early_stopping=True, random_state=self.seed)
            with _one_thread():
                self._models[minutes] = model.fit(features, labels)
        return self

    @property
    def trained(self) -> bool:
        return bool(self._models or self._constants)

    def predict(self, histories: Mapping[str, PoolHistory], now: float
                ) -> dict[tuple[str, float], bool]:
        """(pool, window minutes) -> will any job arrive in (now, now + window]."""
        pools = list(histories)
        answers: dict[tuple[str, float], bool] = {}
        times = np.array([now])
        for minutes in self.windows_minutes:
            if minutes in self._constants:
                for pool in pools:
                    answers[(pool, minutes)] = bool(self._constants[minutes])
                continue
            features = np.vstack(
                [table9_features(histories[p], times, minutes * 60.0) for p in pools])
            with _one_thread():
                predicted = self._models[minutes].predict(features)
            for pool, value in zip(pools, predicted, strict=True):
                answers[(pool, minutes)] = bool(value)
        return answers

    def roc_auc(self, histories: Mapping[str, PoolHistory], start: float, end: float
                ) -> dict[float, float]:
        """ROC AUC of the arrival probability per window on [start, end): 0.5 means the
        features do not rank arrivals above quiet periods at all (nan: one class only)."""
        from sklearn.metrics import roc_auc_score

        aucs: dict[float, float] = {}
        for minutes in self.windows_minutes:
            features, labels = self._dataset(histories, start, end, minutes * 60.0)
            if minutes in self._constants or np.unique(labels).size < 2:
                aucs[minutes] = float("nan")
                continue
            with _one_thread():
                probability = self._models[minutes].predict_proba(features)[:, 1]
            aucs[minutes] = float(roc_auc_score(labels, probability))
        return aucs

    def evaluate(self, histories: Mapping[str, PoolHistory], start: float, end: float
                 ) -> dict[float, WindowScore]:
        """Precision, recall and F-score per window on [start, end) (Table 10)."""
        from sklearn.metrics import precision_recall_fscore_support

        scores: dict[float, WindowScore] = {}
        for minutes in self.windows_minutes:
            features, labels = self._dataset(histories, start, end, minutes * 60.0)
            if minutes in self._constants:
                predicted = np.full(labels.shape, self._constants[minutes])
            else:
                with _one_thread():
                    predicted = self._models[minutes].predict(features)
            precision, recall, f_score, _ = precision_recall_fscore_support(
                labels, predicted, average="binary", zero_division=0)
            scores[minutes] = WindowScore(float(precision), float(recall), float(f_score),
                                          int(labels.size), int(labels.sum()))
        return scores
