"""The scenario builder's one write: every input checked in one pass, then the cluster,
workload, load, scenario and runs saved together, or nothing.

Each step runs in a savepoint of one transaction, so a failing step reports its error and the
next steps are still checked; when any failed, or the inputs raise warnings not yet
accepted, the transaction is rolled back (and the files it wrote removed). Uploaded files are
kept between submits under MEDIA_ROOT behind a signed token, so an error elsewhere in the
form never makes the user upload the trace again.
"""

from __future__ import annotations

import dataclasses
import hashlib
import uuid
from collections.abc import Callable, Collection
from datetime import timedelta
from pathlib import PurePath
from typing import Any, TypeVar

from django.core import signing
from django.core.files.base import ContentFile, File
from django.core.files.storage import default_storage
from django.db import transaction
from django.utils import timezone

from planner.clusters import selectors as cluster_selectors
from planner.clusters.models import Cluster, ClusterKind
from planner.clusters.services import cluster_create, cluster_to_spec
from planner.scenarios.inputs import policies_check_inputs
from planner.scenarios.models import (
    InferenceLoadKind,
    InferenceLoadProfile,
    Scenario,
    Workload,
)
from planner.scenarios.services import (
    inference_load_create_from_upload,
    inference_load_create_generated,
    scenario_create,
    scenario_launch,
    upload_text,
    workload_create_from_generator,
    workload_create_from_upload,
)
from simulation.errors import InputError
from simulation.model import PoolKind
from simulation.workloads import parse_cluster_spec_text, parse_inference_load_text

KEPT_UPLOADS_DIR = "builder-uploads"
KEPT_UPLOAD_MAX_AGE = timedelta(days=1)
_KEPT_SALT = "planner.dashboard.kept-upload"
# A spec without `name` parses to this; the cluster is then named after the scenario.
_UNNAMED = "unnamed-cluster-spec"
_CLUSTER_NAME_STEM = 28  # characters of the scenario name in "<name> cluster <n>" (40 max)

# Generator settings the builder has an input for, by the input's name.
_GENERATOR_FIELDS = {"num_jobs": "gen_num_jobs", "duration_days": "gen_arrival_rate_per_hour",
                     "arrival_rate_per_hour": "gen_arrival_rate_per_hour",
                     "median_duration_minutes": "gen_median_duration_minutes",
                     "elastic_fraction": "gen_elastic_fraction", "seed": "gen_seed"}
# Inputs `scenario_create` reads besides the cluster, workload and load.
_SCENARIO_INPUTS = ("name", "policies", "seeds", "engine_settings")

T = TypeVar("T")


@dataclasses.dataclass(frozen=True)
class KeptUpload:
    token: str
    filename: str


@dataclasses.dataclass
class BuilderOutcome:
    """What one submit of the builder gave: the launched scenario, or why not."""

    scenario: Scenario | None = None
    errors: dict[str, list[str]] = dataclasses.field(default_factory=dict)
    warnings: list[str] = dataclasses.field(default_factory=list)
    warnings_key: str = ""
    kept: dict[str, KeptUpload] = dataclasses.field(default_factory=dict)


class _Discard(Exception):
    """Roll the builder's transaction back: errors, or warnings not accepted yet."""


# --- Uploads kept between submits ------------------------------------------------------------

def kept_upload_create(*, file: File, field: str) -> KeptUpload:
    """Store an upload (checked to be UTF-8 text within the size limit) for later submits."""
    text = upload_text(file=file, field=field)
    filename = PurePath(file.name or "upload").name
    _kept_uploads_prune()
    path = default_storage.save(f"{KEPT_UPLOADS_DIR}/{uuid.uuid4().hex}/{filename}",
                                ContentFile(text.encode()))
    return KeptUpload(token=signing.dumps({"path": path, "name": filename}, salt=_KEPT_SALT),
                      filename=filename)


def kept_upload_get(*, token: str, field: str) -> tuple[KeptUpload, ContentFile]:
    """The upload a token of `kept_upload_create` names, as a file to create rows from."""
    gone = InputError("the file kept from the last submit is no longer available; choose "
                      "it again", field=field)
    try:
        payload = signing.loads(token, salt=_KEPT_SALT,
                                max_age=KEPT_UPLOAD_MAX_AGE.total_seconds())
    except signing.BadSignature:
        raise gone from None
    if not default_storage.exists(payload["path"]):
        raise gone
    with default_storage.open(payload["path"], "rb") as handle:
        data = handle.read()
    return KeptUpload(token=token, filename=payload["name"]), ContentFile(data,
                                                                          name=payload["name"])


def kept_upload_delete(*, token: str) -> None:
    try:
        payload = signing.loads(token, salt=_KEPT_SALT)
    except signing.BadSignature:
        return
    default_storage.delete(payload["path"])


def _kept_uploads_prune() -> None:
    """Remove kept uploads older than KEPT_UPLOAD_MAX_AGE (abandoned forms)."""
    if not default_storage.exists(KEPT_UPLOADS_DIR):
        return
    cutoff = timezone.now() - KEPT_UPLOAD_MAX_AGE
    for directory in default_storage.listdir(KEPT_UPLOADS_DIR)[0]:
        for filename in default_storage.listdir(f"{KEPT_UPLOADS_DIR}/{directory}")[1]:
            path = f"{KEPT_UPLOADS_DIR}/{directory}/{filename}"
            if default_storage.get_modified_time(path) < cutoff:
                default_storage.delete(path)


# --- The builder -----------------------------------------------------------------------------

def scenario_build_and_launch(*, data: dict[str, Any], invalid: Collection[str] = (),
                              accepted_warnings: str = "") -> BuilderOutcome:
    """Check every builder input at once; launch the scenario when all are valid and any
    warnings were accepted (`accepted_warnings` equals the `warnings_key` they gave).

    `data` is the builder form's cleaned data and `invalid` the fields the form refused;
    steps that need an invalid field are skipped, the others still report their errors.
    """
    outcome = BuilderOutcome()
    uploads = {field: _upload(data=data, field=field, outcome=outcome)
               for field in ("trace", "inference_file")}
    written: list[File] = []
    try:
        with transaction.atomic():
            scenario = _build(data=data, invalid=set(invalid), outcome=outcome,
                              uploads=uploads, written=written)
            if scenario is None or outcome.errors or invalid:
                raise _Discard
            if outcome.warnings and accepted_warnings != outcome.warnings_key:
                raise _Discard
            scenario_launch(scenario=scenario)
    except (_Discard, InputError) as exc:
        if isinstance(exc, InputError):
            outcome.errors.setdefault("policies", []).append(str(exc))
        for file in written:
            file.delete(save=False)
        return outcome
    for kept in outcome.kept.values():
        kept_upload_delete(token=kept.token)
    outcome.kept, outcome.scenario = {}, scenario
    return outcome


def _upload(*, data: dict[str, Any], field: str, outcome: BuilderOutcome
            ) -> ContentFile | None:
    """The field's new upload (now kept) or the one kept from an earlier submit; a kept
    one stays kept while its source is switched to something else."""
    source = data.get("workload_source" if field == "trace" else "inference_source")
    try:
        if data.get(field) and source == "upload":
            outcome.kept[field] = kept_upload_create(file=data[field], field=field)
        elif data.get(f"{field}_kept"):
            outcome.kept[field], _ = kept_upload_get(token=data[f"{field}_kept"], field=field)
        if field not in outcome.kept or source != "upload":
            return None
        return kept_upload_get(token=outcome.kept[field].token, field=field)[1]
    except InputError as exc:
        if source == "upload":
            outcome.errors.setdefault(field, []).append(str(exc))
        return None


def _step(outcome: BuilderOutcome, form_field: str, build: Callable[[], T], *,
          keep: Collection[str] = (), rename: dict[str, str] | None = None) -> T | None:
    """Run one step in a savepoint; an InputError is recorded against the builder input it
    names (its own field when in `keep`, the one `rename` maps it to, else `form_field`)."""
    try:
        with transaction.atomic():
            return build()
    except InputError as exc:
        field = exc.field if exc.field in keep else (rename or {}).get(exc.field or "",
                                                                        form_field)
        outcome.errors.setdefault(field, []).append(str(exc) if field == form_field
                                                    else exc.message)
        return None


def _build(*, data: dict[str, Any], invalid: set[str], outcome: BuilderOutcome,
           uploads: dict[str, ContentFile | None], written: list[File]) -> Scenario | None:
    name = data.get("name") or "scenario"
    cluster = None
    if not invalid & {"cluster", "cluster_spec"}:
        cluster = _step(outcome, "cluster_spec", lambda: _cluster(data=data, name=name),
                        keep={"cluster"})
    workload = _workload(data=data, invalid=invalid, outcome=outcome, name=name,
                         trace=uploads["trace"])
    if workload is not None and workload.file and data["workload_source"] == "upload":
        written.append(workload.file)
    load_wanted = data.get("inference_source") not in (None, "none")
    load = _inference_load(data=data, invalid=invalid, outcome=outcome, name=name,
                           file=uploads["inference_file"])
    if load is not None and load.file and data["inference_source"] == "upload":
        written.append(load.file)
    if cluster is None or workload is None or (load_wanted and load is None):
        return None
    outcome.warnings = scenario_input_warnings(cluster=cluster, workload=workload, load=load)
    outcome.warnings_key = hashlib.sha256("\n".join(outcome.warnings).encode()).hexdigest()[:16]
    if load is not None and not cluster_to_spec(cluster=cluster).pools_of_kind(
            PoolKind.INFERENCE):
        outcome.errors.setdefault("inference_source", []).append(
            "the cluster has no inference pool to apply a load to")
        load = None
    params_invalid = any(field.startswith("param__") for field in invalid)
    if invalid & set(_SCENARIO_INPUTS) or params_invalid or load_wanted and load is None:
        if data.get("policy_entries"):  # still tell which policies cannot run on the inputs
            _step(outcome, "policies", lambda: policies_check_inputs(
                cluster=cluster, workload=workload, policies=data["policy_entries"],
                engine_settings=data.get("engine_settings") or {}))
        return None
    return _step(outcome, "policies", lambda: scenario_create(
        name=data["name"], cluster=cluster, workload=workload, inference_load=load,
        policies=data["policy_entries"], seeds=data["seeds"],
        engine_settings=data.get("engine_settings") or {},
    ), keep={"name", "policies", "seeds"})


def _cluster(*, data: dict[str, Any], name: str) -> Cluster:
    if data.get("cluster"):
        try:
            return cluster_selectors.cluster_get(cluster_id=int(data["cluster"]))
        except (Cluster.DoesNotExist, ValueError):
            raise InputError("that cluster no longer exists; choose another",
                             field="cluster") from None
    spec = parse_cluster_spec_text(data["cluster_spec"], "cluster spec", name=_UNNAMED)
    if spec.name == _UNNAMED:
        spec = dataclasses.replace(spec, name=_cluster_name_free(scenario_name=name))
    return cluster_create(spec=spec, source="cluster spec", kind=ClusterKind.WHAT_IF)


def _cluster_name_free(*, scenario_name: str) -> str:
    """"<scenario name> cluster", numbered from 2 when taken: a spec without a name."""
    stem = f"{scenario_name.strip()[:_CLUSTER_NAME_STEM].strip()} cluster"
    taken = set(Cluster.objects.filter(name__startswith=stem).values_list("name", flat=True))
    number = 1
    while (candidate := stem if number == 1 else f"{stem} {number}") in taken:
        number += 1
    return candidate


def _workload(*, data: dict[str, Any], invalid: set[str], outcome: BuilderOutcome, name: str,
              trace: ContentFile | None) -> Workload | None:
    source = data.get("workload_source")
    if source == "upload":
        if trace is None or invalid & {"trace", "trace_format"}:
            return None
        workload = _step(outcome, "trace", lambda: workload_create_from_upload(
            name=f"{name} trace", file=trace, format=data.get("trace_format") or None))
        if workload is None:  # a bad trace is not worth keeping: the user picks another
            kept_upload_delete(token=outcome.kept.pop("trace").token)
        return workload
    if source == "stored":
        if "workload_stored" in invalid:
            return None
        return _step(outcome, "workload_stored", lambda: _stored(
            Workload, data["workload_stored"], field="workload_stored"))
    if source == "generator" and not invalid & set(_GENERATOR_FIELDS.values()):
        spec = {"num_jobs": data["gen_num_jobs"],
                "arrival_rate_per_hour": data["gen_arrival_rate_per_hour"],
                "median_duration_minutes": data["gen_median_duration_minutes"],
                "elastic_fraction": data.get("gen_elastic_fraction") or 0.0}
        return _step(outcome, "gen_num_jobs", lambda: workload_create_from_generator(
            name=f"{name} workload", spec=spec, seed=data.get("gen_seed") or 0),
            rename=_GENERATOR_FIELDS)
    return None


def _inference_load(*, data: dict[str, Any], invalid: set[str], outcome: BuilderOutcome,
                    name: str, file: ContentFile | None) -> InferenceLoadProfile | None:
    source = data.get("inference_source")
    if source == "generated" and not invalid & {"inference_days",
                                                "inference_peak_utilization"}:
        params = {"days": data["inference_days"]}
        if data.get("inference_peak_utilization") is not None:
            params["peak_utilization"] = data["inference_peak_utilization"]
        return _step(outcome, "inference_days", lambda: inference_load_create_generated(
            name=f"{name} load", params=params))
    if source == "upload" and file is not None:
        load = _step(outcome, "inference_file", lambda: inference_load_create_from_upload(
            name=f"{name} load", file=file))
        if load is None:
            kept_upload_delete(token=outcome.kept.pop("inference_file").token)
        return load
    if source == "stored" and "inference_stored" not in invalid:
        return _step(outcome, "inference_stored", lambda: _stored(
            InferenceLoadProfile, data["inference_stored"], field="inference_stored"))
    return None


def _stored(model: type[T], raw: str, *, field: str) -> T:
    row = model.objects.filter(pk=int(raw)).first() if raw.isdigit() else None
    if row is None:
        raise InputError("it no longer exists; choose another", field=field)
    return row


# --- Warnings --------------------------------------------------------------------------------

def scenario_input_warnings(*, cluster: Cluster, workload: Workload,
                            load: InferenceLoadProfile | None) -> list[str]:
    """Inputs that run but probably do not ask what the user meant: an inference load that
    ends long before the jobs stop arriving (its last value then holds for the rest of the
    run), and jobs wider than any one pool."""
    warnings = []
    span = float(workload.summary.get("span_hours") or 0) * 3600
    covered = _load_span_seconds(profile=load) if load is not None else None
    if covered is not None and covered < span:
        warnings.append(
            f"The inference load covers {_duration(covered)} but the jobs arrive over "
            f"{_duration(span)}: from {_duration(covered)} on its last value holds for the "
            "rest of the run. Generate or upload a load as long as the trace.")
    largest_job = int(workload.summary.get("max_gpus") or 0)
    pools = cluster_to_spec(cluster=cluster).pools
    if pools:
        largest = max(pools, key=lambda pool: pool.gpus)
        total = sum(pool.gpus for pool in pools)
        if largest_job > largest.gpus:
            fate = ("more than the whole cluster has: runs fail on a job that cannot shrink "
                    "to fit" if largest_job > total
                    else "such jobs run only where a policy spans pools, else they wait")
            warnings.append(
                f"The largest job asks for {largest_job:,} GPUs; the largest pool, "
                f"{largest.name}, has {largest.gpus:,} (the cluster {total:,}): {fate}.")
    return warnings


def _load_span_seconds(*, profile: InferenceLoadProfile) -> float:
    """How long the load describes: its days, or an upload's last time plus its last step."""
    if profile.kind == InferenceLoadKind.GENERATED:
        return float(profile.params.get("days", 0)) * 86400
    with profile.file.open("rb") as handle:
        times = parse_inference_load_text(handle.read().decode("utf-8-sig"), profile.name,
                                          total_servers=1).times
    step = times[-1] - times[-2] if len(times) > 1 else 0.0
    return times[-1] + step if times else 0.0


def _duration(seconds: float) -> str:
    if seconds >= 2 * 86400:
        return f"{seconds / 86400:,.1f} days"
    if seconds >= 2 * 3600:
        return f"{seconds / 3600:,.1f} hours"
    return f"{seconds / 60:,.0f} minutes"
