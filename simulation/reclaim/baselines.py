"""Reclaim baselines of Aryl §7.1 and Table 1: Random, and the GPU-fraction cost.

- `random`: the on-loan servers to return are drawn uniformly (the run's reclaim RNG); every
  job on them is preempted, as in the paper's baseline (no scale-in of flexible workers).
- `gpu-fraction`: Aryl's loop with Table 1's third-column cost (the sum of each job's share
  of its GPUs on the server), which the paper rejects because it ignores the job count.

SCF lives in `scf.py`. Table 12's Static, SSF and LSF are named but never defined in the
paper, so they are not offered.
"""

from __future__ import annotations

import random

from simulation.decisions import ReclaimPlan
from simulation.reclaim import on_loan_servers, preempt_all_on, register_reclaim
from simulation.reclaim.aryl import hosted_jobs, select_reclaim_servers
from simulation.view import ClusterView


@register_reclaim("random")
def select_reclaim_random(view: ClusterView, count: int, rng: random.Random) -> ReclaimPlan:
    """Servers drawn at random, every job on them preempted (Aryl §7.1's Random)."""
    return preempt_all_on(view, rng.sample(on_loan_servers(view), count))


@register_reclaim("gpu-fraction")
def select_reclaim_gpu_fraction(view: ClusterView, count: int, rng: random.Random) -> ReclaimPlan:
    """Aryl's loop with Table 1's GPU-fraction cost, which ignores how many jobs a
    server holds (Aryl §7.1)."""
    servers = on_loan_servers(view)
    return select_reclaim_servers(servers, hosted_jobs(view, servers), count, cost="gpu").as_plan()
