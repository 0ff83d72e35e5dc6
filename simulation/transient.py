"""EDL §6.2 "use of transient resources": a job on persistent GPUs borrows idle ones.

A ResNet50 job trains on `persistent` GPUs of one machine; `transient` more GPUs of that
machine are idle for `idle_seconds`, then taken back for as long, and so on ("revoked every
4 minutes" in the paper). Four schemes (EDL §6.2): `baseline` never uses the idle GPUs;
`stop-resume` scales out and in with every worker stopped each time; `edl` uses stop-free
scale-out and graceful scale-in; `ideal` scales instantly. Each run is a real engine run
(scaling costs from EngineConfig.scaling_mode); throughput is reported relative to the
baseline as baseline JCT / JCT for the same amount of work.

The break-even idle interval of stop-resume follows from one cycle of idle + busy time T:
it pays its pause p once on scale-out (while holding the extra GPUs) and once on scale-in
(on the persistent GPUs), so it beats not scaling when S(n+k)(T-p) + S(n)(T-p) > 2 T S(n),
i.e. T > p (S(n+k) + S(n)) / (S(n+k) - S(n)). The paper measured 11.7 min with one idle GPU.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass

from simulation.decisions import Decision, Launch, Resize, Slot
from simulation.dlt_models import strong_scaling_throughput
from simulation.engine import EngineConfig, Simulation
from simulation.model import ClusterSpec, GpuType, JobSpec, PoolKind, PoolSpec, Workload
from simulation.policies.base import Policy
from simulation.throughput import ThroughputModel
from simulation.view import ClusterView

SCHEMES = ("baseline", "stop-resume", "edl", "ideal")
_MODE = {"baseline": "none", "stop-resume": "stop-resume", "edl": "stop-free", "ideal": "none"}


class TransientScaler(Policy):
    """Holds persistent + transient GPUs in idle windows and the persistent ones otherwise.

    An experiment harness, not a registered policy: it knows the revocation schedule, as the
    paper's experiment does.
    """

    name = "transient-scaler"
    interval = math.inf

    def __init__(self, persistent: int, transient: int, idle_seconds: float, use_idle: bool):
        super().__init__()
        self.persistent = persistent
        self.transient = transient
        self.idle_seconds = idle_seconds
        self.use_idle = use_idle
        self.interval = idle_seconds  # re-decide at every idle/busy boundary

    def wanted_gpus(self, now: float) -> int:
        idle_window = int(now / self.idle_seconds + 1e-9) % 2 == 0
        return self.persistent + (self.transient if idle_window and self.use_idle else 0)

    def schedule(self, view: ClusterView) -> Iterator[Decision]:
        want = self.wanted_gpus(view.now)
        for job in view.queue.values():
            yield Launch(job.job_id, (Slot("m-1", want),))
        for job in view.running.values():
            if job.gpus != want:
                yield Resize(job.job_id, (Slot("m-1", want),))


@dataclass(frozen=True, slots=True)
class TransientResult:
    scheme: str
    idle_seconds: float
    jct: float
    relative_throughput: float  # baseline JCT / JCT
    resource_loss_gpu_seconds: float


def run_transient(
    scheme: str,
    idle_seconds: float,
    *,
    persistent: int = 4,
    transient: int = 1,
    cycles: int = 40,
    model: str = "resnet50",
    stop_resume_pause: float = 45.0,
    stop_free_prepare: float = 30.0,
    stop_free_broadcast: float = 0.5,
    throughput: ThroughputModel | None = None,
) -> TransientResult:
    """One engine run of `scheme`; the job has `cycles` idle+busy periods of baseline work."""
    if scheme not in SCHEMES:
        raise ValueError(f"scheme {scheme!r} is not one of {SCHEMES}")
    duration = 2 * idle_seconds * cycles
    spec = JobSpec("transient", 0.0, persistent, duration, model=model,
                   min_workers=persistent, max_workers=persistent + transient)
    cluster = ClusterSpec(
        "edl-machine", {"V100": GpuType("V100")},
        (PoolSpec("m", PoolKind.TRAINING, "V100", 1, persistent + transient),),
    )
    policy = TransientScaler(persistent, transient, idle_seconds, scheme != "baseline")
    config = EngineConfig(
        scaling_mode=_MODE[scheme],
        stop_resume_pause=stop_resume_pause, stop_free_prepare=stop_free_prepare,
        stop_free_broadcast=stop_free_broadcast,
    )
    sim = Simulation(cluster, Workload((spec,)), policy, config=config,
                     throughput=throughput or strong_scaling_throughput())
    result = sim.run()
    jct = float(result.jobs[0]["jct"])
    return TransientResult(scheme, idle_seconds, jct, duration / jct,
                           float(result.summary["overhead_gpu_seconds"]))


def break_even_interval(
    scheme: str = "stop-resume", *, low: float = 1.0, high: float = 7200.0, **kwargs: float
) -> float:
    """The shortest idle interval (s) at which `scheme` stops losing to the baseline.

    Bisection on engine runs (the relative throughput rises with the interval).
    """
    if run_transient(scheme, high, **kwargs).relative_throughput < 1.0:
        return math.inf
    for _ in range(30):
        mid = (low + high) / 2
        if run_transient(scheme, mid, **kwargs).relative_throughput >= 1.0:
            high = mid
        else:
            low = mid
        if high - low < 0.5:
            break
    return high


def analytic_break_even(
    pause: float, persistent: int = 4, transient: int = 1, model: str = "resnet50",
    throughput: ThroughputModel | None = None,
) -> float:
    """T = p (S(n+k) + S(n)) / (S(n+k) - S(n)) for stop-resume (module docstring)."""
    curves = throughput or strong_scaling_throughput()
    small = curves.speedup(model, persistent)
    large = curves.speedup(model, persistent + transient)
    return pause * (large + small) / (large - small)
