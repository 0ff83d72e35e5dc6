"""The policy contract and the registry every scheduler is found through.

A policy reads a `ClusterView` and yields decisions; it owns no cluster state. Each policy
class declares its parameters (`Param`) so the CLI, the planner and the REST API can list,
validate and set them without knowing the policy. A policy module registers its class with
`@register`; modules in this package are imported automatically.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from simulation.decisions import Decision, ReclaimPlan
from simulation.errors import InputError
from simulation.model import ClusterSpec, Workload
from simulation.view import ClusterView

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off"}


# A number a parameter declares no `bounds` for must still lie within this (and be finite).
_ANY_NUMBER = (-1e9, 1e9)


@dataclass(frozen=True, slots=True)
class Param:
    """A declared policy parameter: name, type, default and a one-line help; a number has
    inclusive `bounds` (see the README's Limits), so no value can make a run unbounded."""

    name: str
    type: type
    default: Any
    help: str
    choices: tuple[Any, ...] | None = None
    bounds: tuple[float, float] | None = None

    def parse(self, raw: Any, *, source: str = "parameters") -> Any:
        """Convert `raw` (a string from the CLI or a JSON value) to this parameter's type."""
        try:
            if self.type is bool and isinstance(raw, str):
                lowered = raw.strip().lower()
                if lowered not in _TRUE | _FALSE:
                    raise ValueError
                value: Any = lowered in _TRUE
            elif self.type is bool:
                if not isinstance(raw, bool | int):
                    raise ValueError
                value = bool(raw)
            else:
                value = self.type(raw)
        except (TypeError, ValueError):
            raise InputError(
                f"expected {self.type.__name__}, got {raw!r}", source=source, field=self.name
            ) from None
        if self.type in (int, float) and not isinstance(value, bool):
            low, high = self.bounds or _ANY_NUMBER
            if not low <= value <= high:  # NaN fails too
                raise InputError(f"{value!r} is outside {low:g} to {high:g}", source=source,
                                 field=self.name)
        if self.choices is not None and value not in self.choices:
            raise InputError(
                f"{value!r} is not one of {', '.join(map(str, self.choices))}",
                source=source,
                field=self.name,
            )
        return value


class Policy:
    """Base class: subclasses set `name`, `description`, `params` and implement `schedule`.

    `shares_gpus` lets the engine place several jobs on one GPU (time-slicing,
    interleaving). Under the engine's default `cadence` a policy runs at every event (arrival,
    completion, loan, reclaim) and, when its own rules change decisions with time alone, every
    `interval` seconds (Gandiva's quantum, Muri's regroup). A policy whose decisions change
    only at events sets `interval = None` and, if something it watches changes with time
    alone (a job crossing a priority threshold), says when in `next_wakeup`: ticking on a
    clock would cost a round per tick for nothing.

    `engine_defaults` are the engine settings (`EngineConfig` fields) of the policy's own
    paper: its reclaim strategy, its resize mechanism. A run uses them unless the user sets
    the same key, so comparing policies compares each as its paper built it; every one is
    listed by `python -m simulation policies` and stored in each run's summary.
    """

    name: ClassVar[str]
    description: ClassVar[str] = ""
    paper: ClassVar[str] = ""
    params: ClassVar[tuple[Param, ...]] = ()
    shares_gpus: ClassVar[bool] = False
    interval: ClassVar[float | None] = 60.0
    engine_defaults: ClassVar[Mapping[str, Any]] = {}
    # The layers of a scheduler (`simulation/composition.py`) the policy decides itself, as
    # one stage named after it; a composition may give it stages for the other layers.
    layers: ClassVar[tuple[str, ...]] = ("ordering", "allocation", "placement")
    # Set on a composition's class: layer -> stage name, and the registered policy it extends.
    composition: ClassVar[Mapping[str, str] | None] = None
    base_policy: ClassVar[str | None] = None
    # The layer whose stage is deciding now, for the engine's errors (a stage mixed in sets it).
    deciding_layer = "ordering"

    def __init__(self, *, rng: random.Random | None = None, **values: Any) -> None:
        self.rng = rng or random.Random(0)
        for param in self.params:
            setattr(self, param.name, values.get(param.name, param.default))

    def check_inputs(self, cluster: ClusterSpec, workload: Workload) -> None:
        """Refuse, before anything runs or is saved, inputs this policy cannot run on.

        Raises `InputError(..., field="policy")` whose message names the policy and why; the
        default accepts everything (the engine itself refuses what no policy could run, such
        as a job wider than the cluster).
        """

    def schedule(self, view: ClusterView) -> Iterable[Decision]:
        raise NotImplementedError

    def next_wakeup(self, view: ClusterView) -> float | None:
        """With `interval = None`: the next time to run without an event, or None."""
        return None

    def quiet_tick(self, view: ClusterView) -> bool:
        """At a tick with no arrival, completion or loan event since the last round (the
        engine runs a round at each of those, under `cadence="event"`; under a fixed
        cadence it never asks): whether the round would decide nothing and change no state
        but what this call brings up to date itself; the engine then does not run it (an
        idle round). Answer True only where that is provable from the policy's own state."""
        return False

    def select_reclaim(self, view: ClusterView, count: int) -> ReclaimPlan | None:
        """Which on-loan servers to return; `None` leaves it to the run's reclaim strategy."""
        return None


_REGISTRY: dict[str, type[Policy]] = {}


def register(cls: type[Policy]) -> type[Policy]:
    if cls.name in _REGISTRY and _REGISTRY[cls.name] is not cls:
        raise RuntimeError(f"policy name {cls.name!r} registered twice")
    _REGISTRY[cls.name] = cls
    return cls


def registry() -> Mapping[str, type[Policy]]:
    from simulation.policies import load_all

    load_all()
    return dict(sorted(_REGISTRY.items()))


def parse_params(
    cls: type[Policy], raw: Mapping[str, Any], *, source: str = "parameters"
) -> dict[str, Any]:
    """Validate user-supplied parameters against `cls.params`; unknown names are errors."""
    declared = {p.name: p for p in cls.params}
    values: dict[str, Any] = {}
    for key, value in raw.items():
        if key not in declared:
            known = ", ".join(sorted(declared)) or "none"
            raise InputError(
                f"policy {cls.name!r} has no parameter {key!r} (known: {known})",
                source=source,
                field=key,
            )
        values[key] = declared[key].parse(value, source=source)
    return values
