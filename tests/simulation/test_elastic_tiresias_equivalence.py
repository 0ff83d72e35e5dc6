"""Elastic-Tiresias' indexed compaction decides exactly as EDL Algorithm 1's definition.

Definition (`simulation.policies.elastic_tiresias`): when more than N jobs wait, every waiting
job in (queue, submit time) order, ties in queue order, gets a compaction plan from the state
as it is then, and starts if it has one. The policy skips jobs of a class (GPUs, GPUs per
worker, GPU type) already found without a plan in the same state, and when no job is elastic
it takes each launch from the heads of per-class heaps (`WaitingIndex`) with plans read from
the free-GPU index (`free_compaction_plan`). On contended random workloads (bursts of equal
submit times, so requeued jobs tie, low thresholds, so jobs move between queues), on two pools
of different server sizes and GPU types, every job's start, end, preemptions and migrations
must equal the definition's.
"""

from __future__ import annotations

import random
from collections.abc import Iterator

import pytest

from simulation.composition import create_policy
from simulation.decisions import Decision, Launch, Preempt, Slot
from simulation.engine import Simulation
from simulation.model import ClusterSpec, GpuType, JobSpec, PoolKind, PoolSpec
from simulation.policies.edl_expansion import expand, return_expansion
from simulation.policies.elastic_tiresias import ElasticTiresias, free_compaction_plan, open_pools
from simulation.policies.tiresias import Tiresias
from simulation.view import ClusterView
from tests.simulation.builders import training_cluster, workload
from tests.simulation.hand_states import Queued, Running, hand_state, one_round

TWO_POOLS = ClusterSpec("two", {"V100": GpuType("V100"), "T4": GpuType("T4", 0.5)}, (
    PoolSpec("small", PoolKind.TRAINING, "V100", 3, 4),
    PoolSpec("big", PoolKind.TRAINING, "V100", 2, 8),
    PoolSpec("t4", PoolKind.TRAINING, "T4", 2, 4),
))


class ElasticTiresiasByDefinition(ElasticTiresias):
    """Algorithm 1 as defined: a compaction plan tried for every waiting job, every round."""

    def schedule(self, view: ClusterView) -> Iterator[Decision]:
        if view.queue:
            yield from return_expansion(view)
        if len(view.queue) > self.compaction_threshold:
            waiting = sorted(view.queue.values(),
                             key=lambda j: (self.queue_index(view, j), j.submit_time))
            for job in waiting:
                plan = self._compaction_plan(view, job)
                if plan is not None:
                    yield from plan[0]
                    yield Launch(job.job_id, plan[1])
        yield from Tiresias.schedule(self, view)
        if not view.queue:
            yield from expand(view)


def random_jobs(seed: int, *, elastic: bool, typed: bool, count: int = 70) -> list[JobSpec]:
    rng = random.Random(seed)
    jobs, t = [], 0.0
    for i in range(count):
        t += rng.choice((0.0, 0.0, rng.uniform(1, 300)))  # bursts of equal submit times
        gpus = rng.choice((1, 1, 1, 2, 4, 8))
        per_worker = 2 if gpus > 1 and rng.random() < 0.2 else 1
        workers = gpus // per_worker
        stretch = elastic and rng.random() < 0.4
        jobs.append(JobSpec(
            f"j{i}", round(t, 1), gpus, rng.choice((60.0, 300.0, rng.uniform(10, 4000))),
            gpus_per_worker=per_worker,
            min_workers=max(1, workers // 2) if stretch else 0,
            max_workers=2 * workers if stretch else 0,
            gpu_type=rng.choice((None, None, "V100", "T4")) if typed else None,
            preemptible=rng.random() > 0.1,
        ))
    return jobs


def outcome(policy: ElasticTiresias, jobs: list[JobSpec], cluster: ClusterSpec) -> list[tuple]:
    result = Simulation(cluster, workload(*jobs), policy).run()
    return [(r["job_id"], r["start"], r["end"], r["preemptions"], r["migrations"])
            for r in result.jobs]


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize(("elastic", "params"), [
    (False, {"thresholds": "200,2000", "compaction_threshold": 2}),
    (False, {"thresholds": "100,1000", "compaction_threshold": 0}),
    (True, {"thresholds": "200,2000", "compaction_threshold": 1}),
    (False, {"thresholds": "200,2000", "compaction_threshold": 1, "promote_knob": 2.0}),
])
@pytest.mark.parametrize("typed", [False, True])
def test_elastic_tiresias_equals_its_definition(seed, elastic, params, typed):
    jobs = random_jobs(seed, elastic=elastic, typed=typed)
    cluster = TWO_POOLS if typed else training_cluster(3, 8)
    fast = outcome(create_policy("elastic-tiresias", params), jobs, cluster)
    assert fast == outcome(ElasticTiresiasByDefinition(**params), jobs, cluster)
    assert sum(row[3] for row in fast) > 0  # contended: Tiresias preempts


def test_a_queue_out_of_submit_order_is_met():
    """The random cases above do reach the state where ties are broken by queue order, not
    trace order (a requeued job behind a later-indexed one with its submit time)."""
    seen = []
    policy = create_policy("elastic-tiresias", {"thresholds": "200,2000",
                                                "compaction_threshold": 0})
    schedule = policy.schedule

    def watching(view: ClusterView) -> Iterator[Decision]:
        seen.append(view.queue_in_submit_order())
        return schedule(view)

    policy.schedule = watching
    for seed in range(6):
        Simulation(training_cluster(3, 8), workload(*random_jobs(seed, elastic=False,
                                                                  typed=False)), policy).run()
    assert False in seen and True in seen


def test_free_plan_takes_the_servers_with_most_free_gpus_ties_by_id():
    """Hand-derived: free GPUs training-1: 3, training-2: 5, training-3: 5, training-4: 2.
    A 6-GPU job may use ⌈6/8⌉ = 1 server: none has 6, no plan. A 10-GPU job may use 2: the
    two with 5 (ids in order) give 5 + 5. With workers of 2 GPUs, 5 free is 4 usable: a
    10-GPU job gets 4 + 4 < 10, no plan; a 4-GPU job gets 4 on the first server with 5."""
    busy = [Running(JobSpec(f"r{i}", 0.0, gpus, 9000.0), [(f"training-{i}", gpus)])
            for i, gpus in ((1, 5), (2, 3), (3, 3), (4, 6))]
    sim = hand_state(training_cluster(4, 8), create_policy("elastic-tiresias"), running=busy)
    pools = open_pools(sim.view, None)
    assert free_compaction_plan(sim.view, 6, 1, pools) is None
    assert free_compaction_plan(sim.view, 10, 1, pools) == (
        Slot("training-2", 5), Slot("training-3", 5))
    assert free_compaction_plan(sim.view, 10, 2, pools) is None
    assert free_compaction_plan(sim.view, 4, 2, pools) == (Slot("training-2", 4),)
    job = JobSpec("x", 0.0, 10, 100.0)
    sim = hand_state(training_cluster(4, 8), create_policy("elastic-tiresias"), running=busy,
                     queued=[Queued(job)])
    assert sim.policy._compaction_plan(sim.view, sim.view.job("x")) == (
        [], (Slot("training-2", 5), Slot("training-3", 5)))


def test_waiting_index_follows_a_requeued_job_to_its_new_queue():
    """A job that ran into queue 1 and was requeued is ordered by its new queue, not the one
    its first entry was made with: of two waiting 1-GPU jobs, the one in queue 0 starts.

    Round 1: one free GPU (R holds 3 and cannot be preempted), A (submitted first) and B wait,
    both queue 0: compaction starts A. Then A is preempted having attained 300 GPU·s (> 200:
    queue 1), which frees the GPU: the index must now put B (queue 0) before A."""
    policy = create_policy("elastic-tiresias", {"thresholds": "200,2000",
                                                "compaction_threshold": 0})
    blocker = Running(JobSpec("R", 0.0, 3, 9000.0, preemptible=False), [("training-1", 3)])
    sim = hand_state(training_cluster(1, 4), policy, now=10.0, running=[blocker],
                     queued=[Queued(JobSpec("A", 1.0, 1, 900.0)),
                             Queued(JobSpec("B", 2.0, 1, 900.0))])
    assert [d.job_id for d in one_round(sim) if isinstance(d, Launch)] == ["A"]
    sim.clock.now = 310.0
    sim.apply(Preempt("A"))
    assert sim.state.jobs["A"].attained_gpu_seconds == pytest.approx(300.0)
    assert [d.job_id for d in one_round(sim) if isinstance(d, Launch)] == ["B"]
