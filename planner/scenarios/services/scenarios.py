"""Scenarios: created from stored inputs, from specs or from an API body, each in one
transaction; launched as one run per policy and seed; deleted with their result files."""

from __future__ import annotations

import logging
from typing import Any

from django.conf import settings
from django.core.files.base import File
from django.db import transaction

from planner.clusters.models import Cluster, ClusterKind
from planner.clusters.services import cluster_create_from_spec, cluster_to_spec
from planner.scenarios.inputs import (
    policies_check_inputs,
)
from planner.scenarios.models import (
    InferenceLoadProfile,
    Run,
    Scenario,
    Workload,
)
from planner.scenarios.services.runs import scenario_launch
from planner.scenarios.services.workloads import (
    inference_load_create_generated,
    workload_create_from_generator,
    workload_create_from_upload,
)
from simulation.errors import InputError
from simulation.limits import MAX_SEED
from simulation.model import PoolKind
from simulation.runner import engine_config, split_settings

logger = logging.getLogger(__name__)



def _policy_entries(policies: list[Any]) -> list[dict[str, Any]]:
    if not isinstance(policies, list) or not policies:
        raise InputError("choose at least one policy", field="policies")
    entries = []
    for i, entry in enumerate(policies):
        if isinstance(entry, str):
            entry = {"policy": entry, "params": {}}
        if not isinstance(entry, dict) or not isinstance(entry.get("params", {}), dict):
            raise InputError("expected a policy name or {policy, params}",
                             field=f"policies[{i}]")
        entries.append({"policy": entry.get("policy"), "params": entry.get("params", {})})
    return entries


def policy_settings_check(*, policy: str, settings: dict[str, Any], where: str) -> None:
    """Refuse unknown policies, parameters and engine settings, naming the field."""
    try:
        _, engine = split_settings(policy, settings)
        engine_config(engine, seed=0)
    except InputError as exc:
        field = f"{where}.{exc.field}" if exc.field and exc.field != "policy" else where
        raise InputError(exc.message, field=field) from None


def _seeds_check(seeds: Any) -> list[int]:
    if (not isinstance(seeds, list) or not seeds
            or any(isinstance(s, bool) or not isinstance(s, int) or s < 0 for s in seeds)):
        raise InputError("expected a non-empty list of non-negative whole numbers",
                         field="seeds")
    if len(seeds) > settings.PLANNER_MAX_SEEDS:
        raise InputError(f"{len(seeds):,} seeds; a scenario is limited to "
                         f"{settings.PLANNER_MAX_SEEDS} (PLANNER_MAX_SEEDS)", field="seeds")
    if max(seeds) > MAX_SEED:
        raise InputError(f"seed {max(seeds)} is over the limit of {MAX_SEED}", field="seeds")
    if len(set(seeds)) != len(seeds):
        raise InputError("seeds repeat", field="seeds")
    return seeds


def _runs_check(*, runs: int, field: str) -> None:
    """Refuse creating more runs at once than PLANNER_SCENARIO_MAX_RUNS allows."""
    limit = settings.PLANNER_SCENARIO_MAX_RUNS
    if runs > limit:
        raise InputError(f"{runs:,} runs (policies x seeds); a scenario is limited to {limit} "
                         "(PLANNER_SCENARIO_MAX_RUNS)", field=field)


@transaction.atomic
def scenario_create(*, name: str, cluster: Cluster, workload: Workload,
                    policies: list[Any], seeds: list[int],
                    inference_load: InferenceLoadProfile | None = None,
                    engine_settings: dict[str, Any] | None = None, description: str = "",
                    slug: str = "") -> Scenario:
    """A what-if scenario; every policy, parameter, setting and seed is checked first."""
    engine_settings = engine_settings or {}
    if not name.strip():
        raise InputError("must not be empty", field="name")
    entries = _policy_entries(policies)
    for i, entry in enumerate(entries):
        policy_settings_check(policy=entry["policy"],
                              settings={**engine_settings, **entry["params"]},
                              where=f"policies[{i}]")
    seeds = _seeds_check(seeds)
    _runs_check(runs=len(entries) * len(seeds), field="seeds")
    policies_check_inputs(cluster=cluster, workload=workload, policies=entries,
                          engine_settings=engine_settings)
    if inference_load is not None:
        spec = cluster_to_spec(cluster=cluster)
        if not spec.pools_of_kind(PoolKind.INFERENCE):
            raise InputError("the cluster has no inference pool to apply a load to",
                             field="inference_load")
    return Scenario.objects.create(
        name=name.strip(), slug=slug, description=description, cluster=cluster,
        workload=workload, inference_load=inference_load, policies=entries, seeds=seeds,
        engine_settings=engine_settings,
    )


@transaction.atomic
def scenario_create_from_specs(*, name: str, cluster_spec_text: str, policies: list[Any],
                               seeds: list[int], trace: File | None = None,
                               generator: dict[str, Any] | None = None,
                               engine_settings: dict[str, Any] | None = None) -> Scenario:
    """Cluster spec (YAML/JSON) plus a trace upload or a generator spec, as one scenario."""
    if (trace is None) == (generator is None):
        raise InputError("give either a trace file or a generator spec", field="trace")
    cluster = cluster_create_from_spec(spec_text=cluster_spec_text, source="cluster spec",
                                       kind=ClusterKind.WHAT_IF)
    if trace is not None:
        workload = workload_create_from_upload(name=f"{name} trace", file=trace)
    else:
        workload = workload_create_from_generator(name=f"{name} workload", spec=generator or {})
    return scenario_create(name=name, cluster=cluster, workload=workload, policies=policies,
                           seeds=seeds, engine_settings=engine_settings)


def _under(prefix: str, exc: InputError) -> InputError:
    """The error again, its field moved under the request field `prefix` it came from."""
    field = f"{prefix}.{exc.field}" if exc.field and exc.field != prefix else prefix
    return InputError(exc.message, source=exc.source, line=exc.line, field=field)


@transaction.atomic
def scenario_create_from_inputs(*, name: str, workload_id: int, policies: list[Any],
                                seeds: list[int], cluster_id: int | None = None,
                                cluster_spec_text: str = "",
                                inference_load_id: int | None = None,
                                inference_load_params: dict[str, Any] | None = None,
                                engine_settings: dict[str, Any] | None = None,
                                description: str = "", launch: bool = False
                                ) -> tuple[Scenario, list[Run]]:
    """A scenario from the API's ids and specs: an existing cluster or a new one from its
    spec text, a stored workload, a stored or newly generated inference load; launched when
    asked. One transaction: a bad input anywhere leaves no cluster, load or scenario behind.
    """
    if (cluster_id is None) == (not cluster_spec_text):
        raise InputError("give either cluster (an id) or cluster_spec", field="cluster")
    if inference_load_id is not None and inference_load_params is not None:
        raise InputError("give either inference_load (an id) or inference_load_generator",
                         field="inference_load")
    if cluster_id is not None:
        cluster = Cluster.objects.filter(pk=cluster_id).first()
        if cluster is None:
            raise InputError(f"cluster {cluster_id} does not exist", field="cluster")
    else:
        try:
            cluster = cluster_create_from_spec(spec_text=cluster_spec_text,
                                               source="cluster spec")
        except InputError as exc:
            raise _under("cluster_spec", exc) from None
    workload = Workload.objects.filter(pk=workload_id).first()
    if workload is None:
        raise InputError(f"workload {workload_id} does not exist", field="workload")
    load = None
    if inference_load_id is not None:
        load = InferenceLoadProfile.objects.filter(pk=inference_load_id).first()
        if load is None:
            raise InputError(f"inference load {inference_load_id} does not exist",
                             field="inference_load")
    elif inference_load_params is not None:
        try:
            load = inference_load_create_generated(name=f"{name} load",
                                                   params=inference_load_params)
        except InputError as exc:
            raise _under("inference_load_generator", exc) from None
    scenario = scenario_create(name=name, cluster=cluster, workload=workload,
                               inference_load=load, policies=policies, seeds=seeds,
                               engine_settings=engine_settings, description=description)
    return scenario, scenario_launch(scenario=scenario) if launch else []


@transaction.atomic
def scenario_delete(*, scenario: Scenario) -> None:
    """Delete a scenario with its sweeps, runs and their result files (after commit)."""
    scenario.delete()
