"""A time-slicing plan is the rotation stepped quantum by quantum (Gandiva §4.1, issue #22).

`plan_rotation` plays a server's round robin forward until it repeats; whatever quantum
the policy reads, the plan must give the shares and the count of swapped-out units that
stepping `boundary_turn` once per quantum gives.
"""

import math

from hypothesis import given, settings
from hypothesis import strategies as st

from simulation.policies.time_slicing import (
    HORIZON,
    Ring,
    RotationPlan,
    Slice,
    boundary_turn,
    lowest_runs,
    plan_rotation,
    steady_share,
    turn,
    unit_cycles,
)
from simulation.share_cycle import ShareCycle

GPUS = 4


def all_slices(plan: RotationPlan) -> list[Slice]:
    """Every quantum of a plan up to its loop's end, as `plan.slice` gives them."""
    return [plan.slice(i) for i in range(plan.quanta)]


# A unit's shares quantum by quantum, as (values, loop): the values from `loop` on repeat.
# The definitions the plan's sparse readings (`steady_share`, `lowest_runs`, `unit_cycles`)
# are checked against.

def sequence(plan: RotationPlan, start: int, unit) -> tuple[list[float], int]:
    """`unit`'s share in each quantum of `plan` from `start` on (1.0 where it holds none)."""
    n, loop = plan.quanta, plan.loop
    quanta = (range(start, n) if start < loop
              else [loop + (start - loop + r) % (n - loop) for r in range(n - loop)])
    held = plan.holds(unit)
    return [plan.slice(i).shares.get(unit, 0.0) if held else 1.0 for i in quanta], \
        max(0, loop - start)


def shifted(seq, by):
    """The same sequence from `by` quanta later."""
    values, loop = seq
    if by <= loop:
        return values[by:], loop - by
    period = len(values) - loop
    offset = (by - loop) % period
    tail = values[loop:]
    return tail[offset:] + tail[:offset], 0


def lowest(a, b):
    """The quantum-by-quantum minimum of two sequences, over a prefix as long as the
    longer one's and the lcm of their periods."""
    (va, la), (vb, lb) = a, b
    prefix = max(la, lb)
    length = prefix + math.lcm(len(va) - la, len(vb) - lb)
    return [min(x, y) for x, y in zip(unrolled(va, la, length), unrolled(vb, lb, length),
                                      strict=True)], prefix


def unrolled(values, loop, length):
    """The first `length` values of the sequence (values, loop)."""
    out = list(values)
    while len(out) < length:
        out.extend(values[loop:])
    return out[:length]


def dense(reading) -> tuple[list[float], int]:
    """`lowest_runs`' reading as a sequence."""
    shares, length, loop = reading
    return [shares.get(t, 0.0) for t in range(length)], loop


@st.composite
def servers(draw):
    """Units of 1-4 GPUs over-subscribing 4 GPUs, some running (they fit), some suspended."""
    sizes = draw(st.lists(st.integers(1, 4), min_size=2, max_size=7))
    units = {f"u{i}": size for i, size in enumerate(sizes)}
    if sum(sizes) <= GPUS:
        units["extra"] = GPUS
    old = {u: draw(st.sampled_from([0.0, 1.0])) for u in units}
    running, free = set(), GPUS
    for u in units:
        if old[u] > 0 and units[u] <= free:
            running.add(u)
            free -= units[u]
    for u in units:
        if u not in running:
            old[u] = 0.0
    return units, old, running, draw(st.booleans())


@settings(max_examples=300, deadline=None)
@given(servers())
def test_plan_matches_stepping_every_quantum(server):
    units, old, running, loops = server
    first = turn(list(units), old, units, GPUS, running, 0.5)
    plan = plan_rotation(0.0, first, units, GPUS, 0.9, loops=loops)
    last = 100 if not plan.expires else plan.quanta - 1
    current, swapped = first, 0
    for k in range(1, last + 1):
        current = boundary_turn(current, units, GPUS, 0.9)
        swapped += current.suspends
        assert plan.slice(k).rotation == current.rotation, k
        assert [plan.share(k, u) for u in current.rotation] == \
            [current.shares.get(u, 0.0) for u in current.rotation], k
    assert plan.suspends_through(last) == swapped
    assert plan.expires or plan.quanta < HORIZON
    # every unit's sequence from quantum 0 (built for all units at once) is its column
    for unit in [*units, "not-planned"]:
        expected = [(s.shares.get(unit, 0.0) if unit in units else 1.0) for s in all_slices(plan)]
        assert dense(lowest_runs([(plan, 0, unit)])) == (expected, plan.loop)
        assert steady_share(plan, 0, unit) == (
            expected[0] if expected.count(expected[0]) == len(expected) else None)
    # ... and from any later quantum, the slices from there on (looping back past the end)
    n, loop = plan.quanta, plan.loop
    for start in range(1, n + 3):
        if start < loop:
            order, rest_loop = all_slices(plan)[start:], loop - start
        else:
            offset = (start - loop) % (n - loop)
            order = [plan.slice(loop + (offset + r) % (n - loop)) for r in range(n - loop)]
            rest_loop = 0
        for unit in units:
            assert dense(lowest_runs([(plan, start, unit)])) == (
                [s.shares.get(unit, 0.0) for s in order], rest_loop), (start, unit)
            shares = [s.shares.get(unit, 0.0) for s in order]
            assert steady_share(plan, start, unit) == (
                shares[0] if shares.count(shares[0]) == len(shares) else None), (start, unit)


@settings(max_examples=300, deadline=None)
@given(servers())
def test_unit_cycles_are_each_units_sequence_from_the_next_quantum(server):
    """The cycles built from the quanta each unit runs in are the ones its whole sequence
    gives (a plain share where it never changes), and `least_share` is the plan's least."""
    units, old, running, loops = server
    first = turn(list(units), old, units, GPUS, running, 0.5)
    plan = plan_rotation(0.0, first, units, GPUS, 0.9, loops=loops)
    cycles = unit_cycles(plan, 60.0, 60.0)
    ran = {u for s in all_slices(plan) for u in s.ran}
    assert set(cycles) == ran
    for unit in ran:
        values, loop = sequence(plan, 0, unit)
        if values.count(values[0]) == len(values):
            assert cycles[unit] == (values[0], None)
            continue
        rest, rest_loop = shifted((values, loop), 1)
        assert cycles[unit] == (values[0], ShareCycle(values[0], 60.0, 60.0, rest, rest_loop))
    assert plan.least_share == min(
        (s.shares[u] for s in all_slices(plan) for u in s.ran), default=1.0)


def test_unit_cycles_of_a_plan_looping_from_its_first_quantum():
    """From quantum 1 on, quantum 0 of a loop that starts there comes last."""
    slices = [Slice(("a", "b"), {"a": 1.0, "b": 0.0}, 0, ("a",), 2),
              Slice(("b", "a"), {"b": 0.9, "a": 0.0}, 1, ("b",), 2)]
    cycles = unit_cycles(RotationPlan(0.0, slices, 0), 60.0, 60.0)
    assert cycles == {"a": (1.0, ShareCycle(1.0, 60.0, 60.0, (0.0, 1.0), 0)),
                      "b": (0.0, ShareCycle(0.0, 60.0, 60.0, (0.9, 0.0), 0))}


def test_a_loop_counts_the_swaps_of_its_own_way_back():
    """Slices 0 (the touch: 5 swapped out), 1 (entered from 0: none), 2 (2); from 2 the
    rotation returns to slice 1 swapping out 1 unit. Quanta 1-6 are slices 1 2 1 2 1 2:
    0 + 2 + 1 + 2 + 1 + 2 = 8, counted in two reads as 3 then 5 more."""
    slices = [Slice(("a",), {"a": 1.0}, n) for n in (5, 0, 2)]
    plan = RotationPlan(0.0, slices, loop=1, loop_suspends=1)
    assert plan.suspends_through(3) == 3
    assert plan.suspends_through(6) == 5


def plain_turn(rotation, old, units, gpus, running, resumed):
    """`turn` as first written: every unit of the rotation visited one by one."""
    free = gpus - sum(units[u] for u in running)
    shares, suspends = {}, 0
    for unit in rotation:
        if unit in running:
            shares[unit] = old[unit]
        elif units[unit] <= free:
            free -= units[unit]
            shares[unit] = resumed if old.get(unit) == 0.0 else 1.0
        else:
            shares[unit] = 0.0
            suspends += old.get(unit, 0.0) > 0.0
    return tuple(rotation), shares, suspends


def plain_boundary_turn(rotation, shares, units, gpus, resumed):
    ran = [u for u in rotation if shares[u] > 0.0]
    rotation = [u for u in rotation if u not in set(ran)] + ran
    return plain_turn(rotation, shares, units, GPUS, set(), resumed)


@settings(max_examples=300, deadline=None)
@given(servers(), st.sampled_from([0.0, 0.5]))
def test_a_turn_that_stops_early_decides_as_visiting_every_unit(server, resumed):
    """`turn` suspends the rest of the rotation wholesale once nothing more fits; shares (in
    rotation order, which a plan's loop check reads), rotation and swaps must be those of
    visiting every unit, for a touch (some units running) and then 12 boundaries. A
    resumed share of 0 (the switch eats the rest of the quantum) runs nobody that turn."""
    units, old, running, _ = server
    fast = turn(list(units), old, units, GPUS, running, resumed)
    plain = plain_turn(list(units), old, units, GPUS, running, resumed)
    for _ in range(12):
        every = [(u, fast.shares.get(u, 0.0)) for u in fast.rotation]  # unlisted: suspended
        assert (fast.rotation, every, fast.suspends) == \
            (plain[0], list(plain[1].items()), plain[2])
        assert fast.ran == tuple(u for u, share in every if share > 0.0)
        fast = boundary_turn(fast, units, GPUS, resumed)
        plain = plain_boundary_turn(plain[0], plain[1], units, GPUS, resumed)


def test_a_job_over_two_servers_runs_at_its_slowest_part_quantum_by_quantum():
    """1.0 then 0.5 forever, against 0.0 then 1.0, 0.8 alternating: both repeat from
    quantum 1, with periods 1 and 2, so the minimum is 0.0 then 0.5, 0.5 repeating."""
    assert lowest(([1.0, 0.5], 1), ([0.0, 1.0, 0.8], 1)) == ([0.0, 0.5, 0.5], 1)
    # a period of 3 against 2 unrolls to six quanta after a prefix of 2
    assert lowest(([0.9, 0.9, 1.0, 0.0, 0.5], 2), ([0.7, 0.6], 0)) == (
        [0.7, 0.6, 0.7, 0.0, 0.5, 0.6, 0.0, 0.5], 2)


def plain_plan(first, units, gpus, resumed, horizon=HORIZON):
    """`plan_rotation` as first written: a slice's key holds its whole rotation.
    Returns (loop, slices), loop None for a plan that expires."""
    slices, seen = [first], {}
    while len(slices) < horizon:
        following = boundary_turn(slices[-1], units, gpus, resumed)
        key = (following.rotation, following.ran,
               tuple(following.shares[u] for u in following.ran))
        at = seen.setdefault(key, len(slices))
        if at < len(slices):
            return at, len(slices)
        slices.append(following)
    return None, len(slices)


@st.composite
def crowded_servers(draw):
    """8 GPUs over-subscribed by 20-45 units of 1-8 GPUs, all suspended before."""
    sizes = draw(st.lists(st.sampled_from([1, 1, 2, 3, 4, 8]), min_size=20, max_size=45))
    return {f"u{i}": size for i, size in enumerate(sizes)}


def _loop_of(units, gpus=8):
    first = turn(list(units), dict.fromkeys(units, 0.0), units, gpus, set(), 0.5)
    plan = plan_rotation(0.0, first, units, gpus, 0.9)
    return (None if plan.expires else plan.loop), plan.quanta, \
        plain_plan(first, units, gpus, 0.9)


@settings(max_examples=200, deadline=None)
@given(crowded_servers())
def test_a_plan_loops_where_its_whole_rotation_first_repeats(units):
    """The key of a slice holds only the ends of its rotation (a ring's walk must not pay
    for the rest); a plan still loops back to the first slice whose whole rotation, running
    units and shares are those of the next one."""
    loop, length, plain = _loop_of(units)
    assert (loop, length) == plain


def test_slices_whose_rotations_differ_only_in_the_middle_do_not_loop():
    """A server of 35 mixed units: quantum 233 starts with the 16 units quantum 64 starts
    with and ends with its last 16, and runs the same units at the same shares, but the
    middles differ; the rotation first repeats at quantum 236, back to quantum 67."""
    sizes = [2, 4, 1, 3, 4, 2, 8, 8, 3, 1, 1, 4, 1, 1, 1, 1, 1, 2, 1, 3, 2, 1, 1, 8, 3, 2,
             4, 3, 4, 4, 1, 4, 1, 8, 4]
    loop, length, plain = _loop_of({f"u{i}": size for i, size in enumerate(sizes)})
    assert (loop, length) == plain == (67, 236)


def test_a_plan_loops_back_to_a_slice_keyed_before_a_unit_was_walked_past():
    """a and c take 3 of 4 GPUs, b 1. Quantum 0 runs a, b; quantum 1 (c a b) runs c and b,
    walking past a, which stays in front: quantum 2 is (a c b), running a and b; quantum 3
    is (c a b) again, running c (resumed, 0.9) and b (kept, 1.0) as quantum 1 did. Slices
    keyed by the first unit of their tape (no unit walked past yet) are keyed anew once
    one is, so the plan loops back to quantum 1, swapping out one unit (a) on the way."""
    units = {"a": 3, "b": 1, "c": 3}
    first = turn(list(units), dict.fromkeys(units, 0.0), units, 4, set(), 0.5)
    plan = plan_rotation(0.0, first, units, 4, 0.9)
    assert [s.rotation for s in all_slices(plan)] == [("a", "b", "c"), ("c", "a", "b"),
                                                 ("a", "c", "b")]
    assert [(s.ran, [s.shares[u] for u in s.ran]) for s in all_slices(plan)] == [
        (("a", "b"), [0.5, 0.5]), (("c", "b"), [0.9, 1.0]), (("a", "b"), [0.9, 1.0])]
    assert (plan.loop, plan.expires, plan.loop_suspends) == (1, False, 1)


def ring_touch(units, before, data) -> Slice:
    """Quantum 0 of 8 GPUs of units of one size, touched while some ran before (a share
    drawn from `before`): those that fit keep running, the rest wait at the touch's 0.5."""
    old = {u: data.draw(st.sampled_from(before)) for u in units}
    running, free = set(), 8
    for u in units:
        if old[u] > 0 and units[u] <= free:
            running.add(u)
            free -= units[u]
        else:
            old[u] = 0.0
    return turn(list(units), old, units, 8, running, 0.5)


@settings(max_examples=150, deadline=None, derandomize=True)
@given(st.sampled_from([1, 2, 4, 8]), st.integers(2, 70), st.data())
def test_a_ring_of_units_of_one_size_turns_as_the_walk_does(size, count, data):
    """`plan_rotation`'s ring step (units of one size, none walked past) against stepping
    `boundary_turn`, which walks every quantum: the same slices quantum by quantum (tape
    windows, running units, shares, swaps) and the same loop, from a touch that keeps
    some units running (their share 1.0, not the resumed 0.9, until they go to the back)."""
    units = {f"u{i:02d}": size for i in range(count)}
    first = ring_touch(units, [0.0, 1.0], data)
    plan = plan_rotation(0.0, first, units, 8, 0.9)
    current = first
    for k in range(1, plan.quanta):
        current = boundary_turn(current, units, 8, 0.9)
        got = plan.slice(k)
        assert (got.rotation, got.ran, got.shares, got.suspends, got.reached) == (
            current.rotation, current.ran, current.shares, current.suspends, current.reached), k
    loop, length = plain_plan(first, units, 8, 0.9)
    assert ((None if plan.expires else plan.loop), plan.quanta) == (loop, length)


@settings(max_examples=120, deadline=None, derandomize=True)
@given(st.sampled_from([1, 2, 4]), st.integers(2, 300), st.integers(2, HORIZON),
       st.booleans(), st.data())
def test_a_long_ring_in_closed_form_is_the_walk_quantum_by_quantum(size, count, horizon,
                                                                   loops, data):
    """A crowded server of units of one size (hundreds on muri_trace2) is planned as a
    `Ring`: whatever quantum is read, up to the horizon or past the loop, its slice, the
    swaps counted up to it, each unit's sequence and cycle and the plan's loop are those of
    stepping `boundary_turn` quantum by quantum from a touch that keeps some units running."""
    units = {f"u{i:03d}": size for i in range(count)}
    first = ring_touch(units, [0.0, 0.0, 1.0], data)
    plan = plan_rotation(0.0, first, units, 8, 0.9, loops=loops, horizon=horizon)
    loop, length = plain_plan(first, units, 8, 0.9, horizon) if loops else (None, horizon)
    assert ((None if plan.expires else plan.loop), plan.quanta) == (loop, length)
    stepped = [first]
    for _ in range(1, plan.quanta):
        stepped.append(boundary_turn(stepped[-1], units, 8, 0.9))
    for k in range(1, plan.quanta):
        got, want = plan.slice(k), stepped[k]
        assert (got.rotation, got.ran, got.shares, got.suspends) == (
            want.rotation, want.ran, want.shares, want.suspends), k
    # the swaps up to any quantum, read once or in steps, past the loop too
    ends = sorted(data.draw(st.lists(st.integers(0, 3 * plan.quanta), max_size=4)))
    beyond = stepped + [boundary_turn(stepped[-1], units, 8, 0.9)]
    while len(beyond) <= 3 * plan.quanta + 1:
        beyond.append(boundary_turn(beyond[-1], units, 8, 0.9))
    counted = 0
    for end in ends:
        if plan.expires and end >= plan.quanta:
            break
        assert plan.suspends_through(end) == sum(s.suspends for s in beyond[counted + 1:end + 1])
        counted = max(counted, end)
    # each unit's shares by quantum and its cycle from the next quantum on
    cycles = unit_cycles(plan, 60.0, 60.0)
    for unit in units:
        values, seq_loop = sequence(plan, 0, unit)
        assert values == [s.shares.get(unit, 0.0) for s in stepped], unit
        assert steady_share(plan, 0, unit) == (
            values[0] if values.count(values[0]) == len(values) else None), unit
        if unit not in cycles:
            assert not any(values), unit
            continue
        if values.count(values[0]) == len(values):
            assert cycles[unit] == (values[0], None)
        else:
            rest, rest_loop = shifted((values, seq_loop), 1)
            expected = ShareCycle(values[0], 60.0, 60.0, rest, rest_loop)
            assert cycles[unit] == (values[0], expected), unit
            assert cycles[unit][1].sums == expected.sums, unit  # shared by alike units
    assert plan.least_share == min((s.shares[u] for s in stepped for u in s.ran), default=1.0)


def test_a_ring_loops_back_to_the_slice_it_started_from():
    """Ten 1-GPU units on 4 GPUs, all suspended before: quantum 0 runs u0-u3 at the touch's
    share (0.5), then every quantum the next four at 0.9. Quantum 1 is already a ring
    quantum (offset 0 of u4 .. u3); the ring returns to an offset every 10 / gcd(10, 4) =
    5 quanta, so quantum 6 equals quantum 1: the plan holds quanta 0-5 and loops to 1,
    each boundary swapping out the four units that ran."""
    units = {f"u{i}": 1 for i in range(10)}
    first = turn(list(units), dict.fromkeys(units, 0.0), units, 4, set(), 0.5)
    plan = plan_rotation(0.0, first, units, 4, 0.9)
    assert (plan.quanta, plan.loop, plan.expires, plan.loop_suspends) == (6, 1, False, 4)
    assert [plan.slice(k).ran for k in (1, 2, 3, 6)] == [
        ("u4", "u5", "u6", "u7"), ("u8", "u9", "u0", "u1"), ("u2", "u3", "u4", "u5"),
        ("u4", "u5", "u6", "u7")]
    assert plan.suspends_through(13) == 13 * 4


def test_a_ring_names_the_quantum_a_slice_equals():
    """Ring quantum k starts at offset 4k mod 10 of `order` (ten units, four at a time):
    offset 6 is quantum 4 (16 mod 10), an odd offset is never reached (gcd 2), and a slice
    with the same rotation that runs its units at another share than the ring's is not a
    ring quantum."""
    order = tuple(f"u{i}" for i in range(10))
    ring = Ring(order, 4, 0.9)

    def at(offset, share=0.9):
        rotation = order[offset:] + order[:offset]
        return Slice(rotation, dict.fromkeys(rotation[:4], share), 4, rotation[:4], 4)

    assert [ring.repeats(at(o)) for o in (0, 6, 2, 8, 4)] == [0, 4, 3, 2, 1]
    assert ring.repeats(at(3)) is None
    assert ring.repeats(at(6, share=1.0)) is None
    assert ring.slice(4).rotation == at(6).rotation


@settings(max_examples=300, deadline=None)
@given(st.lists(servers(), min_size=1, max_size=3), st.data())
def test_the_lowest_of_a_spread_jobs_parts_is_their_minimum_quantum_by_quantum(parts, data):
    """A job spread over servers runs at its slowest part's share: `lowest_runs`, read from
    the parts' runs, is the quantum-by-quantum minimum of their sequences from each part's
    own current quantum, over the longest prefix and the lcm of the periods, whichever
    parts the plans do not hold and whichever servers do not slice (1.0)."""
    readings, sequences = [], []
    for units, old, running, loops in parts:
        first = turn(list(units), old, units, GPUS, running, 0.5)
        plan = plan_rotation(0.0, first, units, GPUS, 0.9, loops=loops)
        kind = data.draw(st.sampled_from(["held", "held", "not-held", "no-plan"]))
        if kind == "no-plan":
            readings.append(None)
            sequences.append(([1.0], 0))
            continue
        unit = data.draw(st.sampled_from(sorted(units))) if kind == "held" else "elsewhere"
        start = data.draw(st.integers(0, plan.quanta + 3))
        readings.append((plan, start, unit))
        sequences.append(sequence(plan, start, unit))
    expected = sequences[0]
    for part in sequences[1:]:
        expected = lowest(expected, part)
    assert dense(lowest_runs(readings)) == expected


def test_a_job_over_two_servers_runs_where_both_parts_run():
    """Three 1-GPU units on 2 GPUs: quantum 0 runs u0 and u1 (at the touch's 0.5), then
    each quantum the two that ran go to the back and the front two run, a resumed unit at
    0.9 and one still running at 1.0, so quantum 4 is quantum 1 again: u0 runs at 0.5, 1.0,
    0, 0.9 and u2 at 0, 0.9, 1.0, 0, looping from quantum 1. A job that is u0 on one such
    server and u2 on another runs only where both run: in quantum 1, at 0.9."""
    units = {"u0": 1, "u1": 1, "u2": 1}
    first = turn(list(units), dict.fromkeys(units, 0.0), units, 2, set(), 0.5)
    plan = plan_rotation(0.0, first, units, 2, 0.9)
    other = plan_rotation(0.0, turn(list(units), dict.fromkeys(units, 0.0), units, 2, set(),
                                    0.5), units, 2, 0.9)
    assert [sequence(plan, 0, u) for u in ("u0", "u2")] == [
        ([0.5, 1.0, 0.0, 0.9], 1), ([0.0, 0.9, 1.0, 0.0], 1)]
    assert lowest_runs([(plan, 0, "u0"), (other, 0, "u2")]) == ({1: 0.9}, 4, 1)
    # read from quantum 2, u0 runs at 0, 0.9, 1.0 repeating (no prefix), in step with u2
    # after its quantum 0: both run in quanta 1 and 2 of 4, the loop from 1 (u2's prefix)
    assert lowest_runs([(plan, 2, "u0"), (other, 0, "u2")]) == ({1: 0.9, 2: 1.0}, 4, 1)
