"""Seeded synthetic workloads with Philly-like statistics, for what-if runs without a trace.

Every concern (arrivals, durations, sizes, elasticity, models, pools, GPU types, flags,
users) draws from its own ``numpy.random.Generator(PCG64)`` spawned from one
``SeedSequence(seed)``, in a fixed order. Changing one knob (say, the size weights) therefore
leaves every other column of the workload unchanged, and the same spec and seed give the
same jobs on any machine. Paper-specific generators (Gandiva, SIA) reuse ``GeneratorSpec``
via ``dataclasses.replace`` and the public samplers below.

Defaults, and why:

- Durations: lognormal with median 20 min and sigma 2.0, clipped to [60 s, 14 days]. The
  Philly summary (../shared/traces/pollux_philly.csv) has median 1,144 s and a log-sd of
  2.16, i.e. most jobs take minutes and a thin tail runs for days. ``pareto`` is offered
  for a heavier tail: shape ``pareto_shape`` (default 1.3), scaled to the same median.
- Sizes: GPUs (1, 2, 4, 8, 16, 32) with weights (0.70, 0.10, 0.10, 0.07, 0.02, 0.01).
  Philly is 93% single-GPU; we keep more multi-GPU jobs, as in Muri's Philly-derived traces
  (trace4: 64% single-GPU) and Aryl's production trace, where jobs often fill a server.
- Elastic jobs (``elastic_fraction``) may run between half and twice the requested workers:
  min_workers = max(1, requested // 2), max_workers = 2 x requested (Aryl §2.2 scales
  workers around the requested count); ``duration`` stays the time at the requested size.
- Arrivals: ``poisson`` (constant rate); ``bursty``, a Markov-modulated Poisson process that
  alternates exponential ON/OFF periods (means ``burst_on_hours``/``burst_off_hours``) with
  ON rate = ``burst_factor`` x OFF rate, normalised so the long-run rate is the configured
  one; ``diurnal``, a Poisson process whose rate follows
  ``1 + diurnal_amplitude * cos(2 pi (t - peak) / 1 day)``, peaking at ``diurnal_peak_hour``
  (default 14:00: people submit during office hours).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TypeVar

import numpy as np

from simulation.errors import InputError
from simulation.limits import MAX_GPUS_PER_JOB, MAX_JOB_SECONDS, MAX_JOBS, MAX_SUBMIT_SECONDS
from simulation.model import JobSpec, Workload

DAY = 86400.0
_FLOAT_KNOBS = ("duration_days", "arrival_rate_per_hour", "burst_factor", "burst_on_hours",
                "burst_off_hours", "diurnal_amplitude", "diurnal_peak_hour",
                "median_duration_minutes", "lognormal_sigma", "pareto_shape",
                "min_duration_seconds", "max_duration_days")
CONCERNS = ("arrivals", "durations", "sizes", "elastic", "models", "pools", "gpu_types",
            "flags", "users")
ANY_GPU = "any"
T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class GeneratorSpec:
    """What to generate. Weighted choices are ``((value, weight), ...)`` pairs.

    The arrival rate is ``arrival_rate_per_hour`` if set, else ``num_jobs`` spread over
    ``duration_days``, else 100 jobs per hour. ``gpu_types`` may name ``"any"`` for jobs that
    run on any GPU (Aryl: 21% of jobs). Empty ``pools``/``gpu_types`` leave the field unset.
    """

    num_jobs: int = 1000
    duration_days: float | None = None
    arrival_rate_per_hour: float | None = None
    arrivals: str = "poisson"  # poisson | bursty | diurnal
    burst_factor: float = 4.0
    burst_on_hours: float = 1.0
    burst_off_hours: float = 3.0
    diurnal_amplitude: float = 0.5
    diurnal_peak_hour: float = 14.0
    durations: str = "lognormal"  # lognormal | pareto
    median_duration_minutes: float = 20.0
    lognormal_sigma: float = 2.0
    pareto_shape: float = 1.3
    min_duration_seconds: float = 60.0
    max_duration_days: float = 14.0
    gpu_sizes: tuple[tuple[int, float], ...] = (
        (1, 0.70), (2, 0.10), (4, 0.10), (8, 0.07), (16, 0.02), (32, 0.01))
    gpus_per_worker: int = 1
    elastic_fraction: float = 0.0
    models: tuple[tuple[str, float], ...] = (
        ("resnet50", 0.3), ("vgg16", 0.15), ("inception3", 0.15), ("bert", 0.2),
        ("gpt2", 0.1), ("dqn", 0.1))
    pools: tuple[tuple[str, float], ...] = ()
    gpu_types: tuple[tuple[str, float], ...] = ()
    preemptible_fraction: float = 1.0
    checkpoint_fraction: float = 1.0
    num_users: int = 0
    job_id_prefix: str = "job-"

    def validate(self) -> None:
        """InputError (source ``generator``, field = the knob) for an impossible spec."""
        def bad(name: str, message: str) -> InputError:
            return InputError(message, source="generator", field=name)

        if self.num_jobs < 1:
            raise bad("num_jobs", "must be at least 1")
        if self.num_jobs > MAX_JOBS:
            raise bad("num_jobs", f"{self.num_jobs:,} is over the limit of {MAX_JOBS:,}")
        for name in _FLOAT_KNOBS:
            value = getattr(self, name)
            if value is not None and not math.isfinite(value):
                raise bad(name, f"must be a finite number, got {value!r}")
        if self.duration_days is not None and self.duration_days * DAY > MAX_SUBMIT_SECONDS:
            raise bad("duration_days", f"must be at most {MAX_SUBMIT_SECONDS / DAY:g} days")
        if self.max_duration_days * DAY > MAX_JOB_SECONDS:
            raise bad("max_duration_days", f"must be at most {MAX_JOB_SECONDS / DAY:g} days")
        if self.min_duration_seconds > MAX_JOB_SECONDS:
            raise bad("min_duration_seconds", f"must be at most {MAX_JOB_SECONDS:g} s")
        if self.num_users > MAX_JOBS:
            raise bad("num_users", f"{self.num_users:,} is over the limit of {MAX_JOBS:,}")
        if any(size > MAX_GPUS_PER_JOB for size, _ in self.gpu_sizes) or (
                self.gpus_per_worker > MAX_GPUS_PER_JOB):
            raise bad("gpu_sizes", f"a job is limited to {MAX_GPUS_PER_JOB:,} GPUs")
        if self.duration_days is not None and self.arrival_rate_per_hour is not None:
            raise bad("arrival_rate_per_hour", "give either duration_days or a rate, not both")
        for name in ("duration_days", "arrival_rate_per_hour"):
            value = getattr(self, name)
            if value is not None and not value > 0:
                raise bad(name, "must be positive")
        if self.arrivals not in ("poisson", "bursty", "diurnal"):
            raise bad("arrivals", f"unknown arrival process '{self.arrivals}' "
                                  "(poisson, bursty, diurnal)")
        if self.durations not in ("lognormal", "pareto"):
            raise bad("durations", f"unknown distribution '{self.durations}' "
                                   "(lognormal, pareto)")
        for name in ("burst_factor", "burst_on_hours", "burst_off_hours",
                     "median_duration_minutes", "lognormal_sigma", "pareto_shape",
                     "min_duration_seconds", "max_duration_days", "gpus_per_worker"):
            if not getattr(self, name) > 0:
                raise bad(name, "must be positive")
        if not 0 <= self.diurnal_amplitude < 1:
            raise bad("diurnal_amplitude", "must be in [0, 1)")
        for name in ("elastic_fraction", "preemptible_fraction", "checkpoint_fraction"):
            if not 0 <= getattr(self, name) <= 1:
                raise bad(name, "must be in [0, 1]")
        if self.num_users < 0:
            raise bad("num_users", "must not be negative")
        for name in ("gpu_sizes", "models", "pools", "gpu_types"):
            choices = getattr(self, name)
            if name in ("gpu_sizes", "models") and not choices:
                raise bad(name, "needs at least one choice")
            if choices and (any(w < 0 for _, w in choices) or sum(w for _, w in choices) <= 0):
                raise bad(name, "weights must be non-negative with a positive sum")
        for size, weight in self.gpu_sizes:
            if weight > 0 and (size < 1 or size % self.gpus_per_worker):
                raise bad("gpu_sizes", f"size {size} is not a positive multiple of "
                                       f"gpus_per_worker {self.gpus_per_worker}")

    @property
    def rate_per_second(self) -> float:
        if self.arrival_rate_per_hour is not None:
            return self.arrival_rate_per_hour / 3600
        if self.duration_days is not None:
            return self.num_jobs / (self.duration_days * DAY)
        return 100 / 3600


def concern_rngs(seed: int) -> dict[str, np.random.Generator]:
    """One independent PCG64 generator per concern, stable under new concerns appended."""
    children = np.random.SeedSequence(seed).spawn(len(CONCERNS))
    return {name: np.random.Generator(np.random.PCG64(child))
            for name, child in zip(CONCERNS, children, strict=True)}


def sample_arrivals(spec: GeneratorSpec, rng: np.random.Generator) -> np.ndarray:
    """Submit times (s, ascending, first near 0) by inverting the cumulative intensity."""
    n, rate = spec.num_jobs, spec.rate_per_second
    targets = np.cumsum(rng.exponential(1.0, n))  # arrival epochs of a unit-rate process
    if spec.arrivals == "poisson":
        return targets / rate
    if spec.arrivals == "diurnal":
        # Cumulative intensity on a grid (1 minute, coarser past 1M points) that reaches
        # beyond the last target; linear interpolation inverts it.
        horizon = targets[-1] / (rate * (1 - spec.diurnal_amplitude)) + DAY
        step = max(60.0, horizon / 1e6)
        grid = np.arange(0.0, horizon + step, step)
        omega = 2 * math.pi / DAY
        phase = omega * spec.diurnal_peak_hour * 3600
        cumulative = rate * (grid + spec.diurnal_amplitude / omega
                             * (np.sin(omega * grid - phase) + math.sin(phase)))
        return np.interp(targets, cumulative, grid)
    # bursty: alternate OFF/ON periods until the intensity covers every target.
    on_fraction = spec.burst_on_hours / (spec.burst_on_hours + spec.burst_off_hours)
    off_rate = rate / (on_fraction * spec.burst_factor + (1 - on_fraction))
    times, cumulative = [0.0], [0.0]
    on = bool(rng.random() < on_fraction)
    while cumulative[-1] < targets[-1]:
        mean_hours = spec.burst_on_hours if on else spec.burst_off_hours
        length = rng.exponential(mean_hours * 3600)
        times.append(times[-1] + length)
        cumulative.append(cumulative[-1] + length * off_rate * (spec.burst_factor if on else 1))
        on = not on
    return np.interp(targets, np.array(cumulative), np.array(times))


def sample_durations(spec: GeneratorSpec, rng: np.random.Generator) -> np.ndarray:
    """Running times (s) at the requested size, heavy-tailed around the configured median."""
    median = spec.median_duration_minutes * 60
    if spec.durations == "lognormal":
        raw = rng.lognormal(math.log(median), spec.lognormal_sigma, spec.num_jobs)
    else:  # Pareto with P(X > x) = (x_m / x)^a, x_m chosen so the median is `median`
        scale = median / 2 ** (1 / spec.pareto_shape)
        raw = scale * (1 + rng.pareto(spec.pareto_shape, spec.num_jobs))
    return np.round(np.clip(raw, spec.min_duration_seconds, spec.max_duration_days * DAY))


def choose(choices: Sequence[tuple[T, float]], n: int, rng: np.random.Generator) -> list[T]:
    """`n` values drawn from weighted ``(value, weight)`` pairs."""
    weights = np.array([w for _, w in choices], dtype=float)
    picks = rng.choice(len(choices), size=n, p=weights / weights.sum())
    values = [v for v, _ in choices]
    return [values[i] for i in picks]


def generate_workload(spec: GeneratorSpec, seed: int = 0) -> Workload:
    """A synthetic workload; same (spec, seed) gives identical JobSpecs everywhere."""
    spec.validate()
    rngs = concern_rngs(seed)
    n = spec.num_jobs
    submits = np.round(sample_arrivals(spec, rngs["arrivals"]), 3)
    submits -= submits[0]  # the trace starts with its first job
    if not submits[-1] <= MAX_SUBMIT_SECONDS:
        field = "duration_days" if spec.duration_days is not None else "arrival_rate_per_hour"
        raise InputError(f"the arrivals span {submits[-1] / DAY:,.0f} days; a workload is "
                         f"limited to {MAX_SUBMIT_SECONDS / DAY:g} (raise the rate)",
                         source="generator", field=field)
    durations = sample_durations(spec, rngs["durations"])
    sizes = choose(spec.gpu_sizes, n, rngs["sizes"])
    elastic = rngs["elastic"].random(n) < spec.elastic_fraction
    models = choose(spec.models, n, rngs["models"])
    pools = choose(spec.pools, n, rngs["pools"]) if spec.pools else [None] * n
    gpu_types = choose(spec.gpu_types, n, rngs["gpu_types"]) if spec.gpu_types else [None] * n
    flags = rngs["flags"].random((n, 2))
    users = ([f"user-{k}" for k in _zipf_users(spec.num_users, n, rngs["users"])]
             if spec.num_users else [""] * n)
    width = len(str(n - 1))
    jobs = []
    for i in range(n):
        gpus = sizes[i]
        requested = gpus // spec.gpus_per_worker
        low, high = (max(1, requested // 2), 2 * requested) if elastic[i] else (0, 0)
        gpu_type = gpu_types[i]
        jobs.append(JobSpec(
            job_id=f"{spec.job_id_prefix}{i:0{width}d}",
            submit_time=float(submits[i]),
            num_gpus=gpus,
            duration=float(durations[i]),
            model=models[i],
            gpus_per_worker=spec.gpus_per_worker,
            min_workers=low,
            max_workers=high,
            pool=pools[i],
            gpu_type=None if gpu_type == ANY_GPU else gpu_type,
            preemptible=bool(flags[i, 0] < spec.preemptible_fraction),
            checkpoint=bool(flags[i, 1] < spec.checkpoint_fraction),
            user=users[i],
        ))
    return Workload(jobs=tuple(jobs), source=f"generator (seed {seed})", format="generated")


def _zipf_users(num_users: int, n: int, rng: np.random.Generator) -> np.ndarray:
    """User k submits in proportion to 1/k: a few heavy users, a long tail of light ones."""
    weights = 1 / np.arange(1, num_users + 1)
    return rng.choice(num_users, size=n, p=weights / weights.sum()) + 1

