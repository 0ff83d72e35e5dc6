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

    Weights and capacity are divided by their common divisor first, and capacity is capped
    at the total weight that could be used. Each group's best-value row is the elementwise
    `np.maximum` of the previous row shifted by each item's weight; the rows are kept and
    the choices recovered while walking back (the first item that reaches a row's value, so
    equal values keep the smaller item). Above `ROW_CELL_LIMIT` cells, per-group choice
    indexes (int16) are kept instead of the float rows, to bound memory.
    """
    result = {g.job_id: 0 for g in groups}
    useful = [g for g in groups if g.weights]
    if capacity <= 0 or not useful:
        return result
    capacity = min(capacity, sum(max(g.weights) for g in useful))
    unit = math.gcd(*(w for g in useful for w in g.weights))
    cap = capacity // unit
    items = [[(i, w // unit, v) for i, (w, v) in enumerate(zip(g.weights, g.values,
                                                                strict=True), 1)
              if w // unit <= cap] for g in useful]
    if (len(useful) + 1) * (cap + 1) <= ROW_CELL_LIMIT:
        chosen = _solve_by_rows(items, cap)
    else:
        chosen = _solve_by_choices(items, cap)
    for group, item in zip(useful, chosen, strict=True):
        result[group.job_id] = item
    return result


ROW_CELL_LIMIT = 1 << 23  # 64 MiB of float64 rows

_Items = list[list[tuple[int, int, float]]]  # per group: (item index, weight in units, value)


def _solve_by_rows(items: _Items, cap: int) -> list[int]:
    best = np.empty((len(items) + 1, cap + 1))
    best[0] = 0.0
    for k, group in enumerate(items):
        prev, row = best[k], best[k + 1]
        row[:] = prev
        for _, w, value in group:
            np.maximum(row[w:], prev[: cap + 1 - w] + value, out=row[w:])
    chosen = [0] * len(items)
    c = cap
    for k in range(len(items) - 1, -1, -1):
        target = best[k + 1, c]
        if best[k, c] == target:
            continue
        for i, w, value in items[k]:
            if w <= c and best[k, c - w] + value == target:
                chosen[k] = i
                c -= w
                break
    return chosen


def _solve_by_choices(items: _Items, cap: int) -> list[int]:
    dp = np.zeros(cap + 1)
    choices = np.zeros((len(items), cap + 1), dtype=np.int16)
    weights: list[dict[int, int]] = []
    for k, group in enumerate(items):
        row = dp.copy()
        for i, w, value in group:
            candidate = dp[: cap + 1 - w] + value
            better = candidate > row[w:]
            np.copyto(row[w:], candidate, where=better)
            choices[k, w:][better] = i
        weights.append({i: w for i, w, _ in group})
        dp = row
    chosen = [0] * len(items)
    c = cap
    for k in range(len(items) - 1, -1, -1):
        chosen[k] = int(choices[k, c])
        if chosen[k]:
            c -= weights[k][chosen[k]]
    return chosen
