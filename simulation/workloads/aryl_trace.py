"""Aryl's production setup (§2, §7.1): the cluster, in the paper's speed-normalised units.

The cluster is 443 training servers of 8 V100 and 520 inference servers of 8 T4, a T4 being
a quarter of a V100 (Table 10). §5.2 says "the on-loan inference GPUs are normalized relative
to training GPUs when calculating the resource capacity", and Table 7 shows what that means
for running times: jobs on on-loan servers ran *no longer* than the same jobs on training
servers under the Baseline (running time = JCT - queuing: 5,803 s vs 6,974 s). A job moved to
T4 therefore gets the T4s worth its V100 request (four T4 per V100) and keeps its speed.

We model that by counting an inference server in V100-equivalent GPUs: 8 T4 = 2 GPUs of the
`T4x4` type at speed 1.0. A job asking for g GPUs takes g of them (4g physical T4) and runs
its V100 time; servers are still lent and reclaimed whole. The literal alternative, 8 T4 at
speed 0.25 each, runs a job that lands on T4 four times slower for as long as it lives: the
scheduler is non-preemptive, so nothing moves it back to a V100 when one frees up, and a
multi-day job launched on a loaned server late in the trace sets the makespan. Which long jobs
end up stranded there depends on which ones a reclaim happens to preempt (a preempted job
restarts on a V100), so the reclaim strategy alone moved the makespan by a third on the same
jobs (`tests/simulation/test_aryl_trace.py`).

The trace (`aryl_trace_workload`) is private; this generator is calibrated to what §1, §2 and
§7 say of it: 15 days, 50,390 jobs, about 5 % elastic (§7.1 Basic) that are §2.2's large
jobs (ResNet-50, VGG16, BERT, GNMT; 36 % of the training GPU time, 14.2 h mean running time),
21 % that may run on any GPU (§2.1), running times from minutes to days, and under the FIFO
Baseline about 72 % training usage (Table 5 row 1) with mean queuing near 3,000 s and p95
near 10,000 s (§1). Choices, each calibrated by FIFO runs at scale 0.25 (seeds 0 and 1):
- Inelastic running times lognormal, median 19 min, sigma 2.37 (Table 5's JCT has median
  791 s and mean 16,610 s), capped at 2 days so a late multi-day job does not dominate the
  makespan; sizes 1-32 GPUs with many 8-GPU jobs ("common for a job to demand an entire
  training server", §7.5). Elastic jobs: 4, 8 or 16 GPUs, lognormal hours (median 9.6,
  sigma 1, capped at 2 days: mean 14.2 h), between half and twice their request.
- Arrivals: training demand "does not exhibit a clear pattern" (§2.1) yet comes in waves
  (Figure 2: up to 100 % of an hour's jobs queue), so ON/OFF bursts (6x rate, 2 h on, 8 h
  off), stretched so the last arrival falls at day 15 (the same offered load for any seed).
- The production cluster is never empty; ours starts empty, so usage is measured from day 1
  to day 15 (`steady_window`).
`scale` keeps the ratios (jobs, training and inference servers) but not job sizes, so a
smaller cluster sees larger relative jobs and queues more under FIFO's head-of-line blocking.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

from simulation.model import ClusterSpec, GpuType, InferenceLoad, PoolKind, PoolSpec, Workload
from simulation.workloads.generator import ANY_GPU, DAY, GeneratorSpec, choose, generate_workload
from simulation.workloads.inference_load import generate_inference_load

TRAINING_SERVERS = 443
INFERENCE_SERVERS = 520
T4_PER_V100 = 4
NORMALISED_T4 = "T4x4"

DAYS = 15.0
NUM_JOBS = 50_390
PEAK_TO_TROUGH = 2.2
MAX_DAYS = 2.0
MEDIAN_MINUTES = 19.0
SIGMA = 2.37
INELASTIC_SIZES = ((1, 0.40), (2, 0.15), (4, 0.15), (8, 0.22), (16, 0.06), (32, 0.02))
INELASTIC_MODELS = (("resnet50", 0.2), ("vgg16", 0.1), ("inception3", 0.2), ("bert", 0.2),
                    ("gpt2", 0.1), ("dqn", 0.2))
BURST_FACTOR = 6.0
BURST_ON_HOURS = 2.0
BURST_OFF_HOURS = 8.0
ELASTIC_SIZES = ((4, 0.2), (8, 0.5), (16, 0.3))
ELASTIC_MODELS = (("resnet50", 0.3), ("vgg16", 0.2), ("bert", 0.3), ("gnmt", 0.2))
ELASTIC_MEDIAN_HOURS = 9.6
ELASTIC_SIGMA = 1.0


def aryl_cluster(training_servers: int = TRAINING_SERVERS,
                 inference_servers: int = INFERENCE_SERVERS) -> ClusterSpec:
    """8-V100 training servers and 8-T4 inference servers counted in V100-equivalents."""
    return ClusterSpec(
        "aryl-production" if (training_servers, inference_servers) == (
            TRAINING_SERVERS, INFERENCE_SERVERS) else
        f"aryl-{training_servers}+{inference_servers}",
        {"V100": GpuType("V100", 1.0, 32.0), NORMALISED_T4: GpuType(NORMALISED_T4, 1.0, 64.0)},
        (PoolSpec("training", PoolKind.TRAINING, "V100", training_servers, 8),
         PoolSpec("inference", PoolKind.INFERENCE, NORMALISED_T4, inference_servers,
                  8 // T4_PER_V100)),
    )


@dataclass(frozen=True, slots=True)
class ArylTraceSpec:
    """The calibrated trace; `scale` shrinks jobs and servers together (same load)."""

    scale: float = 1.0
    days: float = DAYS
    num_jobs: int = NUM_JOBS
    elastic_fraction: float = 0.05
    any_gpu_fraction: float = 0.21
    every_job_elastic: bool = False  # the Ideal scenario

    @property
    def jobs(self) -> int:
        return max(1, round(self.num_jobs * self.scale))

    def cluster(self) -> ClusterSpec:
        return aryl_cluster(max(1, round(TRAINING_SERVERS * self.scale)),
                            max(1, round(INFERENCE_SERVERS * self.scale)))

    def inference_load(self, seed: int = 0) -> InferenceLoad:
        """Figure 1's diurnal load: peak 95 %, peak-to-trough 2.2."""
        return generate_inference_load(self.cluster().pool("inference").servers, self.days,
                                       peak_to_trough=PEAK_TO_TROUGH, peak_utilization=0.95,
                                       seed=seed)


def steady_window(spec: ArylTraceSpec) -> tuple[float, float]:
    """Where usage is measured: day 1 to the end of the trace (the cluster starts empty)."""
    return DAY, spec.days * DAY


def trace_statistics(workload: Workload, spec: ArylTraceSpec) -> dict[str, float]:
    """The generator's own calibration figures (no simulation needed)."""
    jobs = workload.jobs
    gpu_seconds = np.array([j.num_gpus * j.duration for j in jobs])
    elastic = np.array([j.elastic for j in jobs])
    training_gpus = spec.cluster().pool("training").gpus
    return {
        "jobs": len(jobs),
        "span_days": jobs[-1].submit_time / DAY,
        "offered_load": float(gpu_seconds.sum() / (training_gpus * spec.days * DAY)),
        "elastic_jobs": float(elastic.mean()),
        "elastic_gpu_time": float(gpu_seconds[elastic].sum() / gpu_seconds.sum()),
        "elastic_mean_hours": float(np.mean([j.duration for j in jobs if j.elastic]) / 3600),
        "any_gpu_jobs": float(np.mean([j.gpu_type is None for j in jobs])),
    }


def peak_to_trough(load: InferenceLoad) -> float:
    """Peak over trough of the mean daily profile of busy inference servers (hourly)."""
    hours = (np.asarray(load.times) // 3600 % 24).astype(int)
    busy = np.asarray(load.busy_servers, dtype=float)
    profile = np.bincount(hours, busy, 24) / np.bincount(hours, minlength=24)
    return float(profile.max() / profile.min())


def aryl_trace_workload(spec: ArylTraceSpec = ArylTraceSpec(), seed: int = 0) -> Workload:
    """Jobs with §2 and §7's statistics (module docstring); seeded and deterministic.

    The inelastic jobs come from `GeneratorSpec`; the elastic ones are then redrawn from
    their own generator as §2.2's large, long jobs.
    """
    base = generate_workload(GeneratorSpec(
        num_jobs=spec.jobs, duration_days=spec.days, arrivals="bursty",
        burst_factor=BURST_FACTOR, burst_on_hours=BURST_ON_HOURS,
        burst_off_hours=BURST_OFF_HOURS, median_duration_minutes=MEDIAN_MINUTES,
        lognormal_sigma=SIGMA, max_duration_days=MAX_DAYS, gpu_sizes=INELASTIC_SIZES,
        elastic_fraction=spec.elastic_fraction, models=INELASTIC_MODELS,
        gpu_types=(("V100", 1 - spec.any_gpu_fraction), (ANY_GPU, spec.any_gpu_fraction)),
        job_id_prefix="aryl-"), seed=seed)
    # Bursty arrivals reach `num_jobs` after a random span; stretch them onto the trace's days
    # so the offered load is the same for every seed.
    stretch = spec.days * DAY / base.jobs[-1].submit_time
    rng = np.random.Generator(np.random.PCG64(np.random.SeedSequence([seed, 2])))
    elastic = [job for job in base.jobs if job.elastic]
    sizes = choose(ELASTIC_SIZES, len(elastic), rng)
    models = choose(ELASTIC_MODELS, len(elastic), rng)
    hours = np.clip(rng.lognormal(math.log(ELASTIC_MEDIAN_HOURS), ELASTIC_SIGMA, len(elastic)),
                    0.5, MAX_DAYS * 24)
    redrawn = {job.job_id: replace(job, num_gpus=size, duration=float(round(h * 3600)),
                                   model=model, min_workers=size // 2, max_workers=2 * size)
               for job, size, model, h in zip(elastic, sizes, models, hours, strict=True)}
    jobs = tuple(replace(redrawn.get(job.job_id, job),
                         submit_time=round(job.submit_time * stretch, 3)) for job in base.jobs)
    if spec.every_job_elastic:  # Ideal: every job scales and runs on any GPU
        jobs = tuple(replace(job, gpu_type=None) if job.elastic else replace(
            job, min_workers=max(1, job.num_gpus // 2), max_workers=2 * job.num_gpus,
            gpu_type=None) for job in jobs)
    return Workload(jobs, source=f"aryl calibrated trace (scale {spec.scale:g}, seed {seed})",
                    format="generated")
