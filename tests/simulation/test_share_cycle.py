"""ShareCycle: a job's share stepping per quantum, integrated in closed form (issue #22)."""

import math
from bisect import bisect_left

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from simulation.share_cycle import ShareCycle

# 0.5 until t=10, then quanta of 60 s: 1, 0, 0.5, and from index 1 on (0, 0.5) repeat.
CYCLE = ShareCycle(first=0.5, start=10.0, quantum=60.0, shares=(1.0, 0.0, 0.5), loop=1)


def test_share_steps_and_repeats_from_the_loop_index():
    # quanta: [10,70)=1, [70,130)=0, [130,190)=0.5, [190,250)=0, [250,310)=0.5, ...
    assert [CYCLE.share_at(t) for t in (0, 10, 69.9, 70, 130, 190, 250, 310, 370)] == [
        0.5, 1.0, 1.0, 0.0, 0.5, 0.0, 0.5, 0.0, 0.5]


def test_integral_sums_whole_quanta_and_partial_ends():
    assert CYCLE.integral(0, 10) == 5.0
    assert CYCLE.integral(0, 250) == 5 + 60 + 0 + 30 + 0
    assert CYCLE.integral(40, 160) == 30 + 0 + 15
    # 100 loops later: each loop (0, 0.5) adds 30 share-seconds
    assert CYCLE.integral(130, 130 + 100 * 120) == pytest.approx(100 * 30)


def test_time_to_is_the_earliest_time_the_amount_is_done():
    assert CYCLE.time_to(0, 5) == 10.0
    assert CYCLE.time_to(0, 95) == 190.0  # done at the end of [130,190); [190,250) is idle
    assert CYCLE.time_to(0, 96) == 252.0  # resumes at 250 at half speed
    assert CYCLE.time_to(130, 30 * 1000 + 1) == pytest.approx(130 + 1000 * 120 + 2)
    assert ShareCycle(0.0, 0.0, 60.0, (0.0,)).time_to(0, 1) == math.inf


def test_problem_names_what_is_wrong():
    assert ShareCycle(1.0, 5.0, 60.0, (1.0,)).problem(6.0).startswith("starts at 5.0")
    assert ShareCycle(1.0, 5.0, 60.0, (1.5,)).problem(0.0) == "has a share outside [0, 1]"
    assert ShareCycle(1.0, 5.0, 60.0, (1.0,), loop=1).problem(0.0) is not None
    assert ShareCycle.sparse(1.0, 5.0, 60.0, 3, (1, 1), (0.5, 0.5)).problem(0.0) == (
        "lists a quantum twice or out of order")
    assert ShareCycle.sparse(1.0, 5.0, 60.0, 3, (1, 3), (0.5, 0.5)).problem(0.0) is not None
    assert CYCLE.problem(0.0) is None


def brute_integral(cycle: ShareCycle, t0: float, t1: float) -> float:
    """Step by step over the quanta: the definition the closed form must match."""
    edges = [t0, t1]
    k = 0
    while cycle.start + k * cycle.quantum < t1:
        edges.append(cycle.start + k * cycle.quantum)
        k += 1
    edges = sorted(e for e in set(edges) if t0 <= e <= t1)
    return sum(cycle.share_at(a) * (b - a) for a, b in zip(edges, edges[1:], strict=False))


shares = st.lists(st.sampled_from([0.0, 0.25, 0.5, 0.983, 1.0]), min_size=1, max_size=6)


@settings(max_examples=200, deadline=None)
@given(shares, st.data())
def test_closed_form_matches_stepping_quantum_by_quantum(values, data):
    loop = data.draw(st.integers(0, len(values) - 1))
    first = data.draw(st.sampled_from([0.0, 0.5, 1.0]))
    cycle = ShareCycle(first, 30.0, 60.0, tuple(values), loop)
    t0 = data.draw(st.floats(0, 2000))
    t1 = t0 + data.draw(st.floats(0, 2000))
    assert cycle.integral(t0, t1) == pytest.approx(brute_integral(cycle, t0, t1), abs=1e-6)
    amount = data.draw(st.floats(0.01, 1000))
    at = cycle.time_to(t0, amount)
    if at < math.inf:
        assert cycle.integral(t0, at) == pytest.approx(amount, abs=1e-6)
        assert cycle.integral(t0, max(t0, at - 1e-3)) < amount  # and not earlier


def test_work_reached_as_a_cycle_ends_is_done_in_its_last_run_not_its_next_turn():
    """Share 0.25 for one quantum, then suspended, looping from 30 s: 15 share-seconds per
    60 s-quantum run. 30 are reached at 210 s, the end of the second run ([150, 210)); the
    zero quantum after it must not push the answer to the next run at 270 s (Hypothesis
    found this: the cycle count rounded down onto the boundary)."""
    cycle = ShareCycle(0.0, 30.0, 60.0, (0.25, 0.0), 0)
    assert cycle.time_to(0.0, 30.0) == 210.0
    assert cycle.time_to(0.0, 45.0) == 330.0


def test_work_done_but_for_rounding_ends_with_its_quantum_not_its_next_turn():
    """Running at 1 until 60, then suspended one quantum, then running again: 60 + 1e-9
    share-seconds are done at 60 when up to 1e-6 counts as done, else at 120 + 1e-9."""
    cycle = ShareCycle(1.0, 60.0, 60.0, (0.0, 1.0), loop=0)
    assert cycle.time_to(0.0, 60.0 + 1e-9, slack=1e-6) == 60.0
    assert cycle.time_to(0.0, 60.0 + 1e-9) == pytest.approx(120.0 + 1e-9)
    assert cycle.time_to(0.0, 60.0 + 1e-3, slack=1e-6) == pytest.approx(120.0 + 1e-3)
    # and when the job is never to run again
    last = ShareCycle(0.0, 60.0, 60.0, (1.0, 0.0), loop=1)
    assert last.time_to(0.0, 60.0 + 1e-9, slack=1e-6) == 120.0
    assert last.time_to(0.0, 60.0 + 1e-9) == math.inf


class DenseShareCycle:
    """The definition the kept cycle must match bit for bit: running sums over every
    quantum, zeros included (the implementation before cycles kept only their runs, with
    the boundary fix of `ShareCycle._quantum_reaching` applied to both)."""

    def __init__(self, first, start, quantum, shares, loop=0):
        self.first, self.start, self.quantum, self.shares, self.loop = (
            first, start, quantum, tuple(shares), loop)
        self.prefix = [0.0]
        for share in self.shares:
            self.prefix.append(self.prefix[-1] + quantum * share)

    def _index(self, k):
        n = len(self.shares)
        return k if k < n else self.loop + (k - self.loop) % (n - self.loop)

    def _whole(self, k):
        prefix, n, loop = self.prefix, len(self.shares), self.loop
        if k <= n:
            return prefix[k]
        cycles, rest = divmod(k - loop, n - loop)
        return prefix[loop] + cycles * (prefix[n] - prefix[loop]) + (
            prefix[loop + rest] - prefix[loop])

    def _cumulative(self, t):
        if t <= self.start:
            return (t - self.start) * self.first
        k = int((t - self.start) // self.quantum)
        return self._whole(k) + (t - self.start - k * self.quantum) * self.shares[self._index(k)]

    def integral(self, t0, t1):
        return 0.0 if t1 <= t0 else max(0.0, self._cumulative(t1) - self._cumulative(t0))

    def time_to(self, t0, amount, slack=0.0):
        if amount <= 0:
            return t0
        if t0 < self.start:
            before = (self.start - t0) * self.first
            if amount <= before or (amount <= before + slack and self.shares[0] <= 0):
                return t0 if self.first <= 0 else min(self.start, t0 + amount / self.first)
            amount -= before
            t0 = self.start
        target = self._cumulative(t0) + amount
        k = self._quantum_reaching(target)
        if slack > 0 and (k is None or (k > 0 and self.shares[self._index(k - 1)] <= 0)):
            early = self._quantum_reaching(target - slack)
            if early is not None and (k is None or early < k):
                end = self.start + (early + 1) * self.quantum
                return max(t0, end - self.quantum + min(
                    self.quantum, (target - self._whole(early)) / self.shares[self._index(early)]))
        if k is None:
            return math.inf
        rest = max(0.0, target - self._whole(k))
        return max(self.start + k * self.quantum + rest / self.shares[self._index(k)], t0)

    def _quantum_reaching(self, target):
        prefix, n, loop = self.prefix, len(self.shares), self.loop
        if target <= prefix[n]:
            k = bisect_left(prefix, target) - 1
        else:
            per_cycle = prefix[n] - prefix[loop]
            if per_cycle <= 0:
                return None
            cycles = int((target - prefix[n]) // per_cycle)
            base = prefix[n] + cycles * per_cycle - prefix[loop]
            k = bisect_left(prefix, target - base, loop, n + 1) - 1
            if k < loop:  # reached exactly as the last cycle ended (fixed in both)
                cycles -= 1
                base -= per_cycle
                k = bisect_left(prefix, target - base, loop, n + 1) - 1
            if k >= n:
                cycles += 1
                base += per_cycle
                k = bisect_left(prefix, target - base, loop, n + 1) - 1
            k = n + cycles * (n - loop) + (k - loop)
        k = max(k, 0)
        while self.shares[self._index(k)] <= 0:
            k += 1
        return k


# mostly suspended, as a member of a crowded server is; 1/3 and 0.1 make sums round
sparse_shares = st.lists(st.sampled_from([0.0] * 6 + [1 / 3, 0.1, 0.983, 1.0]),
                         min_size=1, max_size=40)


@settings(max_examples=500, deadline=None)
@given(sparse_shares, st.data())
def test_sums_over_runs_are_the_sums_over_every_quantum_to_the_bit(values, data):
    loop = data.draw(st.integers(0, len(values) - 1))
    assume(any(values[loop:]))  # a job the engine times runs again in every loop
    first = data.draw(st.sampled_from([0.0, 0.5, 1.0]))
    start, quantum = data.draw(st.sampled_from([(30.0, 60.0), (7.3, 0.7), (1e6 + 0.1, 60.0)]))
    kept = ShareCycle(first, start, quantum, tuple(values), loop)
    runs = [k for k, v in enumerate(values) if v]
    assert kept == ShareCycle.sparse(first, start, quantum, len(values), runs,
                                     [values[k] for k in runs], loop)
    dense = DenseShareCycle(first, start, quantum, values, loop)
    t0 = start + data.draw(st.floats(-100, 5000))
    t1 = t0 + data.draw(st.floats(0, 5000))
    index = dense._index(int((t1 - start) // quantum)) if t1 >= start else None
    assert kept.share_at(t1) == (first if index is None else dense.shares[index])
    assert kept.integral(t0, t1) == dense.integral(t0, t1)
    amount = data.draw(st.floats(0.01, 3000) | st.sampled_from([kept.integral(t0, t1)]))
    slack = data.draw(st.sampled_from([0.0, 1e-9, 1e-6]))
    assert kept.time_to(t0, amount, slack) == dense.time_to(t0, amount, slack)


@settings(max_examples=1000, deadline=None)
@given(sparse_shares, st.data())
def test_reach_bound_is_never_after_time_to(values, data):
    """The engine times a cycle's completion exactly only when this bound comes up."""
    assume(any(values))  # `time_to` may search forever in a cycle that never runs
    loop = data.draw(st.integers(0, len(values) - 1))
    first = data.draw(st.sampled_from([0.0, 0.5, 1.0]))
    start, quantum = data.draw(st.sampled_from([(30.0, 60.0), (7.3, 0.7), (1e6 + 0.1, 60.0)]))
    cycle = ShareCycle(first, start, quantum, tuple(values), loop)
    t0 = start + data.draw(st.floats(-100, 5000))
    total = cycle.integral(t0, start + quantum * (len(values) + 3))
    amount = data.draw(st.floats(0.01, 3000) | st.sampled_from([total, total + 1e-7]))
    slack = data.draw(st.sampled_from([0.0, 1e-9, 1e-6]))
    at = cycle.time_to(t0, amount, slack)
    bound = cycle.reach_bound(t0, amount, slack)
    assert t0 <= bound <= at  # inf only if `at` is, and finite when `at` is (or not far)


def test_reach_bound_waits_for_the_first_run():
    """Suspended until quantum 2 from 100 on: 30 share-seconds take until 220 + 30 at the
    earliest (less the margin), and a cycle that runs 60 s in all never does 61."""
    cycle = ShareCycle(0.0, 100.0, 60.0, (0.0, 0.0, 1.0, 0.0), loop=3)
    assert cycle.reach_bound(50.0, 30.0) == pytest.approx(250.0, abs=2e-3)
    assert cycle.reach_bound(50.0, 30.0) <= cycle.time_to(50.0, 30.0) == 250.0
    assert cycle.reach_bound(50.0, 61.0) == cycle.time_to(50.0, 61.0) == math.inf


@settings(max_examples=500, deadline=None)
@given(sparse_shares, st.data())
def test_nothing_is_done_before_silent_until_to_the_bit(values, data):
    """The engine skips integrating a job suspended since its last settle: exactly 0.0."""
    loop = data.draw(st.integers(0, len(values) - 1))
    first = data.draw(st.sampled_from([0.0, 0.5]))
    start, quantum = data.draw(st.sampled_from([(30.0, 60.0), (7.3, 0.7), (1e6 + 0.1, 60.0)]))
    cycle = ShareCycle(first, start, quantum, tuple(values), loop)
    quiet = cycle.silent_until()
    assert quiet == (-math.inf if first else math.inf if not any(values) else pytest.approx(
        start + values.index(next(v for v in values if v)) * quantum, abs=1e-3))
    t1 = min(quiet, start + quantum * (len(values) + 2))
    t1 = math.nextafter(t1, -math.inf) if t1 == quiet else t1
    t0 = t1 - data.draw(st.floats(0, 5000))
    if t0 <= t1 < quiet:
        assert cycle.integral(t0, t1) == 0.0
    if -math.inf < quiet < math.inf:  # and the first run does start just after it
        assert cycle.integral(quiet, quiet + 2e-6 * quantum) > 0


@settings(max_examples=500, deadline=None)
@given(sparse_shares, st.data())
def test_integral_stops_at_silent_from_to_the_bit(values, data):
    """Gandiva lets a job whose cycle has suspended it for good rest without a decision:
    a settle at any later time must subtract the same float as one at `silent_from`."""
    loop = data.draw(st.integers(0, len(values) - 1))
    first = data.draw(st.sampled_from([0.0, 0.5]))
    start, quantum = data.draw(st.sampled_from([(30.0, 60.0), (7.3, 0.7), (1e6 + 0.1, 60.0)]))
    cycle = ShareCycle(first, start, quantum, tuple(values), loop)
    quiet = cycle.silent_from()
    runs = [k for k, v in enumerate(values) if v]
    if runs and runs[-1] >= loop:
        assert quiet == math.inf
        return
    t0 = start + data.draw(st.floats(-100, 5000))
    at = max(quiet, t0)
    later = at + data.draw(st.floats(0, 1e5))
    assert cycle.integral(t0, later) == cycle.integral(t0, at)
    if runs:  # and the last run ends just before it
        end = start + (runs[-1] + 1) * quantum
        assert quiet == pytest.approx(end, abs=1e-4 * quantum)
        assert cycle.integral(end - 1e-3 * quantum, end) > 0


@settings(max_examples=400, deadline=None, derandomize=True)
@given(st.data())
def test_problem_answers_as_its_checks_one_at_a_time(data):
    """`problem`'s all-at-once test agrees with `_diagnosis` (each condition in turn) on
    cycles broken in every way: a sound cycle passes, and no broken one slips through."""
    share = st.sampled_from((0.0, 0.5, 1.0, -0.1, 1.5, math.nan))
    length = data.draw(st.integers(0, 4))
    runs = data.draw(st.lists(st.integers(-1, 5), max_size=4))
    if data.draw(st.booleans()):
        runs = sorted(set(r for r in runs if 0 <= r < length))
    values = [data.draw(share) for _ in runs]
    cycle = ShareCycle.sparse(data.draw(share), data.draw(st.sampled_from((4.0, 5.0, 6.0))),
                              data.draw(st.sampled_from((60.0, 0.0, -1.0, math.inf, math.nan))),
                              length, runs, values, data.draw(st.integers(-1, 5)))
    assert cycle.problem(5.0) == cycle._diagnosis(5.0)


def test_the_end_of_the_last_run_before_a_time():
    # CYCLE: 0.5 before 10, then [10,70)=1, [70,130)=0, [130,190)=0.5, [190,250)=0,
    # [250,310)=0.5, ... so [850,910) runs, [910,970) does not, [970,1030) runs.
    assert [CYCLE.last_run_end(t) for t in (5.0, 100.0, 200.0, 260.0, 950.0, 1000.0)] == [
        5.0, 70.0, 190.0, 260.0, 910.0, 1000.0]
    never = ShareCycle(first=0.0, start=10.0, quantum=60.0, shares=(0.0, 0.0), loop=0)
    assert never.last_run_end(500.0) is None
    prefix_only = ShareCycle(first=0.0, start=10.0, quantum=60.0, shares=(1.0, 0.0), loop=1)
    assert prefix_only.last_run_end(5000.0) == 70.0


def test_the_end_of_the_last_run_is_found_as_stepping_quantum_by_quantum_finds_it():
    """`last_run_end` against its definition: step from `start` quantum by quantum (the
    loop repeating) and keep the end of the last quantum with a share above 0 that starts
    before `t` (`t` itself inside it), or `start` if only `first` ran; random cycles."""
    import random

    def stepped(cycle, t):
        last = min(t, cycle.start) if cycle.first > 0 else None
        k = 0
        while cycle.start + k * cycle.quantum < t:
            if cycle.share_at(cycle.start + (k + 0.5) * cycle.quantum) > 0:
                last = min(t, cycle.start + (k + 1) * cycle.quantum)
            k += 1
        return last

    rng = random.Random(7)
    for _ in range(2000):
        length = rng.randrange(1, 9)
        shares = [rng.choice((0.0, 0.0, 0.5, 1.0)) for _ in range(length)]
        cycle = ShareCycle(rng.choice((0.0, 0.7)), 100.0, 60.0, shares, rng.randrange(length))
        t = rng.choice((rng.uniform(40.0, 2000.0), 100.0 + 60.0 * rng.randrange(30)))
        assert cycle.last_run_end(t) == pytest.approx(stepped(cycle, t), abs=1e-9)
