"""The reproductions' workloads by name, so a named scenario opens exactly what a paper's
reproduction runs (`python -m simulation reproduce`).

A workload spec with a `generator` key names one of GENERATORS and gives only its knobs,
e.g. `{"generator": "aryl-trace", "scale": 0.25}`; any other spec is a `GeneratorSpec`. A
knob's type is checked here, so a wrong one is an InputError naming it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from simulation.errors import InputError
from simulation.model import Workload


@dataclass(frozen=True, slots=True)
class NamedGenerator:
    """A workload builder taking `seed` and the knobs (name -> type) it declares."""

    build: Callable[..., Workload]
    knobs: Mapping[str, type]
    description: str


def _aryl_trace(seed: int, scale: float = 0.25, every_job_elastic: bool = False) -> Workload:
    from simulation.workloads.aryl_trace import ArylTraceSpec, aryl_trace_workload

    return aryl_trace_workload(ArylTraceSpec(scale=scale, every_job_elastic=every_job_elastic),
                               seed)


def _edl_philly(seed: int, first: int = 30_000, last: int = 33_000,
                elastic: bool = True) -> Workload:
    from simulation.reproductions.edl import TRACES_DIR, edl_philly_workload
    from simulation.workloads import load_trace

    philly = load_trace(TRACES_DIR / "pollux_philly.csv")
    if not 0 <= first < last <= len(philly):
        raise InputError(f"need 0 <= first < last <= {len(philly)}", source="edl-philly",
                         field="last")
    return edl_philly_workload(philly, first, last, elastic=elastic, seed=seed)


def _gandiva_eight_model(seed: int, num_jobs: int = 1000, hours: float = 2.0) -> Workload:
    from simulation.workloads.gandiva_edl import gandiva_eight_model_workload

    return gandiva_eight_model_workload(num_jobs, hours, seed)


def _gandiva_trace_mix(seed: int, num_jobs: int = 500,
                       arrival_rate_per_hour: float = 60.0) -> Workload:
    from simulation.workloads.gandiva_edl import gandiva_trace_mix_workload

    return gandiva_trace_mix_workload(num_jobs, arrival_rate_per_hour, seed)


def _muri_trace(seed: int, trace: int = 3) -> Workload:
    from simulation.reproductions.muri import TRACES, TRACES_DIR
    from simulation.workloads import load_trace

    if trace not in TRACES:
        raise InputError(f"must be one of {', '.join(map(str, TRACES))}", source="muri-trace",
                         field="trace")
    return load_trace(TRACES_DIR / f"muri_trace{trace}.csv")


def _sia_users(seed: int, queues: int = 4, days: float = 24.0, mix: str = "alike",
               time_zones: str = "shared") -> Workload:
    from simulation.workloads.sia import QUEUE_MIXES, TIME_ZONES, SiaSetup, generate_sia_workload

    if mix not in QUEUE_MIXES:
        raise InputError(f"must be one of {', '.join(QUEUE_MIXES)}", source="sia-users",
                         field="mix")
    if time_zones not in TIME_ZONES:
        raise InputError(f"must be one of {', '.join(TIME_ZONES)}", source="sia-users",
                         field="time_zones")
    if mix == "table12" and queues != 4:
        raise InputError("Table 12's mix has 4 queues", source="sia-users", field="queues")
    return generate_sia_workload(SiaSetup(queues=queues, days=days, arrivals="closed-loop",
                                          queue_mix=mix, time_zones=time_zones), seed)


GENERATORS: dict[str, NamedGenerator] = {
    "sia-users": NamedGenerator(_sia_users, {"queues": int, "days": float, "mix": str,
                                             "time_zones": str},
                                "SIA's setup with closed-loop users (SIA §3); mix: alike, "
                                "varied (§6.1) or table12; time_zones: shared or per-queue"),
    "muri-trace": NamedGenerator(_muri_trace, {"trace": int},
                                 "one of Muri's four Philly traces, as shipped (seed unused)"),
    "aryl-trace": NamedGenerator(_aryl_trace, {"scale": float, "every_job_elastic": bool},
                                 "Aryl's production trace, calibrated (aryl_trace.py)"),
    "edl-philly": NamedGenerator(_edl_philly, {"first": int, "last": int, "elastic": bool},
                                 "Philly jobs first..last, elastic 0.5p-2p (EDL §6.3)"),
    "gandiva-eight-model": NamedGenerator(_gandiva_eight_model,
                                          {"num_jobs": int, "hours": float},
                                          "Gandiva §6.3's eight-model mix"),
    "gandiva-trace-mix": NamedGenerator(_gandiva_trace_mix,
                                        {"num_jobs": int, "arrival_rate_per_hour": float},
                                        "Gandiva §6.4's CV/NLP/Speech trace mix"),
}


def is_named(spec: Mapping[str, Any]) -> bool:
    return isinstance(spec, Mapping) and "generator" in spec


def named_workload(spec: Mapping[str, Any], seed: int = 0) -> Workload:
    """The workload `spec` names; InputError names an unknown generator, knob or type."""
    name = spec.get("generator")
    if name not in GENERATORS:
        raise InputError(f"unknown generator {name!r} (known: {', '.join(GENERATORS)})",
                         source="generator", field="generator")
    generator = GENERATORS[name]
    knobs: dict[str, Any] = {}
    for key, value in spec.items():
        if key == "generator":
            continue
        kind = generator.knobs.get(key)
        if kind is None:
            raise InputError(f"unknown setting of {name} (known: "
                             f"{', '.join(generator.knobs)})", source="generator", field=key)
        if not isinstance(value, kind) or isinstance(value, bool) and kind is not bool:
            if kind is float and isinstance(value, int) and not isinstance(value, bool):
                value = float(value)
            else:
                raise InputError(f"expected {kind.__name__}, got {value!r}",
                                 source="generator", field=key)
        knobs[key] = value
    if "scale" in knobs and not 0 < knobs["scale"] <= 1:
        raise InputError("must be in (0, 1]", source="generator", field="scale")
    return generator.build(seed, **knobs)
