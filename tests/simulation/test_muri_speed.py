"""Muri's shortcuts (issue #16) answer exactly as the plain computation.

Skipped regroups: a full regroup whose inputs equal the last regroup's, as they stood after
its own decisions, is skipped; a policy that runs every regroup must decide the same on
random contended workloads. Remembered merge periods and the per-size sums of
`_remembered_edge_weights` must give `_edge_weights`' matrix to the bit, and Blossom's
graph, built with numpy, the pairs of the graph built edge by edge.
"""

from __future__ import annotations

import random
from dataclasses import replace

import numpy as np
import pytest
import rustworkx as rx

import simulation.interleaving_grouping as grouping
from simulation.decisions import Launch, Preempt
from simulation.engine import EngineConfig, Simulation
from simulation.interleaving import pad_stages
from simulation.interleaving_grouping import (
    Bucket,
    GroupingConfig,
    MatchingMemo,
    MergePeriods,
    _distinct_merge_periods,
    _edge_weights,
    _first_use_order,
    _matched_pairs,
    _remembered_edge_weights,
    _signatures,
    _sparse_mask,
    _typed_edge_weights,
    max_weight_pairs,
)
from simulation.model import JobSpec
from simulation.policies.muri import MuriL, MuriS
from tests.simulation.builders import training_cluster, workload
from tests.simulation.test_sharing_equivalence import outcome, random_muri_jobs


class EveryRegroup:
    """Muri with every full regroup run, none skipped (mixed into Muri-S and Muri-L)."""

    def _settled_inputs(self, view, selected, capacity):
        return (object(), *super()._settled_inputs(view, selected, capacity)[1:])


class MuriSEveryRegroup(EveryRegroup, MuriS):
    pass


class MuriLEveryRegroup(EveryRegroup, MuriL):
    pass


class CountsSkips:
    """Muri as it is, counting the regroups it skips."""

    skipped = 0

    def _settled_inputs(self, view, selected, capacity):
        inputs = super()._settled_inputs(view, selected, capacity)
        self.skipped += inputs == self._settled
        return inputs


class MuriSCountsSkips(CountsSkips, MuriS):
    pass


class MuriLCountsSkips(CountsSkips, MuriL):
    pass


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("lending", [False, True])
@pytest.mark.parametrize(("fast", "plain", "params"), [
    (MuriSCountsSkips, MuriSEveryRegroup, {}),
    (MuriLCountsSkips, MuriLEveryRegroup, {"thresholds": "300,3000"}),
    (MuriSCountsSkips, MuriSEveryRegroup, {"restart": "moved", "grouping": "always"}),
])
def test_skipped_regroups_would_have_decided_nothing(fast, plain, params, seed, lending):
    jobs = random_muri_jobs(seed, count=90)
    skipping = fast(**params)
    expected = outcome(plain(**params), jobs, lending)
    assert outcome(skipping, jobs, lending) == expected
    assert skipping.skipped > 0  # the shortcut was taken
    assert sum(row[3] for row in expected) > 0  # contended: the full regroups preempt


class CountsOutcomeSkips:
    """Muri as it is, counting the regroups skipped for keeping the last one's groups."""

    outcome_skips = 0

    def _settled_outcome(self, inputs, kept):
        outcome = super()._settled_outcome(inputs, kept)
        self.outcome_skips += outcome is not None and outcome == self._settled_kept
        return outcome


class MuriSCountsOutcomeSkips(CountsOutcomeSkips, MuriS):
    pass


class MuriLCountsOutcomeSkips(CountsOutcomeSkips, MuriL):
    pass


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize(("fast", "plain", "params"), [
    (MuriSCountsOutcomeSkips, MuriSEveryRegroup, {}),
    (MuriSCountsOutcomeSkips, MuriSEveryRegroup, {"profiling_noise": 0.3}),
    (MuriLCountsOutcomeSkips, MuriLEveryRegroup, {"thresholds": "300,3000",
                                                  "profiling_noise": 0.3}),
])
def test_regroups_keeping_the_last_groups_would_have_decided_nothing(fast, plain, params,
                                                                     seed):
    # Every job preemptible (a pinned one turns the shortcut off) and, with profiling
    # noise, a group's member order can decide its shares.
    jobs = [replace(job, preemptible=True) for job in random_muri_jobs(seed, count=90)]
    skipping = fast(**params)
    assert outcome(skipping, jobs, False) == outcome(plain(**params), jobs, False)
    assert skipping.outcome_skips > 0  # the shortcut was taken


def test_a_sticky_regroup_is_never_skipped():
    # Under `sticky` the plan depends on the running groups, which a regroup changes itself.
    policy = MuriSCountsSkips(regroup="sticky")
    outcome(policy, random_muri_jobs(0, count=90), False)
    assert policy.skipped == 0


def test_a_job_stopped_since_the_last_regroup_restarts_though_the_selection_is_the_same():
    # Two GPUs, two jobs without profiles: the regroup at t=0 starts both. `A` is stopped
    # from outside (as a reclaim would). At t=400 the regroup selects [A, B] again, in the
    # same order (SRSF: A 1,000 s left, B 4,600 s), but A is no longer running: the regroup
    # must not be skipped as a repeat of t=0's, and launches A.
    jobs = (JobSpec("A", 0.0, 1, 1000.0), JobSpec("B", 0.0, 1, 5000.0))
    sim = Simulation(training_cluster(1, 2), workload(*jobs), MuriS(),
                     config=EngineConfig(max_time=0.0))
    sim.run()
    assert set(sim.state.running) == {"A", "B"}
    sim.apply(Preempt("A"), forced=True)
    sim.clock.now = 400.0
    decisions = list(sim.policy.schedule(sim.view))
    assert [(type(d), d.job_id) for d in decisions] == [(Launch, "A")]


def _random_bucket(rng: random.Random, jobs: int, k: int) -> Bucket:
    # Few distinct profiles (as in Muri's traces) with per-job solo times; some of three
    # stages, some of k, some jobs not groupable.
    three = [tuple(rng.choice((0.0, rng.uniform(0.01, 3.0))) for _ in range(3))
             for _ in range(4)]
    full = [tuple(rng.uniform(0.01, 3.0) for _ in range(k)) for _ in range(2)]
    picked = [rng.choice(three + full) for _ in range(jobs)]
    rows = [pad_stages(stages, k) for stages in picked]
    return Bucket(
        gpus=1,
        stages=np.array(rows, dtype=float),
        solo=np.array([sum(r) * rng.uniform(0.8, 2.5) for r in rows]),
        ranks=list(range(jobs)),
        groupable=[rng.random() > 0.1 for _ in range(jobs)],
        stage_counts=[len(stages) for stages in picked],
    )


def _random_groups(rng: random.Random, jobs: int) -> list[list[int]]:
    order = list(range(jobs))
    rng.shuffle(order)
    groups = []
    while order:
        size = min(len(order), rng.choice((1, 1, 2, 3)))
        groups.append(order[:size])
        order = order[size:]
    return groups


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("k", [4, 5])  # three-stage profiles: pipeline model over 4 types only
def test_remembered_edge_weights_are_the_plain_ones_to_the_bit(seed, k):
    rng = random.Random(seed)
    config = GroupingConfig(max_group=4, overhead=(1.33, 1.5, 1.37),
                            weight_floor=rng.choice((0.0, 0.3)), worst_ordering=seed % 3 == 0)
    periods = MergePeriods()  # kept across the rounds below, as in a run
    merges = 0
    for _ in range(6):
        jobs = rng.randint(2, 40)
        bucket = _random_bucket(rng, jobs, k)
        groups = _random_groups(rng, jobs)
        plain = _edge_weights(bucket, groups, config)
        remembered = _remembered_edge_weights(bucket, groups, config, periods)
        assert np.array_equal(remembered, plain)
        merges += (plain > 0).sum()
    assert merges > 0


@pytest.mark.parametrize("seed", range(8))
def test_remembered_matchings_are_the_plain_ones_whatever_groups_run(seed):
    # A few buckets and groupings, each matched under several running groups (ties=keep):
    # the memo keeps one weight matrix per bucket and grouping, and every matching must
    # be the one computed from scratch, pairs and weights.
    rng = random.Random(seed)
    config = GroupingConfig(max_group=4, overhead=(1.33, 1.5, 1.37))
    memo = MatchingMemo()
    cases = []
    for _ in range(3):
        jobs = rng.randint(2, 30)
        bucket = _random_bucket(rng, jobs, 4)
        cases += [(bucket, _random_groups(rng, jobs)) for _ in range(2)]
    for _ in range(4):
        for bucket, groups in cases:
            running = replace(bucket, running_group=[rng.choice((-1, 7, 8, 9))
                                                     for _ in range(len(bucket.solo))])
            assert (memo.pairs(running, groups, config)
                    == _matched_pairs(running, groups, config))
    assert len(memo._graphs) == len(cases)  # graphs re-used across running groups


@pytest.mark.parametrize("seed", range(6))
def test_remembered_edge_weights_of_one_kind_are_the_plain_ones_to_the_bit(seed):
    # A first matching round: every job alone, groupable and of one timing model, so one
    # block covers the whole matrix (its own shortcut). Random profiles: γ(a, b) and
    # γ(b, a) may differ in the last bit, and the larger wins both ways.
    rng = np.random.default_rng(seed)
    jobs = 30
    for k, stages in ((5, 4), (4, 3)):
        rows = np.zeros((jobs, k))
        rows[:, :stages] = rng.uniform(0.01, 3.0, (jobs, stages))
        bucket = Bucket(gpus=1, stages=rows, solo=rows.sum(axis=1) * 1.8,
                        ranks=list(range(jobs)), groupable=[True] * jobs,
                        stage_counts=[stages] * jobs)
        groups = [[i] for i in range(jobs)]
        config = GroupingConfig(max_group=4, overhead=(1.33, 1.5, 1.37))
        plain = _edge_weights(bucket, groups, config)
        assert np.array_equal(
            _remembered_edge_weights(bucket, groups, config, MergePeriods()), plain)
        assert (plain > 0).sum() > jobs


def _alike_bucket(rng: random.Random, jobs: int, k: int) -> Bucket:
    # Jobs of a few models (as Philly with models assigned): most share their model's solo
    # time, some have their own, so rows alike may still differ in solo time; some are
    # not groupable, some have three stages.
    models = [pad_stages(tuple(rng.uniform(0.01, 3.0) for _ in range(rng.choice((3, k)))), k)
              for _ in range(4)]
    counts = [3 if row[-1] == 0.0 else k for row in models]
    solos = [sum(row) * rng.uniform(0.8, 2.5) for row in models]
    picked = [rng.randrange(4) for _ in range(jobs)]
    return Bucket(
        gpus=1,
        stages=np.array([models[m] for m in picked], dtype=float),
        solo=np.array([solos[m] if rng.random() < 0.8 else solos[m] * rng.uniform(0.5, 2.0)
                       for m in picked]),
        ranks=list(range(jobs)),
        groupable=[rng.random() > 0.1 for _ in range(jobs)],
        stage_counts=[counts[m] for m in picked],
    )


@pytest.mark.parametrize("seed", range(12))
def test_edge_weights_by_type_are_the_plain_ones_to_the_bit(seed):
    # Groups alike (same members' rows, solo times, stage counts, groupability) read one
    # cell of a matrix of types; two alike groups must still get their edge (the cell of
    # two distinct nodes, not the diagonal's 0), and groups that differ only in a solo
    # time or in groupability must not share a type. Signatures likewise by type.
    rng = random.Random(seed)
    k = 4 if seed % 2 else 5
    config = GroupingConfig(max_group=4, overhead=(1.33, 1.5, 1.37),
                            weight_floor=rng.choice((0.0, 0.3)), worst_ordering=seed % 3 == 0)
    periods = MergePeriods()
    alike = 0
    for _ in range(6):
        jobs = rng.randint(2, 60)
        bucket = _alike_bucket(rng, jobs, k)
        groups = [[i] for i in range(jobs)] if rng.random() < 0.5 else _random_groups(rng, jobs)
        weights, firsts, of, _ = _typed_edge_weights(bucket, groups, config, periods)
        plain = _edge_weights(bucket, groups, config)
        assert weights.tobytes() == plain.tobytes()
        assert np.array_equal(_signatures(bucket, firsts)[of], _signatures(bucket, groups))
        alike += int(sum(plain[u, v] > 0 for u in range(len(groups))
                         for v in range(u + 1, len(groups)) if of[u] == of[v]))
    assert alike > 0


@pytest.mark.parametrize("seed", range(8))
def test_a_graphs_weights_are_the_plain_ones_and_blossoms_integers(seed):
    # `_Graph` reads an edge's γ from the types' matrix and sums matchings in thousandths
    # itself (the best weight `_kept_running_pairs` compares with): each edge's γ must be
    # `_edge_weights`' cell, and a sum of edges the sum of Blossom's integer weights.
    rng = random.Random(seed)
    config = GroupingConfig(max_group=4, overhead=(1.33, 1.5, 1.37), exact_limit=24)
    memo = MatchingMemo()
    summed = 0
    for _ in range(6):
        jobs = rng.randint(2, 40)
        bucket = (_alike_bucket if rng.random() < 0.5 else _random_bucket)(rng, jobs, 4)
        groups = [[i] for i in range(jobs)] if rng.random() < 0.5 else _random_groups(rng, jobs)
        graph = memo._graph(bucket, groups, config)
        plain = _edge_weights(bucket, groups, config)
        edges = list(zip(graph.us.tolist(), graph.vs.tolist(), strict=True))
        assert [graph.weight_of(u, v) for u, v in edges] == [plain[u, v] for u, v in edges]
        for _ in range(5):
            chosen = [i for i in range(len(edges)) if rng.random() < 0.3]
            assert graph.weight_sum([edges[i] for i in chosen]) == int(
                graph.weight[chosen].sum())
            summed += len(chosen)
    assert summed > 0


@pytest.mark.parametrize("seed", range(30))
def test_first_use_order_is_the_order_of_the_edge_list(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 40))
    keep = np.triu(rng.random((n, n)) < rng.random(), 1)
    us, vs = np.nonzero(keep)
    order = list(dict.fromkeys(np.stack([us, vs], axis=1).reshape(-1).tolist()))
    assert _first_use_order(keep) == order


def test_matchings_kept_running_are_blossoms_whatever_its_ties(monkeypatch):
    # A run's pattern: a bucket matched, its pairs started, the same bucket matched again
    # with those pairs running (Blossom's graph now favours them), sometimes with a pair
    # less, a pair more among unmatched nodes, or three nodes in one running group. The
    # memo answers the proven cases without Blossom; every answer must be Blossom's.
    rng = random.Random(3)
    config = GroupingConfig(max_group=4, overhead=(1.33, 1.5, 1.37), exact_limit=24)
    memo = MatchingMemo()
    shortcuts = []
    kept = grouping._kept_running_pairs

    def counted(*args):
        found = kept(*args)
        shortcuts.append(found is not None)
        return found

    monkeypatch.setattr(grouping, "_kept_running_pairs", counted)
    unjoined = 0
    for _ in range(40):
        jobs = rng.randint(6, 50)  # above 24: sparse graphs
        bucket = _alike_bucket(rng, jobs, 4)
        groups = [[i] for i in range(jobs)]
        pairs = memo.pairs(replace(bucket, running_group=[-1] * jobs), groups, config)
        for variant in range(5):
            tokens = [-1] * jobs
            for token, (u, v, _) in enumerate(pairs):
                if variant != 1 or token:  # variant 1: the first pair does not run
                    tokens[u] = tokens[v] = token
            matched = {u for u, _, _ in pairs} | {v for _, v, _ in pairs}
            free = [i for i in range(jobs) if i not in matched]  # some not groupable
            if variant == 2 and len(free) >= 2:  # two unmatched nodes run together
                tokens[free[0]] = tokens[free[1]] = 99
                unjoined += 1
            if variant == 3 and pairs and free:  # a running group of three
                tokens[free[0]] = tokens[pairs[0][0]]
            running = replace(bucket, running_group=tokens)
            again = memo.pairs(running, groups, config)
            assert again == _matched_pairs(running, groups, config)
    assert any(shortcuts) and not all(shortcuts) and unjoined


def test_running_groups_join_the_sparse_graph_and_stay_together():
    # Eight alike nodes of one class above the exact limit: the courted partners are the
    # cycle 0-1-...-7-0, every edge γ 0.5 (500), best 2,000. Pairs running along the cycle
    # are Blossom's matching and proven so. With (4, 6) and (5, 7) running instead of
    # (4, 5) and (6, 7), no courted partners, their edges join the graph: the four running
    # pairs weigh the best 2,000, so they are Blossom's matching and proven so too. With
    # only (4, 6) and (5, 7) running, Blossom completes them with (0, 1) and (2, 3).
    config = GroupingConfig(exact_limit=4, sparse_degree=2)
    weights = np.full((8, 8), 0.5)
    np.fill_diagonal(weights, 0.0)
    signatures = np.zeros((8, 2), dtype=np.int64)
    cycle = [(0, 1), (0, 7), (1, 2), (2, 3), (3, 4), (4, 5), (5, 6), (6, 7)]
    assert list(zip(*map(np.ndarray.tolist, grouping._sparse_pairs(signatures, 2)),
                    strict=True)) == cycle

    def graph(running):
        us, vs = grouping._sparse_pairs(signatures, 2, grouping._running_cells(running))
        built = grouping._Graph(np.full((1, 1), 0.5), np.zeros(8, dtype=np.intp), us, vs,
                                np.full(len(us), 0.5), True)
        built.best = 2000
        return built

    along = np.array([0, 0, 1, 1, 2, 2, 3, 3])
    assert grouping._kept_running_pairs(graph(along), along) == [(0, 1), (2, 3), (4, 5), (6, 7)]
    assert max_weight_pairs(weights, config, signatures, along) == [(0, 1), (2, 3), (4, 5),
                                                                    (6, 7)]
    across = np.array([0, 0, 1, 1, 2, 3, 2, 3])
    crossed = graph(across)
    assert list(zip(crossed.us.tolist(), crossed.vs.tolist(), strict=True)) == sorted(
        [*cycle, (4, 6), (5, 7)])
    assert grouping._kept_running_pairs(crossed, across) == [(0, 1), (2, 3), (4, 6), (5, 7)]
    assert max_weight_pairs(weights, config, signatures, across) == [(0, 1), (2, 3), (4, 6),
                                                                     (5, 7)]
    two = np.array([-1, -1, -1, -1, 2, 3, 2, 3])
    assert grouping._kept_running_pairs(graph(two), two) is None  # 1,000 of 2,000 run
    assert max_weight_pairs(weights, config, signatures, two) == [(0, 1), (2, 3), (4, 6),
                                                                  (5, 7)]
    heavier = graph(along)
    heavier.best = 2500
    assert grouping._kept_running_pairs(heavier, along) is None


def test_remembered_sparse_graphs_hold_the_running_groups_edges():
    # The hand case above through `MatchingMemo`: eight alike jobs (four balanced stages,
    # γ 0.5 for any two) above the exact limit. Matched first with nothing running: one of
    # the cycle's two perfect matchings (a tie). Then with (4, 6) and (5, 7) running: that
    # graph holds their edges, so it is another graph, and they stay together, with the
    # only pairs left of 0-3; with the cycle's pairs (0, 1) ... (6, 7) running, those.
    config = GroupingConfig(max_group=4, exact_limit=4, sparse_degree=2)
    bucket = Bucket(gpus=1, stages=np.ones((8, 4)), solo=np.full(8, 4.0),
                    ranks=list(range(8)), groupable=[True] * 8, stage_counts=[4] * 8)
    groups = [[i] for i in range(8)]
    memo = MatchingMemo()
    along = [(0, 1, 0.5), (2, 3, 0.5), (4, 5, 0.5), (6, 7, 0.5)]
    first = memo.pairs(replace(bucket, running_group=[-1] * 8), groups, config)
    assert first in (along, [(0, 7, 0.5), (1, 2, 0.5), (3, 4, 0.5), (5, 6, 0.5)])
    for tokens, expected in (([-1, -1, -1, -1, 2, 3, 2, 3], [*along[:2], (4, 6, 0.5), (5, 7, 0.5)]),
                             ([0, 0, 1, 1, 2, 2, 3, 3], along)):
        running = replace(bucket, running_group=tokens)
        assert memo.pairs(running, groups, config) == expected
        assert _matched_pairs(running, groups, config) == expected
    assert len(memo._graphs) == 3


def test_running_cells_join_every_two_nodes_of_a_running_group():
    # Groups 5 (nodes 0, 2, 4) and 7 (3, 5); node 1 runs alone (token 9), 6 waits (-1).
    us, vs = grouping._running_cells(np.array([5, 9, 5, 7, 5, 7, -1]))
    assert list(zip(us.tolist(), vs.tolist(), strict=True)) == [(0, 2), (0, 4), (2, 4), (3, 5)]
    assert [len(cells) for cells in grouping._running_cells(np.array([-1, 3, -1]))] == [0, 0]


@pytest.mark.parametrize("seed", range(20))
def test_sparse_pairs_are_the_sparse_masks_cells(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 120))
    signatures = rng.integers(0, int(rng.integers(1, 4)), (n, 3))
    degree = int(rng.integers(1, 4))
    running = rng.integers(-1, max(1, n // 3), n)  # some nodes run together
    together = grouping._running_cells(running) if seed % 2 else None
    us, vs = grouping._sparse_pairs(signatures, degree, together)
    expected = np.nonzero(np.triu(_sparse_mask(signatures, degree, together), 1))
    assert np.array_equal(us, expected[0]) and np.array_equal(vs, expected[1])
    assert grouping._edge_list_order(us, vs) == list(dict.fromkeys(
        np.stack([us, vs], axis=1).reshape(-1).tolist()))


@pytest.mark.parametrize(("light", "kept"), [(0.0004, False), (0.0006, True)])
def test_a_matching_is_kept_only_if_every_edge_weighs(light, kept, monkeypatch):
    # γ in thousandths: an edge of γ 0.0004 weighs 0 in Blossom's graph, so matchings with
    # and without it tie and Blossom's choice is not proven; at 0.0006 it weighs 1.
    table = np.zeros((4, 4))  # types' matrix: the cell of groups u, v is (u, v)
    table[0, 1] = table[1, 0] = 0.5
    table[2, 3] = table[3, 2] = light
    monkeypatch.setattr(grouping, "_typed_edge_weights",
                        lambda *_, **__: (None, [[0], [1], [2], [3]], np.arange(4), table))
    asked = []
    real = grouping._kept_running_pairs
    monkeypatch.setattr(grouping, "_kept_running_pairs", lambda *a: asked.append(a) or real(*a))
    bucket = _alike_bucket(random.Random(1), 4, 4)
    groups = [[0], [1], [2], [3]]
    config = GroupingConfig()
    memo = MatchingMemo()
    assert memo.pairs(replace(bucket, running_group=[-1] * 4), groups, config) == [
        (0, 1, 0.5)] + [(2, 3, light)] * kept
    again = memo.pairs(replace(bucket, running_group=[5, 5, 6, 6]), groups, config)
    assert again == [(0, 1, 0.5), (2, 3, light)]  # the bonus alone makes (2, 3) weigh
    assert bool(asked) == kept


def test_a_remembered_period_is_the_one_computed_in_another_batch():
    rng = np.random.default_rng(7)
    a = rng.uniform(0.01, 3.0, (9, 1, 4))
    b = rng.uniform(0.01, 3.0, (13, 2, 4))
    keys_a = list(range(9))
    keys_b = [(i, i) for i in range(13)]
    for pipeline in (False, True):
        small, whole = MergePeriods(), MergePeriods()
        assert small.known(keys_a, keys_b, pipeline, False) is None
        small.remember(keys_a[2:5], a[2:5], keys_b[::2], b[::2], pipeline, False)
        whole.remember(keys_a, a, keys_b, b, pipeline, False)
        assert np.array_equal(small.known(keys_a[2:5], keys_b[::2], pipeline, False),
                              whole.known(keys_a[2:5], keys_b[::2], pipeline, False))
        assert np.array_equal(whole.known(keys_a, keys_b, pipeline, False),
                              _distinct_merge_periods(a, b, pipeline, False))


def _pairs_edge_by_edge(weights: np.ndarray) -> list[tuple[int, int]]:
    """Blossom's graph built one edge at a time with Python's rounding (the definition)."""
    us, vs = np.nonzero(np.triu(weights > 0, 1))
    order = list(dict.fromkeys(np.stack([us, vs], axis=1).reshape(-1).tolist()))
    index = {node: i for i, node in enumerate(order)}
    graph = rx.PyGraph(multigraph=False)
    graph.add_nodes_from(order)
    graph.add_edges_from([(index[u], index[v], int(round(weights[u, v] * 1000)))
                          for u, v in zip(us.tolist(), vs.tolist(), strict=True)])
    matching = rx.max_weight_matching(graph, weight_fn=int)
    return sorted((min(order[a], order[b]), max(order[a], order[b])) for a, b in matching)


@pytest.mark.parametrize("seed", range(20))
def test_blossom_graph_built_with_numpy_matches_edge_by_edge(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 30))
    # Weights on half-thousandths, so rounding half to even decides ties.
    weights = rng.integers(0, 2000, (n, n)) / 2000.0 * (rng.random((n, n)) > 0.4)
    weights = np.maximum(weights, weights.T)
    np.fill_diagonal(weights, 0.0)
    assert max_weight_pairs(weights, GroupingConfig()) == _pairs_edge_by_edge(weights)


def test_blossom_weights_round_half_to_even():
    # γ in thousandths: 0.0025 -> 2.5 rounds to 2 (as Python's round does), so the pairs
    # {0, 1} and {2, 3} weigh 2 + 2 = 4 and lose to {0, 2} alone at 5. Rounding half up
    # would make them 3 + 3 = 6 and win.
    weights = np.zeros((4, 4))
    weights[0, 1] = weights[2, 3] = 0.0025
    weights[0, 2] = 0.005
    weights = np.maximum(weights, weights.T)
    assert max_weight_pairs(weights, GroupingConfig()) == [(0, 2)]
