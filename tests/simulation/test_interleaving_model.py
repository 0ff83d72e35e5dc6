"""The pipeline model: Muri's simulator's timing of three-stage profiles (data d, GPU g,
network n) over four resource types (Rivendile/Muri@4e69a78 simulator/matching.py:63-135).

Every expected value is worked out by hand from the recursion in `simulation.interleaving`'s
docstring: f_0 = 0 and, for m = 1..8 over occupied slots (indices mod 4),
f_m = max(f_{m-1} + n[slot m], f_{m-1} + g[slot m+1], f_{m-2} + d[slot m+2]) with no data
term at m = 1; T = f_m - f_{m-4} at the first m in 5..8 where that equals f_{m-1} - f_{m-5},
else f_8 - f_4. An ordering is each job's slot.
"""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest

from simulation.interleaving import (
    group_iteration_time,
    interleaving_efficiency,
    iteration_time_for_ordering,
    pad_stages,
    pipeline_period,
)
from simulation.interleaving_grouping import (
    Bucket,
    GroupingConfig,
    _merge_pipeline_periods,
    max_weight_pairs,
    multi_round_grouping,
)

IO_BOUND = (0.9, 0.05, 0.05)


def test_two_jobs_include_the_simulators_gapped_special_case():
    """matching.py:94-98: two jobs are also tried two slots apart,
    T = max(d_a, g_b + n_b) + max(d_b, g_a + n_a). Mutation guarded: the gapped ordering
    left out (the best would be 8).

    a = (3, 3, 1), b = (4, 2, 1):
    - a in slot 0, b in 1: max(d_a + g_a, n_b + d_b) + max(n_a, g_b) = max(6, 5) + max(1, 2) = 8;
    - b in slot 0, a in 1: max(d_b + g_b, n_a + d_a) + max(n_b, g_a) = max(6, 4) + max(1, 3) = 9;
    - two apart: max(3, 2 + 1) + max(4, 3 + 1) = 7, the best; the worst is 9.
    """
    a, b = (3.0, 3.0, 1.0), (4.0, 2.0, 1.0)
    assert pipeline_period([a, b], (0, 1)) == 8.0
    assert pipeline_period([a, b], (1, 0)) == 9.0
    assert pipeline_period([a, b], (0, 2)) == 7.0
    assert group_iteration_time([a, b], resource_types=4) == (7.0, (0, 2))
    assert group_iteration_time([a, b], resource_types=4, worst=True) == (9.0, (1, 0))


def test_three_jobs_follow_the_recursion():
    """Up to three jobs slot 3 is empty, nothing crosses f_4 and T = f_4. Mutation guarded:
    a data stage started at f_{m-1} instead of f_{m-2}; a phase's stages all summed.

    a = (3, 1, 1), b = (1, 2, 1), c = (1, 1, 2). a, b, c in slots 0, 1, 2:
    f_1 = max(n_b, g_c) = 1, f_2 = max(f_1 + n_c, d_a) = 3, f_3 = max(f_2 + g_a, f_1 + d_b)
    = 4, f_4 = max(f_3 + max(n_a, g_b), f_2 + d_c) = max(6, 4) = 6.
    a, c, b in slots 0, 1, 2 (slots a: 0, b: 2, c: 1): f_1 = max(n_c, g_b) = 2,
    f_2 = max(2 + n_b, d_a) = 3, f_3 = max(3 + g_a, 2 + d_c) = 4,
    f_4 = max(4 + max(n_a, g_c), 3 + d_b) = 5.
    c, a, b (slots 1, 2, 0): f_1 = max(n_a, g_b) = 2, f_2 = max(2 + n_b, d_c) = 3,
    f_3 = max(3 + g_c, 2 + d_a) = 5, f_4 = max(5 + max(n_c, g_a), 3 + d_b) = 7.
    The other three orderings give 6, 6 and 5; the first minimum is a, c, b.
    """
    a, b, c = (3.0, 1.0, 1.0), (1.0, 2.0, 1.0), (1.0, 1.0, 2.0)
    assert pipeline_period([a, b, c], (0, 1, 2)) == 6.0
    assert pipeline_period([a, b, c], (0, 2, 1)) == 5.0
    assert pipeline_period([a, b, c], (1, 2, 0)) == 7.0
    assert group_iteration_time([a, b, c], resource_types=4) == (5.0, (0, 2, 1))
    assert group_iteration_time([a, b, c], resource_types=4, worst=True) == (7.0, (1, 2, 0))


def test_four_jobs_take_the_first_span_that_repeats():
    """Slot 3's data stage crosses f_4, so the simulator waits for two equal spans of four
    phases. Mutation guarded: T = f_4 (one cycle from a common start, 4 here).

    Jobs a, b, c = (1, 1, 1) and d = (5, 1, 1) in slots 0..3: f_1 = max(n_b, g_c) = 1,
    f_2 = max(f_1 + n_c, f_1 + g_d, d_a) = 2, f_3 = max(f_2 + n_d, f_2 + g_a, f_1 + d_b) = 3,
    f_4 = max(f_3 + n_a, f_3 + g_b, f_2 + d_c) = 4, f_5 = max(f_4 + n_b, f_4 + g_c,
    f_3 + d_d) = 8: f_5 - f_1 = 7 against f_4 - f_0 = 4. f_6 = max(f_5 + n_c, f_5 + g_d,
    f_4 + d_a) = 9: f_6 - f_2 = 7 = f_5 - f_1, so T = 7 (d's data over two phases plus two
    one-unit phases). Alike jobs make every ordering a rotation: best = worst = 7. Eq. 3 over
    zero-padded stages puts each phase's 1 beside d's 5: T = 8.
    """
    one, data = (1.0, 1.0, 1.0), (5.0, 1.0, 1.0)
    jobs = [one, one, one, data]
    assert pipeline_period(jobs, (0, 1, 2, 3)) == 7.0
    assert group_iteration_time(jobs, resource_types=4)[0] == 7.0
    assert group_iteration_time(jobs, resource_types=4, worst=True)[0] == 7.0
    assert group_iteration_time([pad_stages(j, 4) for j in jobs])[0] == 8.0


def test_four_jobs_without_a_repeating_span_take_the_last():
    """No two consecutive spans agree by f_8: the simulator takes f_8 - f_4. Mutation
    guarded: the fallback f_8 - f_0 or the first span.

    a = (3, 0, 0), b = (3, 1, 0), c = (2, 0, 0), d = (3, 2, 0) in slots 0..3:
    f_1 = 0; f_2 = max(g_d, d_a) = 3; f_3 = max(3 + 0, 3 + 0, f_1 + d_b) = 3;
    f_4 = max(3 + 0, 3 + g_b, f_2 + d_c) = 5; f_5 = max(5, 5, f_3 + d_d) = 6;
    f_6 = max(6, 6 + g_d, f_4 + d_a) = 8; f_7 = max(8, 8, f_5 + d_b) = 9;
    f_8 = max(9, 9 + g_b, f_6 + d_c) = 10. The spans alternate 6, 5, 6, 5 (f_5 - f_1 = 6 vs
    f_4 - f_0 = 5, f_6 - f_2 = 5 vs 6, f_7 - f_3 = 6 vs 5, f_8 - f_4 = 5 vs 6): T = 5.
    """
    jobs = [(3.0, 0.0, 0.0), (3.0, 1.0, 0.0), (2.0, 0.0, 0.0), (3.0, 2.0, 0.0)]
    assert pipeline_period(jobs, (0, 1, 2, 3)) == 5.0


def test_data_bound_jobs_gain_from_grouping_under_the_pipeline_only():
    """Two data stages overlap in every phase, so data-bound jobs gain from interleaving;
    padded with a zero stage under Eq. 3 they barely do. Mutation guarded: three-stage
    profiles padded and timed by Eq. 3 (in the period or in the matching).

    IO-bound (0.9, 0.05, 0.05), twice: in slots 0 and 1, T = max(0.9 + 0.05, 0.05 + 0.9)
    + max(0.05, 0.05) = 1.0 (two apart: 2 × max(0.9, 0.1) = 1.8), half the 2 s of solo
    iterations; γ = 2 / (4 × 1.0) = 0.5. Padded, Eq. 3 keeps the two 0.9 s in separate
    phases: T = 0.9 + 0.05 + 0.9 + 0.05 = 1.9. With the two-job overhead 1.33 the pair groups
    under the pipeline (1.33 < 2) and not under Eq. 3 (2.53 > 2).
    Four alike (4, 1, 1): f_1 = 1, f_2 = max(2, 4) = 4, f_3 = max(5, 1 + 4) = 5,
    f_4 = max(6, 4 + 4) = 8, f_5 = max(9, 5 + 4) = 9 and f_5 - f_1 = 8 = f_4 - f_0: T = 8,
    where padded Eq. 3 puts the four 4 s in four phases (16) and solo iterations sum to 24.
    """
    assert group_iteration_time([IO_BOUND, IO_BOUND], resource_types=4) == (
        pytest.approx(1.0), (0, 1))
    assert interleaving_efficiency([IO_BOUND, IO_BOUND], resource_types=4) == pytest.approx(0.5)
    padded = pad_stages(IO_BOUND, 4)
    assert group_iteration_time([padded, padded])[0] == pytest.approx(1.9)
    four = (4.0, 1.0, 1.0)
    assert group_iteration_time([four] * 4, resource_types=4)[0] == 8.0
    assert group_iteration_time([pad_stages(four, 4)] * 4)[0] == 16.0

    rows = np.array([padded, padded])
    config = GroupingConfig(max_group=2, overhead=(1.33,))

    def bucket(stage_counts):
        return Bucket(1, rows, np.array([1.0, 1.0]), [0, 1], [True, True], stage_counts)

    assert multi_round_grouping([bucket([3, 3])], config) == [[[0, 1]]]
    assert multi_round_grouping([bucket(None)], config) == [[[0], [1]]]


def test_profiles_with_as_many_stages_as_resource_types_keep_eq3():
    """Only three stages over four types take the pipeline. Mutation guarded: the pipeline
    for every group over four types, or for three stages over three types.

    Figure 6 (four stages): B one phase ahead, T = 1 + 2 + 1 + 1 = 5; no shift, 6. Three
    stages over three types: two IO-bound jobs one phase apart, T = 0.9 + 0.05 + 0.9 = 1.85.
    A three-stage with a four-stage job: padded, Eq. 3 as before (IO-bound's storage during
    the GPU-heavy job's GPU stage, T = 0.9 + 0.05 + 0.05 + 0.05 = 1.05).
    """
    a, b = (1.0, 2.0, 1.0, 1.0), (1.0, 1.0, 2.0, 1.0)
    assert group_iteration_time([a, b], resource_types=4) == (5.0, (0, 1))
    assert group_iteration_time([a, b], resource_types=4, worst=True)[0] == 6.0
    assert iteration_time_for_ordering([a, b], (0, 1), resource_types=4) == 5.0
    assert group_iteration_time([IO_BOUND, IO_BOUND], resource_types=3)[0] == pytest.approx(1.85)
    gpu_heavy = (0.05, 0.05, 0.9, 0.05)
    assert group_iteration_time([IO_BOUND, gpu_heavy], resource_types=4)[0] == pytest.approx(1.05)
    # In the matching too: γ = 10 / (4 × 5) = 0.5 under Eq. 3, not above a floor of 1.1 × 2/4
    # = 0.55 (the pipeline over the first three stages would give T = 4, γ = 0.625).
    four = Bucket(1, np.array([a, b]), np.array([5.0, 5.0]), [0, 1], [True, True], [4, 4])
    assert multi_round_grouping([four], GroupingConfig(max_group=2, weight_floor=1.1)) == [
        [[0], [1]]]
    assert multi_round_grouping([four], GroupingConfig(max_group=2, weight_floor=0.9)) == [
        [[0, 1]]]


def test_the_matchings_vectorised_periods_equal_the_per_group_ones():
    """The matching times every pair of groups at once; each entry must equal
    `group_iteration_time` of that union (best and worst), for groups of up to four."""
    rng = np.random.default_rng(7)
    for p, q in ((1, 1), (1, 2), (2, 2), (1, 3)):
        a, b = rng.uniform(0.0, 1.0, (5, p, 3)), rng.uniform(0.0, 1.0, (4, q, 3))
        for worst in (False, True):
            merged = _merge_pipeline_periods(a, b, worst)
            for i in range(5):
                for j in range(4):
                    union = [*map(tuple, a[i]), *map(tuple, b[j])]
                    expected, _ = group_iteration_time(union, resource_types=4, worst=worst)
                    assert merged[i, j] == expected


@pytest.mark.parametrize("seed", range(40))
def test_blossom_matching_has_the_optimal_weight_of_networkx_reference(seed):
    # rustworkx's blossom replaced networkx's for speed: on the same (×1000, rounded) weights,
    # with many ties and missing edges, its matching weighs what networkx's optimum weighs.
    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 40))
    weights = rng.choice([0.0, 0.25, 0.5, 0.75, 1.0], size=(n, n)) * rng.integers(0, 2, (n, n))
    weights = np.triu(weights, 1) + np.triu(weights, 1).T
    ints = np.round(weights * 1000).astype(int)
    graph = nx.Graph()
    graph.add_weighted_edges_from((u, v, ints[u, v]) for u in range(n) for v in range(u + 1, n)
                                  if ints[u, v] > 0)
    best = sum(ints[u, v] for u, v in nx.max_weight_matching(graph))
    pairs = max_weight_pairs(weights, GroupingConfig())
    assert len({node for pair in pairs for node in pair}) == 2 * len(pairs)  # a matching
    assert sum(ints[u, v] for u, v in pairs) == best
