"""Synthetic workloads in SIA's setup (SIA §4.1, §6.1 and Appendix A.1).

- Queues: `queues` quota pools (4–8 in the paper) of `gpus_per_queue` GPUs (8), one
  physical cluster of V100 servers with 8 GPUs each.
- Per-queue load: uniform in [0.6, 1.1] (§6.1; A.1 used [0.6, 0.95]); the load is
  GPU-time arriving per unit time over the quota.
- Bursty arrivals (A.1): jobs arrive in bursts whose total width is uniform in
  [1, queue size]; bursts follow a Poisson process whose rate meets the queue's load.
  Jobs of one burst arrive within `burst_spread_seconds` of its start.
- Skewed durations (A.1): bimodal, uniform in [sqrt(10), 100] minutes with probability
  0.8 and in [100, 1000] minutes with probability 0.2.
- Widths (A.1): 1, 2, 4 or 8 GPUs with probabilities 0.7, 0.1, 0.15, 0.05, drawn among
  the sizes that still fit the burst's remaining width.
- Experiment tags (for SIA's JobDuration predictor, §5.4.2): a burst is one experiment;
  with probability `repeat_experiment` it re-issues the queue's previous experiment
  (closed-loop behaviour, §2). An experiment has one base duration from the bimodal law;
  its jobs vary around it by a lognormal factor (sigma `experiment_sigma`).

Every concern draws from its own generator spawned from one SeedSequence, so the same
spec and seed give the same jobs on any machine.

`queue_mix` says how the queues differ (issue #16). "alike" (default): every queue draws
from A.1's distributions above with `gpus_per_queue` GPUs, the synthetic setup of SIA's
Figure 5. "varied": SIA §6.1 picks each queue "independently at random from the traces",
so queues differ, as Table 12's four do (median widths 1, 8, 1, 4; median durations 86,
1,340, 2 and 1,280 minutes; quotas 3, 16, 2, 8). Each queue draws a median width uniformly
from 1, 2, 4, 8 and a median duration log-uniformly in [2, 1,340] minutes (Table 12's
range); its widths weigh 0.7 on the median and 0.1 on each other size, its durations are
A.1's bimodal law scaled to the median, and its quota is `gpus_per_queue` or two of its
median jobs, whichever is more (Table 12's quotas hold 2-3 median jobs); a burst's jobs are
drawn from the queue's widths until one does not fit its total (`_burst_widths`). A median
is of the experiments users draw: users of short experiments come back sooner, so a long
queue's jobs have a somewhat lower median. "table12": Table 12's four queues themselves,
with its loads (0.48, 0.63, 0.67, 0.65) instead of draws.

`arrivals="closed-loop"` replaces the Poisson bursts with SIA §3's users (issue #16: with
memoryless arrivals WillJobsArrive has nothing to learn, ROC AUC 0.5). Each queue has
`users` users, or by default as many as its load needs: full-time users are added until
their GPU-time reaches the queue's load, and the last one works part-time (each of its
bursts kept with the probability that meets the load). SIA §6.1 draws each queue's
average load in [0.6, 1.1] and scales the quota to it; a whole number of users sized from
pilots missed that draw by up to a quarter (seed 0: 0.94 for a drawn 0.76), which put
every queue of the evaluated days in a backlog that no sharing without slowdowns can
drain (benchmarks/README.md, bench_sia.py). A user submits
a burst, studies its results — waits until its longest job would end had it started at
once (the generator cannot know the queueing), then thinks for an exponential
`think_minutes` — and submits the next burst, re-running the same experiment with
probability `repeat_experiment`. Users work weekdays in `workday` hours; a submission that
falls outside them waits for the next working morning (plus up to an hour), unless the
user works on, with probability `off_hours_share`: a daily and a weekly rhythm, with
arrivals that follow completions. `time_zones` says whose clock those hours are on:
"shared" (default), every queue's users in one time zone, so every queue's mornings come at
once; "per-queue", each queue's users in a time zone of their own, a whole number of hours
ahead drawn uniformly in [0, 24) (`utc_offsets`). SIA's CloudML is a public cloud whose
pools are different customers', and §5.4.1 lends a pool's quota while it is idle ("pool x
will be idle from 3p to 5p"): with one clock for all, every pool's idle night is everyone's
and there is little to lend when a morning's backlog forms.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from simulation.model import ClusterSpec, GpuType, JobSpec, PoolKind, PoolSpec, Workload

DAY = 86400.0
WIDTHS = np.array([1, 2, 4, 8])
WIDTH_WEIGHTS = np.array([0.7, 0.1, 0.15, 0.05])
SHORT_MINUTES = (math.sqrt(10.0), 100.0)
LONG_MINUTES = (100.0, 1000.0)
LONG_SHARE = 0.2
# A.1's median duration: the short mode holds 0.8 of the mass, so the median is 0.5 / 0.8
# of the way through it.
A1_MEDIAN_MINUTES = SHORT_MINUTES[0] + 0.5 / (1 - LONG_SHARE) * (SHORT_MINUTES[1]
                                                                 - SHORT_MINUTES[0])
VARIED_MEDIAN_MINUTES = (2.0, 1340.0)  # Table 12's shortest and longest queue medians
QUEUE_MIXES = ("alike", "varied", "table12")
TIME_ZONES = ("shared", "per-queue")


@dataclass(frozen=True, slots=True)
class QueueProfile:
    """What one queue's jobs look like (module docstring, `queue_mix`)."""

    quota: int  # GPUs
    width_weights: tuple[float, ...] = tuple(WIDTH_WEIGHTS)  # of widths 1, 2, 4, 8
    median_minutes: float = A1_MEDIAN_MINUTES
    load: float | None = None  # None: drawn from `SiaSetup.load_range`
    fill_burst: bool = True  # A.1: a burst's widths add up to its total (`_burst_widths`)

    @property
    def duration_scale(self) -> float:
        """The factor on A.1's bimodal durations that gives this queue's median."""
        return self.median_minutes / A1_MEDIAN_MINUTES


def _centred_weights(median_width: int) -> tuple[float, ...]:
    return tuple(0.7 if width == median_width else 0.1 for width in WIDTHS)


# Table 12: (median width, median minutes, quota, load) of its four queues.
TABLE_12_QUEUES = ((1, 86.0, 3, 0.48), (8, 1340.0, 16, 0.63), (1, 2.0, 2, 0.67),
                   (4, 1280.0, 8, 0.65))


@dataclass(frozen=True, slots=True)
class SiaSetup:
    """What to generate; defaults are the paper's 3-day, 4-queue, 8-GPU setup."""

    queues: int = 4
    gpus_per_queue: int = 8
    gpus_per_server: int = 8
    days: float = 3.0
    load_range: tuple[float, float] = (0.6, 1.1)
    burst_spread_seconds: float = 60.0
    repeat_experiment: float = 0.5
    experiment_sigma: float = 0.25
    arrivals: str = "poisson"  # or "closed-loop" (module docstring)
    queue_mix: str = "alike"  # or "varied", "table12" (module docstring)
    users: int | None = None  # closed loop: users per queue; None: sized to the queue's load
    think_minutes: float = 30.0
    workday: tuple[float, float] = (9.0, 19.0)  # hours of a weekday users submit in
    off_hours_share: float = 0.15
    time_zones: str = "shared"  # or "per-queue" (module docstring)


def queue_names(setup: SiaSetup) -> list[str]:
    return [f"q{i}" for i in range(1, setup.queues + 1)]


def queue_profiles(setup: SiaSetup, seed: int = 0) -> list[QueueProfile]:
    """Each queue's profile under `setup.queue_mix`; "varied" draws them from `seed`."""
    if setup.queue_mix == "alike":
        return [QueueProfile(setup.gpus_per_queue)] * setup.queues
    if setup.queue_mix == "table12":
        if setup.queues != len(TABLE_12_QUEUES):
            raise ValueError(f"queue_mix 'table12' has {len(TABLE_12_QUEUES)} queues, "
                             f"not {setup.queues}")
        return [QueueProfile(quota, _centred_weights(width), minutes, load, fill_burst=False)
                for width, minutes, quota, load in TABLE_12_QUEUES]
    if setup.queue_mix != "varied":
        raise ValueError(f"queue_mix must be one of {', '.join(QUEUE_MIXES)}, "
                         f"got {setup.queue_mix!r}")
    rng = np.random.default_rng(np.random.SeedSequence(seed).spawn(6)[5])
    low, high = np.log(VARIED_MEDIAN_MINUTES)
    profiles = []
    for _ in range(setup.queues):
        width = int(rng.choice(WIDTHS))
        minutes = float(np.exp(rng.uniform(low, high)))
        profiles.append(QueueProfile(max(setup.gpus_per_queue, 2 * width),
                                     _centred_weights(width), minutes, fill_burst=False))
    return profiles


def sia_cluster(setup: SiaSetup, seed: int = 0) -> ClusterSpec:
    """One physical cluster split into `queues` quota pools, each of its profile's quota:
    servers of `gpus_per_server` GPUs (a smaller quota is one server of that many)."""
    pools = []
    for name, profile in zip(queue_names(setup), queue_profiles(setup, seed), strict=True):
        servers = max(1, math.ceil(profile.quota / setup.gpus_per_server))
        per_server = min(setup.gpus_per_server, profile.quota)
        pools.append(PoolSpec(name, PoolKind.QUOTA, "V100", servers, per_server,
                              quota_gpus=profile.quota))
    return ClusterSpec(f"sia-{setup.queues}q", {"V100": GpuType("V100", 1.0, 32.0)},
                       tuple(pools))


def utc_offsets(setup: SiaSetup, rng: np.random.Generator) -> list[float]:
    """Seconds each queue's users' clock runs ahead of the simulation's: none when they share
    one time zone, else a whole number of hours drawn uniformly in [0, 24) per queue."""
    if setup.time_zones == "shared":
        return [0.0] * setup.queues
    if setup.time_zones not in TIME_ZONES:
        raise ValueError(f"time_zones must be one of {', '.join(TIME_ZONES)}, "
                         f"got {setup.time_zones!r}")
    return [3600.0 * float(h) for h in rng.integers(0, 24, setup.queues)]


def _bimodal_seconds(rng: np.random.Generator, n: int, scale: float = 1.0) -> np.ndarray:
    long = rng.random(n) < LONG_SHARE
    short = rng.uniform(*SHORT_MINUTES, n)
    longer = rng.uniform(*LONG_MINUTES, n)
    return np.where(long, longer, short) * (60.0 * scale)


def _mean_burst_gpu_seconds(profile: QueueProfile) -> float:
    mean_minutes = (1 - LONG_SHARE) * sum(SHORT_MINUTES) / 2 + LONG_SHARE * sum(LONG_MINUTES) / 2
    return (1 + profile.quota) / 2 * mean_minutes * profile.duration_scale * 60.0


def _burst_widths(total: int, profile: QueueProfile, rng: np.random.Generator) -> list[int]:
    """The widths of a burst's jobs. A.1's (`fill_burst`): drawn among the sizes that still
    fit until they add up to `total`. Otherwise drawn from the queue's weights until one does
    not fit (the first always goes in): filling the rest with small jobs would make a queue
    of 8-GPU jobs mostly 1-GPU."""
    widths: list[int] = []
    remaining = total
    weights = np.array(profile.width_weights) * (WIDTHS <= profile.quota)
    while remaining > 0:
        if profile.fill_burst:
            fit = weights * (WIDTHS <= remaining)
            width = int(rng.choice(WIDTHS, p=fit / fit.sum()))
        else:
            width = int(rng.choice(WIDTHS, p=weights / weights.sum()))
            if width > remaining and widths:
                break
        widths.append(width)
        remaining -= width
    return widths


def working_time(t: float, setup: SiaSetup, rng: np.random.Generator,
                 utc_offset: float = 0.0) -> float:
    """When a user who wants to submit at `t` does: at once in working hours (weekdays
    from day 0, hours in `setup.workday`, both on the user's clock, `utc_offset` seconds
    ahead of the simulation's) or with probability `off_hours_share`, else the next working
    morning plus up to an hour."""
    return _local_working_time(t + utc_offset, setup, rng) - utc_offset


def _local_working_time(t: float, setup: SiaSetup, rng: np.random.Generator) -> float:
    day, hour = divmod(t, DAY)
    start, end = setup.workday
    weekday = int(day) % 7 < 5
    if (weekday and start * 3600 <= hour < end * 3600) or rng.random() < setup.off_hours_share:
        return t
    day = int(day) + (hour >= start * 3600 or not weekday)
    while day % 7 >= 5:
        day += 1
    return day * DAY + start * 3600 + rng.uniform(0.0, 3600.0)


def _user_bursts(setup: SiaSetup, profile: QueueProfile, horizon: float, utc_offset: float,
                 rng: np.random.Generator) -> list[tuple[float, int, list[int], list[float]]]:
    """One closed-loop user's bursts: (submit time, experiment number, widths, seconds)."""
    bursts = []
    experiment, base = 0, 0.0
    t = working_time(rng.uniform(0.0, DAY), setup, rng, utc_offset)
    while t < horizon:
        if experiment == 0 or rng.random() >= setup.repeat_experiment:
            experiment += 1
            base = float(_bimodal_seconds(rng, 1, profile.duration_scale)[0])
        widths = _burst_widths(int(rng.integers(1, profile.quota + 1)), profile, rng)
        seconds = [max(60.0, base * float(f))
                   for f in np.exp(rng.normal(0.0, setup.experiment_sigma, len(widths)))]
        bursts.append((t, experiment, widths, seconds))
        t += max(seconds) + rng.exponential(setup.think_minutes * 60.0)
        t = working_time(t, setup, rng, utc_offset)
    return bursts


def _closed_loop_jobs(name: str, load: float, profile: QueueProfile, setup: SiaSetup,
                      horizon: float, utc_offset: float,
                      rng: np.random.Generator) -> list[JobSpec]:
    """A queue's jobs from its users (module docstring); ids `<queue>-<n>`."""
    target = load * profile.quota * horizon  # GPU-seconds the queue's load asks for
    rows = []
    total = 0.0
    user = 0
    while (setup.users is None and total < target) or (setup.users is not None
                                                         and user < setup.users):
        user += 1
        bursts = _user_bursts(setup, profile, horizon, utc_offset, rng)
        work = sum(w * s for _, _, widths, secs in bursts
                   for w, s in zip(widths, secs, strict=True))
        part_time = setup.users is None and total + work > target and work > 0
        keep = (target - total) / work if part_time else 1.0
        for t, experiment, widths, seconds in bursts:
            offsets = np.sort(rng.uniform(0, setup.burst_spread_seconds, len(widths)))
            if part_time and rng.random() >= keep:
                continue
            for width, offset, duration in zip(widths, offsets, seconds, strict=True):
                rows.append((round(float(t + offset), 3), width, round(duration, 3),
                             f"{name}-u{user}-e{experiment}"))
                total += width * duration
        if part_time or work <= 0:
            break  # the part-time user is the last; one with no work means none would add any
    rows.sort()
    return [JobSpec(job_id=f"{name}-{n}", submit_time=submit, num_gpus=width,
                    duration=duration, pool=name, preemptible=False, experiment=experiment)
            for n, (submit, width, duration, experiment) in enumerate(rows, 1)]


def generate_sia_workload(setup: SiaSetup = SiaSetup(), seed: int = 0) -> Workload:
    """Jobs for every queue of `setup`, sorted by submit time; ids are `<queue>-<n>`."""
    loads_rng, arrivals_rng, widths_rng, durations_rng, tags_rng, zones_rng = (
        np.random.default_rng(s) for s in np.random.SeedSequence(seed).spawn(6)
    )
    horizon = setup.days * DAY
    profiles = queue_profiles(setup, seed)
    drawn = loads_rng.uniform(*setup.load_range, setup.queues)
    loads = [float(d) if p.load is None else p.load for d, p in zip(drawn, profiles, strict=True)]
    queues = list(zip(queue_names(setup), loads, profiles, strict=True))
    jobs: list[JobSpec] = []
    if setup.arrivals == "closed-loop":
        for (name, load, profile), offset in zip(queues, utc_offsets(setup, zones_rng),
                                                 strict=True):
            jobs += [job for job in _closed_loop_jobs(name, load, profile, setup, horizon,
                                                      offset, arrivals_rng)
                     if job.submit_time < horizon]
        jobs.sort(key=lambda j: (j.submit_time, j.job_id))
        return Workload(tuple(jobs), source=f"sia-generator(closed-loop, seed={seed})",
                        format="sia")
    if setup.arrivals != "poisson":
        raise ValueError(f"arrivals must be poisson or closed-loop, got {setup.arrivals!r}")
    for name, load, profile in queues:
        rate = load * profile.quota / _mean_burst_gpu_seconds(profile)  # bursts per second
        t = arrivals_rng.exponential(1 / rate)
        experiment = 0
        base = 0.0
        count = 0
        while t < horizon:
            if experiment == 0 or tags_rng.random() >= setup.repeat_experiment:
                experiment += 1
                base = float(_bimodal_seconds(durations_rng, 1, profile.duration_scale)[0])
            widths = _burst_widths(int(widths_rng.integers(1, profile.quota + 1)), profile,
                                   widths_rng)
            offsets = np.sort(arrivals_rng.uniform(0, setup.burst_spread_seconds, len(widths)))
            factors = np.exp(durations_rng.normal(0.0, setup.experiment_sigma, len(widths)))
            for width, offset, factor in zip(widths, offsets, factors, strict=True):
                count += 1
                jobs.append(JobSpec(
                    job_id=f"{name}-{count}",
                    submit_time=round(float(t + offset), 3),
                    num_gpus=width,
                    duration=round(max(60.0, base * float(factor)), 3),
                    pool=name,
                    preemptible=False,
                    experiment=f"{name}-e{experiment}",
                ))
            t += arrivals_rng.exponential(1 / rate)
    jobs.sort(key=lambda j: (j.submit_time, j.job_id))
    return Workload(tuple(jobs), source=f"sia-generator(seed={seed})", format="sia")
