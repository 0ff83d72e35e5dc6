"""The collector pause around decisions: counted across threads, and it restores the
collector's own setting."""

from __future__ import annotations

import gc
import threading

import pytest

from planner.live.collector import collector_paused, with_collector_paused
from planner.live.selectors import cluster_snapshot
from planner.live.services import decision_stateful, job_submit
from simulation.decide import decide_reclaim, decide_schedule
from tests.planner.live.conftest import live_cluster_make


@pytest.fixture(autouse=True)
def _collector_on():
    was = gc.isenabled()
    gc.enable()
    yield
    if not was:
        gc.disable()


def test_the_collector_comes_back_when_the_last_of_several_threads_leaves() -> None:
    inside, release = threading.Barrier(3), threading.Event()

    def decide() -> None:
        with collector_paused():
            inside.wait()
            release.wait()

    threads = [threading.Thread(target=decide) for _ in range(2)]
    for thread in threads:
        thread.start()
    inside.wait()
    assert not gc.isenabled()
    with collector_paused():
        release.set()
        threads[0].join()
        threads[1].join()
        assert not gc.isenabled()  # this block still runs
    assert gc.isenabled()


def test_a_collector_switched_off_by_the_process_stays_off() -> None:
    gc.disable()
    with collector_paused():
        pass
    assert not gc.isenabled()


def test_the_wrapped_function_runs_paused_and_its_errors_pass_through() -> None:
    @with_collector_paused
    def failing() -> None:
        assert not gc.isenabled()
        raise ValueError("x")

    with pytest.raises(ValueError):
        failing()
    assert gc.isenabled()


def _cycles_left_by(decide, request) -> int:
    """Unreachable cyclic objects a second run of `decide` leaves (the first may build
    caches that live on, such as compiled patterns)."""
    decide(request)
    gc.collect()
    with collector_paused():
        answer = decide(request)
        left = gc.collect()
    assert answer
    return left


@pytest.mark.django_db
def test_aryl_decisions_leave_no_cycles_behind_for_the_paused_collector() -> None:
    """What the pause relies on: a decision's objects go by reference counting."""
    cluster = live_cluster_make()
    decision_stateful(cluster_id=cluster.pk, kind="loan", body={"count": 3}, actor=None)
    for i, gpus in enumerate([8, 4, 4, 2, 2, 1]):
        job_submit(cluster=cluster, name=f"job-{i}", num_gpus=gpus, duration_seconds=600,
                   min_workers=1, max_workers=2 * gpus)
    schedule = {"policy": "aryl", "state": cluster_snapshot(cluster=cluster)}
    assert _cycles_left_by(decide_schedule, schedule) == 0
    decision_stateful(cluster_id=cluster.pk, kind="schedule", body={"policy": "aryl"},
                      actor=None)
    reclaim = {"count": 2, "state": cluster_snapshot(cluster=cluster)}
    assert decide_reclaim(reclaim)["preempted_jobs"] or decide_reclaim(reclaim)["scaled_in"]
    assert _cycles_left_by(decide_reclaim, reclaim) == 0
