"""The scenario builder's one write: inputs, scenario and its runs together, or nothing."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from django.db import transaction

from planner.clusters import selectors as cluster_selectors
from planner.clusters.models import Cluster, ClusterKind
from planner.clusters.services import cluster_create_from_spec
from planner.scenarios.models import Scenario
from planner.scenarios.services import (
    inference_load_create_from_upload,
    inference_load_create_generated,
    scenario_create,
    scenario_launch,
    workload_create_from_generator,
    workload_create_from_upload,
)
from simulation.errors import InputError

# Fields of the builder form that an InputError of `scenario_create` may name.
_SCENARIO_FIELDS = {"name", "policies", "seeds", "inference_load"}


# Generator settings the builder has an input for, by the input's name.
_GENERATOR_FIELDS = {"num_jobs": "gen_num_jobs", "duration_days": "gen_arrival_rate_per_hour",
                     "arrival_rate_per_hour": "gen_arrival_rate_per_hour",
                     "median_duration_minutes": "gen_median_duration_minutes",
                     "elastic_fraction": "gen_elastic_fraction", "seed": "gen_seed"}


@contextmanager
def _blame(form_field: str, *, keep: set[str] | None = None,
           rename: dict[str, str] | None = None) -> Iterator[None]:
    """Re-raise an InputError so it names the builder's input that caused it: its own field
    when `keep` has it, the input `rename` maps it to, else `form_field`."""
    try:
        yield
    except InputError as exc:
        field = (exc.field if keep and exc.field in keep
                 else (rename or {}).get(exc.field or "", form_field))
        raise InputError(str(exc) if field == form_field else exc.message, source=exc.source,
                         line=exc.line, field=field) from None


@transaction.atomic
def scenario_build_and_launch(*, data: dict[str, Any]) -> Scenario:
    """Create (or reuse) the cluster, the workload and load, the scenario, and launch it.

    `data` is the builder form's cleaned data. Any InputError names the form field; the
    transaction then leaves nothing behind.
    """
    with _blame("cluster_spec", keep={"cluster"}):
        cluster = _cluster(data=data)
    if data["workload_source"] == "upload":
        with _blame("trace"):
            workload = workload_create_from_upload(name=f"{data['name']} trace",
                                                   file=data["trace"],
                                                   format=data.get("trace_format") or None)
    else:
        spec = {"num_jobs": data["gen_num_jobs"],
                "arrival_rate_per_hour": data["gen_arrival_rate_per_hour"],
                "median_duration_minutes": data["gen_median_duration_minutes"],
                "elastic_fraction": data.get("gen_elastic_fraction") or 0.0}
        with _blame("gen_num_jobs", rename=_GENERATOR_FIELDS):
            workload = workload_create_from_generator(name=f"{data['name']} workload",
                                                      spec=spec, seed=data.get("gen_seed") or 0)
    load = None
    if data["inference_source"] == "generated":
        params = {"days": data["inference_days"]}
        if data.get("inference_peak_utilization") is not None:
            params["peak_utilization"] = data["inference_peak_utilization"]
        with _blame("inference_days"):
            load = inference_load_create_generated(name=f"{data['name']} load", params=params)
    elif data["inference_source"] == "upload":
        with _blame("inference_file"):
            load = inference_load_create_from_upload(name=f"{data['name']} load",
                                                     file=data["inference_file"])
    with _blame("policies", keep=_SCENARIO_FIELDS):
        scenario = scenario_create(
            name=data["name"], cluster=cluster, workload=workload, inference_load=load,
            policies=data["policy_entries"], seeds=data["seeds"],
            engine_settings=data.get("engine_settings") or {},
        )
    scenario_launch(scenario=scenario)
    return scenario


def _cluster(*, data: dict[str, Any]) -> Cluster:
    if data.get("cluster"):
        try:
            return cluster_selectors.cluster_get(cluster_id=int(data["cluster"]))
        except (Cluster.DoesNotExist, ValueError):
            raise InputError("that cluster no longer exists; choose another",
                             field="cluster") from None
    return cluster_create_from_spec(spec_text=data["cluster_spec"], source="cluster spec",
                                    kind=ClusterKind.WHAT_IF)
