"""SIA §5.5 in whole runs: locality cells (SIA, fcfs-pools, HiveD*) and partial preemption.

Every case uses perfect predictions, so each start time below follows from Figures 7-8 and
the cell rules by hand; the comments derive them.
"""

from __future__ import annotations

import pytest

from simulation.composition import create_policy
from simulation.decisions import Launch
from simulation.engine import Simulation
from simulation.errors import InputError
from simulation.model import ClusterSpec, GpuType, JobSpec, PoolKind, PoolSpec, Workload
from simulation.policies.sia.sia import discounted_reservations
from simulation.reproductions import sia as sia_reproduction
from simulation.runner import run_simulation
from simulation.scenarios import load_named_scenarios
from simulation.workloads.sia import SiaSetup, generate_sia_workload, sia_cluster

MIN = 60.0
PERFECT = {"arrivals": "perfect", "durations": "perfect"}
CELLS = {"locality": "cells"}


def queues(n: int, gpus: int = 8) -> ClusterSpec:
    """`n` quota queues q1..qn of one `gpus`-GPU server each (servers q1-1, q2-1, ...)."""
    pools = tuple(PoolSpec(f"q{i}", PoolKind.QUOTA, "V100", 1, gpus) for i in range(1, n + 1))
    return ClusterSpec("test", {"V100": GpuType("V100")}, pools)


def job(job_id: str, queue: str, submit_min: float, gpus: int, minutes: float,
        preemptible: bool = False) -> JobSpec:
    return JobSpec(job_id, submit_min * MIN, gpus, minutes * MIN, pool=queue,
                   preemptible=preemptible)


def starts(cluster: ClusterSpec, jobs: list[JobSpec], policy: str, **params) -> dict[str, dict]:
    workload = Workload(tuple(sorted(jobs, key=lambda j: j.submit_time)))
    result = run_simulation(cluster, workload, policy, settings=params)
    return {row["job_id"]: row for row in result.jobs}


def test_lent_jobs_never_start_in_buddy_cells_of_dedicated_ones() -> None:
    """q1 runs a 1-GPU job `a` on its server; every free cell there is a buddy of a's cell
    ([1], [2,4), [4,8)). q2 is full with `b` and lends nothing, so q2's short `c` (1 GPU)
    can only borrow q1's GPUs. Without cells SIA lends one at once (q1 expects nothing:
    reservation 0); with cells c waits for b (600 min) and starts there as a dedicated job.
    HiveD* has no such rule and lends the buddy at once."""
    jobs = [job("a", "q1", 0, 1, 600), job("b", "q2", 0, 8, 600), job("c", "q2", 1, 1, 10)]
    assert starts(queues(2), jobs, "sia", **PERFECT)["c"]["start"] == 1 * MIN
    assert starts(queues(2), jobs, "sia", **PERFECT, **CELLS)["c"]["start"] == 600 * MIN
    assert starts(queues(2), jobs, "hived")["c"]["start"] == 1 * MIN


def test_a_reservation_that_does_not_fit_in_cells_stops_all_lending() -> None:
    """Three queues. q1 is full (`a`), q3 runs a 1-GPU dedicated job `c3` (its server is
    closed to lending), and q2's server holds q1's lent `l` (715 min, lent at 0: q2 expects
    nothing within 720 min then). At 700 min q1's short `p` (1 GPU) arrives and q2 expects
    `x` (8 GPUs) at 730 min: q2 reserves 8 GPUs. Counting GPUs, 14 are idle and 6 usable, so
    p is lent at once. With cells the reservation is one 8-GPU cell and none is free, so
    nothing is lent. From 715 min (l done) q2's server is reserved whole for x, which runs
    from 730 to 790 min; only then is p lent a cell."""
    jobs = [job("a", "q1", 0, 8, 2000), job("c3", "q3", 0, 1, 2000), job("l", "q1", 0, 1, 715),
            job("p", "q1", 700, 1, 10), job("x", "q2", 730, 8, 60)]
    plain = starts(queues(3), jobs, "sia", **PERFECT)
    assert plain["l"]["start"] == 0 and plain["p"]["start"] == 700 * MIN
    cells = starts(queues(3), jobs, "sia", **PERFECT, **CELLS)
    assert cells["l"]["start"] == 0
    assert cells["p"]["start"] == 790 * MIN
    assert cells["x"]["start"] == 730 * MIN


@pytest.mark.parametrize("locality", ["none", "cells"])
def test_partial_preemption_lends_against_preemptible_jobs_and_evicts_them(locality) -> None:
    """q2 fills its server with `b` and lends q3's idle server to `o1` (preemptible, 700
    min) at 0; q1 expects `x` (8 GPUs) at 100 min, so it keeps its 8 GPUs reserved. At 1 min
    `o2` (preemptible, 700 min) asks: the reservation of 8 shrinks by o1's 8 recoverable
    GPUs (cost 0: 8 * (1 - 0 / w)) to 0, so o2 is lent q1's server. When x arrives it would
    wait for o2 (701 min); instead o2 (the least run, or with cells the cell freeing fewest
    GPUs, q1's own) is preempted and x starts at once."""
    jobs = [job("b", "q2", 0, 8, 1000), job("o1", "q2", 0, 8, 700, preemptible=True),
            job("o2", "q2", 1, 8, 700, preemptible=True), job("x", "q1", 100, 8, 60)]
    settings = {**PERFECT, "locality": locality}
    without = starts(queues(3), jobs, "sia", **settings)
    assert without["o2"]["start"] > 100 * MIN and without["x"]["start"] == 100 * MIN
    rows = starts(queues(3), jobs, "sia", **settings, preemption=True, preemption_cost=0.0)
    assert rows["o1"]["start"] == 0 and rows["o1"]["preemptions"] == 0
    assert rows["o2"]["start"] == 1 * MIN and rows["o2"]["preemptions"] == 1
    assert rows["x"]["start"] == 100 * MIN


def test_discounted_reservations_by_hand() -> None:
    """R = 6 + 2; 4 recoverable GPUs at a cost of 300 s in a 3600-s window are worth
    4 * (1 - 300/3600) = 11/3 GPUs, so R shrinks to 8 - 11/3 = 13/3, each queue by 13/24."""
    got = discounted_reservations({"q1": 6.0, "q2": 2.0}, 4, 300.0, 3600.0)
    assert got == pytest.approx({"q1": 3.25, "q2": 13 / 12})
    assert discounted_reservations({"q1": 6.0}, 4, 3600.0, 3600.0) == {"q1": 6.0}
    assert discounted_reservations({"q1": 3.0, "q2": 1.0}, 8, 0.0, 300.0) == {"q1": 0.0,
                                                                             "q2": 0.0}


def test_hived_star_waits_and_hived_preempts() -> None:
    """HiveD* lends q1's idle server to q2's `o` at once; q1's `x` then waits for o (500 min).
    With preemption (HiveD proper) o is evicted and x starts on arrival."""
    jobs = [job("b", "q2", 0, 8, 1000), job("o", "q2", 0, 8, 500, preemptible=True),
            job("x", "q1", 30, 4, 60)]
    star = starts(queues(2), jobs, "hived")
    assert star["o"]["start"] == 0 and star["x"]["start"] == 500 * MIN
    hived = starts(queues(2), jobs, "hived", preemption=True)
    assert hived["x"]["start"] == 30 * MIN and hived["o"]["preemptions"] == 1


@pytest.mark.parametrize(("policy", "params"), [
    ("sia", {**PERFECT, **CELLS}), ("sia", {"arrivals": "random", **CELLS}),
    ("fcfs-pools", CELLS), ("hived", {})])
def test_every_job_runs_on_one_server_in_a_cell_the_engine_agrees_with(policy, params) -> None:
    """On SIA's own setup (1/2/4/8-GPU jobs, 8-GPU servers) every launch is one power-of-two
    slot, and after every round the policy's held cells add up to each server's used GPUs."""
    setup = SiaSetup(queues=3, days=1.0)
    policy_obj = create_policy(policy, params)
    launches: list[Launch] = []
    schedule = policy_obj.schedule

    def checked(view):
        for decision in schedule(view):
            if isinstance(decision, Launch):
                launches.append(decision)
            yield decision
        held: dict[str, int] = {}
        for owner in policy_obj._cells.cells.owners():
            cell = policy_obj._cells.cells.cell_of(owner)
            held[cell.server] = held.get(cell.server, 0) + cell.size
        for pool in view.spec.pools:
            for server in view.pool_servers(pool.name):
                assert held.get(server, 0) == view.servers[server].used

    policy_obj.schedule = checked
    Simulation(sia_cluster(setup), generate_sia_workload(setup, seed=2), policy_obj).run()
    assert launches
    assert all(len(d.placement) == 1 and d.placement[0].gpus in (1, 2, 4, 8) for d in launches)


def test_locality_cells_refuses_what_cells_cannot_describe() -> None:
    three = Workload((job("odd", "q1", 0, 3, 10),))
    for policy in ("sia", "fcfs-pools"):
        with pytest.raises(InputError, match="power of two GPUs") as refused:
            run_simulation(queues(2), three, policy, settings=CELLS)
        assert refused.value.field == "locality"
    with pytest.raises(InputError, match="power of two GPUs"):
        run_simulation(queues(2, gpus=6), Workload((job("j", "q1", 0, 2, 10),)), "hived")
    # off by default: the same job runs without cells
    assert run_simulation(queues(2), three, "sia").jobs[0]["start"] == 0


def test_locality_scenario_is_figure_16_on_the_headline_jobs() -> None:
    named = load_named_scenarios()
    scenario, headline = named["sia-locality"], named["sia-headline"]
    assert scenario.cluster == headline.cluster and scenario.workload == headline.workload
    assert scenario.policies == [
        {"policy": "fcfs-pools", "params": CELLS},
        {"policy": "sia", "params": {"history_days": sia_reproduction.HISTORY_DAYS, **CELLS}},
        {"policy": "hived", "params": {}}]


def test_preemptible_share_marks_a_seeded_share_and_changes_nothing_else() -> None:
    workload = generate_sia_workload(SiaSetup(queues=2, days=1.0), seed=1)
    half = sia_reproduction.preemptible_share(workload, 0.5, seed=0)
    marked = sum(job.preemptible for job in half.jobs)
    assert not any(job.preemptible for job in workload.jobs)
    assert abs(marked / len(half.jobs) - 0.5) < 0.15  # 3 sd of 100 coin flips
    assert half == sia_reproduction.preemptible_share(workload, 0.5, seed=0)
    assert [j.job_id for j in half.jobs] == [j.job_id for j in workload.jobs]
