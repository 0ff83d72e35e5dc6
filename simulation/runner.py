"""One entry point for running a policy, shared by the CLI, Celery tasks and benchmarks.

Settings arrive as one flat mapping (`--set key=value`, a scenario's parameters): keys the
policy declares go to the policy, keys of `EngineConfig` go to the engine, anything else is
an error naming the key.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Mapping
from typing import Any

from simulation.composition import create_policy, resolve_policy
from simulation.engine import EngineConfig, Simulation
from simulation.errors import InputError
from simulation.limits import MAX_JOB_SECONDS, MIN_INTERVALS
from simulation.metrics import RunResult
from simulation.model import ClusterSpec, InferenceLoad, Workload
from simulation.policies.base import Param, parse_params

_ENGINE_FIELDS = {f.name: f for f in dataclasses.fields(EngineConfig)}


def engine_config(
    settings: Mapping[str, Any], *, seed: int, policy: str | None = None
) -> EngineConfig:
    """Build an `EngineConfig` from string or typed values, validating each.

    With `policy`, its paper's mechanisms (`Policy.engine_defaults`) replace the engine's
    defaults wherever `settings` leaves a key unset.
    """
    values: dict[str, Any] = {"seed": seed}
    if policy is not None:
        values.update(policy_engine_defaults(policy))
    defaults = EngineConfig()
    for key, raw in settings.items():
        if key not in _ENGINE_FIELDS or key == "seed":
            raise InputError(f"unknown setting {key!r}", source="settings", field=key)
        default = getattr(defaults, key)
        if isinstance(default, bool):
            values[key] = Param(key, bool, default, "").parse(raw, source="settings")
            continue
        kind = str if isinstance(default, str) else float if default is None else type(default)
        try:
            value = kind(raw)
        except (TypeError, ValueError):
            raise InputError(f"expected {kind.__name__}, got {raw!r}", source="settings",
                             field=key) from None
        if isinstance(value, int | float) and value < 0:
            raise InputError(f"must not be negative, got {raw!r}", source="settings", field=key)
        if isinstance(value, float) or key == "cadence" and value != "event":
            _check_engine_number(key, value, raw)
        values[key] = value
    return EngineConfig(**values)


def _check_engine_number(key: str, value: Any, raw: Any) -> None:
    """Engine numbers are seconds or shares: finite and at most MAX_JOB_SECONDS; the two
    intervals have a floor, since the work and the rows of a run grow as they shrink."""
    try:
        number = float(value)
    except ValueError:
        return  # a cadence that is not a number: the engine names it
    if not math.isfinite(number) or number > MAX_JOB_SECONDS:
        raise InputError(f"must be a finite number up to {MAX_JOB_SECONDS:g}, got {raw!r}",
                         source="settings", field=key)
    floor = MIN_INTERVALS.get(key)
    if floor is not None and number < floor:
        raise InputError(f"must be at least {floor:g} s, got {raw!r}", source="settings",
                         field=key)


def policy_engine_defaults(policy: str) -> dict[str, Any]:
    """The engine settings `policy` runs with unless told otherwise (its paper's own, and
    those of the stages a composition names)."""
    return dict(resolve_policy(policy).engine_defaults)


def split_settings(
    policy: str, settings: Mapping[str, Any]
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Separate policy parameters from engine settings.

    A key both declare (Aryl's `heterogeneous_efficiency`: the speed the engine gives a job
    across GPU types, and the speed the policy's knapsack assumes) goes to both, so one
    setting cannot leave the policy planning with a speed the engine does not run.
    """
    cls = resolve_policy(policy)
    declared = {p.name for p in cls.params}
    policy_params = {k: v for k, v in settings.items() if k in declared}
    engine = {k: v for k, v in settings.items() if k not in declared or k in _ENGINE_FIELDS}
    parse_params(cls, policy_params)
    return policy_params, engine


def run_simulation(
    cluster: ClusterSpec,
    workload: Workload,
    policy: str,
    *,
    settings: Mapping[str, Any] | None = None,
    seed: int = 0,
    inference_load: InferenceLoad | None = None,
    progress: Callable[[float], None] | None = None,
) -> RunResult:
    policy_params, engine_settings = split_settings(policy, settings or {})
    config = engine_config(engine_settings, seed=seed, policy=policy)
    scheduler = create_policy(policy, policy_params, seed=seed)
    scheduler.check_inputs(cluster, workload)
    sim = Simulation(
        cluster,
        workload,
        scheduler,
        config=config,
        inference_load=inference_load,
        progress=progress,
    )
    return sim.run()
