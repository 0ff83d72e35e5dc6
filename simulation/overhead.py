"""What a preemption, a migration or a resize costs a job: time its workers stand still.

The engine calls these when it applies a decision; the GPU-seconds lost accumulate in the
job's `overhead_gpu_seconds`. A resize's model is `EngineConfig.scaling_mode` (EDL §4.2,
§6.1): `none` pauses every worker `scale_out_pause` / `scale_in_pause` s; `stop-free` lets
the old workers train on while the new ones prepare `stop_free_prepare` s, then stops all for
the `stop_free_broadcast` (scale-in is a graceful exit); `stop-resume` stops every worker
`stop_resume_pause` s on every resize.
"""

from __future__ import annotations

from simulation.engine_config import EngineConfig
from simulation.state import JobState


def pause(job: JobState, now: float, until: float) -> None:
    """Stop `job`'s workers until `until` (a later pause already pending is kept)."""
    start = max(now, job.paused_until)
    if until > start:
        job.overhead_gpu_seconds += (until - start) * job.gpus
    job.paused_until = max(job.paused_until, until)


def resize_overhead(job: JobState, config: EngineConfig, now: float, *, grew: bool,
                    old_gpus: int, training_rate: float) -> None:
    """Charge one resize of `job` (already at its new size) under `config.scaling_mode`;
    `old_gpus` and `training_rate` are what it trained with before the resize."""
    if config.scaling_mode == "stop-free":
        if not grew:
            return  # graceful exit: leavers finish their mini-batch, nobody stops
        if job.join_at <= now:  # otherwise an earlier scale-out is still preparing
            job.join_gpus = old_gpus
            job.join_rate = training_rate
        job.join_at = now + config.stop_free_prepare
        resume = job.join_at + config.stop_free_broadcast
        job.overhead_gpu_seconds += job.gpus * (resume - max(job.join_at, job.paused_until))
        job.paused_until = max(job.paused_until, resume)
        return
    if config.scaling_mode == "stop-resume":
        stop = config.stop_resume_pause
    else:
        stop = config.scale_out_pause if grew else config.scale_in_pause
    if stop > 0:
        pause(job, now, now + stop)
