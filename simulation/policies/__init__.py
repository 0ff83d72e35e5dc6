"""Scheduling policies. Every module in this package registers its policies on import."""

from __future__ import annotations

import importlib
import pkgutil
import threading

from simulation.policies.base import Param, Policy, register, registry

__all__ = ["Param", "Policy", "register", "registry", "load_all"]

_loaded = False
_in_progress = False  # this thread is importing: a nested call returns at once
_loading = threading.RLock()


def load_all() -> None:
    """Import every policy module (and subpackage) once so their `@register` calls run.

    Marked done only after the imports: a second thread asking meanwhile waits for them
    instead of seeing a registry with some policies missing."""
    global _loaded, _in_progress
    if _loaded:
        return
    with _loading:
        if _loaded or _in_progress:
            return
        _in_progress = True
        try:
            for module in sorted(pkgutil.walk_packages(__path__, prefix=f"{__name__}."),
                                 key=lambda m: m.name):
                importlib.import_module(module.name)
            _loaded = True
        finally:
            _in_progress = False
