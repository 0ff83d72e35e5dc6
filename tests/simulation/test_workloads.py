"""Workload layer: real peer traces load unchanged, bad input is pinned to line and field,
generators are deterministic and look as configured, and canonical CSV round-trips."""

from __future__ import annotations

import json
import math
import statistics
from collections import Counter
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from simulation.errors import InputError
from simulation.limits import MAX_JOB_SECONDS, MAX_SUBMIT_SECONDS
from simulation.model import JobSpec, PoolKind, Workload
from simulation.workloads import (
    GeneratorSpec,
    canonical_csv_text,
    cluster_spec_from_dict,
    detect_format,
    generate_inference_load,
    generate_workload,
    load_cluster_spec,
    load_inference_load,
    load_trace,
    parse_cluster_spec_text,
    parse_inference_load_text,
    parse_trace_text,
    write_canonical_csv,
    write_inference_load_csv,
)

TRACES = Path(__file__).resolve().parents[2].parent / "shared" / "traces"
needs_traces = pytest.mark.skipif(not TRACES.is_dir(), reason=f"no shared traces at {TRACES}")

# Job counts documented in ../shared/traces/README.md.
DOCUMENTED = {
    "tiresias_60_job.csv": ("tiresias", 60),
    "muri_trace1.csv": ("muri", 1494),
    "muri_trace2.csv": ("muri", 5755),
    "muri_trace3.csv": ("muri", 992),
    "muri_trace4.csv": ("muri", 2638),
    "pollux_workload-6.csv": ("pollux_workload", 160),
    "pollux_philly.csv": ("philly_summary", 82247),
}
HEADER = "job_id,submit_time,num_gpus,duration"


@pytest.fixture(scope="module")
def philly() -> Workload:
    if not TRACES.is_dir():
        pytest.skip(f"no shared traces at {TRACES}")
    return load_trace(TRACES / "pollux_philly.csv")


def shared_files() -> list[str]:
    return sorted(p.name for p in TRACES.glob("*.csv")) if TRACES.is_dir() else []


# --- real traces -------------------------------------------------------------------------


@needs_traces
@pytest.mark.parametrize("name", [n for n in shared_files() if n != "pollux_philly.csv"])
def test_every_shared_file_loads_unchanged(name: str) -> None:
    path = TRACES / name
    if "cluster_spec" in name:
        spec = load_cluster_spec(path)
        assert spec.total_gpus == 64  # both peer clusters have 64 GPUs (README)
        return
    workload = load_trace(path)
    fmt, count = DOCUMENTED[name]
    assert (workload.format, len(workload), workload.skipped_total) == (fmt, count, 0)
    submits = [j.submit_time for j in workload.jobs]
    assert submits == sorted(submits)
    assert submits[0] == (53.0 if fmt == "pollux_workload" else 0.0)


@needs_traces
def test_philly_summary_matches_readme(philly: Workload) -> None:
    assert len(philly) == 82247 and philly.format == "philly_summary"
    gpus = Counter(j.num_gpus for j in philly.jobs)
    assert gpus[1] == 76627 and max(gpus) == 128
    assert len({j.user for j in philly.jobs}) == 15
    assert Counter(j.user for j in philly.jobs)["6214e9"] == 41226
    assert philly.jobs[0].submit_time == 0
    # 2017-09-04 10:30:41 .. 2017-12-22 08:02:11
    assert philly.jobs[-1].submit_time == pytest.approx(9408690.0)
    assert all(j.gpu_seconds > 0 for j in philly.jobs)


@needs_traces
def test_muri_times_are_converted_from_milliseconds() -> None:
    jobs = {j.job_id: j for j in load_trace(TRACES / "muri_trace4.csv").jobs}
    first = jobs["0"]
    # 16,755,000 ms (= 153,715 iterations x 109 ms) is 16,755 s.
    assert first.duration == 16755.0 and first.submit_time == 0.0
    assert jobs["1"].submit_time == 6.0
    assert first.profile is not None and first.profile.stage_seconds == (0.114, 0.08, 0.0)
    assert (first.model, first.priority, first.iterations) == ("vgg19", 1, 153715)
    durations = [j.duration for j in jobs.values()]
    assert statistics.mean(durations) == pytest.approx(119336, abs=1)
    assert max(durations) == pytest.approx(4014063, abs=1)


@needs_traces
def test_tiresias_trace_matches_readme() -> None:
    workload = load_trace(TRACES / "tiresias_60_job.csv")
    assert Counter(j.num_gpus for j in workload.jobs) == {1: 30, 2: 10, 4: 10, 8: 10}
    assert statistics.mean(j.duration for j in workload.jobs) == pytest.approx(178.4, abs=0.05)


@needs_traces
def test_pollux_workload_durations_are_assumed_from_gpu_time_bands() -> None:
    jobs = {j.job_id: j for j in load_trace(TRACES / "pollux_workload-6.csv").jobs}
    assert Counter(j.model for j in jobs.values())["cifar10"] == 67
    assert jobs["cifar10-0"].num_gpus == 6
    assert jobs["cifar10-0"].duration == pytest.approx(0.217 * 3600 / 6, abs=0.01)


@needs_traces
def test_muri_trace_round_trips_through_canonical_with_profiles(tmp_path: Path) -> None:
    original = load_trace(TRACES / "muri_trace3.csv")
    write_canonical_csv(original, tmp_path / "t.csv")
    again = load_trace(tmp_path / "t.csv")
    assert again.format == "canonical" and again.jobs == original.jobs
    assert [j.profile for j in again.jobs] == [j.profile for j in original.jobs]


@needs_traces
def test_cluster_spec_csv_becomes_one_training_pool() -> None:
    spec = load_cluster_spec(TRACES / "muri_cluster_spec_n8g8.csv")
    (pool,) = spec.pools
    assert (pool.kind, pool.gpu_type, pool.servers, pool.gpus_per_server) == (
        PoolKind.TRAINING, "V100", 8, 8)
    tiresias = load_cluster_spec(TRACES / "tiresias_cluster_spec_n16g4.csv")
    assert (tiresias.pools[0].servers, tiresias.pools[0].gpus_per_server) == (16, 4)


# --- format detection --------------------------------------------------------------------


@pytest.mark.parametrize(("header", "fmt"), [
    ("job_id,submit_time,num_gpus,duration,model", "canonical"),
    ("job_id,num_gpu,submit_time,iterations,model_name,duration,interval", "tiresias"),
    ("job_id,num_gpu,submit_time,iterations,model_name,batch_size,duration,interval,"
     "iteration_time,resource_time_0,resource_time_1,resource_time_2,priority", "muri"),
    ("timestamp,duration,num_gpus,gpu_time,cluster", "philly_summary"),
    ("name,time,application,num_replicas,batch_size", "pollux_workload"),
    ("job_id,user,vc,gpu_num,cpu_num,node_num,state,submit_time,start_time,end_time,"
     "duration,queue", "helios"),
    ("job_name,task_name,inst_num,status,start_time,end_time,plan_cpu,plan_mem,plan_gpu,"
     "gpu_type", "pai"),
    ("4f057009a5d481acec67b088,tensorflow,1.0,Terminated,1739162.0,1739200.0,600.0,"
     "29.296875,50.0,MISC", "pai"),
])
def test_detect_format(header: str, fmt: str) -> None:
    assert detect_format(header.split(",")) == fmt


@pytest.mark.parametrize(("header", "hint"), [
    ("num_switch,num_node_p_switch,num_gpu_p_node,num_cpu_p_node,mem_p_node", "cluster spec"),
    ("job_name,inst_id,user,status,start_time,end_time", "pai_task_table"),
    ("a,b,c", "unrecognised"),
])
def test_detect_format_rejects_non_traces(header: str, hint: str) -> None:
    with pytest.raises(InputError, match=hint):
        detect_format(header.split(","))


def test_format_override_beats_detection() -> None:
    text = "job_id,num_gpu,submit_time,iterations,model_name,duration,interval\n0,1,0,5,x,9,1\n"
    assert parse_trace_text(text).format == "tiresias"
    with pytest.raises(InputError) as err:
        parse_trace_text(text, format="canonical")
    assert (err.value.line, err.value.field) == (1, "num_gpus")
    with pytest.raises(InputError) as err:
        parse_trace_text(text, format="nope")
    assert err.value.field == "format"


# --- canonical validation ----------------------------------------------------------------

BAD_CANONICAL = {
    "missing column": ("job_id,submit_time,num_gpus\na,0,1\n", 1, "duration"),
    "empty value": (f"{HEADER}\na,0,1,10\nb,0,,10\n", 3, "num_gpus"),
    "text in number": (f"{HEADER}\na,0,1,ten\n", 2, "duration"),
    "zero gpus": (f"{HEADER}\na,0,0,10\n", 2, "num_gpus"),
    "negative gpus": (f"{HEADER}\na,0,-2,10\n", 2, "num_gpus"),
    "fractional gpus": (f"{HEADER}\na,0,1.5,10\n", 2, "num_gpus"),
    "negative duration": (f"{HEADER}\na,0,1,-1\n", 2, "duration"),
    "negative submit": (f"{HEADER}\na,-5,1,10\n", 2, "submit_time"),
    "not finite": (f"{HEADER}\na,nan,1,10\n", 2, "submit_time"),
    "gpus not multiple of worker": (f"{HEADER},gpus_per_worker\na,0,6,10,4\n", 2, "num_gpus"),
    "below min workers": (f"{HEADER},min_workers,max_workers\na,0,2,10,4,8\n", 2,
                          "min_workers"),
    "above max workers": (f"{HEADER},min_workers,max_workers\na,0,16,10,4,8\n", 2,
                          "max_workers"),
    "min above max": (f"{HEADER},min_workers,max_workers\na,0,4,10,6,2\n", 2, "min_workers"),
    "duplicate id": (f"{HEADER}\na,0,1,10\nb,0,1,10\na,5,1,10\n", 4, "job_id"),
    "bad boolean": (f"{HEADER},preemptible\na,0,1,10,maybe\n", 2, "preemptible"),
    "short row": (f"{HEADER}\na,0,1\n", 2, "duration"),
    "blank lines counted": (f"{HEADER}\n\na,0,1,10\n\nb,x,1,10\n", 5, "submit_time"),
}


@pytest.mark.parametrize("case", list(BAD_CANONICAL))
def test_malformed_canonical_names_line_and_field(case: str) -> None:
    text, line, field = BAD_CANONICAL[case]
    with pytest.raises(InputError) as err:
        parse_trace_text(text, source="bad.csv", format="canonical")
    assert (err.value.source, err.value.line, err.value.field) == ("bad.csv", line, field)
    assert f"bad.csv, line {line}, field '{field}'" in str(err.value)


@pytest.mark.parametrize("content", [b"", b"   \n\n"])
def test_empty_file_is_a_clear_error(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "empty.csv"
    path.write_bytes(content)
    with pytest.raises(InputError, match="empty") as err:
        load_trace(path)
    assert err.value.source == str(path)


def test_canonical_optional_columns_and_order() -> None:
    text = (f"{HEADER},gpus_per_worker,min_workers,max_workers,pool,preemptible,checkpoint,"
            "priority,user,iterations,extra\n"
            "late,100,8,60,2,2,8,training,no,YES,3,alice,500,ignored\n"
            "early,5.5,1,30,,,,,,,,,,\n"
            "tie,100,1,1,,,,,,,-1,,,\n")
    late, tie = parse_trace_text(text).jobs[1:]
    assert [j.job_id for j in parse_trace_text(text).jobs] == ["early", "late", "tie"]
    assert (late.requested_workers, late.min_workers, late.max_workers, late.elastic) == (
        4, 2, 8, True)
    assert (late.pool, late.preemptible, late.checkpoint, late.priority) == (
        "training", False, True, 3)
    assert (late.user, late.iterations, late.model) == ("alice", 500, "generic")
    assert tie.priority == -1 and tie.pool is None and not tie.elastic


# --- other importers on small samples ------------------------------------------------------


def test_helios_skips_cpu_and_unstarted_jobs() -> None:
    text = (
        "job_id,user,vc,gpu_num,cpu_num,node_num,state,submit_time,start_time,end_time,"
        "duration,queue\n"
        "1425511,uXBbc,vcJkd,1,1,1,COMPLETED,2020-06-09 18:41:01,2020-06-09 18:41:01,"
        "2020-06-10 04:55:09,36848,0\n"
        "1425512,uVMrF,vchbv,4,16,1,FAILED,2020-06-09 18:41:27,2020-06-09 18:41:27,"
        "2020-06-09 18:45:36,249,0\n"
        "1425513,uzqls,vcpDC,0,1,1,COMPLETED,2020-06-09 18:41:28,2020-06-09 18:41:28,"
        "2020-06-09 18:45:36,248,0\n"
        "1425514,uzqls,vcpDC,2,1,1,CANCELLED,2020-06-09 18:42:00,,,,0\n"
    )
    workload = parse_trace_text(text, "cluster_log.csv")
    assert workload.format == "helios"
    assert [(j.job_id, j.submit_time, j.num_gpus, j.duration, j.user) for j in workload.jobs] == [
        ("1425511", 0.0, 1, 36848.0, "uXBbc"), ("1425512", 26.0, 4, 249.0, "uVMrF")]
    assert dict(workload.skipped) == {"CPU-only jobs": 1, "never-started jobs": 1}
    assert "skipped 1 CPU-only jobs" in workload.source


def test_pai_task_table_is_merged_per_job_headerless() -> None:
    text = (
        "jobA,ps,1.0,Terminated,1000.0,1600.0,600.0,29.3,,\n"
        "jobA,worker,2.0,Terminated,1010.0,1500.0,400.0,29.3,50.0,MISC\n"
        "jobB,tensorflow,1.0,Terminated,900.0,960.0,600.0,29.3,100.0,T4\n"
        "jobC,tensorflow,1.0,Terminated,950.0,990.0,600.0,29.3,0.0,\n"
        "jobD,tensorflow,1.0,Running,970.0,,600.0,29.3,100.0,V100\n"
    )
    workload = parse_trace_text(text, "pai_task_table.csv")
    assert workload.format == "pai"
    assert [(j.job_id, j.submit_time, j.num_gpus, j.duration) for j in workload.jobs] == [
        ("jobB", 0.0, 1, 60.0), ("jobA", 100.0, 1, 600.0)]
    assert dict(workload.skipped) == {"CPU-only jobs": 1, "unfinished jobs": 1}
    with pytest.raises(InputError) as err:
        parse_trace_text("jobA,ps,x,Terminated,1,2,3,4,5,T4\n", "p.csv")
    assert (err.value.line, err.value.field) == (1, "inst_num")


def philly_job(jobid: str, attempts: list[dict], submitted: str = "2017-10-07 01:11:39") -> dict:
    return {"status": "Pass", "vc": "ee9e8c", "jobid": jobid, "attempts": attempts,
            "submitted_time": submitted, "user": "ce2f4c"}


def test_philly_job_log_sums_attempts_and_skips_non_jobs(tmp_path: Path) -> None:
    eight = [{"ip": "m47", "gpus": [f"gpu{i}" for i in range(8)]}]
    log = [
        philly_job("app_1", [
            {"start_time": "2017-10-07 01:12:09", "end_time": "2017-10-07 01:13:23",
             "detail": eight},
            {"start_time": "2017-10-07 01:13:30", "end_time": "2017-10-09 06:53:12",
             "detail": eight}]),
        philly_job("app_2", [], "2017-10-07 01:00:00"),
        philly_job("app_3", [{"start_time": "2017-10-07 02:00:00", "end_time": None,
                              "detail": eight}]),
        philly_job("app_4", [{"start_time": None, "end_time": None, "detail": []}]),
        philly_job("app_5", [{"start_time": "2017-10-07 03:00:00",
                              "end_time": "2017-10-07 03:10:00",
                              "detail": [{"ip": "m1", "gpus": ["gpu0"]}]}],
                   "2017-10-07 02:11:39"),
    ]
    path = tmp_path / "cluster_job_log.json"
    path.write_text(json.dumps(log))
    workload = load_trace(path)
    assert workload.format == "philly_json"
    first, second = workload.jobs
    assert (first.job_id, first.submit_time, first.num_gpus, first.user) == (
        "app_1", 0.0, 8, "ce2f4c")
    assert first.duration == 74 + (2 * 86400 + 5 * 3600 + 39 * 60 + 42)
    assert (second.submit_time, second.duration) == (3600.0, 600.0)
    assert workload.skipped_total == 3
    bad = json.dumps([philly_job("x", [{"start_time": "yesterday", "end_time": None}])])
    with pytest.raises(InputError) as err:
        parse_trace_text(bad, "log")
    assert err.value.field == "[0].attempts[0].start_time"


# --- cluster specs -----------------------------------------------------------------------

DESIGN_SPEC = """\
name: example
gpu_types: {V100: {speed: 1.0, memory_gb: 32}, T4: {speed: 0.25, memory_gb: 16}}
pools:
  - {name: training,  kind: training,  gpu_type: V100, servers: 443, gpus_per_server: 8}
  - {name: inference, kind: inference, gpu_type: T4,   servers: 520, gpus_per_server: 8}
"""


def test_design_cluster_spec_yaml_and_json(tmp_path: Path) -> None:
    spec = parse_cluster_spec_text(DESIGN_SPEC, "c.yaml")
    assert spec.name == "example" and spec.total_gpus == (443 + 520) * 8
    assert spec.speed_of(spec.pool("inference")) == 0.25
    data = {"pools": [{"name": "q", "kind": "quota", "gpu_type": "A100", "servers": 2,
                       "gpus_per_server": 8, "quota_gpus": 8},
                      {"name": "inf", "kind": "inference", "gpu_type": "T4", "servers": 4,
                       "gpus_per_server": 4, "lending_limit": 2}]}
    path = tmp_path / "spec.json"
    path.write_text(json.dumps(data, indent=2))
    spec = load_cluster_spec(path)
    assert spec.name == "spec" and spec.pool("q").quota_gpus == 8
    assert spec.pool("inf").lending_limit == 2 and spec.gpu_types["A100"].speed == 2.0
    assert cluster_spec_from_dict(data, "api").pools == spec.pools


@pytest.mark.parametrize(("old", "new", "field", "line"), [
    ("kind: training,", "kind: trainer,", "pools[0].kind", 4),
    ("gpu_type: T4,", "gpu_type: X9,", "pools[1].gpu_type", 5),
    ("servers: 520", "servers: 0", "pools[1].servers", 5),
    ("servers: 443", "servers: -1", "pools[0].servers", 4),
    ("gpus_per_server: 8}\n  - {name: inference", "gpus_per_server: 2.5}\n  - {name: inference",
     "pools[0].gpus_per_server", 4),
    ("name: inference", "name: training", "pools[1].name", 5),
    ("servers: 520", "server: 520", "pools[1].server", 5),
    ("speed: 0.25", "speed: fast", "gpu_types.T4.speed", 2),
])
def test_bad_cluster_spec_names_field_and_line(old: str, new: str, field: str,
                                               line: int) -> None:
    text = DESIGN_SPEC.replace(old, new)
    assert text != DESIGN_SPEC
    with pytest.raises(InputError) as err:
        parse_cluster_spec_text(text, "c.yaml")
    assert (err.value.field, err.value.line) == (field, line)


def test_cluster_spec_syntax_errors_and_defaults() -> None:
    with pytest.raises(InputError) as err:
        parse_cluster_spec_text("pools: [\n  {name: a,\n", "c.yaml")
    assert err.value.line is not None
    with pytest.raises(InputError) as err:
        parse_cluster_spec_text('{"pools": [}', "c.json")
    assert err.value.line == 1
    with pytest.raises(InputError, match="empty"):
        parse_cluster_spec_text("", "c.yaml")
    spec = cluster_spec_from_dict({"pools": [{"name": "t", "kind": "training",
                                              "gpu_type": "V100", "servers": 1,
                                              "gpus_per_server": 8}]})
    assert {"V100", "T4", "A100"} <= set(spec.gpu_types)


# --- generator ---------------------------------------------------------------------------


def test_generator_is_deterministic() -> None:
    spec = GeneratorSpec(num_jobs=300, elastic_fraction=0.3, num_users=5,
                         pools=(("training", 0.8), ("inference", 0.2)))
    assert generate_workload(spec, 7).jobs == generate_workload(spec, 7).jobs
    assert generate_workload(spec, 7).jobs != generate_workload(spec, 8).jobs


def test_changing_one_knob_keeps_the_other_columns() -> None:
    base = GeneratorSpec(num_jobs=200)
    a = generate_workload(base, 3).jobs
    b = generate_workload(replace(base, gpu_sizes=((8, 1.0),)), 3).jobs
    assert [(j.submit_time, j.duration, j.model) for j in a] == [
        (j.submit_time, j.duration, j.model) for j in b]
    assert {j.num_gpus for j in b} == {8}


def test_generator_statistics_follow_the_spec() -> None:
    spec = GeneratorSpec(num_jobs=20000, arrival_rate_per_hour=120, elastic_fraction=0.25,
                         gpu_sizes=((1, 0.5), (4, 0.3), (8, 0.2)))
    jobs = generate_workload(spec, 1).jobs
    gaps = np.diff([j.submit_time for j in jobs])
    assert np.mean(gaps) == pytest.approx(30, rel=0.05)
    sizes = Counter(j.num_gpus for j in jobs)
    assert sizes[1] / len(jobs) == pytest.approx(0.5, abs=0.02)
    assert sizes[8] / len(jobs) == pytest.approx(0.2, abs=0.02)
    durations = [j.duration for j in jobs]
    assert statistics.median(durations) == pytest.approx(1200, rel=0.1)
    assert max(durations) > 2 * 86400 and min(durations) >= 60
    elastic = [j for j in jobs if j.elastic]
    assert len(elastic) / len(jobs) == pytest.approx(0.25, abs=0.02)
    assert all(j.min_workers == max(1, j.requested_workers // 2)
               and j.max_workers == 2 * j.requested_workers for j in elastic)


@pytest.mark.parametrize("arrivals", ["bursty", "diurnal"])
def test_modulated_arrivals_keep_the_mean_rate(arrivals: str) -> None:
    spec = GeneratorSpec(num_jobs=20000, arrival_rate_per_hour=60, arrivals=arrivals)
    submits = np.array([j.submit_time for j in generate_workload(spec, 2).jobs])
    assert len(submits) / (submits[-1] / 3600) == pytest.approx(60, rel=0.15)
    hourly = np.bincount((submits // 3600).astype(int))
    assert hourly.std() > 1.5 * math.sqrt(60)  # far burstier than Poisson's sqrt(rate)


def test_generator_pareto_durations_and_duration_days() -> None:
    spec = GeneratorSpec(num_jobs=5000, durations="pareto", duration_days=2)
    jobs = generate_workload(spec, 4).jobs
    assert statistics.median(j.duration for j in jobs) == pytest.approx(1200, rel=0.1)
    assert jobs[-1].submit_time == pytest.approx(2 * 86400, rel=0.1)


@pytest.mark.parametrize(("change", "field"), [
    ({"num_jobs": 0}, "num_jobs"),
    ({"arrivals": "weekly"}, "arrivals"),
    ({"gpu_sizes": ((3, 1.0),), "gpus_per_worker": 2}, "gpu_sizes"),
    ({"elastic_fraction": 1.5}, "elastic_fraction"),
    ({"duration_days": 1.0, "arrival_rate_per_hour": 5.0}, "arrival_rate_per_hour"),
])
def test_generator_rejects_impossible_specs(change: dict, field: str) -> None:
    with pytest.raises(InputError) as err:
        generate_workload(replace(GeneratorSpec(), **change))
    assert err.value.field == field


# --- inference load ----------------------------------------------------------------------


def test_inference_load_has_arils_diurnal_shape(tmp_path: Path) -> None:
    load = generate_inference_load(total_servers=520, days=7, seed=5)
    busy = np.array(load.busy_servers, dtype=float)
    assert len(busy) == 7 * 288 and busy.max() <= 520
    hourly = busy.reshape(7, 24, 12).mean(axis=(0, 2))
    assert hourly.max() / hourly.min() == pytest.approx(2.2, rel=0.15)
    assert int(np.argmax(hourly)) in (21, 22) and int(np.argmin(hourly)) in (4, 5)
    assert busy.mean() / 520 == pytest.approx(0.67, abs=0.05)
    path = tmp_path / "load.csv"
    write_inference_load_csv(load, path)
    assert load_inference_load(path) == replace(load, source=str(path))
    assert load.busy_at(301) == load.busy_servers[1]


def test_inference_load_csv_validation() -> None:
    text = "time,utilization\n0,0.5\n300,0.25\n"
    assert parse_inference_load_text(text, total_servers=10).busy_servers == (5, 2)
    with pytest.raises(InputError) as err:
        parse_inference_load_text(text)
    assert err.value.field == "utilization"
    with pytest.raises(InputError) as err:
        parse_inference_load_text("time,busy_servers\n0,5\n0,6\n")
    assert (err.value.line, err.value.field) == (3, "time")
    with pytest.raises(InputError) as err:
        parse_inference_load_text("time,utilization\n0,1.5\n", total_servers=4)
    assert (err.value.line, err.value.field) == (2, "utilization")


# --- round trip --------------------------------------------------------------------------

names = st.text(st.characters(codec="utf-8", exclude_categories=("C", "Z")), min_size=1,
                max_size=12)


@st.composite
def job_specs(draw: st.DrawFn) -> JobSpec:
    per_worker = draw(st.sampled_from([1, 2, 4, 8]))
    workers = draw(st.integers(1, 16))
    low = draw(st.integers(1, workers))
    return JobSpec(
        job_id=draw(names), submit_time=draw(st.floats(0, MAX_SUBMIT_SECONDS)),
        num_gpus=per_worker * workers, duration=draw(st.floats(0, MAX_JOB_SECONDS)),
        model=draw(names), gpus_per_worker=per_worker, min_workers=low,
        max_workers=draw(st.integers(workers, 64)), pool=draw(st.none() | names),
        gpu_type=draw(st.none() | names), preemptible=draw(st.booleans()),
        checkpoint=draw(st.booleans()), priority=draw(st.integers(-5, 5)),
        user=draw(st.just("") | names), experiment=draw(st.just("") | names),
        iterations=draw(st.none() | st.integers(1, 10**9)),
    )


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), num_jobs=st.integers(1, 60),
       arrivals=st.sampled_from(["poisson", "bursty", "diurnal"]),
       durations=st.sampled_from(["lognormal", "pareto"]),
       elastic=st.floats(0, 1), per_worker=st.sampled_from([1, 2]))
def test_generated_workload_round_trips(seed: int, num_jobs: int, arrivals: str,
                                        durations: str, elastic: float,
                                        per_worker: int) -> None:
    spec = GeneratorSpec(num_jobs=num_jobs, arrivals=arrivals, durations=durations,
                         elastic_fraction=elastic, gpus_per_worker=per_worker,
                         gpu_sizes=((2, 1.0), (8, 2.0)), num_users=3,
                         pools=(("a", 1.0), ("b, with comma", 1.0)),
                         gpu_types=(("any", 1.0), ("V100", 1.0)),
                         preemptible_fraction=0.5, checkpoint_fraction=0.5)
    workload = generate_workload(spec, seed)
    assert parse_trace_text(canonical_csv_text(workload.jobs)).jobs == workload.jobs


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(job_specs(), max_size=8, unique_by=lambda j: j.job_id))
def test_any_jobs_round_trip(jobs: list[JobSpec]) -> None:
    ordered = tuple(sorted(jobs, key=lambda j: j.submit_time))
    assert parse_trace_text(canonical_csv_text(ordered)).jobs == ordered


@pytest.mark.parametrize("load", [load_trace, load_cluster_spec, load_inference_load])
def test_missing_and_non_utf8_files_are_refused_naming_the_file(load, tmp_path) -> None:
    latin1 = tmp_path / "latin1.csv"
    latin1.write_bytes("job_id,gpus\ncafé,1\n".encode("latin-1"))
    with pytest.raises(InputError, match=r"not UTF-8 text \(.* at byte 15\)") as refused:
        load(latin1)
    assert refused.value.source == str(latin1)
    with pytest.raises(InputError, match="file not found"):
        load(tmp_path / "missing.csv")
