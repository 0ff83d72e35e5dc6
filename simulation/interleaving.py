"""Multi-resource interleaving (Muri, SIGCOMM'22 §4): profiles, efficiency γ and grouping.

A DL job iterates over stages that each load one resource (storage IO, CPU, GPU, network).
Jobs interleaved on the same GPUs shift their stages so that, in every phase of a group
iteration, each job uses a different resource; a barrier ends each phase (§4.1, Figure 4).

**Group iteration time** (Eq. 3): with job i shifted by s_i phases,
``T = Σ_j max_i t_i[(j + s_i) mod k]`` over k resource types. Eq. 3 writes s_i = i for the
jobs in some order; we enumerate every assignment of *distinct* shifts (job 0 pinned at 0:
rotating all shifts only relabels the phases), which contains each permutation Eq. 3 names
and, for fewer jobs than resource types, the gapped orderings too (two jobs can sit two
phases apart, as in Muri's simulator for two jobs over four types). Figure 6's best ordering
is the minimum over that enumeration. **Efficiency** (Eq. 4):
``γ = 1 − (1/k) Σ_j (T − Σ_i t_i[j]) / T``, i.e. busy resource-time over k·T.

**Profiles.** A trace's own per-stage times (``JobSpec.profile``; Muri's traces give three:
data loading and preprocessing, GPU, network) win. Otherwise the model table below gives
four stages, derived from Table 1 (stage percentages measured on 16 V100s) times the model's
iteration time at 16 GPUs from Muri's traces (the ``iteration_time`` column of
``muri_trace*.csv`` rows with ``num_gpu = 16``):

- ShuffleNet, VGG19, GPT-2, A2C: Table 1's own percentages.
- ResNet18 uses ShuffleNet's (both storage-bound CNNs at batch 128, Table 3), VGG16 uses
  VGG19's (network-bound, batch 16), Bert uses GPT-2's (GPU-bound, batch 4) and DQN uses
  A2C's (CPU-bound RL): Table 3 pairs each with the same bottleneck, Table 1 omits them.
- A single-GPU job has no gradient synchronisation, so its network stage is 0.

Profiles with fewer stages than the k resource types are padded with zero stages (a type
the profile does not list is one the job leaves idle) so three-stage trace profiles can form
groups of up to four jobs, as Muri's evaluation does. Jobs with neither a profile nor a
known model are not grouped: they run alone.

**Profiling noise** (§6.4, Fig. 14): the scheduler sees each stage multiplied by a factor
drawn uniformly from [1 − n, 1 + n]; the rates it sets use the true profile with the
ordering chosen from the noisy one (the executor runs the plan it was given).

**Multi-round grouping** (Algorithm 1): nodes start as single jobs; each round builds a graph
whose edge weights are the γ of merging two nodes, finds a maximum weighted matching with
networkx's Blossom implementation, and merges matched pairs; ⌈log2 k⌉ rounds give groups of
up to k jobs. Only nodes of one bucket (same GPU count) are matched (§4.2). An edge exists
only when the merged group would not exceed `max_group` jobs and interleaving beats running
the members one after another: group time times the interleaving overhead of its size
(`GroupingConfig.overhead`) < sum of solo iteration times, as Muri's simulator unpacks such
groups (its default `autopack`, Rivendile/Muri@4e69a78 `simulator/run_sim.py:89,1097-1103`).
The edge weight is γ without the overhead, as that simulator weighs edges
(`simulator/matching.py:167-168` returns before applying it). Blossom is
O(V³) in networkx's pure Python: up to `exact_limit` nodes per bucket the graph is complete
(exact); above it each node keeps edges to `sparse_degree` nodes of every class of similar jobs
(resource shares rounded to tenths), chosen by rotation so that identical jobs do not all
court the same partners.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from itertools import permutations

import networkx as nx
import numpy as np

from simulation.model import JobSpec, ResourceProfile

RESOURCE_TYPES = ("storage", "cpu", "gpu", "network")


@dataclass(frozen=True, slots=True)
class ModelProfile:
    """Share of one iteration per resource type (Table 1) and the iteration time (s)."""

    iteration_seconds: float
    shares: tuple[float, float, float, float]
    derivation: str

    def stages(self, num_gpus: int) -> tuple[float, ...]:
        storage, cpu, gpu, network = (s * self.iteration_seconds for s in self.shares)
        return (storage, cpu, gpu, network if num_gpus > 1 else 0.0)


_SHUFFLENET = (0.60, 0.18, 0.06, 0.02)
_VGG19 = (0.24, 0.04, 0.26, 0.41)
_GPT2 = (0.0006, 0.0003, 0.85, 0.28)
_A2C = (0.0, 0.91, 0.03, 0.002)

MODEL_PROFILES: dict[str, ModelProfile] = {
    "shufflenet": ModelProfile(1.006, _SHUFFLENET, "Table 1"),
    "vgg19": ModelProfile(0.302, _VGG19, "Table 1"),
    "gpt2": ModelProfile(0.491, _GPT2, "Table 1"),
    "a2c": ModelProfile(0.567, _A2C, "Table 1"),
    "resnet18": ModelProfile(1.055, _SHUFFLENET, "ShuffleNet's shares (storage-bound CNN)"),
    "vgg16": ModelProfile(0.332, _VGG19, "VGG19's shares (network-bound CNN)"),
    "bert": ModelProfile(0.244, _GPT2, "GPT-2's shares (GPU-bound NLP)"),
    "dqn": ModelProfile(0.525, _A2C, "A2C's shares (CPU-bound RL)"),
}
_ALIASES = {"shufflenet_v2_x1_0": "shufflenet", "gpt-2": "gpt2", "resnet-18": "resnet18"}


def model_profile(model: str, num_gpus: int) -> ResourceProfile | None:
    """The table profile of `model` at `num_gpus` GPUs, or None for an unknown model."""
    name = model.strip().lower()
    entry = MODEL_PROFILES.get(_ALIASES.get(name, name))
    return ResourceProfile(entry.stages(num_gpus)) if entry is not None else None


def job_profile(spec: JobSpec) -> ResourceProfile | None:
    """The trace's profile when it has one, else the model table's."""
    return spec.profile if spec.profile is not None else model_profile(spec.model, spec.num_gpus)


def solo_iteration_seconds(spec: JobSpec, profile: ResourceProfile) -> float:
    """A job's own iteration time: duration / iterations when the trace says, else the profile's."""
    if spec.iterations:
        return spec.duration / spec.iterations
    return profile.iteration_seconds


def noisy_stages(stages: Sequence[float], noise: float, rng: random.Random) -> tuple[float, ...]:
    """Stages as a profiler with relative error up to `noise` reports them (Fig. 14)."""
    if noise <= 0:
        return tuple(stages)
    return tuple(t * rng.uniform(1 - noise, 1 + noise) for t in stages)


def pad_stages(stages: Sequence[float], k: int) -> tuple[float, ...]:
    """`stages` padded with idle (zero) stages to `k` resource types."""
    if len(stages) > k:
        raise ValueError(f"profile has {len(stages)} stages, more than {k} resource types")
    return (*stages, *(0.0,) * (k - len(stages)))


def iteration_time_for_shifts(stages: Sequence[Sequence[float]], shifts: Sequence[int]) -> float:
    """Eq. 3 for a given ordering: job i runs stage (j + shifts[i]) mod k in phase j."""
    k = len(stages[0])
    return float(sum(
        max(job[(j + s) % k] for job, s in zip(stages, shifts, strict=True)) for j in range(k)
    ))


@lru_cache(maxsize=64)
def _shift_assignments(jobs: int, k: int) -> tuple[tuple[int, ...], ...]:
    """Every assignment of distinct phase shifts to `jobs` jobs, job 0 pinned at shift 0."""
    return tuple((0, *rest) for rest in permutations(range(1, k), jobs - 1))


def group_iteration_time(
    stages: Sequence[Sequence[float]], *, worst: bool = False
) -> tuple[float, tuple[int, ...]]:
    """The best (or worst) ordering's iteration time (Eq. 3) and its shifts.

    `stages` holds one equal-length stage tuple per job; a group cannot hold more jobs than
    resource types (two jobs would share a resource in some phase).
    """
    if len(stages) == 1:
        return float(sum(stages[0])), (0,)
    k = len(stages[0])
    if len(stages) > k:
        raise ValueError(f"{len(stages)} jobs cannot interleave over {k} resource types")
    pick = max if worst else min
    return pick(
        ((iteration_time_for_shifts(stages, shifts), shifts)
         for shifts in _shift_assignments(len(stages), k)),
        key=lambda pair: pair[0],
    )


def interleaving_efficiency(stages: Sequence[Sequence[float]], *, worst: bool = False) -> float:
    """γ of a group under its best (or worst) ordering (Eqs. 2 and 4)."""
    period, _ = group_iteration_time(stages, worst=worst)
    k = len(stages[0])
    busy = sum(sum(job) for job in stages)
    return busy / (k * period) if period > 0 else 0.0


# -- multi-round grouping (Algorithm 1) ------------------------------------------------------


@dataclass(slots=True)
class Bucket:
    """Jobs that may share GPUs with each other (same GPU count and constraints).

    `stages[i]` is job i's (believed, padded) stage row and `solo[i]` its own iteration
    time; `ranks[i]` its position in the priority order (lower first); `groupable[i]` is
    False for a job that must run alone.
    """

    gpus: int
    stages: np.ndarray
    solo: np.ndarray
    ranks: list[int]
    groupable: list[bool]


@dataclass(frozen=True, slots=True)
class GroupingConfig:
    max_group: int = 4
    weight_floor: float = 0.0  # an edge needs γ > floor × (jobs in merged group) / k
    # Iteration-time factor for groups of 2, 3, ... jobs (the last repeats); () = none.
    overhead: tuple[float, ...] = ()
    exact_limit: int = 64
    sparse_degree: int = 2
    worst_ordering: bool = False

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
    for shifts in _shift_assignments(p + q, k):
        ma = rolled_a[shifts[0], :, 0, :]
        for i in range(1, p):
            ma = np.maximum(ma, rolled_a[shifts[i], :, i, :])
        mb = rolled_b[shifts[p], :, 0, :]
        for i in range(1, q):
            mb = np.maximum(mb, rolled_b[shifts[p + i], :, i, :])
        period = np.maximum(ma[:, None, :], mb[None, :, :]).sum(axis=2)
        best = np.maximum(best, period) if worst else np.minimum(best, period)
    return best


def _edge_weights(
    bucket: Bucket, groups: list[list[int]], config: GroupingConfig
) -> np.ndarray:
    """γ of merging each pair of groups (Eq. 4), or 0 where the merge is not allowed."""
    n = len(groups)
    k = bucket.stages.shape[1]
    weights = np.zeros((n, n))
    sizes = np.array([len(g) for g in groups])
    busy = np.array([bucket.stages[g].sum() for g in groups])
    solo = np.array([bucket.solo[g].sum() for g in groups])
    open_ = np.array([all(bucket.groupable[i] for i in g) for g in groups])
    by_size: dict[int, list[int]] = {}
    for node, size in enumerate(sizes):
        if open_[node]:
            by_size.setdefault(int(size), []).append(node)
    for p, nodes_a in by_size.items():
        for q, nodes_b in by_size.items():
            if p > q or p + q > config.max_group or p + q > k:
                continue
            a = np.stack([bucket.stages[groups[i]] for i in nodes_a])
            b = np.stack([bucket.stages[groups[i]] for i in nodes_b])
            period = _merge_periods(a, b, config.worst_ordering)
            ia, ib = np.ix_(nodes_a, nodes_b)
            gamma = (busy[ia] + busy[ib]) / (k * np.maximum(period, 1e-12))
            useful = period * config.overhead_for(p + q) < solo[ia] + solo[ib]
            useful &= gamma > config.weight_floor * (p + q) / k
            block = np.where(useful, gamma, 0.0)
            weights[ia, ib] = np.maximum(weights[ia, ib], block)
            tb, ta = np.ix_(nodes_b, nodes_a)
            weights[tb, ta] = np.maximum(weights[tb, ta], block.T)
    np.fill_diagonal(weights, 0.0)
    return weights


def _sparse_mask(signatures: np.ndarray, degree: int) -> np.ndarray:
    """Each node's edges to `degree` nodes of every signature class, chosen by rotation.

    Nodes with the same signature interleave alike, so a few partners per class keep the
    choices Blossom needs while spreading them: node u courts class members u, u+1, ...
    (mod the class size) rather than every node courting the same few.
    """
    n = signatures.shape[0]
    _, classes = np.unique(signatures, axis=0, return_inverse=True)
    classes = classes.reshape(-1)
    mask = np.zeros((n, n), dtype=bool)
    offsets = np.arange(n)[:, None] + np.arange(degree)[None, :]
    for cls in range(int(classes.max()) + 1):
        members = np.flatnonzero(classes == cls)
        cols = members[offsets % len(members)]
        np.put_along_axis(mask, cols, True, axis=1)
    return mask | mask.T


def max_weight_pairs(
    weights: np.ndarray, config: GroupingConfig, signatures: np.ndarray | None = None
) -> list[tuple[int, int]]:
    """Blossom maximum weighted matching over the positive entries of `weights`.

    Above `config.exact_limit` nodes only edges kept by `_sparse_mask` over `signatures`
    (rows that say how a node uses each resource) enter the graph.
    """
    n = weights.shape[0]
    if n < 2:
        return []
    keep = weights > 0
    if n > config.exact_limit and signatures is not None:
        keep &= _sparse_mask(signatures, config.sparse_degree)
    us, vs = np.nonzero(np.triu(keep, 1))
    if len(us) == 0:
        return []
    graph = nx.Graph()
    graph.add_weighted_edges_from(
        (int(u), int(v), int(round(weights[u, v] * 1000))) for u, v in zip(us, vs, strict=True)
    )
    matching = nx.max_weight_matching(graph)
    return sorted((min(u, v), max(u, v)) for u, v in matching)


def _signatures(bucket: Bucket, groups: list[list[int]]) -> np.ndarray:
    """Per group: its share of busy time on each resource, rounded to tenths."""
    totals = np.stack([bucket.stages[g].sum(axis=0) for g in groups])
    shares = totals / np.maximum(totals.sum(axis=1, keepdims=True), 1e-12)
    return np.round(shares * 10).astype(np.int64)


def multi_round_grouping(
    buckets: Sequence[Bucket], config: GroupingConfig, *, excess_gpus: float = math.inf
) -> list[list[list[int]]]:
    """Algorithm 1 over every bucket; per bucket, groups as lists of job indices.

    Each round's matched pairs merge in order of falling γ (ties: the better-ranked job
    first) while `excess_gpus` — the GPUs the selected jobs want beyond the cluster — is
    positive; `math.inf` merges every matched pair, as Algorithm 1 reads.
    """
    groups = [[[i] for i in range(len(b.solo))] for b in buckets]
    rounds = max(1, math.ceil(math.log2(max(config.max_group, 2))))
    for _ in range(rounds):
        if excess_gpus <= 0:
            break
        candidates: list[tuple[float, int, int, int, int]] = []
        for index, bucket in enumerate(buckets):
            nodes = groups[index]
            if len(nodes) < 2:
                continue
            weights = _edge_weights(bucket, nodes, config)
            for u, v in max_weight_pairs(weights, config, _signatures(bucket, nodes)):
                best_rank = min(bucket.ranks[j] for j in (*nodes[u], *nodes[v]))
                candidates.append((-weights[u, v], best_rank, index, u, v))
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
