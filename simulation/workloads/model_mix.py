"""Models for the jobs of a trace that names none, as Muri's authors gave Philly jobs theirs.

Muri's four traces are Philly jobs, each with a model drawn from the eight of its Table 1
set: every trace holds each model about equally often (trace 1: 167 to 201 of 1,494 jobs).
A trace without a model column, such as Philly's own (`pollux_philly.csv`), leaves Muri
nothing to interleave: every job lacks a profile and runs alone. `with_models` gives each
such job a model the same way, uniformly from `MURI_MODELS`, chosen by a hash of the seed
and the job's id, so a job keeps its model whatever else the trace holds and on any machine.
"""

from __future__ import annotations

import dataclasses
import hashlib

from simulation.interleaving import MODEL_PROFILES
from simulation.model import Workload

MURI_MODELS: tuple[str, ...] = tuple(sorted(MODEL_PROFILES))
UNNAMED = "generic"  # JobSpec's model when the trace names none


def model_for(job_id: str, models: tuple[str, ...] = MURI_MODELS, seed: int = 0) -> str:
    """The model `with_models` gives job `job_id`."""
    digest = hashlib.blake2b(f"{seed}:{job_id}".encode(), digest_size=8).digest()
    return models[int.from_bytes(digest, "big") % len(models)]


def with_models(workload: Workload, models: tuple[str, ...] = MURI_MODELS,
                seed: int = 0) -> Workload:
    """`workload` with a model for every job that names none; named models are kept."""
    jobs = tuple(job if job.model != UNNAMED else
                 dataclasses.replace(job, model=model_for(job.job_id, models, seed))
                 for job in workload.jobs)
    return dataclasses.replace(workload, jobs=jobs,
                               source=f"{workload.source} + models({len(models)}, seed {seed})")
