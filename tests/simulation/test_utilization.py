"""Utilisation is measured over the run's window and never exceeds 100 % (SUMMARY_KEYS).

The window is [first submission, last completion]. Events that change nothing (a completion
made stale by a resize or a preemption, a policy tick or loan tick after the last job) must
not stretch it: the busy inference servers would be integrated past the makespan that the
utilisation divides by (the inference pool once read 145 % here, `aryl-basic` 172 %).
"""

from __future__ import annotations

import copy

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from simulation.errors import InvariantViolation
from simulation.metrics import check_invariants, preempted_share, preemption_ratio
from simulation.model import ClusterSpec, InferenceLoad, JobSpec, PoolKind, PoolSpec
from simulation.runner import run_simulation
from tests.simulation.builders import GPU_TYPES, workload


def _new_user_cluster() -> ClusterSpec:
    """Training 1×8 V100, inference 2×8 T4 (the new user's first scenario)."""
    return ClusterSpec("new-user", GPU_TYPES, (
        PoolSpec("training", PoolKind.TRAINING, "V100", 1, 8),
        PoolSpec("inference", PoolKind.INFERENCE, "T4", 2, 8),
    ))


def _new_user_jobs() -> tuple[JobSpec, ...]:
    return (
        JobSpec("elastic", 0.0, 2, 8000.0, min_workers=2, max_workers=8, gpu_type="V100"),
        JobSpec("rigid", 0.0, 6, 1000.0, gpu_type="V100"),
    )


@pytest.mark.parametrize("load_until", [0.0, 86_400.0])
def test_new_user_scenario_reads_hand_derived_utilisation(load_until: float) -> None:
    """One inference server busy all along, an elastic and a rigid job under aryl.

    By hand: the rigid job holds 6 V100 for [0, 1000], the elastic job 2 V100 from 0. At 1000
    (an event: aryl runs at once) the elastic job scales out to 8 with stop-free scaling
    (Aryl's default): the old 2 workers train on for 30 s of preparation (1000 s of work done
    + 30 = 1030 of 8000), then 0.5 s of broadcast, then 6970 s of work at 4× speed: end
    1030.5 + 1742.5 = 2773; its completion event for t = 8000, pushed at 2 GPUs, is stale
    and must not stretch the window to 8000. Training: 8 of 8 GPUs held the whole window,
    100 %. Inference: 8 of 16 GPUs busy serving, 50 %. Overall: 16 of 24, 2/3. A load profile
    that runs for a day (loan ticks every 300 s until then) must not change any of it.
    """
    times = (0.0,) if load_until == 0 else (0.0, load_until)
    load = InferenceLoad(times, (1,) * len(times))
    result = run_simulation(_new_user_cluster(), workload(*_new_user_jobs()), "aryl",
                            inference_load=load)
    summary = result.summary
    assert summary["makespan"] == pytest.approx(2773.0)
    util = summary["gpu_utilization"]
    assert util["training"] == pytest.approx(1.0)
    assert util["pools"]["inference"] == pytest.approx(0.5)
    assert util["overall"] == pytest.approx(16 / 24, abs=1e-6)
    assert result.timeseries[-1]["time"] == pytest.approx(2773.0)
    assert max(row["util_inference"] for row in result.timeseries) == pytest.approx(0.5)


def test_overall_utilisation_counts_inference_busy_gpus() -> None:
    """Aryl Table 5 note (1): overall usage covers both clusters, inference serving included.

    No training job ever touches the inference pool here (the jobs need V100), so leaving the
    inference-busy GPUs out would read 8/24 instead of 16/24.
    """
    load = InferenceLoad((0.0,), (1,))
    jobs = workload(JobSpec("a", 0.0, 8, 500.0, gpu_type="V100"))
    summary = run_simulation(_new_user_cluster(), jobs, "fifo", inference_load=load).summary
    assert summary["gpu_utilization"]["overall"] == pytest.approx(16 / 24)
    assert summary["gpu_utilization"]["pools"]["inference"] == pytest.approx(0.5)


def test_window_starts_at_the_first_submission() -> None:
    """A trace whose first job arrives at 1000 s: the busy inference server before then is
    outside the window (makespan 1000..1500), so the inference pool still reads 50 %."""
    load = InferenceLoad((0.0,), (1,))
    jobs = workload(JobSpec("a", 1000.0, 8, 500.0, gpu_type="V100"))
    result = run_simulation(_new_user_cluster(), jobs, "fifo", inference_load=load)
    assert result.summary["makespan"] == pytest.approx(500.0)
    assert result.summary["gpu_utilization"]["pools"]["inference"] == pytest.approx(0.5)
    assert result.timeseries[0]["time"] > 1000.0
    assert result.timeseries[-1]["time"] == pytest.approx(1500.0)


def test_preemption_ratio_counts_preemptions_per_submitted_job() -> None:
    """Aryl Table 5 note (2): total preemptions / job submissions; a job preempted twice
    counts twice. The share of jobs ever preempted is a different number."""
    assert preemption_ratio(preemptions=3, jobs=4) == 0.75
    assert preempted_share(preempted_jobs=1, jobs=4) == 0.25
    assert preemption_ratio(preemptions=0, jobs=0) == 0.0


# -- the invariant after any run ------------------------------------------------------------

POLICIES = ["fifo", "tiresias", "srsf", "aryl", "elastic-tiresias", "gandiva", "muri-s",
            "afs"]


@st.composite
def loaning_scenarios(draw):
    training = draw(st.integers(1, 2))
    inference = draw(st.integers(1, 3))
    spec = ClusterSpec("prop", GPU_TYPES, (
        PoolSpec("training", PoolKind.TRAINING, "V100", training, 4),
        PoolSpec("inference", PoolKind.INFERENCE, "T4", inference, 4),
    ))
    jobs = []
    for i in range(draw(st.integers(1, 8))):
        gpus = draw(st.sampled_from([1, 2, 4]))
        elastic = draw(st.booleans())
        jobs.append(JobSpec(
            f"j{i}", float(draw(st.integers(0, 2000))), gpus,
            float(draw(st.integers(30, 3000))), model="resnet50",
            min_workers=1 if elastic else 0, max_workers=gpus * 2 if elastic else 0,
            checkpoint=draw(st.booleans()), iterations=1000,
        ))
    changes = draw(st.lists(st.tuples(st.integers(0, 6000), st.integers(0, inference)),
                            min_size=1, max_size=6, unique_by=lambda c: c[0]))
    changes = sorted(changes)
    load = InferenceLoad(tuple(float(t) for t, _ in changes), tuple(b for _, b in changes))
    return spec, workload(*jobs), load, draw(st.sampled_from(POLICIES))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(loaning_scenarios())
def test_utilisation_lies_in_unit_interval_after_any_run(case) -> None:
    """Preemptions, resizes, loans, reclaims, migrations and GPU sharing: every utilisation
    figure and every time-series point lies in [0, 1], the series ends at the makespan, and
    every job finishes exactly once."""
    spec, jobs, load, policy = case
    result = run_simulation(spec, jobs, policy, inference_load=load)
    summary = result.summary
    assert summary["finished"] == len(jobs.jobs)
    assert sorted(row["job_id"] for row in result.jobs) == sorted(j.job_id for j in jobs.jobs)
    util = summary["gpu_utilization"]
    for value in (util["training"], util["overall"], *util["pools"].values()):
        assert -1e-9 <= value <= 1 + 1e-9, (policy, util)
    for row in result.timeseries:
        for key, value in row.items():
            if key.startswith("util_"):
                assert -1e-9 <= value <= 1 + 1e-9, (policy, key, row)
    first_submit = jobs.jobs[0].submit_time
    assert result.timeseries[-1]["time"] == pytest.approx(first_submit + summary["makespan"])


def test_a_run_breaking_an_invariant_fails_loudly() -> None:
    """Numbers that cannot be true never reach a report: `check_invariants` raises."""
    result = run_simulation(_new_user_cluster(), workload(*_new_user_jobs()), "fifo")
    check_invariants(result, first_submit=0.0)  # the real run passes
    broken = copy.deepcopy(result)
    broken.summary["gpu_utilization"]["pools"]["inference"] = 1.45
    with pytest.raises(InvariantViolation, match="pool inference utilisation 1.45"):
        check_invariants(broken, first_submit=0.0)
    stretched = copy.deepcopy(result)
    stretched.timeseries[-1]["time"] += 7000
    with pytest.raises(InvariantViolation, match="time series ends"):
        check_invariants(stretched, first_submit=0.0)
