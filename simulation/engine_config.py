"""A run's mechanism settings (`EngineConfig`) and the throughput model they select.

Policy parameters live on the policy; these are the engine's: restart and resize costs,
loaning, cadence, predictions' errors. `default_engine_config` puts a policy's own paper
mechanisms (`Policy.engine_defaults`) in place of the engine's defaults.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from simulation.dlt_models import strong_scaling_throughput
from simulation.policies.base import Policy
from simulation.throughput import ThroughputModel, scaling_curve

SCALING_MODES = ("none", "stop-free", "stop-resume")


@dataclass(frozen=True, slots=True)
class EngineConfig:
    """Mechanism parameters of a run (policy parameters live on the policy).

    `restart_overhead` (s) is paid by a preempted job when it starts again (63 s on Aryl's
    testbed). Resizes pause every worker of the job for `scale_out_pause` / `scale_in_pause`
    seconds and migrations for `migration_pause`. `prediction_error_share` of the jobs get a
    running-time prediction off by up to ±`prediction_error_range` (Aryl Table 9).
    `heterogeneous_efficiency` set: a job across GPU types runs at its GPU-weighted mean speed
    times this factor (Aryl's 70 %) instead of its slowest GPU's; `elastic_step_loss` costs an
    elastic job that share of throughput per worker past the middle of its range (Aryl §7.2).

    `scaling_mode` selects the overhead model of a resize (EDL §4.2, §6.1). `none`: the plain
    `scale_out_pause` / `scale_in_pause`. `stop-free`: on scale-out the existing workers keep
    training at their old rate while the new ones prepare for `stop_free_prepare` s, then every
    worker stops `stop_free_broadcast` s (< 1 s) for the model broadcast; scale-in is a graceful
    exit with no stop. `stop-resume`: every worker stops `stop_resume_pause` s (30-60 s
    measured) on every scale-in and scale-out. The GPU-seconds lost (new workers preparing,
    stopped workers) accumulate in each job's `overhead_gpu_seconds`.

    `cadence` says when the policy runs, the same rule for every policy so that a comparison
    compares policies, not reaction times. `event` (default): at every instant where a job
    arrives or completes or the inference side lends or reclaims, plus the times the policy's
    own rules ask for (its `interval`: Gandiva's quantum, Muri's regroup, SIA's re-optimisation;
    or `next_wakeup`: a Tiresias threshold, a Themis lease). A number `N`: every `N` seconds
    and at no other time, for every policy (Muri's testbed ran all schedulers every 6 min, §6);
    arrivals wait for the next round.

    A policy's paper mechanisms (Aryl's reclaim strategy, EDL's stop-free scaling) are its
    `Policy.engine_defaults`; `default_engine_config` applies them under these defaults.
    """

    restart_overhead: float = 63.0
    scaling: str = "linear"  # default scaling curve, or "models" for the per-model table
    cadence: str = "event"  # "event", or seconds between rounds for every policy (see above)
    sample_interval: float | None = None  # None: about 2,000 rows over the trace span
    scale_out_pause: float = 0.0
    scale_in_pause: float = 0.0
    migration_pause: float = 0.0
    scaling_mode: str = "none"  # none | stop-free | stop-resume
    stop_free_prepare: float = 30.0
    stop_free_broadcast: float = 0.5
    stop_resume_pause: float = 45.0
    lending: bool = True  # False: inference servers are never lent (capacity stage no-loan)
    loan_interval: float = 300.0
    loan_headroom: int = 0
    reclaim_strategy: str = "scf"
    prediction_error_share: float = 0.0
    prediction_error_range: float = 0.25
    heterogeneous_efficiency: float | None = None  # None: a mixed job runs at its slowest GPU
    elastic_step_loss: float = 0.0  # Aryl §7.2 imperfect scaling: loss per step past midpoint
    early_feedback_iterations: int = 100
    max_time: float = math.inf
    seed: int = 0




def default_engine_config(policy: Policy, **settings: object) -> EngineConfig:
    """`EngineConfig` with `policy`'s own paper mechanisms (`Policy.engine_defaults`) in place
    of the engine's defaults, then `settings` on top: what a run uses unless told otherwise."""
    return EngineConfig(**{**policy.engine_defaults, **settings})  # type: ignore[arg-type]


def throughput_model(setting: str) -> ThroughputModel:
    """`models`: each known model's own curve (EDL Fig. 2 strong scaling, `dlt_models`);
    otherwise one curve for every model, e.g. `linear` or `power:0.9`."""
    if setting == "models":
        return strong_scaling_throughput()
    return ThroughputModel(default=scaling_curve(setting))
