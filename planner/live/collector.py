"""The cyclic garbage collector paused while a decision computes.

A decision on a 500-server / 2,000-job snapshot allocates a few hundred thousand containers
(parsed jobs, engine state) that live until it answers and are then freed by reference
counting: the decision itself leaves no cycles. With the collector on, those allocations
trigger collections that walk every one of them while they are still alive. Paused, the
collector simply runs at the next allocations after the decision, over whatever is left by
then. `benchmarks/bench_api.py`, back to back without and with the pause: stateless reclaim
p95 47-61 -> 37 ms, stateful reclaim after a job's report p95 53-55 -> 38 ms.

Web workers run requests in threads, so the pause is counted: the collector comes back on
when the last decision in the process finishes, and only if it was on before the first.
"""

from __future__ import annotations

import functools
import gc
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import ParamSpec, TypeVar

_lock = threading.Lock()
_pauses = 0
_was_enabled = False

P = ParamSpec("P")
R = TypeVar("R")


@contextmanager
def collector_paused() -> Iterator[None]:
    """No cyclic collection inside this block (in any thread of the process)."""
    global _pauses, _was_enabled
    with _lock:
        if _pauses == 0:
            _was_enabled = gc.isenabled()
            gc.disable()
        _pauses += 1
    try:
        yield
    finally:
        with _lock:
            _pauses -= 1
            if _pauses == 0 and _was_enabled:
                gc.enable()


def with_collector_paused(function: Callable[P, R]) -> Callable[P, R]:
    """`function` run inside `collector_paused()`."""
    @functools.wraps(function)
    def paused(*args: P.args, **kwargs: P.kwargs) -> R:
        with collector_paused():
            return function(*args, **kwargs)
    return paused
