"""ssf and gssf keep their waiting jobs in sorted runs; they decide exactly as their definition.

Rule (SIA §4.1, `simulation.policies.sia.ssf`): every round, each queue's waiting jobs (ssf;
every waiting job for gssf) sorted by service = GPUs × duration, ties in queue order, are
started greedily, skipping a job that does not fit. `ServiceRuns` keeps the order across
rounds in one sorted run per (queue, GPUs, GPU type, GPUs per worker) and drops a run at its
first job that does not place (issue #16). On contended random multi-queue workloads with
ties of service and submit time, every job's start and end must equal the definition's.
"""

from __future__ import annotations

import random
from collections.abc import Iterator

import pytest

from simulation.composition import create_policy
from simulation.decisions import Decision
from simulation.engine import Simulation
from simulation.model import ClusterSpec, GpuType, JobSpec, PoolKind, PoolSpec, Workload
from simulation.policies.sia.common import idle_gpus, place_shared, queue_quotas
from simulation.view import ClusterView, JobView


def _service(job: JobView) -> float:
    return job.spec.num_gpus * job.spec.duration


def by_definition(name: str):
    """`name` deciding each round from a fresh stable sort of the waiting jobs by service."""
    policy = create_policy(name, {})

    def ssf(view: ClusterView) -> Iterator[Decision]:
        quotas = queue_quotas(view.spec)
        usage = policy.queue_usage(view, quotas)
        for queue, pending in usage.pending.items():
            for job in sorted(pending, key=_service):
                need = job.spec.num_gpus
                if usage.allocation[queue] + need > quotas[queue] and usage.allocation[queue]:
                    continue
                launch = place_shared(view, job, quotas)
                if launch is not None:
                    usage.allocation[queue] += need
                    yield launch

    def gssf(view: ClusterView) -> Iterator[Decision]:
        quotas = queue_quotas(view.spec)
        idle = idle_gpus(view, quotas)
        for job in sorted(view.queue.values(), key=_service):
            if job.spec.num_gpus <= idle and (launch := place_shared(view, job, quotas)):
                idle -= job.spec.num_gpus
                yield launch

    policy.schedule = ssf if name == "ssf" else gssf
    return policy


def quota_cluster() -> ClusterSpec:
    """Three queues; q3's quota is smaller than its servers (lent GPUs stay free under ssf)."""
    return ClusterSpec("q3", {"V100": GpuType("V100")}, (
        PoolSpec("q1", PoolKind.QUOTA, "V100", 2, 8),
        PoolSpec("q2", PoolKind.QUOTA, "V100", 1, 4),
        PoolSpec("q3", PoolKind.QUOTA, "V100", 2, 4, quota_gpus=6),
    ))


def random_jobs(seed: int, count: int = 120) -> list[JobSpec]:
    rng = random.Random(seed)
    jobs, t = [], 0.0
    for i in range(count):
        t += rng.choice((0.0, 0.0, rng.uniform(1, 600)))  # bursts of equal submit times
        gpus = rng.choice((1, 1, 2, 2, 4, 8, 12))
        per_worker = rng.choice((1, 2)) if gpus % 2 == 0 else 1
        duration = rng.choice((600.0, 1200.0, 300.0 * 8 / gpus, rng.uniform(60, 9000)))
        queue = rng.choice(("q1", "q2", "q3"))
        jobs.append(JobSpec(f"j{i}", round(t, 1), gpus, duration, pool=queue,
                            gpus_per_worker=per_worker, preemptible=False))
    return jobs


def outcome(policy, jobs: list[JobSpec]) -> list[tuple[str, float, float]]:
    result = Simulation(quota_cluster(), Workload(tuple(jobs)), policy).run()
    return [(r["job_id"], r["start"], r["end"]) for r in result.jobs]


@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize("name", ["ssf", "gssf"])
def test_service_runs_decide_as_a_fresh_sort(name: str, seed: int) -> None:
    jobs = random_jobs(seed)
    fast = outcome(create_policy(name, {}), jobs)
    assert fast == outcome(by_definition(name), jobs)
    waited = sum(start > next(j.submit_time for j in jobs if j.job_id == job_id)
                 for job_id, start, _ in fast)
    assert waited > len(jobs) // 3  # contended: most rounds choose among many waiting jobs


def test_a_run_that_does_not_place_skips_to_the_next_run() -> None:
    """Two free GPUs, one on each server of q1: a 2-GPU job of 2-GPU workers cannot place,
    but a 2-GPU job of 1-GPU workers behind it (longer service) can, across the servers."""
    cluster = ClusterSpec("two", {"V100": GpuType("V100")},
                          (PoolSpec("q1", PoolKind.QUOTA, "V100", 2, 4),))
    jobs = [JobSpec("a", 0.0, 3, 1000.0, pool="q1", preemptible=False),
            JobSpec("b", 0.0, 3, 1000.0, pool="q1", preemptible=False),
            JobSpec("pair", 1.0, 2, 100.0, pool="q1", gpus_per_worker=2, preemptible=False),
            JobSpec("split", 1.0, 2, 200.0, pool="q1", preemptible=False)]
    for name in ("ssf", "gssf"):
        rows = {r["job_id"]: r for r in Simulation(cluster, Workload(tuple(jobs)),
                                                    create_policy(name, {})).run().jobs}
        assert rows["split"]["start"] == 1.0, name
        assert rows["pair"]["start"] == 1000.0, name  # waits for a whole server's GPUs


@pytest.mark.parametrize("name", ["ssf", "gssf", "fcfs-pools", "maxmin"])
def test_event_driven_queue_policies_run_only_at_events(name: str) -> None:
    """Their decisions change only when a job arrives or finishes: four jobs give at most
    eight rounds (a 60 s tick over their 2,000 s would add about 30)."""
    jobs = [JobSpec(f"j{i}", 10.0 * i, 4, 1000.0, pool="q1", preemptible=False)
            for i in range(4)]
    result = Simulation(quota_cluster(), Workload(tuple(jobs)), create_policy(name, {})).run()
    assert result.summary["finished"] == 4
    assert result.summary["schedule_rounds"] <= 8
