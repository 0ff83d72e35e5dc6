"""Elastic-Tiresias: EDL Algorithm 1 compaction and expansion on top of Tiresias."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from simulation.composition import create_policy
from simulation.decisions import Resize
from simulation.engine import EngineConfig, Simulation
from simulation.model import ClusterSpec, GpuType, JobSpec, PoolKind, PoolSpec, Workload
from simulation.throughput import Amdahl, Linear, ThroughputModel


def cluster(servers: int = 1, gpus: int = 8) -> ClusterSpec:
    return ClusterSpec(
        "c", {"V100": GpuType("V100")},
        (PoolSpec("train", PoolKind.TRAINING, "V100", servers, gpus),),
    )


CURVES = ThroughputModel(curves={"flat": Amdahl(0.5), "linear": Linear()})


class Recording:
    """Wraps a policy and keeps every decision it yields."""

    def __init__(self, policy):
        self.policy = policy
        self.decisions = []

    def __getattr__(self, name):
        return getattr(self.policy, name)

    def schedule(self, view):
        for decision in self.policy.schedule(view) or ():
            self.decisions.append((view.now, decision))
            yield decision


def simulate(jobs, *, servers=1, gpus=8, **params):
    policy = Recording(create_policy("elastic-tiresias", params))
    sim = Simulation(cluster(servers, gpus), Workload(tuple(jobs)), policy,
                     config=EngineConfig(scaling_mode="stop-free"), throughput=CURVES)
    return sim.run(), policy


def test_expansion_gives_free_gpus_to_the_largest_relative_gain():
    jobs = [
        JobSpec("flat", 0.0, 2, 5000.0, model="flat", min_workers=1, max_workers=6),
        JobSpec("linear", 0.0, 2, 5000.0, model="linear", min_workers=1, max_workers=6),
    ]
    _, policy = simulate(jobs)
    first = [d for t, d in policy.decisions if isinstance(d, Resize) and t == 0.0]
    sizes = {d.job_id: sum(s.gpus for s in d.placement) for d in first}
    # Linear gains 1/p per GPU; Amdahl(0.5) gains far less: the 4 free GPUs go to `linear`.
    assert sizes == {"linear": 6}


def test_compaction_scales_in_lower_queue_jobs_to_start_a_waiting_job():
    jobs = [
        JobSpec("a", 0.0, 4, 9000.0, model="flat", min_workers=1, max_workers=4),
        JobSpec("b", 0.0, 4, 9000.0, model="linear", min_workers=1, max_workers=4),
        JobSpec("new", 1000.0, 2, 100.0),
    ]
    # Both long jobs pass 500 GPU·s (queue G1) long before t=1000; plain Tiresias would
    # preempt one of them for the newcomer (G0), compaction scales one in instead.
    result, policy = simulate(jobs, compaction_threshold=0, promote_knob=0)
    resizes = [d for t, d in policy.decisions if isinstance(d, Resize) and t == 1000.0]
    assert [d.job_id for d in resizes] == ["a"]  # losing GPUs from `flat` costs least
    assert sum(s.gpus for s in resizes[0].placement) == 2  # r = 0.5 of its 4 GPUs
    assert result.summary["preemptions"] == 0


def test_locality_rule_limits_a_job_to_ceil_p_over_m_machines():
    jobs = [
        JobSpec("a", 0.0, 4, 9000.0, min_workers=1, max_workers=4),
        JobSpec("b", 0.0, 4, 9000.0, min_workers=1, max_workers=4),
        JobSpec("big", 1000.0, 4, 100.0),
    ]
    # Two 4-GPU servers, each can give 2 GPUs (r = 0.5); a 4-GPU job may use one machine
    # only, so compaction cannot start it.
    _, policy = simulate(jobs, servers=2, gpus=4, compaction_threshold=0, promote_knob=0)
    assert not [d for t, d in policy.decisions if isinstance(d, Resize) and t == 1000.0]


def test_inelastic_jobs_are_never_resized():
    jobs = [
        JobSpec("fixed", 0.0, 2, 3000.0),
        JobSpec("elastic", 0.0, 2, 3000.0, min_workers=1, max_workers=8),
    ]
    _, policy = simulate(jobs)
    resized = {d.job_id for _, d in policy.decisions if isinstance(d, Resize)}
    assert resized == {"elastic"}


job_lists = st.lists(
    st.tuples(
        st.floats(0, 3000), st.sampled_from([1, 2, 4]), st.floats(100, 5000),
        st.integers(1, 4), st.booleans(),
    ),
    min_size=1, max_size=12,
)


@settings(max_examples=25, deadline=None)
@given(job_lists, st.integers(0, 3))
def test_compaction_never_shrinks_a_job_below_its_minimum(rows, threshold):
    jobs = []
    for i, (submit, gpus, duration, spread, elastic) in enumerate(sorted(rows)):
        jobs.append(JobSpec(
            f"j{i}", submit, gpus, duration, model="flat" if i % 2 else "linear",
            min_workers=max(1, gpus // spread) if elastic else 0,
            max_workers=2 * gpus if elastic else 0,
        ))
    result, policy = simulate(jobs, servers=2, gpus=4, compaction_threshold=threshold)
    floor = policy.policy.min_gpus
    specs = {j.job_id: j for j in jobs}
    for _, decision in policy.decisions:
        if isinstance(decision, Resize):
            spec = specs[decision.job_id]
            assert spec.elastic
            assert sum(s.gpus for s in decision.placement) >= floor(spec)
    assert result.summary["finished"] == len(jobs)
