"""Round-robin time-slicing in quanta (Gandiva §4.1, §6.1), planned ahead per server.

A time-slicing server's units (a job, or a pack of jobs on one GPU) stand in a rotation; the
units at its front that fit the server's GPUs run, the rest are suspended. At each quantum
boundary the units that ran go to the back, in order, and the front runs next; a unit
resumed after a suspension pays the switch overhead out of its quantum. Until the server's
units change, the rotation is deterministic, so `plan_rotation` plays it forward until it
repeats: the plan is every quantum's shares, a prefix then a loop. A rotation of units of
mixed sizes may take hundreds of quanta to repeat, so a plan looks a horizon of quanta
ahead and then `expires`: the policy re-plans the server at that boundary, which turns the
rotation exactly as the plan would have. Planning far ahead is wasted on a server whose
units change every few quanta, so the policy plans twice as far as the last plan lasted,
between `MIN_HORIZON` and `HORIZON`. The policy hands each job its part of the plan
once (`ShareCycle`), instead of a share per job per quantum.

A slice lists the shares of the units its turn decided one by one, the front of the
rotation; the rest of the rotation is suspended without being listed, so a quantum costs
the units that run, not every unit of a crowded server (hundreds on the Muri traces).
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass

from simulation.share_cycle import ShareCycle

Unit = Hashable  # a job id, or ("pack", pack id)
SUSPENDED = 0.0  # the share of a unit swapped out: it keeps its GPUs
# Quanta a plan looks ahead at most when its rotation has not repeated by then. A server of
# n 1-GPU units on 8 GPUs repeats every n / gcd(n, 8) quanta; on the Muri traces a server
# holds a hundred or more units for hours (muri_trace2: ~190 each at 5.6e6 s), and a plan
# that expires before its loop re-tells every job its shares at each expiry (issue #16).
HORIZON = 256
MIN_HORIZON = 2  # ... and at least


@dataclass(slots=True)
class Slice:
    """One quantum of a server: its rotation and the shares of `rotation[:reached]`; the
    units after those are suspended."""

    rotation: tuple[Unit, ...]
    shares: dict[Unit, float]
    suspends: int  # units swapped out at the boundary into this quantum
    ran: tuple[Unit, ...] = ()  # the units with a share above 0, in rotation order
    reached: int = 0  # `turn` decided rotation[:reached] one by one; the rest are suspended


@dataclass(slots=True)
class RotationPlan:
    """The slices of a server from the quantum starting at `origin` on: `slices[i]` is
    quantum i, and past the end the slices from `loop` on repeat, unless the plan `expires`
    there (then `loop` is its last slice, a placeholder the policy never lets run).
    `counted` is the last quantum whose suspends are in the policy's counter."""

    origin: float
    slices: list[Slice]
    loop: int
    expires: bool = False
    counted: int = 0
    # suspends at the boundary back into `slices[loop]` from the last slice (entering it
    # from the slice before it may swap out other units)
    loop_suspends: int = 0
    # the shares in slices[0], slices[1], ... of each unit that runs in one of them: built
    # at the first `unit_sequence` from quantum 0, which the jobs of a freshly planned
    # server ask for
    columns: dict[Unit, list[float]] | None = None
    members: frozenset[Unit] | None = None  # the units of the rotation, once asked for
    least_share: float = 1.0  # the lowest share above 0 in the plan, once `unit_cycles` ran
    # (start, each unit's share in quantum 0 and its `ShareCycle` from `start` on, None if
    # its share stays): for the units that run, at the first `unit_cycles`
    cycles: tuple[float, dict[Unit, tuple[float, ShareCycle | None]]] | None = None

    def holds(self, unit: Unit) -> bool:
        """Whether `unit` is in the plan's rotation (a pack formed since is not)."""
        if self.members is None:
            self.members = frozenset(self.slices[0].rotation)
        return unit in self.members

    def share(self, i: int, unit: Unit) -> float:
        """`unit`'s share in quantum `i`; 1.0 for a unit the plan does not hold."""
        return self.slice(i).shares.get(unit, SUSPENDED) if self.holds(unit) else 1.0

    def expiry(self, quantum: float) -> float:
        """When an expiring plan must be replaced: the start of the quantum after its last."""
        return self.origin + len(self.slices) * quantum

    def index(self, quantum_start: float, quantum: float) -> int:
        """The quantum number of the quantum starting at `quantum_start`."""
        return round((quantum_start - self.origin) / quantum)

    def slice(self, i: int) -> Slice:
        n = len(self.slices)
        return self.slices[i if i < n else self.loop + (i - self.loop) % (n - self.loop)]

    def suspends_through(self, i: int) -> int:
        """Suspensions at the boundaries into quanta counted + 1 .. i."""
        total = 0
        n, loop = len(self.slices), self.loop
        j = self.counted + 1
        while j <= i and j < n:
            total += self.slices[j].suspends
            j += 1
        if j <= i:  # whole loops, then the rest; each enters `slices[loop]` from the last
            period = n - loop
            counts = [self.loop_suspends] + [s.suspends for s in self.slices[loop + 1:]]
            loops, rest = divmod(i - j + 1, period)
            total += loops * sum(counts)
            offset = (j - loop) % period
            total += sum(counts[(offset + r) % period] for r in range(rest))
        self.counted = max(self.counted, i)
        return total


def turn(rotation: Sequence[Unit], old: Mapping[Unit, float], units: Mapping[Unit, int],
         gpus: int, running: set[Unit], resumed: float, was_running: int | None = None,
         absent: float | None = None, smallest: int | None = None) -> Slice:
    """Give the server's GPUs to `rotation`'s units in order: those in `running` keep their
    share, the others take what is free, at `resumed` if they were suspended (full speed
    if they were not running before: not in `old`, whose missing units have the share
    `absent`, None for new), and the rest are suspended.

    Once fewer GPUs are free than the smallest unit needs and every unit of `running` has
    been met, the rest of the rotation is suspended wholesale; `was_running` (the units of
    `rotation` with a share above 0 in `old`, counted when None) gives their swaps, so a
    turn costs the units that run, not all units (issue #22: hundreds per server);
    `smallest` (the least of `units`, found when None) likewise."""
    free = gpus - sum(units[u] for u in running) if running else gpus
    if smallest is None:
        smallest = min(units.values(), default=0)
    shares: dict[Unit, float] = {}
    ran: list[Unit] = []
    suspends = 0
    pending = len(running)  # units of `running` not met yet
    seen_running = 0  # units met with a share above 0 in `old`
    n = len(rotation)
    i = 0
    if not running and absent is not None:  # the loop below for a boundary (every quantum
        get = old.get  # of every plan: issue #16), where no unit keeps running or is new
        while i < n and free >= smallest:
            unit = rotation[i]
            i += 1
            before = get(unit, absent)
            size = units[unit]
            if before > SUSPENDED:
                seen_running += 1
                if size > free:
                    shares[unit] = SUSPENDED
                    suspends += 1
                    continue
            elif size > free:
                shares[unit] = SUSPENDED
                continue
            free -= size
            share = shares[unit] = resumed if before == SUSPENDED else 1.0
            if share > SUSPENDED:
                ran.append(unit)
    while i < n and (free >= smallest or pending):
        unit = rotation[i]
        i += 1
        before = old.get(unit, absent)
        if before is not None and before > SUSPENDED:
            seen_running += 1
        if unit in running:
            pending -= 1
            share = shares[unit] = old[unit]
        elif units[unit] <= free:
            free -= units[unit]
            share = shares[unit] = resumed if before == SUSPENDED else 1.0
        else:
            shares[unit] = SUSPENDED
            suspends += before is not None and before > SUSPENDED
            continue
        if share > SUSPENDED:
            ran.append(unit)
    if i < n:
        if was_running is None:
            was_running = sum(1 for u in rotation if old.get(u, SUSPENDED) > SUSPENDED)
        suspends += was_running - seen_running
    return Slice(tuple(rotation), shares, suspends, tuple(ran), i)


def boundary_turn(current: Slice, units: Mapping[Unit, int], gpus: int, resumed: float,
                  smallest: int | None = None) -> Slice:
    """The next quantum: the units that ran go to the back, in order, and the front runs.

    The units that ran all lie in `current.rotation[:current.reached]`, so only that part
    is walked one by one."""
    ran = current.ran
    turned = set(ran)
    reached = current.reached
    rotation = (tuple([u for u in current.rotation[:reached] if u not in turned])
                + current.rotation[reached:] + ran)  # a tuple: `turn` keeps it as it is
    return turn(rotation, current.shares, units, gpus, set(), resumed, len(ran), SUSPENDED,
                smallest)


def plan_rotation(origin: float, first: Slice, units: Mapping[Unit, int], gpus: int,
                  resumed: float, loops: bool = True, horizon: int = HORIZON) -> RotationPlan:
    """`first` then the boundary turns after it, until a slice repeats one before it (with
    `loops`) or the plan holds `horizon` quanta. A key hashes the whole rotation, hundreds
    of units on a crowded server: once per quantum, and not at all without `loops`."""
    slices = [first]
    seen: dict[tuple, int] = {}  # not `first`: its suspends are a touch's, not a boundary's
    smallest = min(units.values(), default=0)
    while len(slices) < horizon:
        following = boundary_turn(slices[-1], units, gpus, resumed, smallest)
        if loops:
            at = seen.setdefault(_key(following), len(slices))
            if at < len(slices):
                return RotationPlan(origin, slices, at, loop_suspends=following.suspends)
        slices.append(following)
    return RotationPlan(origin, slices, len(slices) - 1, expires=True)


def _key(s: Slice) -> tuple:
    """The rotation and every unit's share: the units above 0 and their shares say it."""
    return s.rotation, s.ran, tuple(map(s.shares.__getitem__, s.ran))


# A share sequence per quantum from the current one: (values, loop), the values from `loop`
# on repeating.
ShareSequence = tuple[list[float], int]


def plan_columns(plan: RotationPlan) -> dict[Unit, list[float]]:
    """The shares in slices[0], slices[1], ... of each unit that runs in one of them."""
    if plan.columns is None:  # from the listed shares only: a few units per slice
        n = len(plan.slices)
        columns: dict[Unit, list[float]] = {
            u: [SUSPENDED] * n for u in set().union(*(s.ran for s in plan.slices))}
        for i, s in enumerate(plan.slices):
            for u in s.ran:
                columns[u][i] = s.shares[u]
        plan.columns = columns
    return plan.columns


def unit_cycles(plan: RotationPlan, start: float, quantum: float
                ) -> dict[Unit, tuple[float, ShareCycle | None]]:
    """For each unit that runs in `plan`: its share in quantum 0 and, unless that share
    stays, its shares from quantum 1 on as a `ShareCycle` starting at `start` (the end of
    quantum 0), the same cycle as `shifted(unit_sequence(plan, 0, unit), 1)` gives. Built
    from the quanta each unit runs in (one or two of ~55 on a crowded server), and
    `least_share` with them."""
    if plan.cycles is None or plan.cycles[0] != start:
        n, loop = len(plan.slices), plan.loop
        runs: dict[Unit, list[int]] = {}
        values: dict[Unit, list[float]] = {}
        least = 1.0
        for i, s in enumerate(plan.slices):
            shares = s.shares
            for u in s.ran:
                share = shares[u]
                if u in runs:
                    runs[u].append(i)
                    values[u].append(share)
                else:
                    runs[u] = [i]
                    values[u] = [share]
                if share < least:
                    least = share
        plan.least_share = least
        cycles: dict[Unit, tuple[float, ShareCycle | None]] = {}
        # from quantum 1 on: the quanta shift down by one; with no prefix (loop 0) quantum 0
        # moves to the end of the loop
        rest_length, rest_loop = (n - 1, loop - 1) if loop >= 1 else (n, 0)
        for unit, unit_runs in runs.items():
            unit_values = values[unit]
            first = unit_values[0] if unit_runs[0] == 0 else SUSPENDED
            if unit_values.count(first) == n:  # runs in every quantum at one share
                cycles[unit] = (first, None)
                continue
            if unit_runs[0] == 0:
                rest_runs = [k - 1 for k in unit_runs[1:]]
                rest_values = unit_values[1:]
                if loop == 0:
                    rest_runs.append(n - 1)
                    rest_values.append(first)
            else:
                rest_runs = [k - 1 for k in unit_runs]
                rest_values = unit_values
            cycles[unit] = (first, ShareCycle.sparse(first, start, quantum, rest_length,
                                                     rest_runs, rest_values, rest_loop))
        plan.cycles = (start, cycles)
    return plan.cycles[1]


def unit_sequence(plan: RotationPlan, start: int, unit: Unit) -> ShareSequence:
    """`unit`'s shares in `plan` from quantum `start` on."""
    n, loop = len(plan.slices), plan.loop
    if start == 0:  # the same as below, for every unit that runs at once
        column = plan_columns(plan).get(unit)
        if column is not None:
            return list(column), loop
        return [plan.share(0, unit)] * n, loop
    if not plan.holds(unit):
        return [1.0] * (n - start if start < loop else n - loop), max(0, loop - start)
    if start < loop:
        return [s.shares.get(unit, SUSPENDED) for s in plan.slices[start:]], loop - start
    period = n - loop
    offset = (start - loop) % period
    order = [plan.slices[loop + (offset + r) % period] for r in range(period)]
    return [s.shares.get(unit, SUSPENDED) for s in order], 0


def shifted(seq: ShareSequence, by: int) -> ShareSequence:
    """The same sequence from `by` quanta later."""
    values, loop = seq
    if by <= loop:
        return values[by:], loop - by
    period = len(values) - loop
    offset = (by - loop) % period
    tail = values[loop:]
    return tail[offset:] + tail[:offset], 0


def lowest(a: ShareSequence, b: ShareSequence) -> ShareSequence:
    """The quantum-by-quantum minimum of two sequences (a job spread over two servers runs
    at the share of its slowest part). The policy gives such servers expiring plans, whose
    sequences end in a single repeated share, so the result is no longer than its parts."""
    (va, la), (vb, lb) = a, b
    prefix = max(la, lb)
    length = prefix + math.lcm(len(va) - la, len(vb) - lb)
    return list(map(min, _unrolled(va, la, length), _unrolled(vb, lb, length))), prefix


def _unrolled(values: list[float], loop: int, length: int) -> list[float]:
    """The first `length` values of the sequence (values, loop)."""
    if length <= len(values):
        return values[:length]
    tail = values[loop:]
    out = list(values)
    while len(out) < length:
        out.extend(tail)
    return out[:length]
