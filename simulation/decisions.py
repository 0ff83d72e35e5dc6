"""What a policy may ask of the engine.

A policy never changes state itself: it yields these value objects and the engine checks
and applies each one (or raises `InvalidDecision`). A placement is a tuple of `Slot`s, one
per server, in the shape of DESIGN.md's snapshot (`server`, `gpus`, `flexible`).
"""

from __future__ import annotations

from dataclasses import dataclass

from simulation.share_cycle import ShareCycle


@dataclass(frozen=True, slots=True)
class Slot:
    """GPUs a job holds on one server; `flexible` marks workers beyond the elastic minimum."""

    server: str
    gpus: int
    flexible: bool = False


Placement = tuple[Slot, ...]


@dataclass(frozen=True, slots=True)
class Launch:
    """Start (or restart) a queued job on `placement`."""

    job_id: str
    placement: Placement


@dataclass(frozen=True, slots=True)
class Preempt:
    """Stop a running job and put it back in the queue."""

    job_id: str


@dataclass(frozen=True, slots=True)
class Resize:
    """Scale a running elastic job in or out to `placement` (a scaling operation)."""

    job_id: str
    placement: Placement


@dataclass(frozen=True, slots=True)
class Migrate:
    """Move a running job to `placement` with the same GPU count."""

    job_id: str
    placement: Placement


@dataclass(frozen=True, slots=True)
class SetShare:
    """Set the fraction of its GPUs' time a running job gets (time-slicing, interleaving);
    0 suspends it in place (it keeps its GPUs and makes no progress until a later share).

    `share` may exceed 1/k for k jobs on one GPU only when interleaving overlaps their
    stages (Muri); the policy that shares GPUs answers for the number. With a `cycle`
    (time-slicing in quanta) the share follows it from now on, and `share` is its `first`.
    """

    job_id: str
    share: float
    cycle: ShareCycle | None = None


Decision = Launch | Preempt | Resize | Migrate | SetShare


@dataclass(frozen=True, slots=True)
class ReclaimPlan:
    """How to give `servers` back to the inference side.

    `scale_in` shrinks elastic jobs off those servers (nobody is preempted by it); `preempt`
    lists jobs that must stop everywhere. After both, every listed server must be empty.
    """

    servers: tuple[str, ...]
    preempt: tuple[str, ...] = ()
    scale_in: tuple[Resize, ...] = ()


def placement_gpus(placement: Placement) -> int:
    return sum(slot.gpus for slot in placement)
