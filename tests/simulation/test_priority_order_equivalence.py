"""The fast paths of the preemptive priority policies decide exactly as their definition.

Rule: SRTF, SRSF and Tiresias run "the highest-priority jobs that fit" — every round,
`preemptive_schedule` over all running and queued jobs freshly sorted by the policy's key
(`simulation.policies.ordering`). The engine takes shortcuts for speed (issue #22,
`simulation.policies.priority_schedule` and the orders it reads): the greedy walk over
runs of running jobs by sums of GPUs (`_preempt_in_priority_order`); for
Tiresias the running jobs kept sorted across rounds (`RunningOrder`), re-keyed only when
their GPUs change or they near a threshold; for SRTF and SRSF every running job's remaining
work evaluated at once from its progress line (`RemainingTimeOrder`); queued jobs
merged from one run per size (`FittingWalk`). On contended random workloads, with
non-preemptible jobs and thresholds low enough that demotions happen all the time, every
job's start, end and preemption count must equal the definition's.
"""

from __future__ import annotations

import random
from collections.abc import Iterator

import pytest

from simulation.composition import create_policy
from simulation.decisions import Decision, Resize, SetShare, Slot
from simulation.engine import EngineConfig, Simulation
from simulation.model import JobSpec
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


def resizing_once(policy):
    """`policy`, after growing the elastic job `e` from 2 to 4 GPUs on its server once."""
    plain = policy.schedule
    grown = []

    def schedule(view: ClusterView) -> Iterator[Decision]:
        job = view.running.get("e")
        if job is not None and not grown:
            server = job.placement[0].server
            if view.servers[server].free >= 2:
                grown.append(server)
                yield Resize("e", (Slot(server, 4),))
        yield from plain(view)

    policy.schedule = schedule
    return policy


@pytest.mark.parametrize("name", ["srtf", "srsf"])
def test_a_job_still_joining_new_workers_is_keyed_by_its_piecewise_work(name):
    """Under stop-free scaling (EDL §4.2) a grown job's old workers train alone for
    `stop_free_prepare` s, so its remaining work is not one line: the fast order takes the
    policy's own key for it (break that and `e` is keyed from an empty line, as done)."""
    elastic = JobSpec("e", 0.0, 2, 20_000.0, min_workers=1, max_workers=4)
    jobs = [elastic, *random_jobs(3)]
    config = EngineConfig(scaling_mode="stop-free", stop_free_prepare=3_000.0)

    def run(policy):
        result = Simulation(training_cluster(4, 8), workload(*jobs), resizing_once(policy),
                            config=config).run()
        return [(r["job_id"], r["start"], r["end"], r["preemptions"]) for r in result.jobs]

    fast = run(create_policy(name, {}))
    assert fast == run(by_definition(name))
    e = next(row for row in fast if row[0] == "e")
    assert e[3] > 0  # `e` was ranked against the queue while joining, and lost


def halving_a_at_100(policy):
    """`policy`, after setting job A's share of its GPU to 0.5 at the round of t = 100."""
    plain = policy.schedule

    def schedule(view: ClusterView) -> Iterator[Decision]:
        if view.now == 100.0:
            yield SetShare("A", 0.5)
        yield from plain(view)

    policy.schedule = schedule
    return policy


@pytest.mark.parametrize("name", ["srtf", "srsf"])
def test_a_job_whose_rate_changes_on_the_same_gpus_is_keyed_by_its_new_rate(name):
    """A share change resets a job's progress line without moving its GPUs; the fast order
    learns of it from the engine's progress log. One GPU: A (1,000 s) from 0; D (2,000 s)
    waits from 50, so the order has read A's line; A is halved at 100 (C, 5,000 s, arrives
    then and waits); at 700 A has 1,000 - 100 - 0.5 * 600 = 600 s left, so B (500 s)
    arriving then preempts it. On A's old rate the order would think 300 s left and keep A."""
    jobs = [JobSpec("A", 0.0, 1, 1_000.0), JobSpec("D", 50.0, 1, 2_000.0),
            JobSpec("C", 100.0, 1, 5_000.0), JobSpec("B", 700.0, 1, 500.0)]
    outcomes = [
        {r["job_id"]: (r["start"], r["end"], r["preemptions"]) for r in
         Simulation(training_cluster(1, 1), workload(*jobs), halving_a_at_100(p)).run().jobs}
        for p in (create_policy(name, {}), by_definition(name))
    ]
    assert outcomes[0] == outcomes[1]
    assert outcomes[0]["A"][2] == 1 and outcomes[0]["B"][:2] == (700.0, 1_200.0)


@pytest.mark.parametrize("name", ["srtf", "srsf"])
def test_the_tail_is_every_running_job_at_or_after_a_threshold_in_sort_order(name):
    """`RemainingTimeOrder.tail(view, (k, i))`: the preemptible running jobs whose
    (key, trace index) is after (k, i), sorted by the pair (equal keys by trace index), with
    the GPUs behind each and the rest. Checked every round against a fresh sort, with
    thresholds on and beside each running job's own key (the random jobs' equal durations
    and submit times make equal keys common)."""
    checked = tails_checked_every_round(name, training_cluster(4, 8), random_jobs(1))
    assert max(checked) >= 5


@pytest.mark.parametrize("name", ["srtf", "srsf"])
def test_the_tail_is_right_past_the_first_64_rows_and_after_rows_are_freed(name):
    """The order's arrays start with 64 rows and double; rows freed by finished or preempted
    jobs are spare (NaN keys) until reused. 300 one-GPU jobs on 12 × 8 GPUs keep up to 96
    running: the tail must stay a fresh sort's while the arrays grow and rows are reused
    (copy only part of the rows on growth, or leave a freed row's key live, and it is not)."""
    rng = random.Random(7)
    jobs = [JobSpec(f"j{i}", float(10 * (i // 40)), 1, rng.choice((50.0, 300.0, 900.0)))
            for i in range(300)]
    checked = tails_checked_every_round(name, training_cluster(12, 8), jobs)
    assert max(checked) > 64


def tails_checked_every_round(name: str, cluster, jobs: list[JobSpec]) -> list[int]:
    """Run `name` on `jobs`, comparing a separate order's tails with a fresh sort in every
    round; the lengths of the tails compared."""
    from simulation.policies.remaining_time_order import RemainingTimeOrder
    from simulation.policies.srtf import srsf_factors, srtf_factors

    key = _srt_key(name)
    order = RemainingTimeOrder(key, srtf_factors if name == "srtf" else srsf_factors)
    policy = create_policy(name, {})
    plain = policy.schedule
    checked = []

    def schedule(view: ClusterView) -> Iterator[Decision]:
        ranked = sorted((key(j), j.trace_index, j.job_id, j.gpus)
                        for j in view.running.values() if j.spec.preemptible)
        for k, i, _, _ in ranked[:6]:
            for threshold in ((k, i - 1), (k, i), (k, i + 1)):
                keys, ids, behind, below, _ = order.tail(view, threshold)
                after = [r for r in ranked if r[:2] > threshold]
                assert [keys[n] for n in range(len(keys))] == [r[:2] for r in after]
                assert ids == [r[2] for r in after]
                assert behind[-1] == sum(r[3] for r in after)
                assert below == sum(r[3] for r in ranked) - behind[-1]
                checked.append(len(after))
        yield from plain(view)

    policy.schedule = schedule
    Simulation(cluster, workload(*jobs), policy).run()
    return checked
