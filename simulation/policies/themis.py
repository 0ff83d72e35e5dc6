"""Themis: finish-time fairness with leases (Mahajan et al., NSDI'20 §3), as Muri §6 uses it.

Muri (SIGCOMM'22 §6.1, §6.3) runs Themis as a duration-unaware baseline on the same
Philly traces; its simulator (Rivendile/Muri ``run_sim.py``, ``themis_sim_jobs``) solves a
Gavel-style max-min program over ρ. Themis' own partial-allocation auction is not in our
papers folder, so this module implements the widely used simplification of it:

- **Finish-time fairness.** A job's ρ = T_shared / T_independent. T_independent is its
  running time alone on its requested GPUs in a cluster cut into N equal shares (N = jobs
  running or waiting now, G = GPUs that can host training): ``duration × max(1, g·N / G)``
  — a job asking for more than G/N GPUs runs proportionally slower on its share.
  T_shared = time since submission + remaining time at the current allocation (its rate on
  the GPUs it holds). A waiting job has no allocation; its remaining time is taken at its
  requested GPUs on the reference GPU (as if it started now), so its ρ grows with every
  second it waits instead of being infinite for every waiting job alike. Durations are the
  scheduler's *predicted* ones (`JobView.predicted_duration`).
- **Leases and auction.** Leases end together, every `lease` seconds on a global clock
  (t = k·lease); a job started between two ends holds its lease until the next end. At a
  lease end the ``ceil(f·N)`` jobs with the worst ρ are offered the cluster (`fairness_fraction`
  f) and win GPUs greedily in decreasing ρ (instead of the auction's bids and
  proportional-fair allocation). What they leave — Themis' *leftover allocation* — goes to the
  other jobs in a random order drawn from the policy's seeded RNG, so f matters and runs stay
  reproducible. Running jobs outside the winning set are preempted (a restart, 63 s); the
  winners that wait are placed best-fit.
- **Between lease ends** (arrivals, completions) nothing is preempted: GPUs that free up go to
  waiting jobs in decreasing ρ (work-conserving, non-preemptive).
- Ties in ρ go to the earlier submission, then the job id. Non-preemptible running jobs keep
  their GPUs whatever their ρ.
"""

from __future__ import annotations

import math
from collections.abc import Iterator

from simulation.decisions import Decision
from simulation.policies.base import Param, Policy, register
from simulation.policies.ordering import launch_in_order, preemptive_schedule, training_capacity
from simulation.policies.srtf import remaining_seconds
from simulation.state import JobStatus
from simulation.view import ClusterView, JobView

_LEASE_TOLERANCE = 1e-6


def current_rate(view: ClusterView, job: JobView) -> float:
    """Work-seconds per second a job gets now; a waiting job is rated at its request."""
    spec = job.spec
    if job.status != JobStatus.RUNNING:
        return view.throughput.rate(spec.model, spec.num_gpus, spec.num_gpus, 1.0)
    speed = min(view.servers[slot.server].speed for slot in job.placement)
    return view.throughput.rate(spec.model, spec.num_gpus, job.gpus, speed) * job.share


def finish_time_fairness(view: ClusterView, job: JobView, contenders: int, capacity: int
                         ) -> float:
    """ρ = T_shared / T_independent (Themis §3.2) with the module's simplifications."""
    spec = job.spec
    share_gpus = capacity / max(1, contenders)
    independent = job.predicted_duration * max(1.0, spec.num_gpus / share_gpus)
    rate = current_rate(view, job)
    remaining = remaining_seconds(job) / rate if rate > 0 else math.inf
    shared = view.now - job.submit_time + remaining
    return shared / independent if independent > 0 else math.inf


def auction_participants(contenders: int, fraction: float) -> int:
    """How many of the worst-ρ jobs take part in a lease-end auction (at least one)."""
    return min(contenders, max(1, math.ceil(fraction * contenders - 1e-9)))


@register
class Themis(Policy):
    name = "themis"
    description = "Finish-time fairness (ρ) with leases; preemptive at lease ends."
    paper = "Themis NSDI'20 §3 (simplified auction); Muri SIGCOMM'22 §6 baseline"
    params = (
        Param("lease", float, 600.0, "lease length in seconds; reallocation at lease ends",
              bounds=(1.0, 86_400.0)),
        Param("fairness_fraction", float, 0.8, "f: share of jobs with the worst ρ offered GPUs",
              bounds=(0.01, 1.0)),
    )
    interval = None  # woken at lease ends; arrivals and completions are events
    lease: float
    fairness_fraction: float

    def ranked(self, view: ClusterView, *, waiting_only: bool = False
               ) -> list[tuple[float, JobView]]:
        """Jobs (all, or only the waiting ones) with their ρ, worst (largest) first."""
        contenders = len(view.running) + len(view.queue)
        jobs = [*view.queue.values()] if waiting_only else [
            *view.running.values(), *view.queue.values()]
        capacity = training_capacity(view)
        scored = [(finish_time_fairness(view, job, contenders, capacity), job) for job in jobs]
        scored.sort(key=lambda pair: (-pair[0], pair[1].submit_time, pair[1].job_id))
        return scored

    def at_lease_end(self, now: float) -> bool:
        boundary = round(now / self.lease) * self.lease
        return abs(now - boundary) <= _LEASE_TOLERANCE * max(1.0, now)

    def next_wakeup(self, view: ClusterView) -> float | None:
        if not view.queue:
            return None  # with nobody waiting a lease end would keep every job as it is
        return (math.floor(view.now / self.lease + _LEASE_TOLERANCE) + 1) * self.lease

    def schedule(self, view: ClusterView) -> Iterator[Decision]:
        if not view.queue:
            return iter(())
        if not self.at_lease_end(view.now):
            if not any(view.free_gpus(pool.name) for pool in view.spec.pools):
                return iter(())
            waiting = [job for _, job in self.ranked(view, waiting_only=True)]
            return launch_in_order(view, waiting, blocking=False)
        ranked = [job for _, job in self.ranked(view)]
        winners = auction_participants(len(ranked), self.fairness_fraction)
        leftover = ranked[winners:]
        self.rng.shuffle(leftover)
        return preemptive_schedule(view, ranked[:winners] + leftover)
