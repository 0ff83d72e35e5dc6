"""Scheduling policies. Every module in this package registers its policies on import."""

from __future__ import annotations

import importlib
import pkgutil

from simulation.policies.base import Param, Policy, create_policy, register, registry

__all__ = ["Param", "Policy", "create_policy", "register", "registry", "load_all"]

_loaded = False


def load_all() -> None:
    """Import every policy module (and subpackage) once so their `@register` calls run."""
    global _loaded
    if _loaded:
        return
    _loaded = True
    for module in sorted(pkgutil.walk_packages(__path__, prefix=f"{__name__}."),
                         key=lambda m: m.name):
        importlib.import_module(module.name)
