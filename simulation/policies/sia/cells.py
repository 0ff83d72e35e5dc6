"""Buddy cell allocation for locality-constrained jobs (HiveD, OSDI'20; SIA §5.5).

A cell is an aligned block of GPUs on one server: a server of 8 GPUs is one 8-GPU cell,
which splits into two 4-GPU buddies, each into two 2-GPU buddies, each into two GPUs. A job
of g GPUs (a power of two) holds exactly one g-GPU cell, so all its GPUs sit on one server.

The buddy rule (as in buddy memory allocation): take the smallest free cell that holds the
request, splitting it in halves until a half has the requested size (the other halves stay
free); a released cell merges with its buddy whenever the buddy is free too. Free cells are
kept maximal, so a free cell's buddy is always (partly) held.

Among free cells of the same size, the holder's kind decides (SIA §5.5):
- dedicated and reserved cells (a queue's quota, its reservations) go next to other
  dedicated cells (a free cell whose buddy holds one), then to the server with the fewest
  opportunistic GPUs: "as close as possible (in buddy cells) and furthest away from any
  cells allocated to opportunistic jobs";
- opportunistic cells go next to other opportunistic cells, then to the server with the
  fewest dedicated GPUs, and never into a buddy cell of a dedicated or reserved cell (a free
  cell whose buddy holds one): SIA cannot preempt them, so they must not fragment the cells
  the queues grow into. `guard=False` lifts that rule (HiveD*, which has no such rule).
Remaining ties go to the earlier server, then the lower offset. `servers` limits a
request to some servers (a queue's own, for its quota cells).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass
from typing import NamedTuple

DEDICATED = "dedicated"
RESERVED = "reserved"
OPPORTUNISTIC = "opportunistic"
KINDS = (DEDICATED, RESERVED, OPPORTUNISTIC)
PROTECTED = frozenset({DEDICATED, RESERVED})


def is_power_of_two(n: int) -> bool:
    return n > 0 and n & (n - 1) == 0


class Cell(NamedTuple):
    """`size` GPUs from `offset` on `server`; offset is a multiple of size."""

    server: str
    offset: int
    size: int

    @property
    def buddy(self) -> Cell:
        return Cell(self.server, self.offset ^ self.size, self.size)

    @property
    def parent(self) -> Cell:
        size = self.size * 2
        return Cell(self.server, self.offset - self.offset % size, size)

    def halves(self) -> tuple[Cell, Cell]:
        half = self.size // 2
        return Cell(self.server, self.offset, half), Cell(self.server, self.offset + half, half)

    def overlaps(self, other: Cell) -> bool:
        """Aligned cells either nest or are disjoint, so overlapping means one holds the other."""
        return (self.server == other.server and self.offset < other.offset + other.size
                and other.offset < self.offset + self.size)


@dataclass(frozen=True, slots=True)
class Holder:
    """Who holds a cell: a job (or a reservation) id, its kind and its queue."""

    owner: str
    kind: str
    queue: str = ""


class BuddyCells:
    """Free and held cells of a set of servers (server -> GPUs, each a power of two)."""

    def __init__(self, servers: Mapping[str, int]) -> None:
        for server, gpus in servers.items():
            if not is_power_of_two(gpus):
                raise ValueError(f"server {server} has {gpus} GPUs, not a power of two")
        self.top = dict(servers)
        self._order = {server: i for i, server in enumerate(servers)}
        self._free: set[Cell] = {Cell(server, 0, gpus) for server, gpus in servers.items()}
        self._held: dict[str, tuple[Cell, Holder]] = {}
        self._on_server: dict[str, dict[Cell, Holder]] = {server: {} for server in servers}

    # -- reading ----------------------------------------------------------------------------

    def free_cells(self) -> list[Cell]:
        """The maximal free cells, in server order then offset."""
        return sorted(self._free, key=lambda c: (self._order[c.server], c.offset))

    def cell_of(self, owner: str) -> Cell | None:
        held = self._held.get(owner)
        return held[0] if held is not None else None

    def owners(self) -> list[str]:
        return list(self._held)

    def holders_in(self, cell: Cell) -> list[tuple[Cell, Holder]]:
        """Held cells overlapping `cell` (inside it, or holding it)."""
        return [(c, h) for c, h in self._on_server[cell.server].items() if c.overlaps(cell)]

    def held_gpus(self, server: str, kinds: Collection[str]) -> int:
        return sum(c.size for c, h in self._on_server[server].items() if h.kind in kinds)

    def _buddy_holds(self, cell: Cell, kinds: Collection[str]) -> bool:
        if cell.size >= self.top[cell.server]:
            return False  # a whole server has no buddy
        buddy = cell.buddy
        return any(h.kind in kinds and c.overlaps(buddy)
                   for c, h in self._on_server[cell.server].items())

    # -- allocating -------------------------------------------------------------------------

    def candidates(self, size: int, kind: str, *, servers: Collection[str] | None = None,
                   guard: bool = True) -> list[Cell]:
        """Free cells a `size`-GPU cell of `kind` may be cut from, best first (module doc)."""
        if kind not in KINDS:
            raise ValueError(f"unknown cell kind {kind!r}")
        fitting = [c for c in self._free
                   if c.size >= size and (servers is None or c.server in servers)]
        if kind == OPPORTUNISTIC:
            if guard:
                fitting = [c for c in fitting if not self._buddy_holds(c, PROTECTED)]
            return sorted(fitting, key=lambda c: (
                c.size, not self._buddy_holds(c, (OPPORTUNISTIC,)),
                self.held_gpus(c.server, PROTECTED), self._order[c.server], c.offset))
        return sorted(fitting, key=lambda c: (
            c.size, not self._buddy_holds(c, PROTECTED),
            self.held_gpus(c.server, (OPPORTUNISTIC,)), self._order[c.server], c.offset))

    def allocate(self, size: int, owner: str, *, kind: str, queue: str = "",
                 servers: Collection[str] | None = None, guard: bool = True) -> Cell | None:
        """Hold a `size`-GPU cell for `owner`, or None when no allowed free cell fits."""
        if not is_power_of_two(size):
            raise ValueError(f"a cell holds a power of two GPUs, not {size}")
        if owner in self._held:
            raise ValueError(f"{owner} already holds {self._held[owner][0]}")
        options = self.candidates(size, kind, servers=servers, guard=guard)
        if not options:
            return None
        cell = options[0]
        self._free.remove(cell)
        while cell.size > size:  # split: keep the lower half, free its buddy
            cell, upper = cell.halves()
            self._free.add(upper)
        holder = Holder(owner, kind, queue)
        self._held[owner] = (cell, holder)
        self._on_server[cell.server][cell] = holder
        return cell

    def release(self, owner: str) -> Cell:
        """Free `owner`'s cell and merge it with free buddies; returns the merged free cell."""
        cell, _ = self._held.pop(owner)
        del self._on_server[cell.server][cell]
        while cell.size < self.top[cell.server] and cell.buddy in self._free:
            self._free.remove(cell.buddy)
            cell = cell.parent
        self._free.add(cell)
        return cell

    def clearable(self, size: int, evictable: Callable[[Holder], bool], *,
                  servers: Collection[str] | None = None) -> tuple[Cell, list[str]] | None:
        """The `size`-GPU cell that evicting the fewest GPUs would free, and whom to evict.

        Every holder overlapping the cell must be `evictable`; ties go to the earlier server,
        then the lower offset. None when no cell can be cleared that way.
        """
        best: tuple[tuple, Cell, list[str]] | None = None
        for server, top in self.top.items():
            if servers is not None and server not in servers:
                continue
            for offset in range(0, top, size) if size <= top else ():
                cell = Cell(server, offset, size)
                holders = self.holders_in(cell)
                if not all(evictable(h) for _, h in holders):
                    continue
                key = (sum(c.size for c, _ in holders), self._order[server], offset)
                if best is None or key < best[0]:
                    best = (key, cell, [h.owner for _, h in holders])
        return None if best is None else (best[1], best[2])


def quota_cells(gpus: int, cell_gpus: int) -> list[int]:
    """A quota of `gpus` as cells of at most `cell_gpus`: whole cells, then the binary
    decomposition of the rest (12 GPUs on 8-GPU servers: one 8-GPU and one 4-GPU cell)."""
    cells = [cell_gpus] * (gpus // cell_gpus)
    rest = gpus % cell_gpus
    size = cell_gpus
    while rest:
        size //= 2
        if rest >= size:
            cells.append(size)
            rest -= size
    return cells


def fits_in_cells(cells: Iterable[int], sizes: Iterable[int]) -> bool:
    """Whether cells of `sizes` pack into the cells `cells` (all powers of two).

    Largest first into the first cell with room: with power-of-two sizes every remainder is
    a multiple of the next size, so this finds a packing whenever one exists. This is the
    quota check of SIA §5.5: a queue's dedicated cells must fit its quota cells.
    """
    room = sorted(cells, reverse=True)
    for size in sorted(sizes, reverse=True):
        for i, left in enumerate(room):
            if left >= size:
                room[i] = left - size
                break
        else:
            return False
    return True
