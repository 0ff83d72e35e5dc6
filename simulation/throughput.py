"""How fast a job runs on a given allocation.

A job's work is measured in seconds at its requested GPU count on the reference GPU, so its
progress rate on `g` GPUs of relative speed `v` with time share `s` is
`speedup(g) / speedup(requested) * v * s`. Scaling is linear unless a model has a curve.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Protocol

from simulation.errors import InputError
from simulation.model import JobSpec


class ScalingCurve(Protocol):
    def speedup(self, gpus: int) -> float:
        """Throughput on `gpus` GPUs relative to one GPU."""
        ...


@dataclass(frozen=True, slots=True)
class Linear:
    def speedup(self, gpus: int) -> float:
        return float(gpus)


@dataclass(frozen=True, slots=True)
class PowerLaw:
    """Sub-linear scaling `g ** alpha` (alpha = 1 is linear)."""

    alpha: float = 0.9

    def speedup(self, gpus: int) -> float:
        return float(gpus) ** self.alpha


@dataclass(frozen=True, slots=True)
class Amdahl:
    """Amdahl's law with a serial (communication) fraction."""

    serial_fraction: float = 0.05

    def speedup(self, gpus: int) -> float:
        return 1.0 / (self.serial_fraction + (1.0 - self.serial_fraction) / max(gpus, 1))


@dataclass(frozen=True, slots=True)
class Table:
    """Measured speedups at some GPU counts; linear interpolation between them."""

    points: tuple[tuple[int, float], ...]

    def speedup(self, gpus: int) -> float:
        pts = sorted(self.points)
        if gpus <= pts[0][0]:
            return pts[0][1] * gpus / pts[0][0]
        for (g0, s0), (g1, s1) in zip(pts, pts[1:], strict=False):
            if gpus <= g1:
                return s0 + (s1 - s0) * (gpus - g0) / (g1 - g0)
        return pts[-1][1]


CURVES: dict[str, type] = {"linear": Linear, "power": PowerLaw, "amdahl": Amdahl}


def scaling_curve(text: str) -> ScalingCurve:
    """Parse a curve setting: `linear`, `power:ALPHA` or `amdahl:SERIAL_FRACTION`."""
    name, _, arg = text.partition(":")
    cls = CURVES.get(name.strip())
    if cls is None:
        raise InputError(
            f"unknown scaling curve {name!r} (known: {', '.join(CURVES)}, models)",
            source="settings", field="scaling",
        )
    if cls is Linear:
        return Linear()
    try:
        value = float(arg)
    except ValueError:
        raise InputError(f"{name} needs a number, as in {name}:0.9", source="settings",
                         field="scaling") from None
    if not 0 < value <= 1:
        raise InputError(f"{name}:{arg} must lie in (0, 1]", source="settings", field="scaling")
    return cls(value)


@dataclass(slots=True)
class ThroughputModel:
    """Scaling curve per model name (default linear), with memoised speedups."""

    curves: Mapping[str, ScalingCurve] = field(default_factory=dict)
    default: ScalingCurve = field(default_factory=Linear)
    _cache: dict[tuple[str, int], float] = field(default_factory=dict)

    def speedup(self, model: str, gpus: int) -> float:
        key = (model, gpus)
        value = self._cache.get(key)
        if value is None:
            value = self.curves.get(model, self.default).speedup(gpus) if gpus > 0 else 0.0
            self._cache[key] = value
        return value

    def rate(self, model: str, requested_gpus: int, gpus: int, speed: float) -> float:
        """Work-seconds per second on `gpus` GPUs of relative `speed`."""
        if gpus <= 0:
            return 0.0
        base = self.speedup(model, requested_gpus)
        return self.speedup(model, gpus) / base * speed if base > 0 else 0.0



def placement_speed(
    speed_gpus: list[tuple[float, int]], efficiency: float | None, *, spans_types: bool
) -> float:
    """Relative speed of a job whose GPUs have the given speeds.

    Synchronous training waits for the slowest GPU, unless it balances batch sizes across GPU
    types (Aryl Appendix A), which reaches `efficiency` of the GPU-weighted mean speed. The
    efficiency is charged whenever the job `spans_types`, even of equal speed: Aryl's T4
    servers count in V100-equivalents of speed 1 (`aryl_trace.py`), yet a job across V100
    and T4 still trains across types ("at most 70 % of the ideal", §7.1 Advanced).
    """
    slowest = min(speed for speed, _ in speed_gpus)
    if efficiency is None or not spans_types:
        return slowest
    gpus = sum(g for _, g in speed_gpus)
    return efficiency * sum(speed * g for speed, g in speed_gpus) / gpus


def scaling_steps_past_midpoint(workers: int, min_workers: int, max_workers: int) -> int:
    return max(0, workers - (min_workers + max_workers) // 2)


def imperfect_scaling(spec: JobSpec, workers: int, step_loss: float) -> float:
    """Throughput factor of Aryl §7.2's imperfect scaling, relative to the requested size.

    Each worker past the midpoint of [min, max] loses another `step_loss` of the ideal
    throughput (floored at 10 %); the trace's duration already holds the requested size's.
    """

    def factor(w: int) -> float:
        steps = scaling_steps_past_midpoint(w, spec.min_workers, spec.max_workers)
        return max(0.1, 1.0 - step_loss * steps)

    return factor(workers) / factor(spec.requested_workers)
