"""The GPU-sharing policies' kept indexes decide exactly as their definition.

AntMan and Muri keep what they read across rounds instead of rebuilding it every round
(issue #22): AntMan its waiting jobs per class, its free hosts and the physically free GPUs;
Muri its queued jobs sorted per bucket (walked lazily with the running jobs), the physically
free GPUs, which jobs may run below full speed, Blossom matchings and merge periods, and
it skips a regroup whose inputs are the last one's. The definitions below compute each
round afresh: sort every job, count the free GPUs from every placement, scan every share,
match every bucket, run every regroup. On random contended workloads — equal submit times,
multi-GPU workers, jobs with and without profiles, non-preemptible jobs, an inference pool
lending and reclaiming servers (reclaims preempt running jobs) — every job's start, end,
preemptions and migrations must be the definition's.
"""

from __future__ import annotations

import random
from collections.abc import Iterator

import pytest

from simulation.composition import create_policy
from simulation.decisions import Decision, Launch, Placement, SetShare
from simulation.engine import EngineConfig, Simulation
from simulation.model import InferenceLoad, JobSpec, PoolKind, ResourceProfile
from simulation.policies.antman import AntMan, is_guaranteed
from simulation.policies.muri import Muri, MuriL, MuriS
from simulation.policies.ordering import pool_preference
from simulation.shared_placement import fit_placement, physical_free, share_changed
from simulation.view import ClusterView, JobView
from tests.simulation.builders import cluster, training_cluster, workload


class AntManByDefinition(AntMan):
    """AntMan's round computed from scratch every time."""

    def schedule(self, view: ClusterView) -> Iterator[Decision]:
        running = view.running
        self._host_of = {g: h for g, h in self._host_of.items() if g in running
                         and h in running and running[g].placement == running[h].placement}
        hosted = set(self._host_of.values())
        occupied: list[Placement] = [
            job.placement for job in running.values() if job.job_id not in self._host_of
        ]
        free = physical_free(view, occupied)
        waiting = sorted(view.queue.values(),
                         key=lambda j: (j.spec.priority, j.submit_time, j.job_id))
        for job in waiting:
            if not is_guaranteed(job):
                host = self._any_host(view, job, hosted)
                if host is not None:
                    self._host_of[job.job_id] = host.job_id
                    hosted.add(host.job_id)
                    yield Launch(job.job_id, host.placement)
                    continue
            spec = job.spec
            placement = fit_placement(view, free, spec.num_gpus,
                                      gpus_per_worker=spec.gpus_per_worker,
                                      pools=pool_preference(view, spec))
            if placement is not None:
                yield Launch(job.job_id, placement)
        hosts = {host: guest for guest, host in self._host_of.items()}
        for job in list(running.values()):
            if job.job_id in self._host_of:
                share = self.idle_share(view.job(self._host_of[job.job_id]))
            elif job.job_id in hosts:
                share = 1.0 - self.guaranteed_interference
            else:
                share = 1.0
            if share_changed(job, share):
                yield SetShare(job.job_id, share)

    def _any_host(self, view: ClusterView, guest: JobView, hosted: set[str]) -> JobView | None:
        best, best_share = None, 0.0
        allowed = set(pool_preference(view, guest.spec))
        for host in view.running.values():
            if (not is_guaranteed(host) or host.job_id in hosted
                    or host.gpus != guest.spec.num_gpus
                    or any(s.gpus % guest.spec.gpus_per_worker
                           or view.servers[s.server].pool not in allowed
                           for s in host.placement)):
                continue
            share = self.idle_share(host)
            if share > best_share:
                best, best_share = host, share
        return best


PROFILES = (None, ResourceProfile((2.0, 1.0, 1.0)), ResourceProfile((0.2, 3.0, 0.1)),
            ResourceProfile((1.0, 1.0, 2.0, 0.5)), ResourceProfile((1.0, 0.0, 0.0)))


def random_jobs(seed: int, count: int = 90) -> list[JobSpec]:
    rng = random.Random(seed)
    jobs, t = [], 0.0
    for i in range(count):
        t += rng.choice((0.0, 0.0, rng.uniform(1, 300)))  # bursts of equal submit times
        per_worker = rng.choice((1, 1, 1, 2))
        jobs.append(JobSpec(
            f"j{i}", round(t, 1), per_worker * rng.choice((1, 1, 2, 4)),
            rng.choice((60.0, 600.0, rng.uniform(10, 4000))), gpus_per_worker=per_worker,
            priority=rng.choice((0, 1, 1)), profile=rng.choice(PROFILES),
            model=rng.choice(("generic", "vgg19", "a2c")),
        ))
    return jobs


def outcome(policy: AntMan | Muri, jobs: list[JobSpec], lending: bool
            ) -> list[tuple[str, float, float, int, int]]:
    if lending:
        spec = cluster(("training", PoolKind.TRAINING, 3, 4),
                       ("inference", PoolKind.INFERENCE, 2, 4))
        load = InferenceLoad((0.0, 900.0, 2000.0, 5000.0), (0, 2, 1, 0))
        sim = Simulation(spec, workload(*jobs), policy, inference_load=load,
                         config=EngineConfig(loan_interval=300.0))
    else:
        sim = Simulation(training_cluster(4, 4), workload(*jobs), policy)
    result = sim.run()
    return [(r["job_id"], r["start"], r["end"], r["preemptions"], r["migrations"])
            for r in result.jobs]


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("lending", [False, True])
def test_antman_kept_indexes_decide_as_the_definition(seed, lending):
    jobs = random_jobs(seed)
    params = {"guaranteed_interference": 0.1} if seed % 2 else {}
    fast = outcome(create_policy("antman", params), jobs, lending)
    assert fast == outcome(AntManByDefinition(**params), jobs, lending)
    starts = [row[1] for row in fast]
    assert len(set(starts)) < len(starts)  # contended: jobs start together when GPUs free up


def test_antman_host_whose_guest_ended_takes_the_next_guest():
    # One GPU. G hosts O1 from t=0; O1 ends at 100 (share .75 of 75 s of work), then O2,
    # arriving at 50 and waiting, must find G free again: a host list not told that O1
    # ended would keep it hosted and leave O2 waiting until G ends at 1000.
    quarter_gpu = ResourceProfile((2.0, 1.0, 1.0))
    jobs = workload(JobSpec("G", 0.0, 1, 1000.0, priority=0, profile=quarter_gpu),
                    JobSpec("O1", 0.0, 1, 75.0, priority=1),
                    JobSpec("O2", 50.0, 1, 30.0, priority=1))
    sim = Simulation(training_cluster(1, 1), jobs, create_policy("antman"),
                     config=EngineConfig(restart_overhead=0.0))
    rows = sim.run().jobs
    assert {r["job_id"]: r["start"] for r in rows} == {"G": 0.0, "O1": 0.0, "O2": 100.0}
    assert {r["job_id"]: r["end"] for r in rows} == pytest.approx(
        {"G": 1000.0, "O1": 100.0, "O2": 140.0})


class MuriDefinition:
    """Muri's round with every kept index bypassed (mixed into Muri-S and Muri-L)."""

    def _sorted_walk(self, view: ClusterView) -> bool:
        return False  # sort every running and queued job, then `select`

    def _settled_inputs(self, view: ClusterView, selected: list[JobView], capacity: int
                        ) -> tuple[object, ...]:
        return (object(), *super()._settled_inputs(view, selected, capacity)[1:])  # no skip

    def _any_slowed(self, view: ClusterView) -> bool:
        return any(job.share < 1.0 for job in view.running.values())

    def _launch_on_free_gpus(self, view: ClusterView) -> Iterator[Decision]:
        free = physical_free(view, [view.job(job_ids[0]).placement
                                    for job_ids in self._groups_in_use(view).values()])
        capacity = sum(free.values())
        if capacity <= 0:
            return
        kept = self._fitting_groups(view, self._selected(view, False, capacity), capacity)
        claimed: dict = {}
        self._place(view, kept, claimed, free)
        yield from self._start(view, self._targets(kept, claimed))


class MuriSByDefinition(MuriDefinition, MuriS):
    def __init__(self, **values: object) -> None:
        super().__init__(**values)
        self._memo = None  # every bucket matched afresh


class MuriLByDefinition(MuriDefinition, MuriL):
    def __init__(self, **values: object) -> None:
        super().__init__(**values)
        self._memo = None


MURI_PROFILES = (None, ResourceProfile((2.0, 1.0, 1.0)), ResourceProfile((0.2, 3.0, 0.1)),
                 ResourceProfile((0.5, 0.5, 2.0)), ResourceProfile((1.0, 1.0, 2.0, 0.5)),
                 ResourceProfile((0.1, 2.0, 0.3)))


def random_muri_jobs(seed: int, count: int = 70) -> list[JobSpec]:
    rng = random.Random(seed)
    jobs, t = [], 0.0
    for i in range(count):
        t += rng.choice((0.0, 0.0, rng.uniform(1, 500)))  # bursts of equal submit times
        per_worker = rng.choice((1, 1, 1, 2))
        duration = rng.choice((600.0, 3600.0, rng.uniform(60, 8000)))
        jobs.append(JobSpec(
            f"j{i}", round(t, 1), per_worker * rng.choice((1, 1, 2, 4)), duration,
            gpus_per_worker=per_worker, profile=rng.choice(MURI_PROFILES),
            iterations=rng.choice((None, int(duration * 2))),
            model=rng.choice(("generic", "vgg19", "a2c")), preemptible=rng.random() > 0.08,
        ))
    return jobs


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("lending", [False, True])
@pytest.mark.parametrize(("fast", "definition", "params"), [
    (MuriS, MuriSByDefinition, {}),
    (MuriL, MuriLByDefinition, {"thresholds": "300,3000"}),
    (MuriS, MuriSByDefinition, {"exact_matching_limit": 4, "grouping": "always"}),
])
def test_muri_kept_indexes_decide_as_the_definition(fast, definition, params, seed, lending):
    jobs = random_muri_jobs(seed)
    result = outcome(fast(**params), jobs, lending)
    assert result == outcome(definition(**params), jobs, lending)
    assert sum(row[3] for row in result) > 0  # contended: the full regroups preempt
