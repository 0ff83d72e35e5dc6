"""The input limits of `simulation/limits.py`: each holds exactly at its value (the limit is
accepted, one past it refused naming the field), and the README's "Limits" table lists every
one with its value."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from simulation import limits
from simulation.decide import decide_reclaim
from simulation.errors import InputError
from simulation.limits import (
    MAX_DEPTH,
    MAX_GPUS_PER_JOB,
    MAX_GPUS_PER_SERVER,
    MAX_JOB_SECONDS,
    MAX_NAME_CHARS,
    MAX_POOLS,
    MAX_SEED,
    MAX_SERVERS_PER_POOL,
    MAX_SUBMIT_SECONDS,
    nesting_depth_exceeds,
)
from simulation.runner import engine_config
from simulation.workloads import generate_inference_load, parse_cluster_spec_text
from simulation.workloads import parse_trace_text as trace

README = Path(__file__).resolve().parents[2] / "README.md"


def _row(job: str) -> str:
    return f"job_id,submit_time,num_gpus,duration\na,0,1,60\n{job}\n"


def _spec(*, name: str = "c", pool: str = "p", servers: int = 1, gpus: int = 8,
          pools: int = 1) -> str:
    rows = "".join(f"  - {{name: {pool}{i or ''}, kind: training, gpu_type: V100, "
                   f"servers: {servers}, gpus_per_server: {gpus}}}\n" for i in range(pools))
    return f"name: {name}\npools:\n{rows}"


def _refused(call, field: str) -> InputError:
    with pytest.raises(InputError) as refused:
        call()
    assert refused.value.field == field, refused.value
    return refused.value


@pytest.mark.parametrize(("column", "at_limit", "past_limit"), [
    ("duration", f"b,0,1,{MAX_JOB_SECONDS:.0f}", f"b,0,1,{MAX_JOB_SECONDS + 1:.0f}"),
    ("submit_time", f"b,{MAX_SUBMIT_SECONDS:.0f},1,60", f"b,{MAX_SUBMIT_SECONDS + 1:.0f},1,60"),
    ("num_gpus", f"b,0,{MAX_GPUS_PER_JOB},60", f"b,0,{MAX_GPUS_PER_JOB + 1},60"),
])
def test_trace_limits_hold_at_their_value(column, at_limit, past_limit):
    assert len(trace(_row(at_limit)).jobs) == 2
    error = _refused(lambda: trace(_row(past_limit)), column)
    assert error.line == 3


def test_a_trace_row_of_1e308_seconds_is_refused_naming_line_and_field():
    error = _refused(lambda: trace(_row("b,10,1,1e308")), "duration")
    assert error.line == 3 and "366 days" in error.message


def test_text_no_database_holds_is_refused_in_a_trace():
    _refused(lambda: trace(_row("b\x00c,0,1,60")), "job_id")


@pytest.mark.parametrize(("field", "at_limit", "past_limit"), [
    ("pools[0].gpus_per_server", {"gpus": MAX_GPUS_PER_SERVER},
     {"gpus": MAX_GPUS_PER_SERVER + 1}),
    ("pools[0].servers", {"servers": MAX_SERVERS_PER_POOL},
     {"servers": MAX_SERVERS_PER_POOL + 1}),
    ("pools", {"pools": MAX_POOLS}, {"pools": MAX_POOLS + 1}),
    ("name", {"name": "c" * MAX_NAME_CHARS}, {"name": "c" * (MAX_NAME_CHARS + 1)}),
    ("pools[0].name", {"pool": "p" * MAX_NAME_CHARS}, {"pool": "p" * (MAX_NAME_CHARS + 1)}),
])
def test_cluster_spec_limits_hold_at_their_value(field, at_limit, past_limit):
    parse_cluster_spec_text(_spec(**at_limit))
    _refused(lambda: parse_cluster_spec_text(_spec(**past_limit)), field)


def test_a_deeply_nested_spec_is_an_input_error_not_a_recursion_error():
    with pytest.raises(InputError, match="nested too deeply"):
        parse_cluster_spec_text("[" * 10_000 + "]" * 10_000)
    with pytest.raises(InputError, match="nested too deeply"):
        trace("[" * 10_000 + "]" * 10_000)  # a Philly JSON job log


def test_nesting_depth_counts_levels_of_lists_and_dicts():
    assert not nesting_depth_exceeds(_nested(MAX_DEPTH))
    assert nesting_depth_exceeds(_nested(MAX_DEPTH + 1))
    assert nesting_depth_exceeds({"a": _nested(MAX_DEPTH)})  # a dict is a level too


def _nested(levels: int) -> list:
    value: list = []
    for _ in range(levels - 1):
        value = [value]
    return value


def test_snapshot_limits_hold_at_their_value():
    def request(gpus: int, seed: int) -> dict:
        return {"count": 1, "strategy": "scf", "seed": seed, "state": {"servers": [
            {"id": f"s{i}", "pool": "inference", "gpus": gpus, "gpu_type": "T4",
             "on_loan": True} for i in range(2)]}}

    decide_reclaim(request(MAX_GPUS_PER_SERVER, MAX_SEED))
    _refused(lambda: decide_reclaim(request(MAX_GPUS_PER_SERVER + 1, 0)),
             "state.servers[0].gpus")
    _refused(lambda: decide_reclaim(request(8, MAX_SEED + 1)), "seed")


def test_engine_intervals_have_a_floor_and_numbers_must_be_finite():
    engine_config({"sample_interval": "60", "cadence": "1"}, seed=0)
    _refused(lambda: engine_config({"sample_interval": "59"}, seed=0), "sample_interval")
    _refused(lambda: engine_config({"cadence": "0.5"}, seed=0), "cadence")
    _refused(lambda: engine_config({"restart_overhead": "nan"}, seed=0), "restart_overhead")


def test_a_generated_inference_load_is_bounded():
    generate_inference_load(10, days=366, step_seconds=300)
    _refused(lambda: generate_inference_load(10, days=367), "days")
    _refused(lambda: generate_inference_load(10, days=1, step_seconds=0.1), "step_seconds")


# --- the README lists every limit with its value ---------------------------------------------

def _shown(value: float) -> list[str]:
    if isinstance(value, float) and value >= 1e9:
        return [f"{value:.0e}".replace("+", "")]
    return [f"{int(value):,}"]


def test_the_readme_lists_every_limit_with_its_value():
    text = README.read_text()
    section = text[text.index("## Limits"):]
    section = section[:section.index("\n## ", 1)]
    names = [name for name in vars(limits) if re.fullmatch(r"(MAX|MIN)_[A-Z_]+", name)]
    assert names
    for name in names:
        rows = [line for line in section.splitlines() if f"`{name}`" in line]
        assert rows, f"README's Limits table has no row for {name}"
        value = getattr(limits, name)
        values = value.values() if isinstance(value, dict) else [value]
        for one in values:
            shown = [f"{one:g} s"] if isinstance(value, dict) else _shown(one)
            assert any(s in rows[0] for s in shown), f"{name}: {shown} not in {rows[0]!r}"
