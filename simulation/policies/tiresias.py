"""Tiresias discretised 2D-LAS (Gu et al., NSDI'19 §4.2), as EDL §6 configures it.

A job's priority queue is set by its attained service (GPU-seconds): below the first
threshold it is in queue 0 (highest), and so on; EDL used three queues split at 500 and
10,000 GPU·s. Preemptive: a higher queue's job takes GPUs from lower queues' jobs.

The queue defaults (`LAS_QUEUE_PARAMS`: EDL's thresholds, promotion off) are shared with
Muri-L, whose priority is this 2D-LAS, so comparing the two compares policies, not settings.
Tiresias' own simulator defaults to three queues split at 3,250 and 7,200 GPU·s
(SymbioticLab/Tiresias@959f9b0 `simulator/jobs.py:102-104`, as does Muri's copy of it), the
"default hyper-parameters in the open-source code" Muri §6 ran: set `thresholds=3250,7200`
on both policies to reproduce Muri's comparison.

Choices, following the authors' simulator (SymbioticLab/Tiresias `run_sim.py`, `dlas`):
- Inside a queue, running jobs come before waiting ones (the simulator moves pending jobs
  to the back of their queue after each round), then submit order. Without this, two jobs
  of one queue would preempt each other back and forth.
- Starvation: a waiting job that has run before and has waited at least `promote_knob`
  times its execution time since its last reset is promoted to queue 0 and its service
  counters are reset (the simulator zeroes `executed_time` on promotion), so it is not
  demoted again at once. Off by default, as in the simulator's plain `dlas-gpu` (its
  `dlas-gpu-N` variants set N); with a 63 s restart overhead a small knob makes starving
  jobs cycle through short runs.
"""

from __future__ import annotations

import math
from bisect import bisect_right
from collections.abc import Iterator

from simulation.decisions import Decision
from simulation.errors import InputError
from simulation.policies.base import Param, Policy, register
from simulation.policies.priority_schedule import schedule_by_priority
from simulation.policies.queue_order import QueueOrder
from simulation.policies.running_order import RunningOrder
from simulation.state import JobStatus
from simulation.view import ClusterView, JobView

_RUNNING = JobStatus.RUNNING  # read for every job of every round
# How far float rounding may move a predicted demotion time between rounds; jobs this close
# to a threshold are re-keyed every round (see `RunningOrder`).
_DEMOTION_SLACK_SECONDS = 1.0

LAS_QUEUE_PARAMS: tuple[Param, ...] = (
    Param("thresholds", str, "500,10000", "queue boundaries in GPU-seconds, ascending"),
    Param("promote_knob", float, 0.0, "promote when wait ≥ knob × run time; 0 = off",
          bounds=(0.0, 1_000.0)),
)


@register
class Tiresias(Policy):
    name = "tiresias"
    layers = ("ordering",)  # allocation `requested`, placement `best-fit` or a stage
    description = "Discretised two-dimensional least-attained-service (2D-LAS); preemptive."
    paper = "Tiresias NSDI'19 §4.2; EDL §6.1 parameters"
    params = LAS_QUEUE_PARAMS
    interval = None  # woken when a job crosses a threshold or becomes due for promotion
    thresholds: str
    promote_knob: float

    def __init__(self, **values: object) -> None:
        super().__init__(**values)
        try:
            self._bounds = [float(x) for x in str(self.thresholds).split(",") if x.strip()]
        except ValueError:
            raise InputError(f"expected comma-separated numbers, got {self.thresholds!r}",
                             source="settings", field="thresholds") from None
        if self._bounds != sorted(self._bounds) or any(b <= 0 for b in self._bounds):
            raise InputError("thresholds must be positive and ascending", source="settings",
                             field="thresholds")
        # job id -> (attained GPU·s, executed s) at its last promotion
        self._reset: dict[str, tuple[float, float]] = {}
        # Without promotion a waiting job's key is frozen, so the queue stays sorted, and a
        # running job's changes only when it crosses a threshold, so the running jobs do.
        self._order: QueueOrder | None = None
        self._running: RunningOrder | None = None
        if self.promote_knob <= 0:
            self._order = QueueOrder(self._frozen_key)
            self._running = RunningOrder(self._running_key, self.demotion_time,
                                         slack=_DEMOTION_SLACK_SECONDS)

    def _service(self, job: JobView) -> tuple[float, float]:
        attained0, executed0 = self._reset.get(job.job_id, (0.0, 0.0))
        return job.attained_service - attained0, job.executed_seconds - executed0

    def _due_for_promotion(self, view: ClusterView, job: JobView, executed: float) -> bool:
        return (
            self.promote_knob > 0
            and job.status == JobStatus.QUEUED
            and executed > 0
            and view.now - job.queued_since >= self.promote_knob * executed
        )

    def queue_index(self, view: ClusterView, job: JobView) -> int:
        """The job's priority queue now (0 is highest); promotes a starving job."""
        attained, executed = self._service(job)
        if self._due_for_promotion(view, job, executed):
            self._reset[job.job_id] = (job.attained_service, job.executed_seconds)
            return 0
        return bisect_right(self._bounds, attained)

    def priority_key(self, view: ClusterView, job: JobView) -> tuple[int, bool, float]:
        """(queue, waiting after running, submit time): lowest runs first."""
        if self.promote_knob <= 0:  # no resets: the queue is the attained service's level
            level = bisect_right(self._bounds, job.attained_service)
        else:
            level = self.queue_index(view, job)
        return (level, job.status is not _RUNNING, job.submit_time)

    def _running_key(self, job: JobView) -> tuple[int, bool, float]:
        """`priority_key` of a running job when promotion is off."""
        return (bisect_right(self._bounds, job.attained_service), False, job.submit_time)

    def demotion_time(self, view: ClusterView, job: JobView) -> float:
        """When running `job` crosses its next threshold (inf: in the last queue)."""
        attained = job.attained_service if not self._reset else self._service(job)[0]
        level = bisect_right(self._bounds, attained)
        if level < len(self._bounds) and job.gpus:
            return view.now + (self._bounds[level] - attained) / job.gpus
        return math.inf

    def _frozen_key(self, job: JobView) -> tuple[int, bool, float]:
        """`priority_key` of a waiting job when promotion is off (no clock needed)."""
        attained = job.attained_service if not self._reset else self._service(job)[0]
        return (bisect_right(self._bounds, attained), True, job.submit_time)

    def next_wakeup(self, view: ClusterView) -> float | None:
        """When a running job is next demoted or a queued one promoted (only while jobs wait:
        with an empty queue no priority change can start or stop anything)."""
        if not view.queue:
            return None
        if self._running is not None:
            return self._running.next_change(view)
        times = [self.demotion_time(view, job) for job in view.running.values()]
        times = [t for t in times if t < math.inf]
        if self.promote_knob > 0:
            for job in view.queue.values():
                _, executed = self._service(job)
                if executed > 0:
                    times.append(job.queued_since + self.promote_knob * executed)
        return min(times) if times else None

    def schedule(self, view: ClusterView) -> Iterator[Decision]:
        return schedule_by_priority(view, lambda j: self.priority_key(view, j), self._order,
                                    self._running)
