"""Multi-resource interleaving, the grouping (Muri, SIGCOMM'22 Algorithm 1, §4.2).

**Multi-round grouping** (Algorithm 1): nodes start as single jobs; each round builds a graph
whose edge weights are the γ of merging two nodes, finds a maximum weighted matching with
Edmonds' Blossom algorithm (rustworkx), and merges matched pairs; ⌈log2 k⌉ rounds give groups of
up to k jobs. Only nodes of one bucket (same GPU count) are matched (§4.2). An edge exists
only when the merged group would not exceed `max_group` jobs and interleaving beats running
the members one after another: group time times the interleaving overhead of its size
(`GroupingConfig.overhead`) < sum of solo iteration times, as Muri's simulator unpacks such
groups (its default `autopack`, Rivendile/Muri@4e69a78 `simulator/run_sim.py:89,1097-1103`).
The edge weight is Eq. 4's γ without the overhead. (Muri's simulator weighs edges with
`calc_used_ratio`, `simulator/matching.py:599` and :177-183, whose iteration time carries the
overhead, :169-174; its overhead-free `calc_weight`, :185, is commented out at :598. Both pick
the same pairs when every merge a round considers makes groups of one size, as in the first
round.) Blossom is O(V³): up to `exact_limit` nodes per bucket the graph is complete
(exact); above it each node keeps edges to `sparse_degree` nodes of every
class of similar jobs (resource shares rounded to tenths), chosen by rotation so that
identical jobs do not all court the same partners, and to the nodes it runs in one group
with (so a running group can stay together, `max_weight_pairs`). `blossom=False` (Figure
11's "without Blossom") pairs nodes in priority order instead (`_priority_pairs`). With a
`MatchingMemo`, matchings are remembered by bucket and merge periods by the pair of stage
blocks merged (`MergePeriods`): the same floats, computed once.

The group iteration time and γ each edge weighs are `simulation.interleaving`'s model.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np
import rustworkx as rx

from simulation.interleaving import (
    PIPELINE_SLOTS,
    PIPELINE_STAGES,
    is_pipeline_group,
    pipeline_orderings,
    pipeline_recursion,
    shift_assignments,
)

Cells = tuple[np.ndarray, np.ndarray]  # the cells (us[i], vs[i]) of a graph's edges, u < v

@dataclass(slots=True)
class Bucket:
    """Jobs that may share GPUs with each other (same GPU count and constraints).

    `stages[i]` is job i's (believed) stage row, padded to the k resource types, and
    `solo[i]` its own iteration time; `ranks[i]` its position in the priority order (lower
    first); `groupable[i]` is False for a job that must run alone. `stage_counts[i]` is how
    many stages job i's profile has before padding (None: k for every job), which picks the
    timing model of each merge (`is_pipeline_group`).
    """

    gpus: int
    stages: np.ndarray
    solo: np.ndarray
    ranks: list[int]
    groupable: list[bool]
    stage_counts: list[int] | None = None
    # `running_group[i]`: the group job i runs in now (-1: none); among equally heavy
    # matchings Blossom keeps such groups together (`max_weight_pairs`). None: no preference.
    running_group: list[int] | None = None
    # `row_ids[i]`: job i's stage row interned by `MergePeriods.row_ids` (set there).
    row_ids: list[int] | None = None
    # What `MatchingMemo` keys it by, besides its groups (set there; a bucket kept across
    # rounds is hashed once; `dataclasses.replace` starts afresh).
    memo_key: tuple | None = field(default=None, init=False, repr=False, compare=False)


@dataclass(frozen=True, slots=True)
class GroupingConfig:
    max_group: int = 4
    weight_floor: float = 0.0  # an edge needs γ > floor × (jobs in merged group) / k
    # Iteration-time factor for groups of 2, 3, ... jobs (the last repeats); () = none.
    overhead: tuple[float, ...] = ()
    exact_limit: int = 64
    sparse_degree: int = 2
    worst_ordering: bool = False
    blossom: bool = True  # False: Figure 11's "without Blossom" (`_priority_pairs`)

    def overhead_for(self, jobs: int) -> float:
        if jobs <= 1 or not self.overhead:
            return 1.0
        return self.overhead[min(jobs - 2, len(self.overhead) - 1)]


def _merge_periods(a: np.ndarray, b: np.ndarray, worst: bool) -> np.ndarray:
    """Best-ordering period of every union of a group in `a` with one in `b`.

    `a` is (na, p, k) and `b` (nb, q, k): stage rows of groups of p and q jobs. Returns
    (na, nb), enumerating shift assignments with numpy over all pairs at once.
    """
    k = a.shape[2]
    p, q = a.shape[1], b.shape[1]
    rolled_a = np.stack([np.roll(a, -s, axis=2) for s in range(k)])  # (k, na, p, k)
    rolled_b = np.stack([np.roll(b, -s, axis=2) for s in range(k)])
    best = np.full((a.shape[0], b.shape[0]), -np.inf if worst else np.inf)
    for shifts in shift_assignments(p + q, k):
        ma = rolled_a[shifts[0], :, 0, :]
        for i in range(1, p):
            ma = np.maximum(ma, rolled_a[shifts[i], :, i, :])
        mb = rolled_b[shifts[p], :, 0, :]
        for i in range(1, q):
            mb = np.maximum(mb, rolled_b[shifts[p + i], :, i, :])
        period = np.maximum(ma[:, None, :], mb[None, :, :]).sum(axis=2)
        best = np.maximum(best, period) if worst else np.minimum(best, period)
    return best


def _merge_pipeline_periods(a: np.ndarray, b: np.ndarray, worst: bool) -> np.ndarray:
    """`_merge_periods` under the pipeline model: `a` is (na, p, 3) and `b` (nb, q, 3).

    Every ordering is one slice of a leading axis, an empty slot a row of -inf, so the
    recursion runs once per merge rather than once per ordering (its cost is per call)."""
    p = a.shape[1]
    orderings = pipeline_orderings(p + b.shape[1])
    shape = (len(orderings), a.shape[0], b.shape[0], PIPELINE_STAGES)
    occupants = [np.full(shape, -np.inf) for _ in range(PIPELINE_SLOTS)]
    for index, slots in enumerate(orderings):
        for job, slot in enumerate(slots):
            occupants[slot][index] = a[:, job, None, :] if job < p else b[None, :, job - p, :]
    periods = pipeline_recursion(occupants)
    return periods.max(axis=0) if worst else periods.min(axis=0)


def _distinct_merge_periods(a: np.ndarray, b: np.ndarray, pipeline: bool, worst: bool
                            ) -> np.ndarray:
    """`_merge_periods` (or `_merge_pipeline_periods`) of every group in `a` with every one
    in `b`, computed once per distinct pair of stage blocks and spread to all pairs.

    Jobs of one model share a profile, so a bucket of hundreds of jobs holds a few dozen
    distinct groups (44 (GPU count, profile) pairs in muri_trace1's 1,494 jobs): the
    orderings are enumerated over those, not over every pair (issue #16).
    """
    unique_a, of_a = np.unique(a.reshape(len(a), -1), axis=0, return_inverse=True)
    unique_b, of_b = np.unique(b.reshape(len(b), -1), axis=0, return_inverse=True)
    unique_a = unique_a.reshape(-1, *a.shape[1:])
    unique_b = unique_b.reshape(-1, *b.shape[1:])
    if pipeline:
        period = _merge_pipeline_periods(unique_a[..., :PIPELINE_STAGES],
                                         unique_b[..., :PIPELINE_STAGES], worst)
    else:
        period = _merge_periods(unique_a, unique_b, worst)
    return period[np.ix_(of_a.reshape(-1), of_b.reshape(-1))]


def _edge_weights(
    bucket: Bucket, groups: list[list[int]], config: GroupingConfig
) -> np.ndarray:
    """γ of merging each pair of groups (Eq. 4), or 0 where the merge is not allowed."""
    n = len(groups)
    k = bucket.stages.shape[1]
    weights = np.zeros((n, n))
    busy = np.array([bucket.stages[g].sum() for g in groups])
    solo = np.array([bucket.solo[g].sum() for g in groups])
    open_ = np.array([all(bucket.groupable[i] for i in g) for g in groups])
    counts = bucket.stage_counts or [k] * len(bucket.solo)
    by_kind: dict[tuple[int, bool], list[int]] = {}  # (size, pipeline model) -> nodes
    for node, group in enumerate(groups):
        if open_[node]:
            pipeline = is_pipeline_group((counts[i] for i in group), k)
            by_kind.setdefault((len(group), pipeline), []).append(node)
    for (p, pipeline_a), nodes_a in by_kind.items():
        for (q, pipeline_b), nodes_b in by_kind.items():
            if (p, pipeline_a) > (q, pipeline_b) or p + q > config.max_group or p + q > k:
                continue
            a = np.stack([bucket.stages[groups[i]] for i in nodes_a])
            b = np.stack([bucket.stages[groups[i]] for i in nodes_b])
            period = _distinct_merge_periods(a, b, pipeline_a and pipeline_b,
                                             config.worst_ordering)
            _add_merges(weights, config, k, p + q, nodes_a, nodes_b, period, busy, solo)
    np.fill_diagonal(weights, 0.0)
    return weights


def _merge_weights(config: GroupingConfig, k: int, size: int, period: np.ndarray,
                   busy_a: np.ndarray, busy_b: np.ndarray, solo_a: np.ndarray,
                   solo_b: np.ndarray) -> np.ndarray:
    """γ of merging each group of one side (busy and solo times per group) with each of the
    other into `size` jobs with the given periods, or 0 where the merge is not allowed."""
    gamma = (busy_a[:, None] + busy_b[None, :]) / (k * np.maximum(period, 1e-12))
    useful = period * config.overhead_for(size) < solo_a[:, None] + solo_b[None, :]
    useful &= gamma > config.weight_floor * size / k
    return np.where(useful, gamma, 0.0)


def _add_merges(weights: np.ndarray, config: GroupingConfig, k: int, size: int,
                nodes_a: Sequence[int] | np.ndarray, nodes_b: Sequence[int] | np.ndarray,
                period: np.ndarray, busy: np.ndarray, solo: np.ndarray) -> None:
    """Raise `weights` between `nodes_a` and `nodes_b` (both ways) to γ of each merge into
    `size` jobs with the given periods, where the merge is allowed."""
    block = _merge_weights(config, k, size, period, busy[nodes_a], busy[nodes_b],
                           solo[nodes_a], solo[nodes_b])
    ia, ib = np.ix_(nodes_a, nodes_b)
    weights[ia, ib] = np.maximum(weights[ia, ib], block)
    tb, ta = np.ix_(nodes_b, nodes_a)
    weights[tb, ta] = np.maximum(weights[tb, ta], block.T)


BlockKey = int | tuple[int, ...]  # a group's stage block: its members' row ids (one: the id)


class MergePeriods:
    """Merge periods (`_distinct_merge_periods`) remembered by the two stage blocks merged.

    The same few dozen stage blocks (jobs of one model share a profile) meet round after
    round, so once they have met a matching's merge periods are look-ups instead of the
    orderings' enumeration (issue #16). A remembered period is the float recomputing gives:
    numpy's element-wise maxima, its sums over a row's k stages and its minima over the
    orderings give each pair of blocks the same value whatever else is in the batch
    (`tests/simulation/test_muri_speed.py`). Blocks are named by their rows' ids
    (`row_ids`: equal rows, equal ids), so a matching finds its blocks by small dict
    look-ups instead of hashing each group's row bytes. At most `size` periods are kept
    (all are dropped when full).
    """

    def __init__(self, size: int = 1_000_000) -> None:
        self._size = size
        self._rows: dict[bytes, int] = {}  # a stage row's bytes -> its id, for the run
        # (pipeline, worst) -> block a -> block b -> period; `_count` periods in all
        self._known: dict[tuple[bool, bool], dict[BlockKey, dict[BlockKey, float]]] = {}
        self._count = 0

    def row_ids(self, bucket: Bucket) -> list[int]:
        """The id of each of `bucket`'s stage rows, kept on the bucket (its rounds share it)."""
        if bucket.row_ids is None:
            stages = np.ascontiguousarray(bucket.stages, dtype=float)
            rows = stages.view(np.dtype((np.void, stages.shape[1] * stages.itemsize)))
            interned = self._rows
            bucket.row_ids = [interned.setdefault(row, len(interned))
                              for row in rows.reshape(-1).tolist()]
        return bucket.row_ids

    def known(self, keys_a: list[BlockKey], keys_b: list[BlockKey], pipeline: bool,
              worst: bool) -> np.ndarray | None:
        """The remembered periods of merging each block of `keys_a` with each of `keys_b`,
        (na, nb); None unless every one is remembered."""
        known = self._known.get((pipeline, worst))
        if known is None:
            return None
        try:
            return np.array([[row[y] for y in keys_b] for row in map(known.__getitem__, keys_a)])
        except KeyError:
            return None

    def remember(self, keys_a: list[BlockKey], blocks_a: np.ndarray, keys_b: list[BlockKey],
                 blocks_b: np.ndarray, pipeline: bool, worst: bool) -> np.ndarray:
        """Compute and remember the periods of merging each of `blocks_a` (na, p, k), named
        `keys_a`, with each of `blocks_b` (nb, q, k), named `keys_b`: (na, nb)."""
        if pipeline:
            table = _merge_pipeline_periods(blocks_a[..., :PIPELINE_STAGES],
                                            blocks_b[..., :PIPELINE_STAGES], worst)
        else:
            table = _merge_periods(blocks_a, blocks_b, worst)
        if self._count + table.size > self._size:
            self._known.clear()
            self._count = 0
        known = self._known.setdefault((pipeline, worst), {})
        for x, row in zip(keys_a, table.tolist(), strict=True):
            known.setdefault(x, {}).update(zip(keys_b, row, strict=True))
        self._count += table.size
        return table


class _Kind:
    """The open groups of one size and timing model in a matching: their nodes, members,
    distinct stage blocks, and busy and solo times (`_remembered_edge_weights`)."""

    __slots__ = ("nodes", "members", "keys", "firsts", "of", "busy", "solo")

    def __init__(self, bucket: Bucket, nodes: list[int], members: list[list[int]],
                 keys: list[BlockKey]) -> None:
        self.nodes = np.array(nodes)
        self.members = np.array(members)
        distinct: dict[BlockKey, int] = {}
        self.firsts: list[int] = []  # where each distinct block first occurs
        of = []
        for at, key in enumerate(keys):
            found = distinct.get(key)
            if found is None:
                found = distinct[key] = len(self.firsts)
                self.firsts.append(at)
            of.append(found)
        self.keys = list(distinct)
        self.of = np.array(of, dtype=np.intp)
        # A group's times summed over its rows in order, as one group at a time would.
        self.busy = bucket.stages[self.members].reshape(len(nodes), -1).sum(axis=1)
        self.solo = bucket.solo[self.members].sum(axis=1)

    def blocks(self, bucket: Bucket) -> np.ndarray:
        """The distinct stage blocks, (distinct, size, k), in `keys`' order."""
        return bucket.stages[self.members[self.firsts]]


def _remembered_edge_weights(bucket: Bucket, groups: list[list[int]], config: GroupingConfig,
                             periods: MergePeriods, alike: bool = False) -> np.ndarray:
    """`_edge_weights`, to the bit, with its merge periods from `periods`: the open groups
    sorted by size and timing model in one pass, each group's block named by its rows' ids,
    and a matrix covering every group written at once. With `alike` the diagonal holds
    each group's weight with a group alike (same rows, solo times and stage counts)
    instead of 0 (`_typed_edge_weights`)."""
    n = len(groups)
    k = bucket.stages.shape[1]
    ids = periods.row_ids(bucket)
    groupable = bucket.groupable
    counts = bucket.stage_counts or None
    timed = k == PIPELINE_SLOTS and counts is not None  # may any group be pipelined
    by_kind: dict[tuple[int, bool], tuple[list[int], list[list[int]], list[BlockKey]]] = {}
    for node, group in enumerate(groups):
        if len(group) == 1:
            job = group[0]
            if not groupable[job]:
                continue
            key: BlockKey = ids[job]
            pipeline = timed and counts[job] == PIPELINE_STAGES
        else:
            if not all(groupable[job] for job in group):
                continue
            key = tuple(ids[job] for job in group)
            pipeline = timed and all(counts[job] == PIPELINE_STAGES for job in group)
        found = by_kind.get((len(group), pipeline))
        if found is None:
            found = by_kind[len(group), pipeline] = ([], [], [])
        found[0].append(node)
        found[1].append(group)
        found[2].append(key)
    kinds = [(kind, _Kind(bucket, *found)) for kind, found in sorted(by_kind.items())]
    weights = np.zeros((n, n))
    for index, ((p, pipeline_a), a) in enumerate(kinds):
        for (q, pipeline_b), b in kinds[index:]:
            if p + q > config.max_group or p + q > k:
                continue
            pipeline, worst = pipeline_a and pipeline_b, config.worst_ordering
            table = periods.known(a.keys, b.keys, pipeline, worst)
            if table is None:
                table = periods.remember(a.keys, a.blocks(bucket), b.keys, b.blocks(bucket),
                                         pipeline, worst)
            table = table[a.of[:, None], b.of[None, :]]
            if a is b:
                # A cell of one kind is the larger γ of both merge orders: the γ of the
                # shorter period, as γ falls when the period grows and so does the room for
                # the merge (its sums are both orders': + commutes).
                table = np.minimum(table, table.T)
            block = _merge_weights(config, k, p + q, table, a.busy, b.busy, a.solo, b.solo)
            # Kinds hold disjoint nodes, so each cell is written by one pair of kinds.
            if a is not b:
                weights[a.nodes[:, None], b.nodes] = block
                weights[b.nodes[:, None], a.nodes] = block.T
            elif len(a.nodes) == n:
                weights = block
            else:
                weights[a.nodes[:, None], a.nodes] = block
    if not alike:
        np.fill_diagonal(weights, 0.0)
    return weights


def _typed_edge_weights(bucket: Bucket, groups: list[list[int]], config: GroupingConfig,
                        periods: MergePeriods, dense: bool = True
                        ) -> tuple[np.ndarray | None, list[list[int]], np.ndarray, np.ndarray]:
    """`_remembered_edge_weights`, to the bit, computed once per *type* of group.

    A group's edges depend only on its members' stage rows, solo times, stage counts and
    groupability, in order (its type): jobs of one model and solo time are alike, so a
    bucket of ~70 jobs on Philly with models holds eight types, and a matrix of the types
    read n × n times is cheaper than one of the groups (issue #22). Two groups of one type
    read the types' diagonal, which holds the weight of two such groups (`alike`); a cell
    of two kinds keeps the order of kinds, and one of one kind the larger of both orders,
    as there.

    Returns the weights (None unless `dense`), one group of each type, each group's type
    and the types' matrix: the weight of groups u ≠ v is its cell (type of u, type of v),
    and every positive weight is one of its cells."""
    ids = periods.row_ids(bucket)
    solo = bucket.solo.tolist()
    counts = bucket.stage_counts or [0] * len(solo)
    groupable = bucket.groupable
    types: dict[tuple, int] = {}
    of: list[int] = []
    firsts: list[list[int]] = []
    for group in groups:
        if len(group) == 1:
            job = group[0]
            key: tuple = (ids[job], solo[job], counts[job], groupable[job])
        else:
            key = tuple((ids[job], solo[job], counts[job], groupable[job]) for job in group)
        found = types.get(key)
        if found is None:
            found = types[key] = len(firsts)
            firsts.append(group)
        of.append(found)
    table = _remembered_edge_weights(bucket, firsts, config, periods, alike=True)
    types_of = np.array(of, dtype=np.intp)
    if not dense:
        return None, firsts, types_of, table
    weights = table.take(types_of, axis=0).take(types_of, axis=1)
    np.fill_diagonal(weights, 0.0)
    return weights, firsts, types_of, table


def _sparse_mask(signatures: np.ndarray, degree: int, together: Cells | None = None
                 ) -> np.ndarray:
    """Each node's edges to `degree` nodes of every signature class, chosen by rotation,
    and the cells `together` (`_running_cells`: nodes that run in one group).

    Nodes with the same signature interleave alike, so a few partners per class keep the
    choices Blossom needs while spreading them: node u courts class members u, u+1, ...
    (mod the class size) rather than every node courting the same few.
    """
    n = signatures.shape[0]
    flat = np.ascontiguousarray(signatures)
    rows = flat.view(np.dtype((np.void, flat.shape[1] * flat.itemsize))).reshape(-1)
    classes: dict[bytes, list[int]] = {}  # a dict, not np.unique: sorting rows is slow
    for node, row in enumerate(rows.tolist()):
        classes.setdefault(row, []).append(node)
    mask = np.zeros((n, n), dtype=bool)
    nodes = np.arange(n)[:, None]
    offsets = nodes + np.arange(degree)[None, :]
    for members in classes.values():
        mask[nodes, np.array(members)[offsets % len(members)]] = True
    if together is not None:
        mask[together] = True
    return mask | mask.T


def _running_members(running: np.ndarray) -> list[list[int]]:
    """The nodes of each running group (`running[u] >= 0` names node u's), ascending."""
    together: dict[int, list[int]] = {}
    for node, token in enumerate(running.tolist()):
        if token >= 0:
            together.setdefault(token, []).append(node)
    return list(together.values())


def _running_cells(running: np.ndarray) -> Cells:
    """The cells (u, v), u < v, of nodes that run in one group (`running[u] ==
    running[v] >= 0`), in row-major order."""
    cells = sorted((a, b) for nodes in _running_members(running) if len(nodes) > 1
                   for i, a in enumerate(nodes) for b in nodes[i + 1:])
    if not cells:
        return np.zeros(0, np.intp), np.zeros(0, np.intp)
    us, vs = np.array(cells, dtype=np.intp).T
    return us, vs


@lru_cache(maxsize=64)
def _above_diagonal(n: int) -> np.ndarray:
    """The cells above the diagonal of an n × n matrix (read-only, shared; the sizes of a
    run's recent matchings are kept, n² bytes each)."""
    mask = np.triu(np.ones((n, n), dtype=bool), 1)
    mask.flags.writeable = False
    return mask


def _first_use_order(keep: np.ndarray) -> list[int]:
    """The nodes of the upper-triangular edge mask `keep` in order of first use in its edge
    list read row by row (each edge's lower end, then its upper end), as
    `dict.fromkeys` over that list gives them: a node first used in row r (r itself, or
    an upper end there) comes after every node first used in an earlier row, and in row
    r the nodes come by index (r first: its upper ends are above it)."""
    n = keep.shape[0]
    nodes = np.arange(n)
    above = keep.any(axis=0)  # used as an upper end
    first = np.where(above, keep.argmax(axis=0), nodes)  # the row of first use
    used = above | keep.any(axis=1)
    key = (first * n + nodes)[used]
    return nodes[used][np.argsort(key)].tolist()


def max_weight_pairs(
    weights: np.ndarray, config: GroupingConfig, signatures: np.ndarray | None = None,
    running: np.ndarray | None = None,
) -> list[tuple[int, int]]:
    """Blossom maximum weighted matching over the positive entries of `weights`.

    Above `config.exact_limit` nodes only edges kept by `_sparse_mask` over `signatures`
    (rows that say how a node uses each resource) enter the graph. `running[i]` names the
    running group node i runs in whole (-1: none): among the matchings of maximum weight (γ
    in thousandths), the one keeping most such pairs together wins, as each such edge gains
    less than 1 / (n + 1) of a thousandth; Algorithm 1's objective is unchanged, only its
    ties (issue #16: otherwise jobs of one model swap partners from round to round, and
    each swap restarts a group). Above the exact limit the edges between nodes of one
    running group enter the sparse graph too: the courted partners shift with every job
    that joins or leaves the bucket, so without them a running pair was often no edge at
    all, and split though keeping it cost no weight (on the first 20,000 Philly jobs with
    models, muri-s restarted jobs 389,356 times; with them 105,940, mean JCT -4 %).
    """
    n = weights.shape[0]
    if n < 2:
        return []
    keep = weights > 0
    keep &= _above_diagonal(n)
    if n > config.exact_limit and signatures is not None:
        keep &= _sparse_mask(signatures, config.sparse_degree,
                             None if running is None else _running_cells(running))
    us, vs = np.nonzero(keep)
    if len(us) == 0:
        return []
    weight = np.rint(weights[us, vs] * 1000).astype(np.int64)
    return _blossom(n, us, vs, weight, _first_use_order(keep), running)


def _blossom(n: int, us: np.ndarray, vs: np.ndarray, weight: np.ndarray, order: list[int],
             running: np.ndarray | None) -> list[tuple[int, int]]:
    """`max_weight_pairs`' matching of its graph: the edges (us[i], vs[i]), us < vs, in
    row-major order, their weights γ in thousandths and the nodes in order of first use."""
    # Edmonds' blossom algorithm as rustworkx implements it (a Rust port of the networkx
    # one this used before, ~50x faster; issue #16). Nodes enter in the order networkx put
    # them, by first edge, so that equal-weight choices mostly fall the same way.
    # Edge weights are γ in thousandths, rounded half to even (numpy's as Python's round).
    index = np.empty(n, dtype=np.int64)
    index[order] = np.arange(len(order))
    if running is not None:
        weight = weight * (n + 1)
        weight += (running[us] == running[vs]) & (running[us] >= 0)
    graph = rx.PyGraph(multigraph=False)
    graph.add_nodes_from(order)
    graph.add_edges_from(list(zip(index[us].tolist(), index[vs].tolist(), weight.tolist(),
                                  strict=True)))
    matching = rx.max_weight_matching(graph, weight_fn=int)
    return sorted((order[a], order[b]) if order[a] < order[b] else (order[b], order[a])
                  for a, b in matching)


def _edge_list_order(us: np.ndarray, vs: np.ndarray) -> list[int]:
    """The nodes of the edge list (us, vs) in order of first use (`_first_use_order`)."""
    ends = np.empty(2 * len(us), dtype=np.int64)
    ends[0::2] = us
    ends[1::2] = vs
    return list(dict.fromkeys(ends.tolist()))  # no sort: a graph has ~200 edges


def _sparse_pairs(signatures: np.ndarray, degree: int, together: Cells | None = None
                  ) -> Cells:
    """The cells (u, v), u < v, of `_sparse_mask`, in row-major order, without the n × n
    mask: each node's courted partners and the cells `together`, once each."""
    n = signatures.shape[0]
    flat = np.ascontiguousarray(signatures)
    rows = flat.view(np.dtype((np.void, flat.shape[1] * flat.itemsize))).reshape(-1)
    classes: dict[bytes, list[int]] = {}
    for node, row in enumerate(rows.tolist()):
        classes.setdefault(row, []).append(node)
    nodes = np.arange(n)
    offsets = nodes[:, None] + np.arange(degree)[None, :]
    courted = np.concatenate([np.array(members)[offsets % len(members)]
                              for members in classes.values()], axis=1)
    us = np.repeat(nodes, courted.shape[1])
    vs = courted.reshape(-1)
    low, high = np.minimum(us, vs), np.maximum(us, vs)
    cells = (low * n + high)[low != high]
    if together is not None:
        cells = np.concatenate([cells, together[0] * n + together[1]])
    cells = np.unique(cells)
    return cells // n, cells % n


def _by_size(groups: list[list[int]]) -> list[tuple[np.ndarray, np.ndarray]]:
    """Groups of each size: their indices in `groups` and their members, (n, size)."""
    by_size: dict[int, list[int]] = {}
    for node, group in enumerate(groups):
        by_size.setdefault(len(group), []).append(node)
    return [(np.array(nodes), np.array([groups[i] for i in nodes]))
            for nodes in by_size.values()]


def _signatures(bucket: Bucket, groups: list[list[int]]) -> np.ndarray:
    """Per group: its share of busy time on each resource, rounded to tenths."""
    totals = np.empty((len(groups), bucket.stages.shape[1]))
    for nodes, members in _by_size(groups):  # a group's rows summed in order, as one by one
        totals[nodes] = bucket.stages[members].sum(axis=1)
    shares = totals / np.maximum(totals.sum(axis=1, keepdims=True), 1e-12)
    return np.round(shares * 10).astype(np.int64)


class MatchingMemo:
    """A bucket's matched pairs (with their weights) by everything that decides them.

    Blossom is most of a Muri round's cost, and consecutive rounds often match the same
    jobs: a bucket whose selected jobs did not change while another bucket's did, or the
    same groups again in the next matching round. The key holds the bucket's believed
    stages, solo times, groupability, stage counts and current groups, so a hit returns
    exactly what recomputing would. Blossom's graph (edges, weights, node order) depends
    on which groups run only through the edges between nodes running together that a
    sparse graph adds (Blossom's ties depend on every running group): it is remembered by
    the key without the groups but with those edges (`_Graph`), as a regroup right after
    one that started new groups matches the same jobs again (over 40 % of matchings on
    muri_trace2, a third on Philly), and such a matching is answered without Blossom when
    its running pairs are provably Blossom's answer (`_kept_running_pairs`). At most
    `size` entries of each are kept (all are dropped when full, as a run's rounds move on
    and rarely come back).
    """

    def __init__(self, size: int = 1024) -> None:
        self._size = size
        self._pairs: dict[tuple, list[tuple[int, int, float]]] = {}
        # Blossom's graphs, by the key without running groups but their sparse edges
        self._graphs: dict[tuple, _Graph] = {}
        self.periods = MergePeriods()

    def pairs(self, bucket: Bucket, groups: list[list[int]], config: GroupingConfig
              ) -> list[tuple[int, int, float]]:
        """`max_weight_pairs` over `bucket`'s `groups`, each pair with its edge weight."""
        base = bucket.memo_key
        if base is None:
            base = bucket.memo_key = (
                (bucket.stages.shape, bucket.stages.tobytes(), bucket.solo.tobytes(),
                 tuple(bucket.groupable), tuple(bucket.stage_counts or ())),
                None if bucket.running_group is None else tuple(bucket.running_group))
        weighed = (base[0], tuple(map(tuple, groups)), config)
        key = (weighed, base[1])
        found = self._pairs.get(key)
        if found is None:
            running = _running_groups(bucket, groups)
            together = None  # the cells of nodes running together, in a sparse graph
            graph_key: tuple = weighed
            if running is not None and len(groups) > config.exact_limit:
                together = _running_cells(running)
                graph_key = (weighed, together[0].tobytes(), together[1].tobytes())
            graph = self._graphs.get(graph_key)
            if graph is None:
                graph = self._graph(bucket, groups, config, together)
                if len(self._graphs) >= self._size:
                    self._graphs.clear()
                self._graphs[graph_key] = graph
            if graph.best is not None and running is not None:
                kept = _kept_running_pairs(graph, running)
                if kept is not None:
                    found = [(u, v, graph.weight_of(u, v)) for u, v in kept]
            if found is None:
                if not len(graph.us):
                    found = []
                else:
                    found = [(u, v, graph.weight_of(u, v)) for u, v in _blossom(
                        len(groups), graph.us, graph.vs, graph.weight, graph.order, running)]
                if graph.weighs:
                    graph.best = graph.weight_sum(found)
            if len(self._pairs) >= self._size:
                self._pairs.clear()
            self._pairs[key] = found
        return found

    def _graph(self, bucket: Bucket, groups: list[list[int]], config: GroupingConfig,
               together: Cells | None = None) -> _Graph:
        """Blossom's graph over `groups`: its edges as `max_weight_pairs` builds them, from
        the types' matrix (`_typed_edge_weights`). Above the exact limit only the sparse
        mask's cells (with the cells `together` of nodes running in one group) are read, so
        no n × n matrix is built (buckets reach ~1,000 groups on Philly with models);
        signatures are the types' too."""
        n = len(groups)
        _, firsts, of, table = _typed_edge_weights(bucket, groups, config, self.periods,
                                                   dense=False)
        if n > config.exact_limit:
            us, vs = _sparse_pairs(_signatures(bucket, firsts)[of], config.sparse_degree,
                                   together)
        else:
            us, vs = np.nonzero(_above_diagonal(n)) if n >= 2 else (np.zeros(0, np.intp),) * 2
        values = table[of[us], of[vs]]
        edges = values > 0
        us, vs, values = us[edges], vs[edges], values[edges]
        # Whether every edge weighs in Blossom's graph (`_kept_running_pairs` needs it):
        # every positive weight is a cell of the types' matrix.
        positive = table[table > 0]
        weighs = not len(positive) or positive.min() * 1000 > 0.5
        return _Graph(table, of, us, vs, values, weighs)


class _Graph:
    """A matching's graph, remembered for the rounds that match the same groups again:
    its edges (row-major, u < v), their γ and γ in thousandths, the nodes in order of
    first use, the types' matrix, and the best matching weight once one is matched."""

    __slots__ = ("table", "of", "us", "vs", "weight", "order", "weighs", "best", "_types")

    def __init__(self, table: np.ndarray, of: np.ndarray, us: np.ndarray, vs: np.ndarray,
                 values: np.ndarray, weighs: bool) -> None:
        self.table = table
        self.of = of
        self.us = us
        self.vs = vs
        self.weight = np.rint(values * 1000).astype(np.int64)
        self.order = _edge_list_order(us, vs) if len(us) else []
        self.weighs = weighs
        self.best: int | None = None
        self._types: list[int] = of.tolist()  # a list's item costs less than an array's

    def weight_of(self, u: int, v: int) -> float:
        """γ of edge (u, v), u < v: the cell `_edge_weights` holds."""
        types = self._types
        return self.table.item(types[u], types[v])

    def weight_sum(self, pairs: list) -> int:
        """The summed weights (γ in thousandths, rounded half to even as `weight` is) of
        edges `pairs`, each (u, v, ...) with u < v."""
        cell, types = self.table.item, self._types
        return sum(round(cell(types[pair[0]], types[pair[1]]) * 1000) for pair in pairs)

    def edges(self, pairs: list[tuple[int, int]]) -> list[tuple[int, int]]:
        """Those of `pairs` (u < v) that are edges of the graph."""
        n = len(self.of)
        cells = self.us * n + self.vs  # sorted: the edges are in row-major order
        wanted = np.array([u * n + v for u, v in pairs], dtype=np.int64)
        at = np.minimum(np.searchsorted(cells, wanted), len(cells) - 1)
        return [pair for pair, found in zip(pairs, (cells[at] == wanted).tolist(),
                                            strict=True) if found]


def _kept_running_pairs(graph: _Graph, running: np.ndarray) -> list[tuple[int, int]] | None:
    """The pairs of nodes that run together, when `max_weight_pairs` must return exactly
    them; None when that is not proven.

    Blossom maximises (n + 1) × weight + (running pairs matched), each weight an integer
    (γ in thousandths) and at most n / 2 running pairs, so its matching has the graph's
    best weight (`graph.best`, from an earlier matching of the same graph) and, among
    those, the most running pairs. If the graph's edges between nodes running together
    are disjoint pairs R whose weights sum to the best, then R is that matching and the
    only one: a matching of the best weight holds at most |R| running pairs, all |R| only
    if it contains R, and any edge beyond R would make it heavier (every edge weighs at
    least 1: `graph.weighs`). So whatever Blossom's tie-breaks, it returns R (issue #22:
    a regroup that kept its pairs running and matches the same groups again). Nodes of a
    running group of three or more are left out of R: if the pairs reach the best, no
    edge joins two nodes outside them (it would add to the best), so such a group holds
    no edge of the graph."""
    pairs = [(nodes[0], nodes[1]) for nodes in _running_members(running) if len(nodes) == 2]
    if not pairs or not len(graph.us):
        return None
    pairs = graph.edges(pairs)
    if not pairs or graph.weight_sum(pairs) != graph.best:
        return None
    return pairs  # by first node: sorted


def _matched_pairs(bucket: Bucket, groups: list[list[int]], config: GroupingConfig
                   ) -> list[tuple[int, int, float]]:
    """Blossom's pairs over `_edge_weights`."""
    return _pairs_by_weight(bucket, groups, config, _edge_weights(bucket, groups, config))


def _pairs_by_weight(bucket: Bucket, groups: list[list[int]], config: GroupingConfig,
                     weights: np.ndarray, signatures: np.ndarray | None = None
                     ) -> list[tuple[int, int, float]]:
    """Blossom's pairs over the edge `weights` of `groups`, each with its weight
    (`signatures`: `_signatures` of `groups`, computed here if None and needed)."""
    if signatures is None and len(groups) > config.exact_limit:
        signatures = _signatures(bucket, groups)
    running = _running_groups(bucket, groups)
    return [(u, v, weights[u, v])
            for u, v in max_weight_pairs(weights, config, signatures, running)]


def _running_groups(bucket: Bucket, groups: list[list[int]]) -> np.ndarray | None:
    """Per group, the running group all its members run in (-1: none, or not all in one)."""
    if bucket.running_group is None:
        return None
    running = bucket.running_group
    return np.array([running[g[0]] if len(g) == 1 or all(running[i] == running[g[0]] for i in g)
                     else -1 for g in groups])


def _priority_pairs(bucket: Bucket, groups: list[list[int]], config: GroupingConfig
                    ) -> list[tuple[int, int, float]]:
    """Muri §6.4's "without Blossom": groups paired in descending priority, each with the
    next one that still fits k jobs, all of weight 0 so merges follow priority alone."""
    order = sorted(range(len(groups)), key=lambda g: min(bucket.ranks[j] for j in groups[g]))
    pairs = []
    waiting: int | None = None
    for g in order:
        if waiting is None:
            waiting = g
        elif len(groups[waiting]) + len(groups[g]) <= config.max_group:
            pairs.append((waiting, g, 0.0))
            waiting = None
        else:
            waiting = g
    return pairs


def multi_round_grouping(
    buckets: Sequence[Bucket], config: GroupingConfig, *, excess_gpus: float = math.inf,
    memo: MatchingMemo | None = None, initial: Sequence[list[list[int]]] | None = None,
) -> list[list[list[int]]]:
    """Algorithm 1 over every bucket; per bucket, groups as lists of job indices.

    Each round's matched pairs merge in order of falling γ (ties: the better-ranked job
    first) while `excess_gpus` — the GPUs the selected jobs want beyond the cluster — is
    positive; `math.inf` merges every matched pair, as Algorithm 1 reads. `memo` keeps
    matchings from earlier calls. `initial` (per bucket, every job in exactly one group,
    each group in rank order) starts the rounds from groups already formed instead of
    singletons: they may grow but never split (Muri's sticky regrouping).
    """
    if initial is None:
        groups = [[[i] for i in range(len(b.solo))] for b in buckets]
    else:
        groups = [[list(g) for g in bucket_groups] for bucket_groups in initial]
    rounds = max(1, math.ceil(math.log2(max(config.max_group, 2))))
    for _ in range(rounds):
        if excess_gpus <= 0:
            break
        candidates: list[tuple[float, int, int, int, int]] = []
        for index, bucket in enumerate(buckets):
            nodes = groups[index]
            if len(nodes) < 2:
                continue
            if not config.blossom:
                pairs = _priority_pairs(bucket, nodes, config)
            elif memo is not None:
                pairs = memo.pairs(bucket, nodes, config)
            else:
                pairs = _matched_pairs(bucket, nodes, config)
            ranks = bucket.ranks
            for u, v, weight in pairs:  # a group's best-ranked member comes first
                best_rank = min(ranks[nodes[u][0]], ranks[nodes[v][0]])
                candidates.append((-weight, best_rank, index, u, v))
        if not candidates:
            break
        candidates.sort()
        merged: dict[int, set[int]] = {}
        for _, _, index, u, v in candidates:
            if excess_gpus <= 0:
                break
            nodes = groups[index]
            nodes[u] = sorted(nodes[u] + nodes[v], key=lambda j: buckets[index].ranks[j])
            merged.setdefault(index, set()).add(v)
            excess_gpus -= buckets[index].gpus
        for index, gone in merged.items():
            groups[index] = [g for i, g in enumerate(groups[index]) if i not in gone]
    return groups
