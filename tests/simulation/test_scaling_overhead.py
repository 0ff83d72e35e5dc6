"""EDL's scaling-overhead model in the engine (EngineConfig.scaling_mode, EDL §4.2, §6.1)."""

from __future__ import annotations

import pytest

from simulation.decisions import Launch, Resize, Slot
from simulation.engine import EngineConfig, Simulation
from simulation.errors import InputError
from simulation.model import ClusterSpec, GpuType, JobSpec, PoolKind, PoolSpec, Workload
from simulation.policies.base import Policy


def one_server(gpus: int = 8) -> ClusterSpec:
    return ClusterSpec(
        "one", {"V100": GpuType("V100")},
        (PoolSpec("train", PoolKind.TRAINING, "V100", 1, gpus),),
    )


class Scripted(Policy):
    """Launches at 4 GPUs, then resizes to the GPU counts of `script` at the given times."""

    name = "scripted-test"
    interval = 10.0

    def __init__(self, script: list[tuple[float, int]]) -> None:
        super().__init__()
        self.script = list(script)

    def schedule(self, view):
        for job in view.queue.values():
            yield Launch(job.job_id, (Slot("train-1", 4),))
        while self.script and view.now >= self.script[0][0] and view.running:
            _, gpus = self.script.pop(0)
            job_id = next(iter(view.running))
            yield Resize(job_id, (Slot("train-1", gpus),))


def run(mode: str, script: list[tuple[float, int]], **config):
    job = JobSpec("j", 0.0, 4, 1000.0, min_workers=1, max_workers=8, iterations=100_000)
    sim = Simulation(
        one_server(), Workload((job,)), Scripted(script),
        config=EngineConfig(scaling_mode=mode, **config),
    )
    result = sim.run()
    return result.jobs[0], result.summary


def test_stop_free_scale_out_keeps_old_rate_until_the_new_workers_join():
    row, summary = run("stop-free", [(100.0, 8)], stop_free_prepare=30, stop_free_broadcast=0.5)
    # 100 s at rate 1, 30 s more at rate 1 while the new workers prepare, 0.5 s broadcast,
    # then 870 s of work at rate 2.
    assert row["end"] == pytest.approx(130.5 + 870 / 2)
    # 4 new GPUs idle for 30 s + 8 GPUs stopped for the 0.5 s broadcast.
    assert summary["overhead_gpu_seconds"] == pytest.approx(4 * 30 + 8 * 0.5)
    assert summary["scaling_mode"] == "stop-free"


def test_stop_resume_stops_every_worker_for_both_directions():
    row, summary = run("stop-resume", [(100.0, 8), (200.0, 4)], stop_resume_pause=40)
    # 100 work by t=100; stopped until 140; rate 2 until 200 (120 work); stopped until 240.
    assert row["end"] == pytest.approx(240 + (1000 - 220))
    assert summary["overhead_gpu_seconds"] == pytest.approx(8 * 40 + 4 * 40)


def test_graceful_scale_in_is_free_under_stop_free():
    row, summary = run("stop-free", [(100.0, 2)])
    assert row["end"] == pytest.approx(100 + 900 * 2)
    assert summary["overhead_gpu_seconds"] == 0


def test_stop_free_loses_fewer_gpu_seconds_than_stop_resume():
    script = [(100.0, 8), (400.0, 4), (500.0, 6)]
    _, free = run("stop-free", script)
    _, resume = run("stop-resume", script)
    assert free["overhead_gpu_seconds"] < resume["overhead_gpu_seconds"]


def test_plain_pauses_distinguish_scale_in_from_scale_out():
    row, summary = run("none", [(100.0, 8), (200.0, 4)], scale_out_pause=10, scale_in_pause=3)
    assert summary["overhead_gpu_seconds"] == pytest.approx(8 * 10 + 4 * 3)
    assert row["end"] == pytest.approx(203 + (1000 - 100 - 180))


def test_early_feedback_inside_the_preparation_window():
    job = JobSpec("j", 0.0, 4, 1000.0, min_workers=1, max_workers=8, iterations=1000)
    sim = Simulation(
        one_server(), Workload((job,)), Scripted([(50.0, 8)]),
        config=EngineConfig(scaling_mode="stop-free", stop_free_prepare=100),
    )
    # 100 of 1000 iterations = 100 s of work, reached at t=100 on the old workers' rate.
    assert sim.run().jobs[0]["early_feedback"] == pytest.approx(100.0)


def test_unknown_scaling_mode_is_an_input_error():
    with pytest.raises(InputError):
        run("teleport", [])
