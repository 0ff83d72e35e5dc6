"""Phase two of Aryl's allocation (§5.2, Algorithm 2 `AllocateElastic`): a multiple-choice
knapsack over the flexible demand of elastic jobs, solved by dynamic programming in numpy.

Each elastic job is a group; item `w` (1 ≤ w ≤ w_max − w_min) gives it `w` flexible workers.
An item's weight is the GPUs those workers take, `w · D_j`, and its value the running time it
saves. With linear scaling that is Algorithm 2's `T_max · w / (w + w_min)`; here it is
`T_base · (1 − rate(base) / rate(base + w))` so non-linear curves, imperfect scaling and GPU
speed enter through the rate. At most one item per group is taken.

Where the paper is ambiguous: Algorithm 2 line 17 writes the weight as `(w + w_min) · D_j`,
but §5.2 sizes the knapsack as the GPUs *left after phase one*, where the base demand is
already allocated; counting the base again would charge it twice, so the weight is the
flexible GPUs only. Equal values keep the smaller item (fewer scaling operations).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True, slots=True)
class FlexibleGroup:
    """One elastic job's choices: `weights[i]` GPUs save `values[i]` seconds (item i+1)."""

    job_id: str
    weights: tuple[int, ...]
    values: tuple[float, ...]


def flexible_group(
    job_id: str, base_seconds: float, rates: Sequence[float], gpus_per_worker: int
) -> FlexibleGroup:
    """Items for a job whose base allocation runs `base_seconds`; `rates[w]` is the relative
    throughput with `w` flexible workers (`rates[0]` the base)."""
    base_rate = rates[0]
    weights = tuple(w * gpus_per_worker for w in range(1, len(rates)))
    values = tuple(
        base_seconds * (1.0 - base_rate / r) if r > 0 else -math.inf for r in rates[1:]
    )
    return FlexibleGroup(job_id, weights, values)


def solve_multiple_choice_knapsack(
    groups: Sequence[FlexibleGroup], capacity: int
) -> dict[str, int]:
    """The item index per job (0 = no flexible workers) maximising the total value.

    O(groups · items · capacity) array operations; weights and capacity are divided by their
    common divisor first, and capacity is capped at the total weight that could be used.
    """
    result = {g.job_id: 0 for g in groups}
    useful = [g for g in groups if g.weights]
    if capacity <= 0 or not useful:
        return result
    capacity = min(capacity, sum(max(g.weights) for g in useful))
    unit = math.gcd(*(w for g in useful for w in g.weights))
    cap = capacity // unit
    dp = np.zeros(cap + 1)
    choices = np.zeros((len(useful), cap + 1), dtype=np.int16)
    for k, group in enumerate(useful):
        candidates = np.full((len(group.weights) + 1, cap + 1), -np.inf)
        candidates[0] = dp
        for i, (weight, value) in enumerate(zip(group.weights, group.values, strict=True), 1):
            w = weight // unit
            if w <= cap:
                candidates[i, w:] = dp[: cap + 1 - w] + value
        choices[k] = np.argmax(candidates, axis=0)
        dp = candidates[choices[k], np.arange(cap + 1)]
    c = cap
    for k in range(len(useful) - 1, -1, -1):
        item = int(choices[k, c])
        if item:
            result[useful[k].job_id] = item
            c -= useful[k].weights[item - 1] // unit
    return result
