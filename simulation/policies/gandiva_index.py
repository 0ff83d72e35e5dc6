"""Gandiva's bookkeeping (issue #22): per-server tallies of load, units and free GPUs, kept
across rounds and recomputed only where jobs or packs changed, and the index that answers
Algorithm 1's questions (fullest server with room, idle servers, defragmentation sources)
without scanning every server. The rules that use them are in `gandiva.py`."""

from __future__ import annotations

from bisect import bisect_left, insort
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

from simulation.dlt_models import model_info
from simulation.view import ServerView


@dataclass(slots=True)
class Pack:
    """Jobs packed on one GPU of `server`, on trial since `since` unless `kept`."""

    server: str
    members: list[str]
    since: float
    snapshot: dict[str, float] = field(default_factory=dict)  # remaining work at `since`
    shares: dict[str, float] = field(default_factory=dict)  # unit time share at `since`
    kept: bool = False


@dataclass(frozen=True, slots=True)
class Candidates:
    """The servers a job of one queue group may use, in Algorithm 1's order."""

    servers: list[ServerView]
    pools: tuple[str, ...]
    size: int  # GPUs of the largest candidate server (0 without candidates)
    every_pool: bool  # the candidates are all available servers


# One job's share of a server's tally: (server, its GPUs there, the pack it counts in there
# or None, its GPUs if defragmentation may move it off else 0, elastic?).
TallyPart = tuple[str, int, int | None, int, bool]


class ServerTally:
    """Running sums over one server's jobs, kept as jobs come, go and (un)pack: what
    `Gandiva._units` would add up (a pack counts as one 1-GPU unit) and what
    defragmentation asks of the server."""

    __slots__ = ("plain_gpus", "plain_jobs", "sizes", "packs", "movable", "elastic")

    def __init__(self) -> None:
        self.plain_gpus = 0  # GPUs of jobs that are their own unit
        self.plain_jobs = 0
        self.sizes: Counter[int] = Counter()  # GPUs -> jobs that are their own unit
        self.packs: Counter[int] = Counter()  # pack -> its members here
        self.movable: Counter[int] = Counter()  # GPUs -> movable jobs of that size
        self.elastic = 0

    def count(self, part: TallyPart, sign: int) -> None:
        _, gpus, pack, movable, elastic = part
        if pack is None:
            self.plain_gpus += sign * gpus
            self.plain_jobs += sign
            self.sizes[gpus] += sign
            if not self.sizes[gpus]:
                del self.sizes[gpus]
        else:
            self.packs[pack] += sign
            if not self.packs[pack]:
                del self.packs[pack]
        if movable:
            self.movable[movable] += sign
            if not self.movable[movable]:
                del self.movable[movable]
        self.elastic += sign * elastic

    @property
    def load(self) -> int:
        return self.plain_gpus + len(self.packs)

    @property
    def units(self) -> int:
        return self.plain_jobs + len(self.packs)

    @property
    def size_range(self) -> tuple[int, int]:
        """The fewest and the most GPUs of a unit (a pack: one), (0, 0) with none."""
        sizes = [*self.sizes, 1] if self.packs else list(self.sizes)
        return (min(sizes), max(sizes)) if sizes else (0, 0)

    @property
    def need(self) -> int | None:
        """The fewest GPUs of a job defragmentation may move off (None: none)."""
        return min(self.movable) if self.movable else None


def packing_capacity(models: list[str]) -> float:
    """Aggregate throughput of jobs packed on one GPU, in solo-GPUs (Table 1)."""
    gains = [1.0 + model_info(m).packing_gain for m in models]
    return min(float(len(models)), sum(gains) / len(gains))


class ServerIndex:
    """Each server's time-sliced load and free GPUs, and the available servers by free GPUs.

    The policy `put`s a server's figures whenever its jobs or packs change. Queries answer
    what the plain scans over all servers answer: the fullest server with room (best fit,
    ties to the smallest id), the most free GPUs anywhere, whether defragmentation could move
    any job, each pool's free GPUs.
    """

    def __init__(self) -> None:
        self.load: dict[str, int] = {}
        self.units: dict[str, int] = {}  # time-sliced units: a job, or a pack as one GPU
        self.free: dict[str, int] = {}
        self.pool_free: Counter[str] = Counter()
        self.overloaded: set[str] = set()  # available servers time-slicing (load > GPUs)
        self.elastic: set[str] = set()  # available servers hosting an elastic job
        self._busy_at: dict[int, list[str]] = {}  # free GPUs -> sorted servers with jobs
        self._idle_at: dict[int, list[str]] = {}  # free GPUs -> sorted servers without
        # free GPUs -> how many servers with jobs there have each `need` (the fewest GPUs of
        # a job defragmentation may move off them)
        self._needs_at: dict[int, Counter[int]] = {}
        self._entry: dict[str, tuple[int, bool, int | None, str]] = {}

    def put(self, server: ServerView, load: int, units: int, need: int | None,
            elastic: bool) -> None:
        """Record `server`'s figures; `need` as in `_needs_at` (None: no movable job)."""
        sid = server.id
        self._remove(sid)
        free = max(0, server.gpus - load)
        self.load[sid], self.units[sid], self.free[sid] = load, units, free
        if not server.available:
            return
        busy = bool(server.jobs)
        insort((self._busy_at if busy else self._idle_at).setdefault(free, []), sid)
        if busy and need is not None:
            self._needs_at.setdefault(free, Counter())[need] += 1
        self.pool_free[server.pool] += free
        if load > server.gpus:
            self.overloaded.add(sid)
        if elastic:
            self.elastic.add(sid)
        self._entry[sid] = (free, busy, need, server.pool)

    def _remove(self, sid: str) -> None:
        entry = self._entry.pop(sid, None)
        if entry is None:
            return
        free, busy, need, pool = entry
        levels = self._busy_at if busy else self._idle_at
        level = levels[free]
        del level[bisect_left(level, sid)]
        if not level:
            del levels[free]
        if busy and need is not None:
            needs = self._needs_at[free]
            needs[need] -= 1
            if not needs[need]:
                del needs[need]
                if not needs:
                    del self._needs_at[free]
        self.pool_free[pool] -= free
        self.overloaded.discard(sid)
        self.elastic.discard(sid)

    def max_free(self) -> int:
        return max(max(self._busy_at, default=0), max(self._idle_at, default=0))

    def total_free(self) -> int:
        """Free GPUs over every available server."""
        return sum(self.pool_free.values())

    def fullest_with_room(self, gpus: int, exclude: set[str],
                          fewer_than: int | None = None) -> str | None:
        """The available server with the fewest free GPUs, at least `gpus`, then the smallest
        id, outside `exclude`; with `fewer_than`, only servers with jobs and fewer free GPUs
        than that (Gandiva._destination's rule)."""
        if fewer_than is not None:
            for free in range(gpus, fewer_than):
                sid = _first_outside(self._busy_at.get(free, ()), exclude)
                if sid is not None:
                    return sid
            return None
        for free in range(gpus, self.max_free() + 1):
            busy = _first_outside(self._busy_at.get(free, ()), exclude)
            idle = _first_outside(self._idle_at.get(free, ()), exclude)
            if busy is None or idle is None:
                sid = busy if idle is None else idle
            else:
                sid = min(busy, idle)
            if sid is not None:
                return sid
        return None

    def idle(self, gpus: int) -> list[str]:
        """Servers without jobs that have `gpus` GPUs, by id."""
        return self._idle_at.get(gpus, [])

    def emptiest_first(self) -> Iterator[tuple[int, str]]:
        """(free GPUs, server) of every server with a free GPU, most free first, then by id."""
        for free in range(self.max_free(), 0, -1):
            busy, idle = self._busy_at.get(free, []), self._idle_at.get(free, [])
            for sid in sorted(busy + idle) if busy and idle else busy or idle:
                yield free, sid

    def busy_by_free(self, threshold: int) -> list[str]:
        """Servers with jobs and at least `threshold` free GPUs, by (free GPUs, id)."""
        return [sid for free in sorted(self._busy_at) if free >= threshold
                for sid in self._busy_at[free]]

    def may_defragment(self, threshold: int) -> bool:
        """False if no server with jobs and `threshold` or more free GPUs holds a job that
        fits a server with jobs and fewer free GPUs (then defragmentation moves nothing)."""
        below = 0  # the most free GPUs of a server with jobs seen so far, in ascending order
        for free in sorted(self._busy_at):
            needs = self._needs_at.get(free)
            if free >= threshold and needs and min(needs) <= below:
                return True
            below = free
        return False


def _first_outside(sids: Iterable[str], exclude: set[str]) -> str | None:
    for sid in sids:
        if sid not in exclude:
            return sid
    return None
