"""Themis' fast rounds decide exactly as its definition.

Definition (`simulation.policies.themis`): every round ranks the jobs by
`finish_time_fairness`, worst first, ties by submission then job id. When leases end, their
GPUs and the free ones go to the ⌈(1-f)·M⌉ worst of the M jobs that wait or whose leases
end, greedily; then the jobs whose leases end keep what they hold, in the same order; then
waiting jobs that fit take the rest in seeded random order (shuffled from job id order).
Between lease ends the waiting jobs take free GPUs in ρ order (`launch_in_order`). The
policy computes ρ from per-job values kept across rounds (`Waiting`), in numpy or, for few
waiting jobs, in Python, finds an auction's bidders by a partition (`least_fair`), skips an
auction it can prove changes nothing (`unopposed`) and finds the bidders' winners one by one
(`first_winners`) or, when few bidders fit, by a Python sort. On
contended random workloads with equal submit times and durations (so ρ ties), non-preemptible
jobs and short leases, every job's start, end and preemption count must equal the
definition's.
"""

from __future__ import annotations

import math
import random
from collections.abc import Iterator
from dataclasses import replace

import numpy as np
import pytest

from simulation.composition import create_policy
from simulation.decisions import Decision, Preempt
from simulation.engine import EngineConfig, Simulation
from simulation.model import ClusterSpec, JobSpec, PoolKind, PoolSpec
from simulation.policies import themis
from simulation.policies.ordering import launch_in_order, place_requested, training_capacity
from simulation.policies.themis import (
    INDEPENDENT,
    LEFT,
    Themis,
    Waiting,
    auction_participants,
    finish_time_fairness,
    least_fair,
    worst_first_in_pieces,
)
from simulation.view import ClusterView, JobView
from tests.simulation.builders import GPU_TYPES, training_cluster, workload


class ThemisByDefinition(Themis):
    """Themis as its docstring defines it: a fresh Python sort of every job each round."""

    def ranked(self, view: ClusterView, jobs: list[JobView]) -> list[JobView]:
        contenders = len(view.running) + len(view.queue)
        capacity = training_capacity(view)
        scored = [(finish_time_fairness(view, job, contenders, capacity), job) for job in jobs]
        scored.sort(key=lambda pair: (-pair[0], pair[1].submit_time, pair[1].job_id))
        return [job for _, job in scored]

    def schedule(self, view: ClusterView) -> Iterator[Decision]:
        if not view.queue:
            return
        ending = self._leases.ending(view)
        if ending:
            yield from self._granting(view, self.auction(view, ending))
        if view.queue and any(view.free_gpus(pool.name) for pool in view.spec.pools):
            yield from self._granting(view, launch_in_order(
                view, self.ranked(view, [*view.queue.values()]), blocking=False))

    def auction(self, view: ClusterView, ending: list[str]) -> Iterator[Decision]:
        offered = []
        for job_id in ending:
            job = view.running[job_id]
            if job.spec.preemptible:
                offered.append(job)
            else:
                self._leases.grant(job_id, view.now)
        if not offered:
            return
        ranked = self.ranked(view, [*view.queue.values(), *offered])
        bidders = auction_participants(len(ranked), self.fairness_fraction)
        budget = (sum(view.free_gpus(pool.name) for pool in view.spec.pools)
                  + sum(job.gpus for job in offered))
        won = []

        def walk(jobs: list[JobView]) -> None:
            nonlocal budget
            for job in jobs:
                if budget <= 0:
                    return
                need = job.gpus if job in offered else job.spec.num_gpus
                if need <= budget:
                    budget -= need
                    won.append(job)

        walk(ranked[:bidders])
        walk([job for job in ranked[bidders:] if job in offered])
        fitting = sorted((job for job in ranked[bidders:]
                          if job not in offered and job.spec.num_gpus <= budget),
                         key=lambda job: job.job_id)
        if budget > 0:
            self.rng.shuffle(fitting)
            walk(fitting)
        for job in offered:
            if job in won:
                self._leases.grant(job.job_id, view.now)
            else:
                self._leases.revoke(job.job_id)
                yield Preempt(job.job_id)
        for job in won:
            if job not in offered:
                launch = place_requested(view, job)
                if launch is not None:
                    yield launch


def random_jobs(seed: int, count: int = 70, gap: float = 300.0) -> list[JobSpec]:
    rng = random.Random(seed)
    jobs, t = [], 0.0
    for i in range(count):
        t += rng.choice((0.0, 0.0, rng.uniform(1, gap)))  # bursts of equal submit times
        jobs.append(JobSpec(
            f"j{rng.randrange(1000):03d}-{i}", round(t, 1), rng.choice((1, 1, 1, 2, 4, 8)),
            rng.choice((60.0, 300.0, 300.0, rng.uniform(10, 4000))),  # equal ρ happen
            preemptible=rng.random() > 0.1,
        ))
    return jobs


def outcome(policy: Themis, jobs: list[JobSpec], restart: float,
            cluster: ClusterSpec | None = None) -> list[tuple]:
    result = Simulation(cluster or training_cluster(3, 8), workload(*jobs), policy,
                        config=EngineConfig(restart_overhead=restart)).run()
    return [(r["job_id"], r["start"], r["end"], r["preemptions"]) for r in result.jobs]


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize(("lease", "fraction", "restart", "gap"), [
    (100.0, 0.2, 63.0, 300.0), (250.0, 0.7, 0.0, 300.0), (60.0, 0.0, 20.0, 300.0),
    (60.0, 0.3, 63.0, 5.0),  # a long queue: walks often end before the leftover
])
@pytest.mark.parametrize("few", [0, 10, 1000])  # waiting jobs, bidders ranked in Python
def test_themis_equals_its_definition(seed, lease, fraction, restart, gap, few, monkeypatch):
    monkeypatch.setattr(themis, "_FEW_WAITING", few)
    monkeypatch.setattr(themis, "_FEW_BIDDERS", few // 4)
    params = {"lease": lease, "fairness_fraction": fraction}
    jobs = random_jobs(seed, 120 if gap < 100 else 70, gap)
    fast = outcome(create_policy("themis", params, seed=seed), jobs, restart)
    reference = ThemisByDefinition(rng=random.Random(f"themis:{seed}"), **params)
    assert fast == outcome(reference, jobs, restart)
    assert sum(row[3] for row in fast) > 0  # contended: lease ends preempt


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("few", [0, 1000])
def test_themis_equals_its_definition_with_instant_jobs(seed, few, monkeypatch):
    # A job predicted to take no time has T_independent 0 and ρ = inf while it waits (0/0
    # at its submission, as lease ends at multiples of 60 s meet arrivals): the rows' ρ must
    # then come from the guarded division, not the plain one.
    monkeypatch.setattr(themis, "_FEW_WAITING", few)
    monkeypatch.setattr(themis, "_FEW_BIDDERS", few)
    rng = random.Random(seed)
    jobs = [replace(job, submit_time=60.0 * round(job.submit_time / 60.0),
                    duration=0.0 if rng.random() < 0.2 else job.duration)
            for job in random_jobs(seed, 120, 30.0)]
    params = {"lease": 60.0, "fairness_fraction": 0.3}
    fast = outcome(create_policy("themis", params, seed=seed), jobs, 20.0)
    reference = ThemisByDefinition(rng=random.Random(f"themis:{seed}"), **params)
    assert fast == outcome(reference, jobs, 20.0)
    assert sum(row[3] for row in fast) > 0


@pytest.mark.parametrize("seed", range(6))
def test_themis_equals_its_definition_across_gpu_speeds(seed):
    # Two V100 servers and one T4 server (a quarter of the speed): a job relaunched on the
    # other kind trains at another rate, so a holder's ρ must be rated where it runs now
    # (the policy keeps each running job's rate until its placement changes).
    mixed = ClusterSpec("mixed", GPU_TYPES, (
        PoolSpec("fast", PoolKind.TRAINING, "V100", 2, 8),
        PoolSpec("slow", PoolKind.TRAINING, "T4", 1, 8)))
    params = {"lease": 100.0, "fairness_fraction": 0.3}
    jobs = random_jobs(seed, 90, 60.0)
    fast = outcome(create_policy("themis", params, seed=seed), jobs, 20.0, mixed)
    reference = ThemisByDefinition(rng=random.Random(f"themis:{seed}"), **params)
    assert fast == outcome(reference, jobs, 20.0, mixed)
    assert sum(row[3] for row in fast) > 0


@pytest.mark.parametrize("seed", range(8))
def test_themis_equals_its_definition_when_placements_fail(seed):
    # Jobs of 4 and 8 GPUs whose workers take 4 GPUs each on 4-GPU servers: GPUs free on
    # two half-used servers fit such a job by count, not by placement, so an auction's winner
    # may not launch and leave its GPUs to the pass between auctions; a round whose auction
    # changed nothing may skip that pass only because nothing fits the free GPUs.
    jobs = [replace(job, gpus_per_worker=4, min_workers=0, max_workers=0)
            if job.num_gpus >= 4 else job
            for job in random_jobs(seed, 90, 60.0)]
    params = {"lease": 100.0, "fairness_fraction": 0.3}
    cluster = training_cluster(6, 4)
    fast = outcome(create_policy("themis", params, seed=seed), jobs, 20.0, cluster)
    reference = ThemisByDefinition(rng=random.Random(f"themis:{seed}"), **params)
    assert fast == outcome(reference, jobs, 20.0, cluster)
    assert sum(row[3] for row in fast) > 0


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize(("lease", "fraction", "restart", "gap"), [
    (100.0, 0.2, 63.0, 300.0), (60.0, 0.8, 20.0, 5.0),
])
@pytest.mark.parametrize("few", [0, 1000])
def test_themis_rounds_equal_their_definition(seed, lease, fraction, restart, gap, few,
                                              monkeypatch):
    # `leases=rounds`: every running job's lease ends at each k·lease, the same auction.
    monkeypatch.setattr(themis, "_FEW_WAITING", few)
    monkeypatch.setattr(themis, "_FEW_BIDDERS", few)
    params = {"lease": lease, "fairness_fraction": fraction, "leases": "rounds"}
    jobs = random_jobs(seed, 120 if gap < 100 else 70, gap)
    fast = outcome(create_policy("themis", params, seed=seed), jobs, restart)
    reference = ThemisByDefinition(rng=random.Random(f"themis:{seed}"), **params)
    assert fast == outcome(reference, jobs, restart)
    assert sum(row[3] for row in fast) > 0


def test_waiting_rows_follow_the_logs():
    """The kept rows name exactly the jobs waiting after every round, a requeued job's
    remaining seconds are those it left with (stale rows would keep the old), and every row's
    T_independent is at the cluster's share now (arrivals and completions change it)."""
    jobs = random_jobs(3)
    policy = create_policy("themis", {"lease": 100.0})
    sim = Simulation(training_cluster(3, 8), workload(*jobs), policy)
    checked = 0
    schedule = policy.schedule

    def checking(view: ClusterView) -> Iterator[Decision]:
        nonlocal checked
        yield from schedule(view)
        waiting: Waiting = policy._waiting
        waiting.sync(view)
        rows = waiting.rows
        assert sorted(rows.ids) == sorted(view.queue.keys())
        share = view.available_gpus() / max(1, len(view.running) + len(view.queue))
        for i, job in enumerate(rows.views):
            rate = view.throughput.rate(job.spec.model, job.spec.num_gpus, job.spec.num_gpus, 1)
            assert rows.column(LEFT)[i] == job.remaining_work / rate
            assert rows.column(INDEPENDENT)[i] == job.spec.duration * max(
                1.0, job.spec.num_gpus / share)
        assert sorted(waiting.jobs) == sorted(view.queue.keys())
        for job_id, (_, _, _, left, job) in waiting.jobs.items():
            assert left == rows.column(LEFT)[rows.ids.index(job_id)] and job.job_id == job_id
        checked += 1

    policy.schedule = checking
    sim.run()
    assert checked > 50


def tied_rows(seed: int) -> tuple[random.Random, np.ndarray, np.ndarray, list[str], list[int]]:
    """Random rows whose ρ often tie (0.5, 1, inf), their submit times and ids, and the
    order `sorted` gives by (-ρ, submit time, job id); the generator goes on drawing."""
    rng = random.Random(seed)
    count = rng.randrange(1, 60)
    rho = np.array([rng.choice((0.5, 1.0, math.inf, rng.random())) for _ in range(count)])
    submit = np.array([float(rng.randrange(4)) for _ in range(count)])
    ids = [f"j{rng.randrange(100)}-{i}" for i in range(count)]
    return rng, rho, submit, ids, sorted(range(count), key=lambda i: (-rho[i], submit[i], ids[i]))


@pytest.mark.parametrize("seed", range(20))
def test_pieces_make_the_sorted_order(seed):
    """The pieces of `worst_first_in_pieces`, joined, are the order `sorted` gives by
    (-ρ, submit time, job id), whatever the first piece's size and however many ρ tie."""
    rng, rho, submit, ids, expected = tied_rows(seed)
    pieces = list(worst_first_in_pieces(rho, submit, ids.__getitem__, rng.randrange(1, 20)))
    assert [i for piece in pieces for i in piece.tolist()] == expected


@pytest.mark.parametrize("seed", range(20))
def test_least_fair_are_the_first_in_order(seed):
    """`least_fair` marks exactly the first `count` rows of the order `sorted` gives by
    (-ρ, submit time, job id), however many ρ tie across the cut."""
    rng, rho, submit, ids, order = tied_rows(seed)
    count = len(ids)
    for bidders in (1, rng.randrange(1, count + 1), count, count + 3):
        chosen = least_fair(rho, bidders, lambda i: (submit[i], ids[i]))
        assert sorted(np.flatnonzero(chosen).tolist()) == sorted(order[:bidders])
