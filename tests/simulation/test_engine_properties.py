"""Invariants on random small clusters and workloads, for every baseline policy."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from simulation.composition import create_policy
from simulation.engine import Simulation
from simulation.model import JobSpec, PoolKind
from tests.simulation.builders import cluster, workload

BASELINES = ["fifo", "sjf", "srtf", "srsf", "tiresias"]
WALL_CLOCK_KEYS = {"wall_seconds", "events_per_second"}


class CheckedSimulation(Simulation):
    """Checks the no-over-commitment invariant after every scheduling round."""

    def _schedule_round(self) -> None:
        super()._schedule_round()
        for server in self.state.servers.values():
            held = sum(server.jobs.values())
            assert held == server.used
            assert server.used <= server.gpus, f"{server.id} over-committed"
            assert server.available or not server.jobs
        for pool, busy in self.state.pool_busy.items():
            ids = self.state.pool_servers[pool]
            assert busy == sum(min(self.state.servers[s].used, self.state.servers[s].gpus)
                               for s in ids)


@st.composite
def scenarios(draw):
    gpus_per_server = draw(st.sampled_from([1, 2, 4, 8]))
    servers = draw(st.integers(1, 3))
    spec = cluster(("training", PoolKind.TRAINING, servers, gpus_per_server))
    capacity = servers * gpus_per_server
    n = draw(st.integers(1, 12))
    jobs = []
    for i in range(n):
        gpus = draw(st.sampled_from([g for g in (1, 2, 4, 8) if g <= capacity]))
        jobs.append(JobSpec(
            f"j{i}",
            submit_time=float(draw(st.integers(0, 300))),
            num_gpus=gpus,
            duration=float(draw(st.integers(1, 500))),
            checkpoint=draw(st.booleans()),
        ))
    return spec, workload(*jobs), draw(st.sampled_from(BASELINES))


@settings(max_examples=60, deadline=None)
@given(scenarios())
def test_invariants_hold_on_random_instances(case):
    spec, jobs, policy = case
    sim = CheckedSimulation(spec, jobs, create_policy(policy))
    result = sim.run()
    assert result.summary["finished"] == len(jobs.jobs)  # every job completes exactly once
    assert len({row["job_id"] for row in result.jobs}) == len(jobs.jobs)
    for job in sim.state.jobs.values():
        assert job.remaining_work == 0.0  # served work equals required work
        if job.preemptions == 0:
            assert abs(job.run_seconds - job.spec.duration) < 1e-6
        else:
            assert job.run_seconds >= job.spec.duration - 1e-6
        assert job.end_time >= job.spec.submit_time + job.spec.duration - 1e-6


@settings(max_examples=15, deadline=None)
@given(scenarios())
def test_same_seed_gives_identical_results(case):
    spec, jobs, policy = case
    first = Simulation(spec, jobs, create_policy(policy, seed=7)).run()
    second = Simulation(spec, jobs, create_policy(policy, seed=7)).run()

    def stable(result):
        summary = {k: v for k, v in result.summary.items() if k not in WALL_CLOCK_KEYS}
        return json.dumps(summary, sort_keys=True), result.jobs, result.timeseries

    assert stable(first) == stable(second)
