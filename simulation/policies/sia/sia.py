"""sia: anticipatory sharing of idle quota with coarse predictions (SIA §5.3–§5.4,
Figures 7 and 8).

Each round (on arrivals, completions and every 5 minutes):
1. Dedicated allocation (Figure 7): visiting queues in increasing allocation / quota, start
   the FCFS head of a queue if it fits the queue's unused dedicated quota and the idle
   GPUs (a head wider than the quota starts when the queue holds no dedicated GPUs, as in
   fcfs-pools); repeat until no queue can start its head.
2. Spare allocation (Figure 8): for each window w (5, 60, 720 minutes, ascending), reserve
   for every queue min(pending GPUs + TotalNewLoad(q, w), quota - dedicated allocation);
   usable = idle GPUs - reservations. Visiting queues in increasing allocation / quota,
   start the first pending job (FCFS among those eligible, out of order) whose width fits
   `usable` and whose predicted duration bin ends within w; recompute and repeat until
   none. Spare jobs do not count against their queue's dedicated quota.

Predictors (switches for the §6.3 ablation):
- `arrivals=learned`: TotalNewLoad = NewLoadEstimate (sliding max over `load_windows`
  windows) where WillJobsArrive (Table 9 features, gradient boosting) says jobs come, else
  0. The classifier learns online from what this policy has observed: first after
  `train_hours` of history, then every `retrain_hours`. Until then each queue's whole
  unused quota stays reserved (no lending); a window with too little history to train on
  (a quiet first day) gets WillJobsArrive's constant answer instead of a classifier.
  Answers are made monotone in the window (jobs within 5 minutes are jobs within 60).
- `history_days` > 0 (§5.4.1: "trained on three weeks of history"): the trace's first
  `history_days` are a history period. The policy schedules them without lending, as the
  production scheduler that produced such a history would, observes them like any jobs
  and trains WillJobsArrive on [first arrival, history end) at the end of the period,
  then retrains every `retrain_hours`; JobDuration learns from the history's completions.
  The history is observed as it is simulated, so no oracle (`upcoming_jobs`) is read:
  the trace's jobs are simulated anyway, and observing them cannot leak the future.
  Only jobs submitted after the history are the evaluated part.
- `arrivals=perfect`: the exact GPUs that will arrive in (now, now + w] (an oracle).
- `arrivals=random`: WillJobsArrive ~ U{0, 1} per queue, window and round; load as learned.
- `durations=learned` (§5.4.2: experiment tag, else pool history), `perfect` (true bin) or
  `random` (a uniformly random bin of the four).

Choices: TotalNewLoad (WillJobsArrive and NewLoadEstimate) is evaluated at most once per
5-minute slot, as the paper predicts every 5 minutes per pool; a running job's expected
end for the future-completion features is its estimated duration minus the time it has
run; jobs are non-preemptive and placed on any free GPUs, their own queue's servers first.

§5.5 extensions, both off by default (then every decision is the one above):
- `locality=cells`: every job runs on one server in a buddy cell of its width
  (`locality.CellPlacer`, `cells.BuddyCells`); a dedicated head must fit its queue's quota
  cells and a free cell; each window's reservations are held as cells, and when one does
  not fit no job is lent GPUs in that window; a lent job never starts in a buddy cell of a
  dedicated or reserved one.
- `preemption=true` (partial preemption; the paper gives no formula, ours): let P be the
  GPUs of running lent jobs whose spec is preemptible and c = `preemption_cost` seconds.
  Within window w such a GPU is recoverable at a price c out of w, so the reservation R of
  Figure 8 shrinks to max(0, R - P * max(0, 1 - c / w)), every queue's share in proportion
  (`discounted_reservations`). And a dedicated head within quota that would otherwise wait
  preempts lent preemptible jobs to make room: the latest started first until enough GPUs
  are idle, or with cells those of the cell freed by evicting the fewest GPUs. Dedicated
  jobs are never preempted. The engine's `restart_overhead` is what a restart really costs.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Mapping

import numpy as np

from simulation.decisions import Decision, Preempt
from simulation.errors import InputError
from simulation.model import ClusterSpec, Workload
from simulation.policies.base import Param, register
from simulation.policies.sia.cells import DEDICATED, OPPORTUNISTIC
from simulation.policies.sia.common import (
    QueuePolicy,
    QueueUsage,
    idle_gpus,
    place_shared,
    queue_of,
    queue_quotas,
)
from simulation.policies.sia.locality import LOCALITY, CellPlacer, check_cells
from simulation.predictors.arrivals import (
    SAMPLE_STEP,
    PoolHistory,
    WillJobsArrive,
    new_load_estimate,
)
from simulation.predictors.durations import (
    LAST_BIN,
    JobDurationPredictor,
    bin_limit_seconds,
    duration_bin,
)
from simulation.state import JobStatus
from simulation.view import ClusterView, JobView

PREDICTORS = ("learned", "perfect", "random")


# WillJobsArrive's training data: each queue's history, first arrival seen, training time
# Histories as seen at a moment, built when first needed (`Sia._histories`).
_Histories = Callable[[], dict[str, PoolHistory]]
_Training = tuple[_Histories, float, float]


class _Deferred(Mapping[tuple[str, float], float]):
    """A mapping computed by `compute` when first read."""

    def __init__(self, compute: Callable[[], dict[tuple[str, float], float]]) -> None:
        self._compute: Callable[[], dict[tuple[str, float], float]] | None = compute
        self._values: dict[tuple[str, float], float] = {}

    def _read(self) -> dict[tuple[str, float], float]:
        if self._compute is not None:
            self._values, self._compute = self._compute(), None
        return self._values

    def __getitem__(self, key: tuple[str, float]) -> float:
        return self._read()[key]

    def __iter__(self) -> Iterator[tuple[str, float]]:
        return iter(self._read())

    def __len__(self) -> int:
        return len(self._read())


class _ObservedQueue:
    """One queue's jobs as the scheduler saw them, in the order it saw them: arrival,
    width, start and end (`inf` until known), kept as columns so that a round's history is
    a copy of four lists rather than a walk over every job ever seen.

    A start or end set is logged with the value it replaced, so the history of an earlier
    moment (`mark`) can be built later, only if a prediction reads it (`history`): most
    5-minute slots of a queue with a backlog read none (issue #16)."""

    __slots__ = ("arrivals", "widths", "starts", "ends", "_changes")

    def __init__(self) -> None:
        self.arrivals: list[float] = []
        self.widths: list[int] = []
        self.starts: list[float] = []
        self.ends: list[float] = []
        self._changes: list[tuple[list[float], int, float]] = []  # (column, row, old value)

    def add(self, arrival: float, width: int) -> int:
        self.arrivals.append(arrival)
        self.widths.append(width)
        self.starts.append(math.inf)
        self.ends.append(math.inf)
        return len(self.arrivals) - 1

    def set(self, column: list[float], row: int, value: float) -> None:
        """Set `column[row]` (`starts` or `ends`), logging the value it replaces."""
        if column[row] != value:
            self._changes.append((column, row, column[row]))
            column[row] = value

    def mark(self) -> tuple[int, int]:
        """This moment, for `history`."""
        return len(self.arrivals), len(self._changes)

    def history(self, mark: tuple[int, int], ends: Mapping[int, float]) -> PoolHistory:
        """The columns as they were at `mark`, with the ends of rows in `ends` replaced."""
        rows, changes = mark
        starts, done = self.starts[:rows], self.ends[:rows]
        for column, row, old in reversed(self._changes[changes:]):
            if row < rows:
                (starts if column is self.starts else done)[row] = old
        for row, end in ends.items():
            done[row] = end
        return PoolHistory.of(self.arrivals[:rows], self.widths[:rows], starts, done)


def monotone_in_window(will_arrive: Mapping[tuple[str, float], bool]
                       ) -> dict[tuple[str, float], bool]:
    """Jobs arriving within a window also arrive within every longer one.

    The per-window classifiers are trained separately and may disagree (yes for 5 minutes,
    no for 60); trusting the "no" would lend, for an hour, GPUs the queue is predicted to
    need within minutes.
    """
    answers: dict[tuple[str, float], bool] = {}
    for queue, minutes in sorted(will_arrive, key=lambda key: (key[0], key[1])):
        shorter = any(answers[(queue, m)] for (q, m) in answers if q == queue)
        answers[(queue, minutes)] = will_arrive[(queue, minutes)] or shorter
    return answers


@register
class Sia(QueuePolicy):
    name = "sia"
    description = "Anticipatory sharing of idle pool quota with coarse predictions (SIA)."
    paper = "SIA §5.3–5.4, Figures 7–8"
    interval = 300.0
    params = (
        Param("windows", str, "5,60,720", "prediction windows in minutes, ascending"),
        Param("arrivals", str, "learned", "WillJobsArrive/TotalNewLoad predictor",
              choices=PREDICTORS),
        Param("durations", str, "learned", "JobDuration predictor", choices=PREDICTORS),
        Param("load_windows", int, 12, "NewLoadEstimate: sliding max over this many windows"),
        Param("train_hours", float, 24.0, "history needed before WillJobsArrive is trained"),
        Param("retrain_hours", float, 24.0, "retrain WillJobsArrive this often"),
        Param("duration_quantile", float, 0.9,
              "JobDuration without a known tag: this quantile of the pool's durations"),
        Param("history_days", float, 0.0,
              "the trace's first days are history: no lending, then train on them"),
        Param("locality", str, "none",
              "cells: each job on one server in a buddy cell of its width (§5.5)",
              choices=LOCALITY),
        Param("preemption", bool, False,
              "partial preemption (§5.5): lend against preemptible borrowers, evict them "
              "for dedicated jobs"),
        Param("preemption_cost", float, 63.0,
              "seconds a preemption is assumed to cost (shrinks what preemption recovers)",
              bounds=(0.0, 1e6)),
    )
    windows: str
    arrivals: str
    durations: str
    load_windows: int
    train_hours: float
    retrain_hours: float
    history_days: float
    duration_quantile: float
    locality: str
    preemption: bool
    preemption_cost: float

    def __init__(self, **values: object) -> None:
        super().__init__(**values)
        self._windows = self._parse_windows(self.windows)
        if not 0 <= self.duration_quantile <= 1:
            raise InputError(f"must lie in [0, 1], got {self.duration_quantile!r}",
                             source="settings", field="duration_quantile")
        self._dedicated: set[str] = set()
        self._observed: dict[str, tuple[_ObservedQueue, int]] = {}  # job -> (queue, row)
        self._queues: dict[str, _ObservedQueue] = {}
        self._running: set[str] = set()
        self._queued_mark = 0  # of the engine's queue log
        self._durations = JobDurationPredictor(fallback_quantile=self.duration_quantile)
        self._model = WillJobsArrive(self._windows, seed=self.rng.randrange(2**31))
        # WillJobsArrive's latest training data, until a prediction needs it, and the data
        # the model was last fitted on
        self._fit_due: _Training | None = None
        self._fitted: _Training | None = None
        self._first_seen: float | None = None
        self._next_training = math.inf
        self._prediction_slot: float | None = None
        self._slot_load: Mapping[tuple[str, float], float] = {}
        self._random_bins: dict[str, int] = {}
        self._cells: CellPlacer | None = None

    def check_inputs(self, cluster: ClusterSpec, workload: Workload) -> None:
        super().check_inputs(cluster, workload)
        if self.locality == "cells":
            check_cells(self.name, cluster, workload, queue_quotas(cluster))

    @staticmethod
    def _parse_windows(setting: str) -> list[float]:
        """Prediction windows in minutes, ascending; refused unless all positive numbers."""
        try:
            windows = sorted(float(x) for x in str(setting).split(",") if x.strip())
        except ValueError:
            windows = []
        if not windows or windows[0] <= 0 or not math.isfinite(windows[-1]):
            raise InputError(f"expected comma-separated positive minutes, got {setting!r}",
                             source="settings", field="windows")
        return windows

    # -- observation ------------------------------------------------------------------------

    def _observe(self, view: ClusterView, quotas: dict[str, int]) -> None:
        """Record arrivals, starts and completions since the last round."""
        now = view.now
        if not self._queues:
            self._queues = {q: _ObservedQueue() for q in quotas}
        queued, self._queued_mark = view.queued_since(self._queued_mark)
        for job_id in queued:  # arrivals in submit order, and jobs back (seen already)
            if job_id not in self._observed:
                spec = view.job(job_id).spec
                columns = self._queues[queue_of(spec, quotas)]
                self._observed[job_id] = (columns, columns.add(spec.submit_time, spec.num_gpus))
        for job_id in self._running - view.running.keys():
            job = view.job(job_id)
            if job.status is not JobStatus.DONE:
                continue  # preempted: back in the queue, not finished
            columns, row = self._observed[job_id]
            columns.set(columns.ends, row, now)
            self._durations.observe(job.spec, job.executed_seconds)
        self._running = set(view.running)
        self._dedicated &= self._running
        if self._first_seen is None and self._observed:
            self._first_seen = now
            self._next_training = (self.history_days * 86400.0 if self.history_days > 0
                                   else now + self.train_hours * 3600.0)
        if now >= self._next_training and self.arrivals == "learned":
            # Trained when a prediction first needs it (`_total_new_load`), on this moment's
            # history: the same model, and none fitted that the next training replaces
            # unread (most of them on a trace where nothing is lent for days).
            self._fit_due = (self._histories(view, quotas, expected=False),
                             self._first_seen or 0.0, now)
            self._next_training = now + self.retrain_hours * 3600.0

    def _histories(self, view: ClusterView, quotas: dict[str, int], *, expected: bool
                   ) -> _Histories:
        """Per-queue history as of now, built when called; with `expected`, running jobs
        end when they are estimated to (estimated now)."""
        marks = {q: self._queues[q].mark() for q in quotas}
        ends: dict[str, dict[int, float]] = {q: {} for q in quotas}
        if expected:
            now = view.now
            for job_id in self._running:
                columns, row = self._observed[job_id]
                job = view.job(job_id)
                estimate = self._estimated_duration(job)
                # an overdue job is expected to end any moment, not to have ended already
                ends[queue_of(job.spec, quotas)][row] = math.inf if estimate is None else max(
                    np.nextafter(now, math.inf), now + estimate - job.executed_seconds)
        return lambda: {q: self._queues[q].history(marks[q], ends[q]) for q in quotas}

    # -- predictors -------------------------------------------------------------------------

    def _estimated_duration(self, job: JobView) -> float | None:
        if self.durations == "perfect":
            return job.spec.duration
        return self._durations.estimate(job.spec)

    def _duration_bin(self, job: JobView) -> int:
        if self.durations == "perfect":
            return duration_bin(job.spec.duration)
        if self.durations == "random":
            if job.job_id not in self._random_bins:
                self._random_bins[job.job_id] = self.rng.randrange(LAST_BIN + 1)
            return self._random_bins[job.job_id]
        return self._durations.predict_bin(job.spec)

    def _total_new_load(self, view: ClusterView, quotas: dict[str, int]
                        ) -> Mapping[tuple[str, float], float]:
        """TotalNewLoad(q, w) in GPUs for every queue and window.

        Learned predictions are made when first read: a queue whose pending jobs already
        fill its unused quota reserves all of it whatever arrives, and then nothing reads
        them (every round of a single-queue trace with a backlog). What they are made
        from is taken at the slot's first call, as if made then: that moment's history
        and the model trained by then (`_fit_due` or `_fitted`)."""
        now = view.now
        load: dict[tuple[str, float], float] = {}
        if self.arrivals == "perfect":
            for q in quotas:
                for minutes in self._windows:
                    load[(q, minutes)] = 0.0
            for minutes in self._windows:
                for spec in view.upcoming_jobs(until=now + minutes * 60.0):
                    load[(queue_of(spec, quotas), minutes)] += spec.num_gpus
            return load
        in_history = now < self.history_days * 86400.0
        untrained = self._fitted is None and self._fit_due is None
        if in_history or (self.arrivals == "learned" and untrained):
            return {(q, m): math.inf for q in quotas for m in self._windows}
        slot = math.floor(now / SAMPLE_STEP)
        if slot == self._prediction_slot:
            return self._slot_load
        self._prediction_slot = slot
        histories = self._histories(view, quotas, expected=True)
        if self.arrivals == "learned":
            training = self._fit_due if self._fit_due is not None else self._fitted
            assert training is not None
            self._slot_load = _Deferred(
                lambda: self._learned_load(histories(), now, training, quotas))
        else:
            will_arrive = {(q, m): self.rng.random() < 0.5 for q in quotas for m in self._windows}
            self._slot_load = self._estimated_load(histories(), now, will_arrive, quotas)
        return self._slot_load

    def _learned_load(self, histories: dict[str, PoolHistory], now: float,
                      training: _Training, quotas: dict[str, int]
                      ) -> dict[tuple[str, float], float]:
        """`_estimated_load` where WillJobsArrive, trained on `training`, says jobs come."""
        if self._fitted is not training:
            trained_on, since, until = training
            self._model.fit(trained_on(), since, until)
            self._fitted = training
            if self._fit_due is training:
                self._fit_due = None
        will_arrive = monotone_in_window(self._model.predict(histories, now))
        return self._estimated_load(histories, now, will_arrive, quotas)

    def _estimated_load(self, histories: dict[str, PoolHistory], now: float,
                        will_arrive: Mapping[tuple[str, float], bool], quotas: dict[str, int]
                        ) -> dict[tuple[str, float], float]:
        """NewLoadEstimate per queue and window where jobs will arrive, else 0."""
        return {(q, minutes): new_load_estimate(histories[q], now, minutes * 60.0,
                                                self.load_windows)
                if will_arrive[(q, minutes)] else 0.0
                for q in quotas for minutes in self._windows}

    # -- scheduling -------------------------------------------------------------------------

    def schedule(self, view: ClusterView) -> Iterator[Decision]:
        quotas = queue_quotas(view.spec)
        self._observe(view, quotas)
        if self.locality == "cells":
            if self._cells is None:
                self._cells = CellPlacer(view.spec, quotas, view.pool_servers)
            self._cells.sync(view)
        if not view.queue:
            return
        usage = self.queue_usage(view, quotas)
        dedicated = dict.fromkeys(quotas, 0)
        for job_id in self._dedicated:
            job = view.running[job_id]
            dedicated[queue_of(job.spec, quotas)] += job.gpus
        idle = idle_gpus(view, quotas)
        yield from self._allocate_dedicated(view, quotas, usage, dedicated, idle)
        idle = idle_gpus(view, quotas)
        if idle > 0 and any(usage.pending.values()):
            yield from self._allocate_spare(view, quotas, usage, dedicated, idle)
        for job_id in view.running.keys() - self._running:  # started this round
            columns, row = self._observed[job_id]
            columns.set(columns.starts, row, min(columns.starts[row], view.now))
        self._running = set(view.running)

    def _start(self, view: ClusterView, quotas: dict[str, int], usage: QueueUsage,
               queue: str, job: JobView, kind: str) -> Decision | None:
        if self._cells is not None:
            launch = self._cells.place(job, queue, kind)
        else:
            launch = place_shared(view, job, quotas)
        if launch is not None:
            usage.pending[queue].remove(job)
            usage.allocation[queue] += job.spec.num_gpus
        return launch

    def _within_quota(self, quotas: dict[str, int], dedicated: dict[str, int],
                      held: dict[str, list[int]], queue: str, need: int) -> bool:
        """The head fits the queue's unused quota (GPUs, or with cells its quota cells,
        `held` being the widths of its dedicated jobs)."""
        if dedicated[queue] == 0:
            return True  # a head wider than the quota starts on an empty queue (fcfs-pools)
        if self._cells is None:
            return dedicated[queue] + need <= quotas[queue]
        return self._cells.within_quota(queue, held[queue], need)

    def _allocate_dedicated(self, view: ClusterView, quotas: dict[str, int],
                            usage: QueueUsage, dedicated: dict[str, int], idle: int
                            ) -> Iterator[Decision]:
        """Figure 7: FCFS heads within each queue's quota, least-served queue first; with
        `preemption`, a head that would wait evicts lent preemptible jobs."""
        held: dict[str, list[int]] = {q: [] for q in quotas}
        if self._cells is not None:
            for job_id in self._dedicated:
                job = view.running[job_id]
                held[queue_of(job.spec, quotas)].append(job.gpus)
        while True:
            for queue in usage.by_share(quotas):
                pending = usage.pending[queue]
                if not pending:
                    continue
                head = pending[0]
                need = head.spec.num_gpus
                if not self._within_quota(quotas, dedicated, held, queue, need):
                    continue
                launch = None
                if need <= idle:
                    launch = self._start(view, quotas, usage, queue, head, DEDICATED)
                if launch is None and self.preemption:
                    victims = self._victims(view, quotas, queue, head, idle)
                    for job_id in victims or ():
                        victim = view.running[job_id]
                        usage.allocation[queue_of(victim.spec, quotas)] -= victim.gpus
                        idle += victim.gpus
                        if self._cells is not None:
                            self._cells.cells.release(job_id)
                        yield Preempt(job_id)
                    if victims:
                        launch = self._start(view, quotas, usage, queue, head, DEDICATED)
                if launch is None:
                    continue
                dedicated[queue] += need
                held[queue].append(need)
                idle -= need
                self._dedicated.add(head.job_id)
                yield launch
                break
            else:
                return

    def _evictable(self, view: ClusterView, job_id: str) -> bool:
        return job_id not in self._dedicated and view.running[job_id].spec.preemptible

    def _victims(self, view: ClusterView, quotas: dict[str, int], queue: str, head: JobView,
                 idle: int) -> list[str] | None:
        """Lent preemptible jobs whose GPUs let `head` start: with cells, those in the cell
        freed by evicting the fewest GPUs; else the least-run first until enough are idle."""
        if self._cells is not None:
            return self._cells.make_room(head, queue, lambda holder: (
                holder.kind == OPPORTUNISTIC and self._evictable(view, holder.owner)))
        deficit = head.spec.num_gpus - idle
        candidates = sorted((j for j in view.running.values() if self._evictable(view, j.job_id)),
                            key=lambda j: (j.executed_seconds, j.job_id))
        victims: list[str] = []
        for job in candidates:
            if deficit <= 0:
                break
            victims.append(job.job_id)
            deficit -= job.gpus
        return victims if deficit <= 0 else None

    def _allocate_spare(self, view: ClusterView, quotas: dict[str, int], usage: QueueUsage,
                        dedicated: dict[str, int], idle: int) -> Iterator[Decision]:
        """Figure 8: bulk reservations per window, then short jobs out of order."""
        new_load = self._total_new_load(view, quotas)
        pending = {q: usage.pending[q].gpus for q in quotas}
        unused = {q: max(0, quotas[q] - dedicated[q]) for q in quotas}
        for minutes in self._windows:
            window = minutes * 60.0
            while idle > 0:
                # min(pending + TotalNewLoad, unused quota); pending alone may fill it, and
                # then the prediction is not read (`_total_new_load`)
                amounts = {q: unused[q] if pending[q] >= unused[q]
                           else min(pending[q] + new_load[(q, minutes)], unused[q])
                           for q in quotas}
                if self.preemption:
                    recoverable = sum(j.gpus for j in view.running.values()
                                      if self._evictable(view, j.job_id))
                    amounts = discounted_reservations(amounts, recoverable,
                                                      self.preemption_cost, window)
                usable = idle - sum(amounts.values())
                if usable <= 0:
                    break
                if self._cells is not None:
                    started = self._lend_in_cells(view, quotas, usage, amounts, usable, window)
                else:
                    started = self._lend(view, quotas, usage, usable, window)
                if started is None:
                    break
                launch, queue, width = started
                pending[queue] -= width
                idle -= width
                yield launch

    def _lend(self, view: ClusterView, quotas: dict[str, int], usage: QueueUsage,
              usable: float, window: float) -> tuple[Decision, str, int] | None:
        """The first pending job, queues by share, that fits `usable` and the window."""
        for queue in usage.by_share(quotas):
            for job in usage.pending[queue]:
                if job.spec.num_gpus > usable:
                    continue
                if bin_limit_seconds(self._duration_bin(job)) > window:
                    continue
                started = self._start(view, quotas, usage, queue, job, OPPORTUNISTIC)
                if started is not None:
                    return started, queue, job.spec.num_gpus
        return None

    def _lend_in_cells(self, view: ClusterView, quotas: dict[str, int], usage: QueueUsage,
                       amounts: dict[str, float], usable: float, window: float
                       ) -> tuple[Decision, str, int] | None:
        """`_lend` with the reservations held as cells: none lent if they do not fit."""
        cells = self._cells
        assert cells is not None
        try:
            if not cells.reserve(amounts):
                return None
            failed = math.inf  # a width no free cell holds: no wider one fits either
            for queue in usage.by_share(quotas):
                for job in usage.pending[queue]:
                    width = job.spec.num_gpus
                    if width > usable or width >= failed:
                        continue
                    if bin_limit_seconds(self._duration_bin(job)) > window:
                        continue
                    started = self._start(view, quotas, usage, queue, job, OPPORTUNISTIC)
                    if started is not None:
                        return started, queue, width
                    failed = width
            return None
        finally:
            cells.clear_reservations()


def discounted_reservations(amounts: Mapping[str, float], recoverable: float, cost: float,
                            window: float) -> dict[str, float]:
    """Figure 8's per-queue reservations shrunk by what preemption can recover (§5.5).

    `recoverable` GPUs (lent to preemptible jobs) are each worth 1 - cost / window of an idle
    GPU over the window, so the total R shrinks to max(0, R - recoverable * that), every
    queue's share in proportion.
    """
    total = sum(amounts.values())
    relief = recoverable * max(0.0, 1.0 - cost / window)
    if total <= 0 or relief <= 0:
        return dict(amounts)
    scale = max(0.0, 1.0 - relief / total)
    return {queue: amount * scale for queue, amount in amounts.items()}
