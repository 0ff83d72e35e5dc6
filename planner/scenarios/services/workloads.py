"""Workloads and inference loads: uploaded (parsed completely before anything is saved) or
generated from a spec and seed."""

from __future__ import annotations

import hashlib
import logging
import statistics
from pathlib import PurePath
from typing import Any

from django.conf import settings
from django.core.files.base import ContentFile, File
from django.db import transaction

from planner.scenarios.inputs import (
    INFERENCE_LOAD_PARAMS,
    generated_workload,
    sha256_json,
)
from planner.scenarios.models import (
    InferenceLoadKind,
    InferenceLoadProfile,
    Workload,
    WorkloadKind,
)
from simulation.errors import InputError
from simulation.limits import MAX_SEED
from simulation.model import Workload as SimWorkload
from simulation.workloads import (
    generate_inference_load,
    parse_inference_load_text,
    parse_trace_text,
)

logger = logging.getLogger(__name__)



def upload_text(*, file: File, field: str = "file") -> str:
    """The upload as text, refused when empty, over PLANNER_MAX_UPLOAD_MB or not UTF-8."""
    name = PurePath(file.name or "upload").name
    limit_mb = settings.PLANNER_MAX_UPLOAD_MB
    if file.size == 0:
        raise InputError("the file is empty (0 bytes)", source=name, field=field)
    if file.size > limit_mb * 1024 * 1024:
        raise InputError(f"the file is {file.size / 2**20:.1f} MB; uploads are limited to "
                         f"{limit_mb} MB (PLANNER_MAX_UPLOAD_MB)", source=name, field=field)
    file.seek(0)
    data = file.read()
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InputError(f"not UTF-8 text (byte {exc.start})", source=name,
                         field=field) from None


def workload_summary(*, workload: SimWorkload) -> dict[str, Any]:
    """Statistics shown next to a workload: size, span, GPU demand, elasticity."""
    jobs = workload.jobs
    if not jobs:
        return {"jobs": 0}
    durations = [job.duration for job in jobs]
    submits = [job.submit_time for job in jobs]
    summary = {
        "jobs": len(jobs),
        "format": workload.format,
        "span_hours": round((max(submits) - min(submits)) / 3600, 3),
        "gpu_hours": round(sum(job.gpu_seconds for job in jobs) / 3600, 3),
        "duration_median_s": round(statistics.median(durations), 3),
        "duration_mean_s": round(statistics.fmean(durations), 3),
        "max_gpus": max(job.num_gpus for job in jobs),
        "multi_gpu_share": round(sum(job.num_gpus > 1 for job in jobs) / len(jobs), 4),
        "elastic_share": round(sum(job.elastic for job in jobs) / len(jobs), 4),
    }
    skipped = getattr(workload, "skipped", ())
    if skipped:
        summary["skipped"] = {reason: count for reason, count in skipped}
    return summary


def workload_create_from_upload(*, name: str, file: File, format: str | None = None
                                ) -> Workload:
    """Validate a trace upload completely, then store the file and the row together."""
    text = upload_text(file=file)
    source = PurePath(file.name or "upload").name
    loaded = parse_trace_text(text, source, format=format or None)
    if not loaded.jobs:
        raise InputError("the trace has no jobs", source=source, field="file")
    workload = Workload(
        name=name or source, kind=WorkloadKind.UPLOAD, format=loaded.format,
        content_sha256=hashlib.sha256(text.encode()).hexdigest(), num_jobs=len(loaded.jobs),
        summary=workload_summary(workload=loaded),
    )
    return _save_with_file(row=workload, filename=source, text=text)


def workload_create_from_generator(*, name: str, spec: dict[str, Any], seed: int = 0
                                   ) -> Workload:
    if not 0 <= seed <= MAX_SEED:
        raise InputError(f"must be in [0, {MAX_SEED}]", source="generator", field="seed")
    generated = generated_workload(spec=spec, seed=seed)
    return Workload.objects.create(
        name=name, kind=WorkloadKind.GENERATOR, format="generated", generator_spec=spec,
        generator_seed=seed, content_sha256=sha256_json({"spec": spec, "seed": seed}),
        num_jobs=len(generated.jobs), summary=workload_summary(workload=generated),
    )


def inference_load_create_generated(*, name: str, params: dict[str, Any]
                                    ) -> InferenceLoadProfile:
    """A diurnal load (Aryl Fig. 1); `params` are generate_inference_load's, `days` required."""
    for key in params:
        if key not in INFERENCE_LOAD_PARAMS:
            raise InputError(f"unknown setting (known: {', '.join(INFERENCE_LOAD_PARAMS)})",
                             source=name, field=key)
    if "days" not in params:
        raise InputError("missing", source=name, field="days")
    try:
        generate_inference_load(1, **params)
    except TypeError as exc:
        raise InputError(f"wrong type ({exc})", source=name) from None
    return InferenceLoadProfile.objects.create(
        name=name, kind=InferenceLoadKind.GENERATED, params=params,
        content_sha256=sha256_json(params),
    )


def inference_load_create_from_upload(*, name: str, file: File) -> InferenceLoadProfile:
    text = upload_text(file=file)
    source = PurePath(file.name or "upload").name
    parse_inference_load_text(text, source, total_servers=1)
    profile = InferenceLoadProfile(name=name or source, kind=InferenceLoadKind.UPLOAD,
                                   content_sha256=hashlib.sha256(text.encode()).hexdigest())
    return _save_with_file(row=profile, filename=source, text=text)


def _save_with_file(*, row: Workload | InferenceLoadProfile, filename: str, text: str):
    """Save the file and the row; a failed row leaves no file behind."""
    row.file.save(filename, ContentFile(text.encode()), save=False)
    try:
        with transaction.atomic():
            row.save()
    except BaseException:
        row.file.delete(save=False)
        raise
    return row
