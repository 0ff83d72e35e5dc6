"""Capacity answers (issue #19): per policy, the cheapest cluster that meets every target.

A planner asks "how many servers (of which pools), how much inference capacity lent, or
which value of a policy parameter does each scheduler need so that my workload meets its
targets, and at what cost?". This module answers it without Django: the search is driven
by an injected evaluator, so the CLI simulates in-process (`python -m simulation size`) and
the planner sends the very same points to Celery workers as ordinary runs.

- A **target** is a summary metric (`queuing.p95`, `jct.mean`, `makespan`, ...) or
  `slowed_share` (the share of jobs whose JCT is longer than under the baseline policy on the
  cluster as given, same seed; `simulation.metrics.speedups`), and an upper bound.
- The **rule**: a size meets the targets when, for every target, the mean over the seeds is
  at most the bound, and every job of every seed finished. Each mean is reported with its
  95 % Student-t interval (`simulation.metrics.mean_ci95`); the interval is shown, not
  tested, so with few seeds an answer can sit inside noise: read the interval.
- An **axis** maps an integer *level* to a cluster and settings, capacity growing with the
  level: servers of one or more pools (the first named pool has `level` servers, the others
  keep their ratio to it), servers the inference pool may lend (`loan_headroom` = inference
  servers - level), or an integer policy parameter (larger assumed to help).
- The **assumption** is that meeting the targets is monotone in the level. The search
  brackets the answer: it evaluates `points_per_round` levels per policy per round (so that
  many evaluations run in parallel), keeps the largest level seen missing a target (L) and
  the smallest level seen meeting them above which every evaluated level also met them (F),
  and narrows (L, F) until F = L + 1. A level meeting the targets below one missing them is
  reported as non-monotone; the answer stays F, which its own evaluation shows meeting every
  target, never a level that missed one.
- **Cost** per hour of a level: every pool's servers x (GPUs x the GPU type's price per
  GPU-hour + the per-server fixed price). On the loan axis the inference pool is charged for
  the servers it may lend only (the capacity training may take from it).

Modules: `targets` (targets, how values read, costs), `axis` (level -> cluster and settings),
`search` (the bracketing search, the rule and the answer). The names below are the API.
"""

from simulation.capacity.axis import AXIS_LOAN, AXIS_PARAM, AXIS_SERVERS, Axis, pools_resize
from simulation.capacity.search import (
    Evaluator,
    Measurement,
    Outcome,
    Point,
    PolicyState,
    Problem,
    answer,
    evaluate_point,
    level_meets,
    measure,
    plan,
    policy_state,
    saving,
    search,
)
from simulation.capacity.targets import (
    RATIO_METRICS,
    RULE,
    SHARE_METRICS,
    SLOWED_SHARE,
    TARGET_METRICS,
    TIME_METRICS,
    CostModel,
    Target,
    format_mean_ci,
    format_value,
    parse_pairs,
)

__all__ = [
    "AXIS_LOAN", "AXIS_PARAM", "AXIS_SERVERS", "RATIO_METRICS", "RULE", "SHARE_METRICS",
    "SLOWED_SHARE", "TARGET_METRICS", "TIME_METRICS", "Axis", "CostModel", "Evaluator",
    "Measurement", "Outcome", "Point", "PolicyState", "Problem", "Target", "answer",
    "evaluate_point", "format_mean_ci", "format_value", "level_meets", "measure", "parse_pairs",
    "plan", "policy_state", "pools_resize", "saving", "search",
]
