"""`python -m simulation size`: the hand-derived answer end to end, its files, parallel
processes giving the same answer, and exit code 2 naming the argument at fault."""

from __future__ import annotations

import csv
import json

import pytest

from simulation.cli import main

CLUSTER = """\
name: sized
gpu_types: {V100: {speed: 1.0, memory_gb: 32}, T4: {speed: 0.25, memory_gb: 16}}
pools:
  - {name: training, kind: training, gpu_type: V100, servers: 4, gpus_per_server: 8}
"""
# Six jobs of one 8-GPU server each, one hour, all at t=0: under FIFO the makespan is one
# hour only when all six run at once, on 6 servers; with N servers the mean JCT is
# 1.5 h at N=3 ((3 x 1 h + 3 x 2 h) / 6) and 2 h at N=2.
TRACE = "job_id,submit_time,num_gpus,duration\n" + "".join(
    f"j{i},0,8,3600\n" for i in range(6))


@pytest.fixture
def inputs(tmp_path):
    (tmp_path / "cluster.yaml").write_text(CLUSTER)
    (tmp_path / "trace.csv").write_text(TRACE)
    return ["--cluster", str(tmp_path / "cluster.yaml"), "--trace", str(tmp_path / "trace.csv")]


def test_size_finds_the_hand_derived_servers_and_writes_json_and_csv(tmp_path, inputs, capsys):
    out = tmp_path / "out"
    argv = ["size", *inputs, "--policy", "fifo", "--pool", "training", "--target",
            "makespan<=1h", "--cost", "V100=2.5", "--seeds", "0,1", "--out", str(out)]
    assert main(argv) == 0
    result = json.loads((out / "capacity.json").read_text())
    fifo = result["policies"][0]
    assert (fifo["level"], fifo["cost_per_hour"]) == (6, 6 * 8 * 2.5)
    assert fifo["metrics"]["makespan"] == {"mean": 3600.0, "ci95": 0.0, "n": 2}
    with (out / "capacity.csv").open() as handle:
        rows = list(csv.DictReader(handle))
    assert [(r["policy"], r["level"], r["makespan"]) for r in rows] == [("fifo", "6", "3600.0")]
    printed = capsys.readouterr().out
    assert "6 training servers (48 V100)" in printed and "60 min" in printed


def test_two_processes_give_the_answer_of_one(tmp_path, inputs):
    answers = []
    for jobs in ("1", "2"):
        out = tmp_path / jobs
        assert main(["size", *inputs, "--policy", "fifo", "--policy", "sjf", "--pool",
                     "training", "--target", "jct.mean<=1.5h", "--cost", "V100=1",
                     "--jobs", jobs, "--out", str(out)]) == 0
        result = json.loads((out / "capacity.json").read_text())
        answers.append([(p["policy"], p["level"]) for p in result["policies"]])
    assert answers[0] == answers[1] == [("fifo", 3), ("sjf", 3)]


def test_size_takes_a_composition_and_names_it(tmp_path, inputs, capsys):
    """The training pool alone holds the jobs, so lending nothing needs the same 6 servers."""
    out = tmp_path / "out"
    argv = ["size", *inputs, "--policy", "fifo+no-loan", "--pool", "training", "--target",
            "makespan<=1h", "--cost", "V100=2.5", "--out", str(out)]
    assert main(argv) == 0
    (composed,) = json.loads((out / "capacity.json").read_text())["policies"]
    assert (composed["policy"], composed["level"]) == ("fifo+no-loan", 6)


@pytest.mark.parametrize(("extra", "message"), [
    (["--policy", "fifo+warp", "--target", "makespan<=1h", "--cost", "V100=1"],
     "field '--policy': 'fifo+warp': unknown stage 'warp'"),
    (["--target", "jct.mean<=5%"], "field '--target': jct.mean is not a share"),
    (["--target", "makespan<=1h", "--cost", "V100"], "field '--cost': expected GPU_TYPE=PRICE"),
    (["--target", "makespan<=1h", "--cost", "T4=1"], "field '--cost': no price per GPU-hour "
                                                     "for V100"),
    (["--target", "makespan<=1h", "--cost", "V100=1", "--pool", "gpus"],
     "field '--pool': no pool 'gpus'"),
    (["--target", "makespan<=1h", "--cost", "V100=1", "--loan"],
     "field '--loan': the loan axis needs an inference pool"),
    (["--target", "makespan<=1h", "--cost", "V100=1", "--pool", "training", "--seeds", "a"],
     "field '--seeds'"),
    (["--target", "makespan<=1h", "--cost", "V100=1", "--pool", "training",
      "--min", "9", "--max", "4"], "field '--min'"),
    (["--cost", "V100=1", "--pool", "training"], "field '--target'"),
])
def test_bad_input_exits_2_naming_the_argument(tmp_path, inputs, capsys, extra, message):
    argv = ["size", *inputs, "--policy", "fifo", *extra, "--out", str(tmp_path / "o")]
    if "--pool" not in extra and "--loan" not in extra:
        argv += ["--pool", "training"]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err
