"""The inference cluster's own demand over time: CSV reader/writer and a diurnal generator.

CSV (DESIGN.md, "Inference load"): ``time,busy_servers`` or ``time,utilization``; time in
seconds from trace start, strictly increasing; the load is a step function. Utilization is
a fraction in [0, 1] and needs the inference pool's server count to become busy servers.

The generator follows Aryl §2.1 (Figure 1, one week of a ~4,000-GPU inference cluster): a
clear diurnal pattern, the peak lasting about four hours at night, the trough before dawn,
peak-to-trough ratio ~2.2, peak utilization near 95% and a mean around 65%. The shape is an
asymmetric raised cosine: it climbs from the trough (default 05:00) to the peak (default
22:00) and falls back over the remaining hours, so peak and trough hours are exact and the
curve is smooth. With the defaults the mean utilization is ~69%.
"""

from __future__ import annotations

import csv
import io
import math
from pathlib import Path

import numpy as np

from simulation.errors import InputError
from simulation.limits import MAX_LOAD_POINTS, MAX_SEED, MAX_SUBMIT_SECONDS, check_number
from simulation.model import InferenceLoad
from simulation.workloads._rows import (
    Table,
    non_negative,
    parse_float,
    parse_int,
    read_text_file,
)

_SOURCE = "inference load generator"


def load_inference_load(path: str | Path, total_servers: int | None = None) -> InferenceLoad:
    """Read an inference load CSV; `total_servers` converts a utilization column."""
    path = Path(path)
    text = read_text_file(path)
    return parse_inference_load_text(text, str(path), total_servers)


def parse_inference_load_text(text: str, source: str = "upload",
                              total_servers: int | None = None) -> InferenceLoad:
    """Parse inference load CSV text (an upload); see the module doc for the columns."""
    if not text.strip():
        raise InputError("the file is empty", source=source)
    table = Table(text.removeprefix("\ufeff"), source)
    (i_time,) = table.require("time")
    i_busy, i_util = table.column("busy_servers"), table.column("utilization")
    if i_busy is None and i_util is None:
        raise InputError("needs a 'busy_servers' or a 'utilization' column", source=source,
                         line=table.header_line, field="busy_servers")
    if i_busy is None and total_servers is None:
        raise InputError("a utilization column needs the number of inference servers "
                         "(total_servers)", source=source, line=table.header_line,
                         field="utilization")
    times: list[float] = []
    busy: list[int] = []
    for line, cells in table:
        t = non_negative(parse_float(cells[i_time], source, line, "time"), source, line, "time")
        check_number(t, field="time", maximum=MAX_SUBMIT_SECONDS, source=source, line=line,
                     unit="s")
        if len(times) == MAX_LOAD_POINTS:
            raise InputError(f"more than {MAX_LOAD_POINTS:,} rows; a load is limited to that",
                             source=source, line=line)
        if times and t <= times[-1]:
            raise InputError(f"time {t:g} is not after the previous {times[-1]:g}",
                             source=source, line=line, field="time")
        if i_busy is not None:
            count = parse_int(cells[i_busy], source, line, "busy_servers")
            non_negative(count, source, line, "busy_servers")
            field = "busy_servers"
        else:
            share = parse_float(cells[i_util], source, line, "utilization")
            if not 0 <= share <= 1:
                raise InputError(f"utilization must be in [0, 1], got {share:g}",
                                 source=source, line=line, field="utilization")
            count = round(share * total_servers)  # type: ignore[operator]
            field = "utilization"
        if total_servers is not None and count > total_servers:
            raise InputError(f"{count} busy servers exceed the {total_servers} in the pool",
                             source=source, line=line, field=field)
        times.append(t)
        busy.append(count)
    if not times:
        raise InputError("no data rows", source=source)
    return InferenceLoad(times=tuple(times), busy_servers=tuple(busy), source=source)


def generate_inference_load(
    total_servers: int,
    days: float,
    step_seconds: float = 300,
    peak_to_trough: float = 2.2,
    peak_hour: float = 22.0,
    trough_hour: float = 5.0,
    peak_utilization: float = 0.95,
    noise: float = 0.02,
    seed: int = 0,
) -> InferenceLoad:
    """A diurnal inference load (Aryl Fig. 1); `noise` is the s.d. of utilization per step."""
    _check(total_servers > 0, "total_servers", "must be positive")
    _check(days > 0, "days", "must be positive")
    _check(step_seconds > 0, "step_seconds", "must be positive")
    _check(days * 86400 <= MAX_SUBMIT_SECONDS, "days",
           f"must be at most {MAX_SUBMIT_SECONDS / 86400:g} days")
    _check(days * 86400 / step_seconds <= MAX_LOAD_POINTS, "step_seconds",
           f"gives {days * 86400 / step_seconds:,.0f} points; a load is limited to "
           f"{MAX_LOAD_POINTS:,} (use a longer step)")
    _check(all(math.isfinite(v) for v in (peak_to_trough, peak_hour, trough_hour, noise)),
           "peak_to_trough", "peak_to_trough, peak_hour, trough_hour and noise must be finite")
    _check(0 <= seed <= MAX_SEED, "seed", f"must be in [0, {MAX_SEED}]")
    _check(peak_to_trough >= 1, "peak_to_trough", "must be at least 1")
    _check(0 < peak_utilization <= 1, "peak_utilization", "must be in (0, 1]")
    _check(noise >= 0, "noise", "must not be negative")
    rise = (peak_hour - trough_hour) % 24
    _check(rise > 0, "peak_hour", "must differ from trough_hour")
    times = np.arange(0.0, days * 86400, step_seconds)
    since_trough = (times / 3600 - trough_hour) % 24
    shape = np.where(
        since_trough < rise,
        (1 - np.cos(math.pi * since_trough / rise)) / 2,
        (1 + np.cos(math.pi * (since_trough - rise) / (24 - rise))) / 2,
    )
    trough = peak_utilization / peak_to_trough
    utilization = trough + (peak_utilization - trough) * shape
    rng = np.random.Generator(np.random.PCG64(seed))
    utilization = np.clip(utilization + rng.normal(0.0, noise, len(times)), 0.0, 1.0)
    busy = np.rint(utilization * total_servers).astype(int)
    return InferenceLoad(times=tuple(times.tolist()), busy_servers=tuple(busy.tolist()),
                         source=f"generated diurnal load (seed {seed})")


def _check(ok: bool, field: str, message: str) -> None:
    if not ok:
        raise InputError(message, source=_SOURCE, field=field)


def inference_load_csv_text(load: InferenceLoad) -> str:
    """``time,busy_servers`` CSV text; times use repr so reading back is exact."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(("time", "busy_servers"))
    writer.writerows((repr(t), b) for t, b in zip(load.times, load.busy_servers, strict=True))
    return out.getvalue()


def write_inference_load_csv(load: InferenceLoad, path: str | Path) -> None:
    Path(path).write_text(inference_load_csv_text(load), encoding="utf-8")
