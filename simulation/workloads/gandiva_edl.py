"""Seeded generators for the Gandiva (§6.3, §6.4) and EDL (§6.3) experiment workloads.

Self-contained on numpy (one `Generator(PCG64)` per concern, spawned from the seed) so the
same seed gives the same jobs. Model characteristics come from `simulation.dlt_models`.

- `gandiva_eight_model_workload` (Gandiva §6.3): jobs arrive uniformly at random over two
  hours; jobs 1-2 of Table 1 (low utilisation) are drawn with total probability 0.3, jobs 3-5
  with 0.25, jobs 6-8 with 0.45 (equal within a group); jobs 7 and 8 use 2 or 4 GPUs, the
  rest 1; each runs 30-45 min in isolation on a P40 (the reference GPU here). Iterations =
  duration x the Table 1 mini-batch rate, so early feedback (100 mini-batches) is measurable.
- `gandiva_trace_mix_workload` (Gandiva §6.4): Table 2's models with CV 10%, NLP 60%,
  Speech 30%; the real 9-day trace's running times are not public, so durations are
  lognormal (median 30 min, sigma 1.5, clipped to [2 min, 3 days]) and sizes follow a
  Philly-like mix (1: 60%, 2: 20%, 4: 15%, 8: 5%); Poisson arrivals.
- `edl_synthetic_workload` (EDL §6.3): one 4-GPU job every 30 s until 16 jobs, each a random
  one of nine TensorFlow benchmark CNNs, elastic between 1 and 8 GPUs (one machine); the
  paper gives no running times, so each runs 20-60 min at 4 GPUs (uniform).
"""

from __future__ import annotations

import numpy as np

from simulation.dlt_models import (
    EDL_BENCHMARK_MODELS,
    GANDIVA_TABLE1,
    GANDIVA_TABLE2,
    GANDIVA_TABLE2_CATEGORY_SHARES,
)
from simulation.model import ClusterSpec, GpuType, JobSpec, PoolKind, PoolSpec, Workload

_EIGHT_MODEL_WEIGHTS = (0.15, 0.15, 0.25 / 3, 0.25 / 3, 0.25 / 3, 0.15, 0.15, 0.15)


def _streams(seed: int, count: int) -> list[np.random.Generator]:
    return [np.random.default_rng(s) for s in np.random.SeedSequence(seed).spawn(count)]


def gandiva_cluster(servers: int = 45, gpus_per_server: int = 4) -> ClusterSpec:
    """Gandiva §6.3's 180-GPU cluster (45 four-GPU servers), P40 as the reference speed."""
    return ClusterSpec(
        "gandiva", {"P40": GpuType("P40", 1.0, 24.0)},
        (PoolSpec("gpu", PoolKind.TRAINING, "P40", servers, gpus_per_server),),
    )


def edl_cluster(machines: int = 4, gpus_per_machine: int = 8) -> ClusterSpec:
    """EDL §6.3's synthetic-workload cluster: 4 machines of 8 V100s."""
    return ClusterSpec(
        "edl", {"V100": GpuType("V100")},
        (PoolSpec("gpu", PoolKind.TRAINING, "V100", machines, gpus_per_machine),),
    )


def gandiva_eight_model_workload(
    num_jobs: int = 1000, hours: float = 2.0, seed: int = 0
) -> Workload:
    arrivals, models, sizes, durations = _streams(seed, 4)
    submit = np.sort(arrivals.uniform(0.0, hours * 3600.0, num_jobs))
    picks = models.choice(len(GANDIVA_TABLE1), size=num_jobs, p=_EIGHT_MODEL_WEIGHTS)
    multi = sizes.choice([2, 4], size=num_jobs)
    minutes = durations.uniform(30.0, 45.0, num_jobs)
    jobs = []
    for i in range(num_jobs):
        model = GANDIVA_TABLE1[int(picks[i])]
        gpus = int(multi[i]) if picks[i] >= 6 else 1
        duration = round(float(minutes[i]) * 60.0, 3)
        jobs.append(JobSpec(
            f"g{i:04d}", round(float(submit[i]), 3), gpus, duration, model=model.name,
            iterations=int(duration * model.minibatches_per_second),
        ))
    return Workload(tuple(jobs), source=f"gandiva-6.3:seed={seed}", format="generated")


def gandiva_trace_mix_workload(
    num_jobs: int = 500, arrival_rate_per_hour: float = 60.0, seed: int = 0
) -> Workload:
    arrivals, categories, models, durations, sizes = _streams(seed, 5)
    gaps = arrivals.exponential(3600.0 / arrival_rate_per_hour, num_jobs)
    submit = np.cumsum(gaps) - gaps[0]
    names = list(GANDIVA_TABLE2_CATEGORY_SHARES)
    cats = categories.choice(len(names), size=num_jobs,
                             p=list(GANDIVA_TABLE2_CATEGORY_SHARES.values()))
    by_category = {c: [m for m in GANDIVA_TABLE2 if m.category == c] for c in names}
    pick = models.random(num_jobs)
    seconds = np.clip(durations.lognormal(np.log(1800.0), 1.5, num_jobs), 120.0, 3 * 86400.0)
    gpus = sizes.choice([1, 2, 4, 8], size=num_jobs, p=[0.6, 0.2, 0.15, 0.05])
    jobs = []
    for i in range(num_jobs):
        pool = by_category[names[int(cats[i])]]
        model = pool[int(pick[i] * len(pool))]
        duration = round(float(seconds[i]), 3)
        jobs.append(JobSpec(
            f"t{i:04d}", round(float(submit[i]), 3), int(gpus[i]), duration, model=model.name,
            iterations=int(duration * model.minibatches_per_second),
        ))
    return Workload(tuple(jobs), source=f"gandiva-6.4:seed={seed}", format="generated")


def edl_synthetic_workload(seed: int = 0, num_jobs: int = 16) -> Workload:
    models, durations = _streams(seed, 2)
    picks = models.choice(len(EDL_BENCHMARK_MODELS), size=num_jobs)
    minutes = durations.uniform(20.0, 60.0, num_jobs)
    jobs = []
    for i in range(num_jobs):
        model = EDL_BENCHMARK_MODELS[int(picks[i])]
        duration = round(float(minutes[i]) * 60.0, 3)
        jobs.append(JobSpec(
            f"e{i:02d}", 30.0 * i, 4, duration, model=model.name, min_workers=1,
            max_workers=8, iterations=int(duration * model.minibatches_per_second),
        ))
    return Workload(tuple(jobs), source=f"edl-synthetic:seed={seed}", format="generated")
