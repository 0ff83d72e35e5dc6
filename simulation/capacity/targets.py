"""Targets (`metric <= bound`), how their values read, and the cost model of a size."""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from simulation.errors import InputError
from simulation.metrics import time_unit
from simulation.model import ClusterSpec

SLOWED_SHARE = "slowed_share"
TIME_METRICS = tuple(f"{m}.{s}" for m in ("jct", "queuing")
                     for s in ("mean", "median", "p95", "p99")) + ("makespan",)
RATIO_METRICS = ("preemption_ratio", "avg_queue_length", "blocking_index")
SHARE_METRICS = ("preempted_share", SLOWED_SHARE)
TARGET_METRICS = TIME_METRICS + RATIO_METRICS + SHARE_METRICS
_TIME_SUFFIXES = {"s": 1.0, "min": 60.0, "h": 3600.0, "d": 86400.0}
RULE = ("a size meets the targets when, for every target, the mean over the seeds is at most "
        "the bound, and every job of every seed finished")


@dataclass(frozen=True, slots=True)
class Target:
    """`metric <= bound`; `metric` a summary path (`queuing.p95`) or `slowed_share`; time
    bounds in seconds, shares as fractions."""

    metric: str
    bound: float

    @classmethod
    def parse(cls, text: str, *, field: str = "target") -> Target:
        """`queuing.p95<=3600`, `queuing.p95<=1h`, `jct.mean<=6h`, `slowed_share<=1%`."""
        metric, sep, raw = text.partition("<=")
        metric, raw = metric.strip(), raw.strip()
        if not sep or not metric or not raw:
            raise InputError(f"expected METRIC<=BOUND, got {text!r}", field=field)
        if metric not in TARGET_METRICS:
            raise InputError(f"unknown metric {metric!r} (known: {', '.join(TARGET_METRICS)})",
                             field=field)
        match = re.fullmatch(r"([0-9]*\.?[0-9]+(?:[eE][+-]?[0-9]+)?)\s*(%|s|min|h|d)?", raw)
        if match is None:
            raise InputError(f"bound {raw!r} is not a number (a time may end in s, min, h "
                             "or d, a share in %)", field=field)
        number, suffix = float(match.group(1)), match.group(2)
        if suffix == "%":
            if metric not in SHARE_METRICS:
                raise InputError(f"{metric} is not a share; % applies to "
                                 f"{', '.join(SHARE_METRICS)}", field=field)
            number /= 100.0
        elif suffix:
            if metric not in TIME_METRICS:
                raise InputError(f"{metric} is not a time; {suffix!r} applies to "
                                 f"{', '.join(TIME_METRICS)}", field=field)
            number *= _TIME_SUFFIXES[suffix]
        return cls.checked(metric, number, field=field)

    @classmethod
    def checked(cls, metric: str, bound: Any, *, field: str = "target") -> Target:
        if metric not in TARGET_METRICS:
            raise InputError(f"unknown metric {metric!r} (known: {', '.join(TARGET_METRICS)})",
                             field=field)
        if isinstance(bound, bool) or not isinstance(bound, int | float) or not math.isfinite(
                bound) or bound < 0:
            raise InputError(f"bound must be a finite number >= 0, got {bound!r}", field=field)
        if metric in SHARE_METRICS and bound > 1:
            raise InputError(f"{metric} is a share in [0, 1], got {bound!r}", field=field)
        return cls(metric, float(bound))

    def value(self, summary: Mapping[str, Any]) -> float:
        node: Any = summary
        for key in self.metric.split("."):
            node = node[key]
        return float(node)

    def __str__(self) -> str:
        return f"{self.metric} <= {format_value(self.metric, self.bound)}"

    def to_dict(self) -> dict[str, Any]:
        return {"metric": self.metric, "bound": self.bound, "text": str(self)}


def format_value(metric: str, value: float | None) -> str:
    """A metric's value as people read it: times in s, min or h, shares in %."""
    if value is None:
        return "–"
    if metric in TIME_METRICS:
        unit, scale = time_unit(value)
        return f"{value / scale:,.4g} {unit}"
    if metric in SHARE_METRICS:
        return f"{value:.2%}"
    return f"{value:,.4g}"


def format_mean_ci(metric: str, cell: Mapping[str, Any]) -> str:
    """`mean ± half-width` of a `mean_ci95` cell, both in the mean's unit."""
    mean, half = cell["mean"], cell["ci95"]
    if mean is None:
        return "–"
    if half is None:
        return format_value(metric, mean)
    if metric in TIME_METRICS:
        unit, scale = time_unit(mean)
        return f"{mean / scale:,.1f} ± {half / scale:,.1f} {unit}"
    if metric in SHARE_METRICS:
        return f"{mean:.2%} ± {half:.2%}"
    return f"{mean:,.3f} ± {half:,.3f}"


@dataclass(frozen=True, slots=True)
class CostModel:
    """Price per GPU-hour of each GPU type, and an optional fixed price per server-hour."""

    gpu_hour: Mapping[str, float]
    server_hour: Mapping[str, float] = field(default_factory=dict)

    @classmethod
    def checked(cls, gpu_hour: Mapping[str, Any], server_hour: Mapping[str, Any] | None = None,
                *, field: str = "costs") -> CostModel:
        prices = {}
        for where, table in (("gpu_hour", gpu_hour), ("server_hour", server_hour or {})):
            for gpu_type, price in table.items():
                if isinstance(price, bool) or not isinstance(price, int | float) or not (
                        math.isfinite(price) and price >= 0):
                    raise InputError(f"price must be a finite number >= 0, got {price!r}",
                                     field=f"{field}.{where}.{gpu_type}")
            prices[where] = {str(k): float(v) for k, v in table.items()}
        return cls(prices["gpu_hour"], prices["server_hour"])

    def check(self, cluster: ClusterSpec, *, field: str = "costs") -> None:
        """Every GPU type a pool uses has a price: a missing one would read as free."""
        for pool in cluster.pools:
            if pool.gpu_type not in self.gpu_hour:
                raise InputError(f"no price per GPU-hour for {pool.gpu_type} (pool "
                                 f"{pool.name!r})", field=f"{field}.gpu_hour")

    def server_cost(self, gpu_type: str, gpus_per_server: int) -> float:
        return gpus_per_server * self.gpu_hour[gpu_type] + self.server_hour.get(gpu_type, 0.0)

    def per_hour(self, cluster: ClusterSpec, *, charged: Mapping[str, int] | None = None
                 ) -> float:
        """Cost per hour; `charged` overrides how many servers of a pool are paid for."""
        charged = charged or {}
        return sum(charged.get(pool.name, pool.servers)
                   * self.server_cost(pool.gpu_type, pool.gpus_per_server)
                   for pool in cluster.pools)

    def to_dict(self) -> dict[str, Any]:
        return {"gpu_hour": dict(self.gpu_hour), "server_hour": dict(self.server_hour)}


def parse_pairs(pairs: Iterable[str], *, field: str) -> dict[str, float]:
    """`V100=2.5` pairs (the CLI's `--cost`) as a mapping; InputError names the argument."""
    out = {}
    for pair in pairs:
        key, sep, raw = pair.partition("=")
        try:
            out[key.strip()] = float(raw)
        except ValueError:
            sep = ""
        if not sep or not key.strip():
            raise InputError(f"expected GPU_TYPE=PRICE, got {pair!r}", field=field)
    return out
