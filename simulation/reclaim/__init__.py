"""Reclaim strategies: which on-loan servers to give back when the inference side asks.

A strategy reads the view and returns a `ReclaimPlan`; the engine applies it (scale-ins,
then preemptions) and refuses a plan that leaves a returned server occupied. Modules in this
package register their strategies with `@register_reclaim` and are imported automatically.
"""

from __future__ import annotations

import importlib
import pkgutil
import random
from collections.abc import Callable, Mapping

from simulation.decisions import ReclaimPlan
from simulation.errors import InputError
from simulation.view import ClusterView

ReclaimStrategy = Callable[[ClusterView, int, random.Random], ReclaimPlan]

_STRATEGIES: dict[str, ReclaimStrategy] = {}
_loaded = False


def register_reclaim(name: str) -> Callable[[ReclaimStrategy], ReclaimStrategy]:
    def wrap(fn: ReclaimStrategy) -> ReclaimStrategy:
        if name in _STRATEGIES and _STRATEGIES[name] is not fn:
            raise RuntimeError(f"reclaim strategy {name!r} registered twice")
        _STRATEGIES[name] = fn
        return fn

    return wrap


def reclaim_strategies() -> Mapping[str, ReclaimStrategy]:
    global _loaded
    if not _loaded:
        _loaded = True
        for module in sorted(pkgutil.iter_modules(__path__, prefix=f"{__name__}."),
                             key=lambda m: m.name):
            importlib.import_module(module.name)
    return dict(sorted(_STRATEGIES.items()))


def get_reclaim_strategy(name: str) -> ReclaimStrategy:
    strategies = reclaim_strategies()
    if name not in strategies:
        raise InputError(
            f"unknown reclaim strategy {name!r} (known: {', '.join(strategies)})",
            field="reclaim",
        )
    return strategies[name]


def on_loan_servers(view: ClusterView) -> list[str]:
    """Ids of servers currently lent to training, in cluster order."""
    return [sid for sid, server in view.servers.items() if server.on_loan]


def preempt_all_on(view: ClusterView, servers: list[str]) -> ReclaimPlan:
    """The plan that empties `servers` by preempting every job on them."""
    jobs: dict[str, None] = {}
    for sid in servers:
        for job_id in sorted(view.servers[sid].jobs):
            jobs[job_id] = None
    return ReclaimPlan(servers=tuple(servers), preempt=tuple(jobs))
