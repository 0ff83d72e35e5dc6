"""Upper bounds on every number and count a user hands the simulator, defined once.

The trace readers, the cluster spec reader, the workload and inference-load generators, the
live snapshot parser and the planner's forms and APIs all check against these, so a typo (a
duration of 1e308 s, 3,000,000,000 GPUs per server) is refused up front with a message
naming the field and the limit, instead of growing a worker to gigabytes or overflowing a
database column. The README's "Limits" section lists them; `tests/simulation/test_limits.py`
keeps the two equal.

The values leave room above every real trace and cluster this project has seen: the longest
job in the Philly-derived traces runs 54 days and the longest trace spans 125 days; the
largest job asks for 128 GPUs; Aryl's production cluster has 963 servers of 8 GPUs.
"""

from __future__ import annotations

import math
from typing import Any

from simulation.errors import InputError

DAY = 86_400.0

#: Longest job running time in seconds (one year).
MAX_JOB_SECONDS = 366 * DAY
#: Latest submit time in seconds from the trace's start (one year); also the longest
#: generated inference load.
MAX_SUBMIT_SECONDS = 366 * DAY
#: GPUs one job may ask for (and its workers times GPUs per worker).
MAX_GPUS_PER_JOB = 16_384
#: Jobs in one trace, generated workload or live snapshot queue plus state.
MAX_JOBS = 200_000
#: Servers in one pool.
MAX_SERVERS_PER_POOL = 10_000
#: Servers in one cluster (all pools together).
MAX_SERVERS = 20_000
#: GPUs in one server.
MAX_GPUS_PER_SERVER = 64
#: Relative speed of a GPU type (the reference V100 is 1) and its memory in GB.
MAX_GPU_SPEED = 100.0
MAX_GPU_MEMORY_GB = 4096.0
#: Pools in one cluster.
MAX_POOLS = 64
#: Characters in a cluster, pool or GPU type name (server names add "-<number>").
MAX_NAME_CHARS = 40
#: Largest seed (a 32-bit signed integer: what every database stores).
MAX_SEED = 2**31 - 1
#: Times in a live snapshot (`now`, submit, remaining and running times, grace periods) in
#: seconds: a live cluster's clock may run for years, so only absurd values are refused.
MAX_SNAPSHOT_SECONDS = 1e10
#: Any other whole number a request sends (a priority, a count): what a 32-bit column holds.
MAX_INT = 2**31 - 1
#: Points of an inference load series (a year at 5-minute steps is 105,408).
MAX_LOAD_POINTS = 200_000
#: Shortest `cadence` (s between scheduling rounds) and `sample_interval` (s between
#: time-series rows) of the engine: a year at one row a minute is 527,040 rows.
MIN_INTERVALS = {"cadence": 1.0, "sample_interval": 60.0}
#: Nesting depth of a JSON or YAML document (a snapshot needs 5).
MAX_DEPTH = 32


def check_text(value: str, *, field: str, source: str = "", line: int | None = None,
               max_chars: int | None = MAX_NAME_CHARS) -> str:
    """`value` when it is at most `max_chars` long and holds no NUL or other control
    character and no lone surrogate (text no database column or UTF-8 file can hold)."""
    if max_chars is not None and len(value) > max_chars:
        raise InputError(f"is {len(value)} characters long; the limit is {max_chars}",
                         source=source, line=line, field=field)
    bad = unstorable_char(value)
    if bad is not None:
        raise InputError(f"contains {bad}, which is not allowed in text", source=source,
                         line=line, field=field)
    return value


def unstorable_char(value: str) -> str | None:
    """A description of the first character of `value` no database text can hold
    (NUL, another C0 control character but tab and newline, a lone surrogate), else None."""
    if value.isprintable():  # the common case, in C: no control characters, no surrogates
        return None
    for char in value:
        code = ord(char)
        if (code < 32 and char not in "\t\n\r") or 0xD800 <= code <= 0xDFFF:
            return f"the character U+{code:04X}"
    return None


def printable(text: str) -> str:
    """`text` with each character a page, a log or a database cannot show as an escape."""
    return text if text.isprintable() else "".join(
        char if char.isprintable() else f"\\u{ord(char):04x}" for char in text)


def check_number(value: float, *, field: str, maximum: float, source: str = "",
                 line: int | None = None, unit: str = "") -> float:
    """`value` when it is finite and at most `maximum` (the lower bound is the caller's)."""
    if not math.isfinite(value) or value > maximum:
        unit = f" {unit}" if unit else ""
        raise InputError(f"{value:g}{unit} is over the limit of {maximum:,g}{unit}",
                         source=source, line=line, field=field)
    return value


def nesting_depth_exceeds(value: Any, limit: int = MAX_DEPTH) -> bool:
    """Whether lists and dicts in `value` nest deeper than `limit` (iterative: no recursion)."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children = item.values()
        elif isinstance(item, list | tuple):
            children = item
        else:
            continue
        if depth > limit:
            return True
        stack.extend((child, depth + 1) for child in children
                     if isinstance(child, dict | list | tuple))
    return False
