"""Hand-built cluster states for testing one scheduling round of a policy.

A rule of a policy ("SRSF runs the job with the least remaining time × GPUs", "EDL never
shrinks a queue-0 job") is a statement about one round: given this state, these decisions.
`hand_state` builds that state directly (running jobs on given slots with given remaining
work and attained service, queued jobs, jobs still to come) and `one_round` runs the policy
once on it, applying each decision through the engine's checks as a run would. Nothing here
depends on when the engine calls a policy, so these tests hold whatever the cadence.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from simulation.decisions import Decision, Placement, Slot
from simulation.engine import EngineConfig, Simulation
from simulation.model import ClusterSpec, JobSpec, Workload
from simulation.policies.base import Policy
from simulation.state import JobStatus
from simulation.throughput import ThroughputModel


@dataclass(frozen=True)
class Running:
    """A job running on `slots` ((server, GPUs) or `Slot`s) with `remaining` work-seconds
    left; `attained` GPU-seconds and `executed` seconds of service so far."""

    spec: JobSpec
    slots: Sequence[tuple[str, int] | Slot]
    remaining: float | None = None
    attained: float = 0.0
    executed: float = 0.0


@dataclass(frozen=True)
class Queued:
    """A job waiting since `since` (default: its submit time) with `remaining` work left."""

    spec: JobSpec
    remaining: float | None = None
    since: float | None = None
    attained: float = 0.0
    executed: float = 0.0


def _placement(slots: Sequence[tuple[str, int] | Slot]) -> Placement:
    return tuple(s if isinstance(s, Slot) else Slot(s[0], s[1]) for s in slots)


def hand_state(
    cluster: ClusterSpec,
    policy: Policy,
    *,
    now: float = 0.0,
    running: Sequence[Running] = (),
    queued: Sequence[Queued] = (),
    future: Sequence[JobSpec] = (),
    on_loan: Sequence[str] = (),
    throughput: ThroughputModel | None = None,
    predicted: dict[str, float] | None = None,
) -> Simulation:
    """A `Simulation` paused at `now` in the given state (no restart overhead)."""
    specs = [r.spec for r in running] + [q.spec for q in queued] + list(future)
    specs.sort(key=lambda s: s.submit_time)
    sim = Simulation(cluster, Workload(tuple(specs), source="hand"), policy,
                     config=EngineConfig(restart_overhead=0.0), throughput=throughput)
    sim.clock.now = now
    state = sim.state
    for sid in on_loan:
        state.set_on_loan(sid, True)
    records = {}
    for spec in specs:
        records[spec.job_id] = record = state.add_job(spec)
        sim.view.register(record)
        if predicted and spec.job_id in predicted:
            record.predicted_duration = predicted[spec.job_id]
    for entry in running:
        record = records[entry.spec.job_id]
        placement = _placement(entry.slots)
        state.check_placement(record, placement)
        state.occupy(record, placement)
        state.running[record.job_id] = record
        record.status = JobStatus.RUNNING
        record.first_start = record.queued_since = record.last_update = now
        record.remaining_work = entry.spec.duration if entry.remaining is None else entry.remaining
        record.attained_gpu_seconds = entry.attained
        record.run_seconds = entry.executed
    for entry in sorted(queued, key=lambda q: q.spec.submit_time):
        record = records[entry.spec.job_id]
        record.remaining_work = entry.spec.duration if entry.remaining is None else entry.remaining
        record.attained_gpu_seconds = entry.attained
        record.run_seconds = entry.executed
        record.last_update = now
        state.enqueue(record, entry.spec.submit_time if entry.since is None else entry.since)
    return sim


def one_round(sim: Simulation) -> list[Decision]:
    """Run the policy once on the paused state, applying every decision as it is yielded."""
    decisions: list[Decision] = []
    for decision in sim.policy.schedule(sim.view) or ():
        sim.apply(decision)
        decisions.append(decision)
    return decisions


def gpus_of(sim: Simulation) -> dict[str, int]:
    """GPUs each running job holds after the round."""
    return {job_id: job.gpus for job_id, job in sim.state.running.items()}
