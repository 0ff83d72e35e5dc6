"""SCF reclaim: return the on-loan servers hosting the fewest jobs first (Aryl §7.2 baseline).

Ties go to cluster order. Every job on a chosen server is preempted, wherever else it runs.
"""

from __future__ import annotations

import random

from simulation.decisions import ReclaimPlan
from simulation.reclaim import on_loan_servers, preempt_all_on, register_reclaim
from simulation.view import ClusterView


@register_reclaim("scf")
def select_reclaim_scf(view: ClusterView, count: int, rng: random.Random) -> ReclaimPlan:
    """The servers hosting the fewest jobs first, every job on them preempted (Aryl §7.2's
    SCF baseline)."""
    servers = on_loan_servers(view)
    servers.sort(key=lambda sid: len(view.servers[sid].jobs))
    return preempt_all_on(view, servers[:count])
