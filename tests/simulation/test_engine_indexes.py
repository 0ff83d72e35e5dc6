"""The engine's and the orders' indexes answer as the plain structures they replace (issue #22).

Rules: the queue dict keeps submit order and stays the object every view reads through the
rebuilds that drop its holes, and is rebuilt only when the holes outnumber its jobs (so a
FIFO head lookup never steps over more holes than jobs); a job's pool preference is its own
pool first, then training before inference, of its GPU type only, a fresh list per call;
the view's mappings answer `in` and `get` as a dict does.
"""

from __future__ import annotations

from simulation.model import ClusterSpec, GpuType, JobSpec, PoolKind, PoolSpec
from simulation.policies.ordering import pool_preference
from simulation.state import ClusterState
from simulation.view import Clock, ClusterView
from tests.simulation.builders import training_cluster


def queued_state(count: int) -> ClusterState:
    state = ClusterState(training_cluster(1, 8))
    for i in range(count):
        state.enqueue(state.add_job(JobSpec(f"j{i}", float(i), 1, 60.0)), float(i))
    return state


def test_launching_from_the_front_keeps_order_and_the_same_dict():
    """300 queued, the first 250 taken from the front one by one. With holes rebuilt away
    once they exceed the jobs left plus 64: at the 183rd removal (183 > 117 + 64) the dict is
    rebuilt; the 67 removals after it leave 67 holes beside 50 jobs (67 <= 50 + 64)."""
    state = queued_state(300)
    queue = state.queue
    view = ClusterView(state, Clock(0.0))
    for i in range(250):
        assert next(iter(queue)) == f"j{i}"
        state.dequeue(state.jobs[f"j{i}"])
    assert state.queue is queue
    assert list(view.queue) == [f"j{i}" for i in range(250, 300)]
    assert state._queue_holes == 67


def test_pool_preference_own_pool_first_then_training_then_inference_of_its_type():
    spec = ClusterSpec("mixed", {"V100": GpuType("V100", 1.0, 32.0),
                                 "T4": GpuType("T4", 0.25, 16.0)}, (
        PoolSpec("inference", PoolKind.INFERENCE, "V100", 2, 8),
        PoolSpec("training", PoolKind.TRAINING, "V100", 2, 8),
        PoolSpec("quota", PoolKind.QUOTA, "V100", 2, 8),
        PoolSpec("t4", PoolKind.TRAINING, "T4", 2, 4),
    ))
    view = ClusterView(ClusterState(spec), Clock(0.0))
    own_quota = JobSpec("a", 0.0, 1, 60.0, pool="quota")
    first = pool_preference(view, own_quota)
    assert first == ["quota", "training", "t4", "inference"]
    first.clear()  # a caller's list is its own
    assert pool_preference(view, own_quota) == ["quota", "training", "t4", "inference"]
    assert pool_preference(view, JobSpec("b", 0.0, 1, 60.0, gpu_type="V100")) == [
        "training", "quota", "inference"]
    assert pool_preference(view, JobSpec("c", 0.0, 1, 60.0, gpu_type="T4")) == ["t4"]


def test_view_mappings_answer_membership_and_get_as_a_dict():
    state = queued_state(3)
    view = ClusterView(state, Clock(0.0))
    for job in state.jobs.values():
        view.register(job)
    assert "j1" in view.queue and "j9" not in view.queue and "j1" not in view.running
    assert view.queue.get("j1").job_id == "j1"
    assert view.queue.get("j9") is None and view.running.get("j1", "none") == "none"
