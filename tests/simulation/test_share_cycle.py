"""ShareCycle: a job's share stepping per quantum, integrated in closed form (issue #22)."""

import math

import pytest
from hypothesis import given, settings
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
