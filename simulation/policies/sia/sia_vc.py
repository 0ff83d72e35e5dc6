"""sia-vc: SIA's stepping stone with perfect knowledge of future jobs (SIA §5.1, Figure 6).

Virtual clock: the virtual start time (VST) of a job is its start when every queue runs
FCFS on its own quota (`virtual_start_times`). Logical resource-time plan: running jobs
hold their GPUs until they finish; visiting pending and future jobs in increasing VST, a
job that cannot start now (not arrived yet, or it would overlap a reservation already in
the plan) reserves its width over [VST, VST + duration); a pending job that fits now
without violating any reservation starts at once, on any free GPUs.

Choices where Figure 6 leaves room, and why:
- VSTs are computed once, from the start of the trace, not re-simulated from the current
  state each round. Re-simulating would charge a job started out of order to its queue's
  quota and could push an earlier job of that queue past its no-sharing start, breaking
  Theorem 1. With fixed VSTs the theorem holds: a job started early occupies, after its
  VST, only part of the interval its own reservation held, and every job with an earlier
  VST is protected by its reservation (tests/simulation/test_sia.py checks it).
- Figure 6 restarts the scan after each allocation; continuing the same scan with the new
  job added to the plan gives the same decisions, since the jobs already visited stay
  unschedulable when fewer GPUs are free.
- Future jobs whose VST lies beyond every pending job's VST, or after the longest pending
  job could end, cannot constrain any allocation this round and are not visited.
- A round without free GPUs returns at once, and a round stops once its launches leave
  none or its reservations fill the plan at now: the plan is the round's own, so only
  launches outlive it. A job wider than the free GPUs cannot start, so the plan is not
  asked whether it fits. (Issue #16: a round at every event, over thousands of waiting
  jobs on Muri's traces; same decisions.)
- The waiting jobs' visits, (VST, submit time, 0, id), are kept sorted across rounds
  (`_pending`, fed by the engine's queue and allocation logs: a waiting job's VST never
  changes) and merged with the few future jobs' visits as the scan reads them, instead of
  every waiting job sorted twice a round (issue #16: ~1,000 wait on muri_trace2). The
  visits are totally ordered (ids are unique), so the merge is the sort.
- Durations and remaining times are the true ones (perfect information); rates are taken
  as 1, i.e. one GPU type at the reference speed, as in SIA's setup.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterator

from sortedcontainers import SortedList

from simulation.decisions import Decision
from simulation.policies.base import register
from simulation.policies.sia.common import (
    QueuePolicy,
    ResourceTimePlan,
    cluster_capacity,
    idle_gpus,
    place_shared,
    queue_quotas,
    virtual_start_times,
)
from simulation.view import ClusterView


@register
class SiaVirtualClock(QueuePolicy):
    name = "sia-vc"
    description = "SIA with virtual clocks and a resource-time plan; perfect future knowledge."
    paper = "SIA §5.1, Figure 6, Theorem 1"
    interval = 300.0

    def __init__(self, **values: object) -> None:
        super().__init__(**values)
        self._vst: dict[str, float] = {}
        self._vst_view: ClusterView | None = None  # the view `_vst` and its mark are of
        self._queued_mark = 0
        # `_pending`: the waiting jobs' visits and durations, for these VSTs and this view
        self._visits: SortedList = SortedList()
        self._durations: SortedList = SortedList()
        self._entry: dict[str, tuple[float, float, int, str]] = {}
        self._kept_for: tuple[object, object] | None = None
        self._marks = (0, 0)

    def _pending(self, view: ClusterView, vst: dict[str, float]) -> SortedList:
        """The waiting jobs' visits (VST, submit time, 0, id) in order, kept across rounds:
        a job enters when the queue log names it and it waits, and leaves when the
        allocation log names it and it no longer waits; rebuilt for new VSTs or a new view.
        `_durations` holds their (duration, id) likewise."""
        queue = view.queue
        kept_for = self._kept_for
        if kept_for is None or kept_for[0] is not view or kept_for[1] is not vst:
            self._kept_for = (view, vst)
            self._marks = (view.queued_since(0)[1], view.allocations_since(0)[1])
            self._visits.clear()
            self._durations.clear()
            self._entry.clear()
            changed: list[str] = list(queue)
        else:
            queued, queue_mark = view.queued_since(self._marks[0])
            started, alloc_mark = view.allocations_since(self._marks[1])
            self._marks = (queue_mark, alloc_mark)
            changed = queued + started
        entry = self._entry
        for job_id in changed:
            job = queue.get(job_id)
            kept = entry.get(job_id)
            if job is not None and kept is None:
                kept = entry[job_id] = (vst[job_id], job.submit_time, 0, job_id)
                self._visits.add(kept)
                self._durations.add((job.spec.duration, job_id))
            elif job is None and kept is not None:
                del entry[job_id]
                self._visits.remove(kept)
                self._durations.remove((view.job(job_id).spec.duration, job_id))
        return self._visits

    def _virtual_start(self, view: ClusterView, quotas: dict[str, int]) -> dict[str, float]:
        """Every job's VST, computed once all jobs are known (the first round sees the whole
        trace); again only if a job waits that the last computation did not know, or on a
        new view (a new run or snapshot: its queue log is another's, read from the start)."""
        if view is not self._vst_view:
            self._vst_view, self._vst, self._queued_mark = view, {}, 0
        queued, self._queued_mark = view.queued_since(self._queued_mark)
        if any(job_id not in self._vst for job_id in queued):
            known = [j.spec for j in (*view.running.values(), *view.queue.values())]
            self._vst = virtual_start_times([*known, *view.upcoming_jobs()], quotas)
        return self._vst

    def schedule(self, view: ClusterView) -> Iterator[Decision]:
        if not view.queue:
            return
        quotas = queue_quotas(view.spec)
        vst = self._virtual_start(view, quotas)
        idle = idle_gpus(view, quotas)
        if idle == 0:
            return  # the plan is this round's alone: without free GPUs nothing starts
        now = view.now
        plan = ResourceTimePlan(cluster_capacity(view.spec, quotas), origin=now)
        for job in view.running.values():
            plan.reserve(job.gpus, now, job.remaining_work)
        pending = self._pending(view, vst)
        last_vst = pending[-1][0]
        reach = now + self._durations[-1][0]
        future = [
            spec for spec in view.upcoming_jobs(until=last_vst)
            if vst[spec.job_id] <= last_vst and vst[spec.job_id] < reach
        ]
        visits = heapq.merge(pending, sorted(
            (vst[s.job_id], s.submit_time, 1, s.job_id) for s in future))
        specs = {s.job_id: s for s in future}
        for start, _, is_future, job_id in visits:
            if not is_future:
                job = view.queue[job_id]
                spec = job.spec
                # wider than the free GPUs: no placement, so `fits` cannot matter
                if spec.num_gpus <= idle and plan.fits(spec.num_gpus, now, spec.duration):
                    launch = place_shared(view, job, quotas)
                    if launch is not None:
                        plan.reserve(spec.num_gpus, now, spec.duration)
                        yield launch
                        idle -= spec.num_gpus
                        if idle == 0:
                            return  # the rest would only reserve in this round's plan
                        continue
            else:
                spec = specs[job_id]
            plan.reserve(spec.num_gpus, max(start, now), spec.duration)
            if plan.full_at_origin:
                return  # reserved in full from now: no job can start this round
