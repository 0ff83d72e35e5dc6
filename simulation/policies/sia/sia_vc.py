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
- Durations and remaining times are the true ones (perfect information); rates are taken
  as 1, i.e. one GPU type at the reference speed, as in SIA's setup.
"""

from __future__ import annotations

from collections.abc import Iterator

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
        self._queued_mark = 0

    def _virtual_start(self, view: ClusterView, quotas: dict[str, int]) -> dict[str, float]:
        """Every job's VST, computed once all jobs are known (the first round sees the whole
        trace); again only if a job waits that the last computation did not know."""
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
        pending = sorted(view.queue.values(), key=lambda j: (vst[j.job_id], j.submit_time))
        last_vst = vst[pending[-1].job_id]
        reach = now + max(j.spec.duration for j in pending)
        future = [
            spec for spec in view.upcoming_jobs(until=last_vst)
            if vst[spec.job_id] <= last_vst and vst[spec.job_id] < reach
        ]
        visits = sorted(
            [(vst[j.job_id], j.submit_time, 0, j.job_id) for j in pending]
            + [(vst[s.job_id], s.submit_time, 1, s.job_id) for s in future]
        )
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
