"""The fast paths of the preemptive priority policies decide exactly as their definition.

Rule: SRTF, SRSF and Tiresias run "the highest-priority jobs that fit" — every round,
`preemptive_schedule` over all running and queued jobs freshly sorted by the policy's key
(`simulation.policies.ordering`). The engine takes shortcuts for speed (issue #22): the
greedy walk over runs of running jobs by sums of GPUs (`_preempt_in_priority_order`); for
Tiresias the running jobs kept sorted across rounds (`RunningOrder`), re-keyed only when
their GPUs change or they near a threshold; for SRTF and SRSF only the running jobs whose
key may have reached the queue's best re-keyed (`ShrinkingRunningOrder`); queued jobs
merged from one run per size (`FittingWalk`). On contended random workloads, with
non-preemptible jobs and thresholds low enough that demotions happen all the time, every
job's start, end and preemption count must equal the definition's.
"""

from __future__ import annotations

import random
from collections.abc import Iterator

import pytest

from simulation.decisions import Decision
from simulation.engine import Simulation
from simulation.model import JobSpec
from simulation.policies.base import create_policy
from simulation.policies.ordering import preemptive_schedule
from simulation.view import ClusterView
from tests.simulation.builders import training_cluster, workload


def random_jobs(seed: int, count: int = 80) -> list[JobSpec]:
    rng = random.Random(seed)
    jobs, t = [], 0.0
    for i in range(count):
        t += rng.choice((0.0, 0.0, rng.uniform(1, 400)))  # bursts of equal submit times
        jobs.append(JobSpec(
            f"j{i}", round(t, 1), rng.choice((1, 1, 1, 2, 4, 8)),
            rng.choice((60.0, 300.0, rng.uniform(10, 5000))),
            preemptible=rng.random() > 0.1,
        ))
    return jobs


def by_definition(policy_name: str, **params: object):
    """`policy_name` deciding every round by a fresh sort and `preemptive_schedule`."""
    policy = create_policy(policy_name, params)
    key = policy.priority_key if policy_name == "tiresias" else None

    def schedule(view: ClusterView) -> Iterator[Decision]:
        if not view.queue:
            return iter(())
        order = (lambda j: key(view, j)) if key else _srt_key(policy_name)
        jobs = [*view.running.values(), *view.queue.values()]
        ranked = sorted(jobs, key=lambda j: (order(j), j.trace_index))
        return preemptive_schedule(view, ranked)

    policy.schedule = schedule
    if policy_name == "tiresias":
        policy._running = None  # demotion wakeups from a scan of every running job
    return policy


def _srt_key(policy_name: str):
    from simulation.policies.srtf import srsf_key, srtf_key

    return srtf_key if policy_name == "srtf" else srsf_key


def outcome(policy, jobs: list[JobSpec]) -> list[tuple[str, float, float, int]]:
    result = Simulation(training_cluster(4, 8), workload(*jobs), policy).run()
    return [(r["job_id"], r["start"], r["end"], r["preemptions"]) for r in result.jobs]


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize(("name", "params"), [
    ("srtf", {}), ("srsf", {}), ("tiresias", {"thresholds": "200,2000"}),
])
def test_fast_priority_scheduling_equals_the_definition(name, params, seed):
    jobs = random_jobs(seed)
    fast = outcome(create_policy(name, params), jobs)
    assert fast == outcome(by_definition(name, **params), jobs)
    assert sum(row[3] for row in fast) > 0  # the case is contended: preemptions happen
