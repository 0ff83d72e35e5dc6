"""`sia` runs on the real traces in ../shared/traces through the CLI.

The full muri_trace3 run takes minutes, so the CLI runs on its first 24 jobs: the first
training round (after 24 h) sees only jobs 0 and 1 (one positive 5-minute sample), which is
what used to stop the run with scikit-learn's "least populated class" error.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from simulation.cli import main
from simulation.runner import run_simulation
from simulation.workloads import load_cluster_spec, load_trace
from tests.support import REPO

TRACES = REPO.parent / "shared" / "traces"
MURI_CLUSTER = TRACES / "muri_cluster_spec_n8g8.csv"
PREFIX_JOBS = 24

pytestmark = pytest.mark.skipif(not MURI_CLUSTER.exists(), reason=f"{TRACES} is absent")


@pytest.fixture(scope="module")
def muri_prefix(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The header and first PREFIX_JOBS jobs of muri_trace3, as a file of their own."""
    lines = (TRACES / "muri_trace3.csv").read_text().splitlines(keepends=True)
    path = tmp_path_factory.mktemp("muri") / "trace3_prefix.csv"
    path.write_text("".join(lines[:PREFIX_JOBS + 1]))
    return path


@pytest.fixture(scope="module")
def sia_run(muri_prefix: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[int, Path]:
    out = tmp_path_factory.mktemp("sia_out")
    code = main(["run", "--cluster", str(MURI_CLUSTER), "--trace", str(muri_prefix),
                 "--policy", "sia", "--out", str(out)])
    return code, out


def test_sia_on_the_muri_trace_exits_0_and_finishes_every_job(sia_run) -> None:
    code, out = sia_run
    assert code == 0
    summary = json.loads((out / "summary.json").read_text())
    assert (summary["jobs"], summary["finished"]) == (PREFIX_JOBS, PREFIX_JOBS)


def test_first_jobs_start_on_arrival(sia_run) -> None:
    # jobs 0-3 ask 4 GPUs each; 16 of the 64 GPUs are free for all of them
    _, out = sia_run
    with (out / "jobs.csv").open() as handle:
        rows = {row["job_id"]: row for row in csv.DictReader(handle)}
    assert [float(rows[j]["start"]) for j in "0123"] == [0.0, 1456.0, 352430.0, 352712.0]
    assert float(rows["0"]["jct"]) == 927475.0  # its duration: no wait, no preemption


def test_sia_with_one_queue_starts_jobs_as_fcfs_does(sia_run, muri_prefix: Path) -> None:
    """One queue holds the whole cluster: a blocked head needs more than the idle GPUs, so
    Figure 8's reservation (min(pending + new load, quota - dedicated)) covers every idle
    GPU and nothing is lent out of order: SIA is strict FCFS, as fcfs-pools is."""
    _, out = sia_run
    with (out / "jobs.csv").open() as handle:
        sia_starts = {row["job_id"]: float(row["start"]) for row in csv.DictReader(handle)}
    fcfs = run_simulation(load_cluster_spec(MURI_CLUSTER), load_trace(muri_prefix), "fcfs-pools")
    assert sia_starts == {row["job_id"]: row["start"] for row in fcfs.jobs}
    # at 673 058 s jobs 0-3 (16 GPUs) and 15-20 (48) hold all 64 GPUs; 21, 22 and 23 (8 each)
    # wait for the next 8-GPU completions in turn: job 17 (672 834 + 28 662), job 16
    # (672 805 + 165 835), job 18 (672 911 + 205 061)
    assert [sia_starts[j] for j in ("21", "22", "23")] == [701496.0, 838640.0, 877972.0]


def test_sia_on_the_tiresias_trace_starts_every_job_on_arrival(tmp_path: Path) -> None:
    # the 60 jobs never ask more than 26 GPUs at once on the 64-GPU cluster: no job waits,
    # so the mean JCT is the mean duration, 10 705 s / 60
    code = main(["run", "--cluster", str(TRACES / "tiresias_cluster_spec_n16g4.csv"),
                 "--trace", str(TRACES / "tiresias_60_job.csv"), "--policy", "sia",
                 "--out", str(tmp_path)])
    assert code == 0
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["finished"] == 60
    assert summary["queuing"]["mean"] == 0
    assert summary["jct"]["mean"] == pytest.approx(10705 / 60)
