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
rotation; the rest of the rotation is suspended without being listed, and the rotation
itself is a window of a tape the plan's slices share (`Slice`), so a quantum costs the
units that run, not every unit of a crowded server (hundreds on the Muri traces). Units of
one size, once every quantum runs the next `width` of them, turn as a `Ring`: the plan
lists the slices before it and reads the ring's quanta in closed form.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Iterator, Mapping, Sequence, Set
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


class Slice:
    """One quantum of a server: its rotation and the shares of `rotation[:reached]`; the
    units after those are suspended.

    The rotation is kept as a ring: `head` (the units a turn walked past without running
    them, which keep their place at the front) then `tape[start:end]`. A boundary turn
    appends the units that ran to the tape, which the slices of one plan share, so a
    quantum costs the units its turn walks, not the whole rotation (hundreds of units on a
    crowded server, issue #16)."""

    __slots__ = ("head", "tape", "start", "end", "shares", "suspends", "ran", "reached")

    def __init__(self, rotation: Sequence[Unit], shares: dict[Unit, float], suspends: int,
                 ran: tuple[Unit, ...] = (), reached: int = 0) -> None:
        self.head: tuple[Unit, ...] = ()
        self.tape: list[Unit] = list(rotation)
        self.start = 0
        self.end = len(self.tape)
        self.shares = shares
        self.suspends = suspends  # units swapped out at the boundary into this quantum
        self.ran = ran  # the units with a share above 0, in rotation order
        self.reached = reached  # `turn` decided rotation[:reached] one by one

    @property
    def rotation(self) -> tuple[Unit, ...]:
        return self.head + tuple(self.tape[self.start:self.end])


class Ring:
    """A plan's quanta from its last listed slice on, in closed form: `n` units of one
    size, `width` of which run at a time, at least two widths of them, so every quantum
    runs the next `width` units of `order` (wrapping), each resumed from a suspension at
    `share`, after a quantum that ran `width` units too (`plan_rotation`). Ring quantum k
    runs `order[(k·width + t) % n]` for t < width, its rotation is `order` turned by
    k·width, and it swaps out the `width` units the quantum before ran. A ring of
    hundreds of units repeats only every n / gcd(n, width) quanta, so its slices are made
    when read, not played forward (3.5 M slices on muri_trace2, issue #16)."""

    __slots__ = ("order", "tape", "n", "width", "share", "count")

    def __init__(self, order: tuple[Unit, ...], width: int, share: float) -> None:
        self.order = order
        self.tape = list(order) * 2  # a window of n from any offset is a turned `order`
        self.n = len(order)
        self.width = width
        self.share = share
        self.count = 0  # ring quanta in the plan, set once its length is known

    def slice(self, k: int) -> Slice:
        """Ring quantum k as the slice stepping would have made (its tape another list)."""
        width, offset = self.width, k * self.width % self.n
        s = _new_slice(Slice)
        s.head, s.tape, s.start, s.end = (), self.tape, offset, offset + self.n
        s.ran = ran = tuple(self.tape[offset:offset + width])
        s.shares = dict.fromkeys(ran, self.share)
        s.suspends = width
        s.reached = width
        return s

    def suspends(self, lo: int, hi: int) -> int:
        """The units swapped out at the boundaries into ring quanta lo .. hi - 1."""
        return max(0, hi - lo) * self.width

    def quanta_of(self) -> Iterator[tuple[Unit, range]]:
        """Each unit that runs in the ring's `count` quanta, in the order stepping first
        runs them, with its places on the ring unrolled lap after lap: the unit at
        position p of `order` runs once per lap, at place p + lap·n, in ring quantum
        place // width."""
        limit, n = self.count * self.width, self.n
        for position, unit in enumerate(self.order[:limit]):
            yield unit, range(position, limit, n)

    def repeats(self, s: Slice) -> int | None:
        """The first ring quantum equal to `s` (rotation, running units, their shares), or
        None: quantum k starts at offset k·width mod n, so offset o is reached when
        g = gcd(n, width) divides it, at k = (o / g)·(width / g)⁻¹ mod n / g."""
        rotation, width, n = s.rotation, self.width, self.n
        if len(rotation) != n or len(s.ran) != width:
            return None
        offset = self.order.index(rotation[0]) if rotation[0] in self.order else -1
        g = math.gcd(n, width)
        if (offset < 0 or offset % g or rotation != tuple(self.tape[offset:offset + n])
                or s.ran != rotation[:width]
                or any(s.shares[u] != self.share for u in s.ran)):
            return None
        return offset // g * pow(width // g, -1, n // g) % (n // g)


@dataclass(slots=True)
class RotationPlan:
    """The slices of a server from the quantum starting at `origin` on: `slice(i)` is
    quantum i, and past the plan's `quanta` the slices from `loop` on repeat, unless the
    plan `expires` there (then `loop` is its last slice, a placeholder the policy never
    lets run). `slices` lists the first quanta; a `ring` holds the rest in closed form.
    `counted` is the last quantum whose suspends are in the policy's counter."""

    origin: float
    slices: list[Slice]
    loop: int
    expires: bool = False
    counted: int = 0
    # suspends at the boundary back into `slices[loop]` from the last slice (entering it
    # from the slice before it may swap out other units)
    loop_suspends: int = 0
    # the quanta (and shares) in which each unit runs, once `_runs_of` is asked
    runs_of: dict[Unit, list[tuple[int, float]]] | None = None
    # the units of the rotation, once asked for, or the policy's own set of them, which it
    # changes only as it replaces the plan
    members: Set[Unit] | None = None
    least_share: float = 1.0  # the lowest share above 0 in the plan, once `unit_cycles` ran
    # (start, each unit's share in quantum 0 and its `ShareCycle` from `start` on, None if
    # its share stays): for the units that run, at the first `unit_cycles`
    cycles: tuple[float, dict[Unit, tuple[float, ShareCycle | None]]] | None = None
    ring: Ring | None = None  # the quanta after `slices`, if a ring turns there

    @property
    def quanta(self) -> int:
        """The quanta the plan lists before it loops back (or expires)."""
        return len(self.slices) + (self.ring.count if self.ring is not None else 0)

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
        return self.origin + self.quanta * quantum

    def index(self, quantum_start: float, quantum: float) -> int:
        """The quantum number of the quantum starting at `quantum_start`."""
        return round((quantum_start - self.origin) / quantum)

    def slice(self, i: int) -> Slice:
        n, listed = self.quanta, len(self.slices)
        if i >= n:
            i = self.loop + (i - self.loop) % (n - self.loop)
        if i < listed:
            return self.slices[i]
        assert self.ring is not None
        return self.ring.slice(i - listed)

    def _suspends(self, lo: int, hi: int) -> int:
        """Suspensions at the boundaries into quanta lo .. hi - 1 (hi <= `quanta`)."""
        listed = len(self.slices)
        total = sum(s.suspends for s in self.slices[lo:min(hi, listed)])
        if hi > listed and self.ring is not None:
            total += self.ring.suspends(max(lo, listed) - listed, hi - listed)
        return total

    def _in_loop(self, lo: int, hi: int) -> int:
        """Suspensions at the boundaries into the loop's quanta lo .. hi - 1, counted from
        its start, which is entered from the plan's last quantum (`loop_suspends`)."""
        if hi <= lo:
            return 0
        loop = self.loop
        return ((self.loop_suspends if lo == 0 else 0)
                + self._suspends(loop + max(lo, 1), loop + hi))

    def suspends_through(self, i: int) -> int:
        """Suspensions at the boundaries into quanta counted + 1 .. i."""
        n, loop = self.quanta, self.loop
        j = self.counted + 1
        total = self._suspends(j, min(i + 1, n)) if j < n else 0
        j = max(j, min(i + 1, n))
        if j <= i:  # whole loops, then the rest
            period = n - loop
            loops, rest = divmod(i - j + 1, period)
            offset = (j - loop) % period
            total += (loops * self._in_loop(0, period)
                      + self._in_loop(offset, min(offset + rest, period)))
            total += self._in_loop(0, offset + rest - period)
        self.counted = max(self.counted, i)
        return total


def turn(rotation: Sequence[Unit], old: Mapping[Unit, float], units: Mapping[Unit, int],
         gpus: int, running: set[Unit], resumed: float, was_running: int | None = None,
         sizes: tuple[int, int] | None = None) -> Slice:
    """Give the server's GPUs to `rotation`'s units in order: those in `running` keep their
    share, the others take what is free, at `resumed` if they were suspended (full speed
    if they were not running before: not in `old`), and the rest are suspended.

    Once fewer GPUs are free than the smallest unit needs and every unit of `running` has
    been met, the rest of the rotation is suspended wholesale, so a turn costs the units
    that run, not all units (issue #22: hundreds per server); the swaps among the rest are
    counted from `was_running` (the units of `rotation` with a share above 0 in `old`,
    counted when None). `sizes`: the fewest and most GPUs of a unit, if the caller keeps
    them (a pass over the units otherwise)."""
    free = gpus - sum(units[u] for u in running) if running else gpus
    smallest = (sizes or unit_sizes(units))[0]
    shares: dict[Unit, float] = {}
    ran: list[Unit] = []
    suspends = 0
    pending = len(running)  # units of `running` not met yet
    seen_running = 0  # units met with a share above 0 in `old`
    n = len(rotation)
    i = 0
    while i < n and (free >= smallest or pending):
        unit = rotation[i]
        i += 1
        before = old.get(unit)
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
    return Slice(rotation, shares, suspends, tuple(ran), i)


_new_slice = object.__new__  # a boundary turn fills in each field itself


def boundary_turn(current: Slice, units: Mapping[Unit, int], gpus: int, resumed: float,
                  smallest: int | None = None) -> Slice:
    """The next quantum: the units that ran go to the back, in order, and the front runs.

    The units that ran all lie in `current.rotation[:current.reached]`: those walked past
    stay in front (the next head), the ones that ran are appended to the tape, and only the
    front is walked, until fewer GPUs are free than the smallest unit needs (as `turn` at a
    boundary, where no unit keeps running and none is new). `plan_rotation` turns a ring
    of units of one size itself (its ring step)."""
    if smallest is None:
        smallest = min(units.values(), default=0)
    tape, end = current.tape, current.end
    if end != len(tape):  # `current` was turned before: its successors own the tape's end
        tape = tape[:end]
    head, start, reached, ran = current.head, current.start, current.reached, current.ran
    kept = len(head)
    if reached <= kept:
        turned = set(ran)
        head = tuple([u for u in head[:reached] if u not in turned]) + head[reached:]
    else:
        cut = start + reached - kept
        front = list(head) + tape[start:cut] if kept else tape[start:cut]
        if len(front) != len(ran):  # some were walked past: they stay in front
            turned = set(ran)
            head = tuple([u for u in front if u not in turned])
        else:
            head = ()
        start = cut
    tape.extend(ran)
    end += len(ran)
    get = current.shares.get
    shares: dict[Unit, float] = {}
    running: list[Unit] = []
    free = gpus
    suspends = seen_running = walked = 0
    for part, lo, hi in ((head, 0, len(head)), (tape, start, end)):
        i = lo
        while i < hi and free >= smallest:
            unit = part[i]
            i += 1
            before = get(unit, SUSPENDED)
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
                running.append(unit)
        walked += i - lo
        if i < hi:  # the rest of the rotation is suspended wholesale
            suspends += len(ran) - seen_running
            break
    following = _new_slice(Slice)
    following.head, following.tape, following.start, following.end = head, tape, start, end
    following.shares, following.suspends = shares, suspends
    following.ran, following.reached = tuple(running), walked
    return following


def plan_rotation(origin: float, first: Slice, units: Mapping[Unit, int], gpus: int,
                  resumed: float, loops: bool = True, horizon: int = HORIZON,
                  sizes: tuple[int, int] | None = None) -> RotationPlan:
    """`first` then the boundary turns after it, until a slice repeats one before it (with
    `loops`) or the plan holds `horizon` quanta.

    A slice's key is its running units, their shares and a part of its rotation that
    equal rotations share, so a quantum costs its walk, not a pass over the rotation:
    while no slice has a head, the tape repeats with the rotation's length (each unit
    appended is the one that many places before it), so the window's first unit says
    the whole rotation; after that, the ends of the rotation (`_ends`). Slices with the
    same key are compared unit by unit before the plan loops. Once units of one size turn
    as a ring, the rest of the plan is the ring's closed form (`_ring_plan`)."""
    slices = [first]
    seen: dict[tuple, list[int]] = {}  # not `first`: its suspends are a touch's
    smallest, largest = sizes or unit_sizes(units)
    # Units of one size (Algorithm 1 fills a server with jobs of one size: 99.95 % of the
    # boundary turns on muri_trace2) run gpus // size at a time: a ring (`Ring`) from the
    # first slice whose walk ran `width` units and no other, if two widths of units wait.
    width = gpus // smallest if smallest == largest > 0 else 0
    tape_repeats = not first.head
    while len(slices) < horizon:
        last = slices[-1]
        if (width and resumed > SUSPENDED and not last.head
                and last.reached == len(last.ran) == width
                and last.end - last.start >= 2 * width):
            return _ring_plan(origin, slices, width, resumed, loops, horizon)
        following = boundary_turn(last, units, gpus, resumed, smallest)
        if loops:
            if tape_repeats and following.head:  # the tape repeats no more: key anew
                tape_repeats = False
                seen = {}
                for j in range(1, len(slices)):
                    seen.setdefault(_key(slices[j], False), []).append(j)
            key = _key(following, tape_repeats)
            earlier = seen.get(key)
            if earlier is None:
                seen[key] = [len(slices)]
            else:
                rotation = following.rotation
                at = next((j for j in earlier if slices[j].rotation == rotation), None)
                if at is not None:
                    return RotationPlan(origin, slices, at, loop_suspends=following.suspends)
                earlier.append(len(slices))
        slices.append(following)
    return RotationPlan(origin, slices, len(slices) - 1, expires=True)


def unit_sizes(units: Mapping[Unit, int]) -> tuple[int, int]:
    """The fewest and the most GPUs of a unit, (0, 0) with none."""
    sizes = set(units.values())
    return (min(sizes), max(sizes)) if sizes else (0, 0)


def _ring_plan(origin: float, slices: list[Slice], width: int, share: float, loops: bool,
               horizon: int) -> RotationPlan:
    """`plan_rotation` on from `slices[-1]`, after which the units turn as a `Ring`: the
    units it ran go to the back and every quantum runs the next `width`. As stepping
    would, the plan loops back to the first slice that a later quantum equals (a listed
    slice after `first` that the ring reaches, `Ring.repeats`, else the ring's first
    quantum, which returns after n / gcd(n, width) quanta), or expires at `horizon`."""
    last = slices[-1]
    rotation = last.rotation
    # `last.ran` is the front of its rotation (its walk ran every unit it met)
    ring = Ring(rotation[width:] + last.ran, width, share)
    listed = len(slices)
    room = horizon - listed
    if loops:
        back, at = ring.n // math.gcd(ring.n, width), listed
        for j in range(1, listed):
            k = ring.repeats(slices[j])
            if k is not None and k < back:
                back, at = k, j
        if back < room:
            ring.count = back
            return RotationPlan(origin, slices, at, loop_suspends=width,
                                ring=ring if back else None)
    ring.count = room
    return RotationPlan(origin, slices, horizon - 1, expires=True, ring=ring)


def _key(s: Slice, ring: bool) -> tuple:
    """What `plan_rotation` compares first: the units that run, their shares and, in a
    plan whose tape repeats (`ring`), the window's first unit, else `_ends`."""
    return (s.tape[s.start] if ring else _ends(s), s.ran, tuple(map(s.shares.__getitem__, s.ran)))


def _ends(s: Slice) -> tuple[Unit, ...]:
    """The first and the last `_KEY_UNITS` units of `s.rotation` (all of a short one):
    equal for equal rotations whatever their heads, and seldom for others (a rotation of
    equal units turns as a ring: its first unit says the rest)."""
    head, tape, start, end = s.head, s.tape, s.start, s.end
    kept = len(head)
    if kept + end - start <= 2 * _KEY_UNITS:
        return s.rotation
    if kept >= _KEY_UNITS:
        rotation = s.rotation
        return rotation[:_KEY_UNITS] + rotation[-_KEY_UNITS:]
    # the tape's window is longer than `_KEY_UNITS`: the back lies in it
    return head + tuple(tape[start:start + _KEY_UNITS - kept] + tape[end - _KEY_UNITS:end])


_KEY_UNITS = 16  # units from each end of a rotation in a slice's key


def unit_cycles(plan: RotationPlan, start: float, quantum: float
                ) -> dict[Unit, tuple[float, ShareCycle | None]]:
    """For each unit that runs in `plan`: its share in quantum 0 and, unless that share
    stays, its shares from quantum 1 on as a `ShareCycle` starting at `start` (the end of
    quantum 0), the same cycle as its shares quantum by quantum from quantum 1 give. Built
    from the quanta each unit runs in (one or two of ~55 on a crowded server), and
    `least_share` with them."""
    if plan.cycles is None or plan.cycles[0] != start:
        n, loop = plan.quanta, plan.loop
        # each unit's quanta with a share above 0, counted from quantum 1 (quantum 0 is -1)
        runs: dict[Unit, list[int]] = {}
        values: dict[Unit, list[float]] = {}
        least = 1.0
        for i, s in enumerate(plan.slices, -1):
            shares = s.shares
            for u in s.ran:
                share = shares[u]
                unit_runs = runs.get(u)
                if unit_runs is None:
                    runs[u] = [i]
                    values[u] = [share]
                else:
                    unit_runs.append(i)
                    values[u].append(share)
                if share < least:
                    least = share
        ring = plan.ring
        ring_only: list[tuple[Unit, range]] = []  # units that first run in the ring
        if ring is not None and ring.count:
            share, width, base = ring.share, ring.width, len(plan.slices) - 1
            for u, laps in ring.quanta_of():
                unit_runs = runs.get(u)
                if unit_runs is None:
                    ring_only.append((u, laps))
                else:
                    unit_runs.extend([base + x // width for x in laps])
                    values[u].extend([share] * len(laps))
            least = min(least, share)
        plan.least_share = least
        cycles: dict[Unit, tuple[float, ShareCycle | None]] = {}
        # from quantum 1 on: the quanta shift down by one; with no prefix (loop 0) quantum 0
        # moves to the end of the loop
        rest_length, rest_loop = (n - 1, loop - 1) if loop >= 1 else (n, 0)
        sparse = ShareCycle.sparse
        for unit, unit_runs in runs.items():
            unit_values = values[unit]
            if unit_runs[0] >= 0:  # suspended in quantum 0
                cycles[unit] = (SUSPENDED, sparse(SUSPENDED, start, quantum, rest_length,
                                                  unit_runs, unit_values, rest_loop))
                continue
            first = unit_values[0]
            if len(unit_values) == n and unit_values.count(first) == n:  # one share throughout
                cycles[unit] = (first, None)
                continue
            del unit_runs[0]
            rest_values = unit_values[1:]
            if loop == 0:
                unit_runs.append(n - 1)
                rest_values.append(first)
            cycles[unit] = (first, sparse(first, start, quantum, rest_length, unit_runs,
                                          rest_values, rest_loop))
        if ring_only:  # suspended in quantum 0, then at the ring's share in each of its laps
            assert ring is not None
            share, width, base = ring.share, ring.width, len(plan.slices) - 1
            alike: dict[int, ShareCycle] = {}  # a cycle with as many runs, for its values
            for unit, laps in ring_only:
                runs_of_unit = tuple([base + x // width for x in laps])
                model = alike.get(len(runs_of_unit))
                if model is None:
                    cycle = alike[len(runs_of_unit)] = sparse(
                        SUSPENDED, start, quantum, rest_length, runs_of_unit,
                        (share,) * len(runs_of_unit), rest_loop)
                else:
                    cycle = model.with_runs(runs_of_unit)
                cycles[unit] = (SUSPENDED, cycle)
        plan.cycles = (start, cycles)
    return plan.cycles[1]


def steady_share(plan: RotationPlan, start: int, unit: Unit) -> float | None:
    """The share `unit` holds in every quantum of `plan` from quantum `start` on (1.0 if the
    plan does not hold it), or None if it changes, read from the quanta the unit runs in:
    a job spread over servers asks at each re-plan of any of them, and its share mostly
    stays (hundreds of quanta per server and part on full Philly, issue #22)."""
    if not plan.holds(unit):
        return 1.0
    first = min(start, plan.loop)  # the sequence covers quanta first .. quanta - 1
    shares = [share for i, share in _runs_of(plan).get(unit, ()) if i >= first]
    if not shares:
        return SUSPENDED
    if len(shares) == plan.quanta - first and shares.count(shares[0]) == len(shares):
        return shares[0]
    return None


def _runs_of(plan: RotationPlan) -> dict[Unit, list[tuple[int, float]]]:
    """Each unit's (quantum, share) with a share above 0, ascending, built once per plan:
    a few of up to `HORIZON` per unit, where a dense column per unit of a crowded server
    would cost them all (issue #16)."""
    if plan.runs_of is None:
        runs_of: dict[Unit, list[tuple[int, float]]] = {}
        for i, s in enumerate(plan.slices):
            for u in s.ran:
                runs_of.setdefault(u, []).append((i, s.shares[u]))
        ring = plan.ring
        if ring is not None:
            share, width, base = ring.share, ring.width, len(plan.slices)
            for u, laps in ring.quanta_of():
                runs_of.setdefault(u, []).extend([(base + x // width, share) for x in laps])
        plan.runs_of = runs_of
    return plan.runs_of


def lowest_runs(parts: Sequence[tuple[RotationPlan, int, Unit] | None]
                ) -> tuple[dict[int, float], int, int]:
    """The quantum-by-quantum lowest of the parts' shares, each `unit`'s in `plan` from
    quantum `start` on (None: a part at 1.0 throughout), over the length after which it
    repeats from its loop (the longest part's prefix, then the lcm of the parts' periods):
    the quanta whose lowest share is above 0 with that share, the length and the loop. Found
    from the quanta each part runs in, walking those of the part that runs least: a job
    spread over time-sliced servers runs only where every part runs, a few quanta of
    hundreds (full Philly, issue #22)."""
    views: list[tuple[int, int, dict[int, float] | None]] = []  # (length, loop, shares)
    for part in parts:
        if part is None:
            views.append((1, 0, None))
            continue
        plan, start, unit = part
        n, loop = plan.quanta, plan.loop
        if not plan.holds(unit):
            views.append((n - start if start < loop else n - loop, max(0, loop - start), None))
            continue
        runs = _runs_of(plan).get(unit, ())
        if start < loop:
            views.append((n - start, loop - start,
                          {i - start: share for i, share in runs if i >= start}))
            continue
        period = n - loop
        offset = (start - loop) % period
        views.append((period, 0, {(i - loop - offset) % period: share
                                  for i, share in runs if i >= loop}))
    prefix = max(loop for _, loop, _ in views)
    length = prefix + math.lcm(*(n - loop for n, loop, _ in views))
    sparse = [view for view in views if view[2] is not None]
    if not sparse:  # every part at 1.0
        return dict.fromkeys(range(length), 1.0), length, prefix
    # the quanta where the part with the fewest runs (once unrolled) runs
    candidates = min((_unrolled_runs(view, length) for view in sparse), key=len)
    lowest_shares: dict[int, float] = {}
    for t in candidates:
        low = None
        for n, loop, shares in views:
            if shares is None:
                share = 1.0
            else:
                share = shares.get(t if t < n else loop + (t - loop) % (n - loop), SUSPENDED)
                if share <= SUSPENDED:
                    break
            low = share if low is None or share < low else low
        else:
            assert low is not None
            lowest_shares[t] = low
    return lowest_shares, length, prefix


def _unrolled_runs(view: tuple[int, int, dict[int, float] | None], length: int) -> list[int]:
    """The quanta below `length` in which a part's sequence has a share above 0 (in no
    particular order)."""
    n, loop, shares = view
    assert shares is not None
    period = n - loop
    out = []
    for i in shares:
        if i < loop:
            out.append(i)
        else:
            out.extend(range(i, length, period))
    return out
