"""`python -m simulation` end to end: outputs on disk, and exit code 2 for user errors."""

from __future__ import annotations

import csv
import json
import os
import sys
from pathlib import Path

import pytest

from simulation.cli import ProgressLines, main, table_cells

TRACES = Path(__file__).resolve().parents[2].parent / "shared" / "traces"
pytestmark = pytest.mark.skipif(not TRACES.is_dir(), reason=f"{TRACES} not present")
TIRESIAS = ["--cluster", str(TRACES / "tiresias_cluster_spec_n16g4.csv"),
            "--trace", str(TRACES / "tiresias_60_job.csv")]


def test_run_writes_the_result_contract(tmp_path, capsys):
    assert main(["run", *TIRESIAS, "--policy", "tiresias", "--out", str(tmp_path)]) == 0
    summary = json.loads((tmp_path / "summary.json").read_text())
    for key in ("policy", "jobs", "jct", "queuing", "makespan", "preemptions",
                "preemption_ratio", "scaling_ops", "gpu_utilization", "wall_seconds"):
        assert key in summary
    assert set(summary["jct"]) == {"mean", "median", "p95", "p99"}
    assert set(summary["gpu_utilization"]) >= {"training", "overall"}
    with (tmp_path / "jobs.csv").open() as handle:
        rows = list(csv.DictReader(handle))
    assert len(rows) == summary["jobs"] == 60
    assert {"job_id", "submit", "start", "end", "jct", "queuing", "preemptions"} <= set(rows[0])
    header = (tmp_path / "timeseries.csv").read_text().splitlines()[0].split(",")
    assert {"time", "util_training", "on_loan_servers", "queue_length"} <= set(header)
    assert "tiresias" in capsys.readouterr().out


def test_same_seed_same_bytes(tmp_path):
    for out in ("a", "b"):
        main(["run", *TIRESIAS, "--policy", "srtf", "--seed", "3", "--out", str(tmp_path / out)])
    for name in ("jobs.csv", "timeseries.csv"):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes()


def test_compare_writes_one_folder_per_policy_and_a_table(tmp_path, capsys):
    argv = ["compare", *TIRESIAS, "--policy", "fifo", "--policy", "sjf", "--out", str(tmp_path)]
    assert main(argv) == 0
    assert (tmp_path / "fifo" / "summary.json").is_file()
    assert (tmp_path / "sjf" / "jobs.csv").is_file()
    with (tmp_path / "comparison.csv").open() as handle:
        assert [row["policy"] for row in csv.DictReader(handle)] == ["fifo", "sjf"]
    out = capsys.readouterr().out
    assert "fifo" in out and "sjf" in out


def test_policies_lists_parameters(capsys):
    assert main(["policies"]) == 0
    out = capsys.readouterr().out
    assert "tiresias:" in out and "thresholds" in out and "backfill" in out


def test_policies_lists_each_policys_stages_and_the_stages_to_add(capsys):
    assert main(["policies"]) == 0
    out = capsys.readouterr().out
    assert "    stages: capacity: aryl-loan, ordering+allocation+placement: aryl\n" in out
    assert "    aryl-loan (capacity): Aryl's Algorithm 1" in out


def test_run_takes_a_composition_and_refuses_a_bad_one_with_exit_2(tmp_path, capsys):
    out = tmp_path / "composed"
    assert main(["run", *TIRESIAS, "--policy", "tiresias+aryl-loan", "--out", str(out)]) == 0
    summary = json.loads((out / "summary.json").read_text())
    assert (summary["policy"], summary["engine"]["reclaim_strategy"]) == (
        "tiresias+aryl-loan", "aryl")
    capsys.readouterr()
    assert main(["run", *TIRESIAS, "--policy", "tiresias+fifo", "--out", str(out)]) == 2
    assert ("field 'policy': 'tiresias+fifo' names the policies 'tiresias' and 'fifo'"
            in capsys.readouterr().err)


@pytest.mark.parametrize(
    ("trace_text", "settings", "message"),
    [
        ("job_id,submit_time,num_gpus,duration\na,0,2,100\nb,5,abc,10\n", [],
         "line 3, field 'num_gpus'"),
        ("job_id,submit_time,duration\na,0,100\n", [], "num_gpus"),
        ("job_id,submit_time,num_gpus,duration\na,0,-2,100\n", [], "line 2, field 'num_gpus'"),
        ("job_id,submit_time,num_gpus,duration\na,0,2,100\n", ["--set", "bogus=1"],
         "field 'bogus'"),
        ("job_id,submit_time,num_gpus,duration\na,0,2,100\n", ["--set", "thresholds=x"],
         "field 'thresholds'"),
        ("job_id,submit_time,num_gpus,duration\na,0,128,100\n", [], "needs at least 128 GPUs"),
    ],
)
def test_user_errors_exit_2_with_file_line_and_field(tmp_path, capsys, trace_text, settings,
                                                     message):
    trace = tmp_path / "trace.csv"
    trace.write_text(trace_text)
    argv = ["run", "--cluster", str(TRACES / "tiresias_cluster_spec_n16g4.csv"),
            "--trace", str(trace), "--policy", "tiresias", *settings, "--out", str(tmp_path / "o")]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert message in err
    assert "Traceback" not in err
    assert len(err.strip().splitlines()) == 1


def test_missing_file_exits_2(tmp_path, capsys):
    argv = ["run", "--cluster", str(tmp_path / "none.yaml"), "--trace", str(tmp_path / "t.csv"),
            "--policy", "fifo", "--out", str(tmp_path / "o")]
    assert main(argv) == 2
    assert "none.yaml" in capsys.readouterr().err


def test_a_reader_that_leaves_early_ends_the_listing_quietly(monkeypatch, capsys):
    # `python -m simulation policies | head -1`: the pipe closes under the listing. The
    # command stops with status 0 and no traceback, as Unix tools do.
    read_end, write_end = os.pipe()
    os.close(read_end)
    closed_pipe = os.fdopen(write_end, "w", buffering=1)
    monkeypatch.setattr(sys, "stdout", closed_pipe)
    assert main(["policies"]) == 0
    monkeypatch.undo()
    closed_pipe.close()
    assert capsys.readouterr().err == ""


def test_progress_lines_stay_quiet_for_short_runs_then_report_each_tenth(monkeypatch, capsys):
    clock = iter([0.0, 1.0, 6.0, 6.5, 7.0, 13.0])  # start, then one reading per call
    monkeypatch.setattr("simulation.cli.time.perf_counter", lambda: next(clock))
    show = ProgressLines("srtf")
    show(0.05)  # 1 s in: quiet
    show(0.12)  # 6 s: first line (1 tenth)
    show(0.15)  # 6.5 s: same tenth, 0.5 s since the last line: quiet
    show(0.31)  # 7 s: a new tenth
    show(0.31)  # 13 s: no new tenth, but 6 s without a line
    lines = capsys.readouterr().err.splitlines()
    assert [line.split("] ")[1] for line in lines] == [
        "srtf: 12% of the jobs finished", "srtf: 31% of the jobs finished",
        "srtf: 31% of the jobs finished"]
    assert lines[0].startswith("[    6.0 s]")


def test_the_printed_table_shows_each_time_column_in_one_readable_unit():
    row = {"policy": "srtf", "jobs": 3, "jct_mean": 181483.76, "jct_median": 3588.0,
           "jct_p95": 90.0, "jct_p99": 7200.0, "queuing_mean": 119.9, "makespan": 8171961.0,
           "preemptions": 2, "preemption_ratio": 0.666667, "scaling_ops": 0,
           "util_training": 0.804321, "util_overall": 0.8, "cadence": "event",
           "wall_seconds": 0.2345}
    headers, (cells,) = table_cells([row])
    shown = dict(zip(headers, cells, strict=True))
    assert shown["jct_mean (h)"] == "50.4"        # 181,484 s
    assert shown["jct_median (min)"] == "59.8"    # 3,588 s: under two hours
    assert shown["jct_p95 (s)"] == "90.0"         # under two minutes
    assert shown["jct_p99 (h)"] == "2.0"          # two hours exactly
    assert shown["queuing_mean (s)"] == "119.9"
    assert shown["makespan (h)"] == "2,270.0"
    assert shown["util_training"] == "80.4%" and shown["preemption_ratio"] == "0.67"
    assert shown["wall (s)"] == "0.2" and shown["cadence"] == "event"


def test_a_terminal_gets_a_progress_bar_with_time_left():
    import io

    from simulation.cli import ProgressBar

    out = io.StringIO()
    bar = ProgressBar("srtf", file=out)
    bar.bar.delay = 0  # shown at once here; a real run waits ProgressLines.QUIET_SECONDS
    bar(0.25)
    bar(0.5)
    assert bar.bar.n == 50.0  # a share of the jobs, not a count of calls
    bar.bar.refresh()
    assert "srtf:  50% of the jobs finished" in out.getvalue() and " left" in out.getvalue()
    bar.close()
