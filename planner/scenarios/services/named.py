"""The demo's what-if study and the paper reproductions' named scenarios."""

from __future__ import annotations

import logging
from collections.abc import Collection
from typing import Any

from django.db import transaction

from planner.clusters.models import Cluster, ClusterKind
from planner.clusters.services import cluster_create_from_spec, cluster_to_spec
from planner.scenarios.inputs import (
    sha256_json,
)
from planner.scenarios.models import (
    TERMINAL_STATUSES,
    InferenceLoadKind,
    InferenceLoadProfile,
    Scenario,
    Workload,
)
from planner.scenarios.services.runs import scenario_launch
from planner.scenarios.services.scenarios import scenario_create
from planner.scenarios.services.sweeps import sweep_create
from planner.scenarios.services.workloads import (
    inference_load_create_generated,
    workload_create_from_generator,
)
from simulation.errors import InputError
from simulation.policies import registry
from simulation.runner import split_settings

logger = logging.getLogger(__name__)



DEMO_CLUSTER_SPEC = """\
name: demo-what-if
gpu_types: {V100: {speed: 1.0, memory_gb: 32}, T4x4: {speed: 1.0, memory_gb: 64}}
pools:
  - {name: training,  kind: training,  gpu_type: V100, servers: 8, gpus_per_server: 8}
  - {name: inference, kind: inference, gpu_type: T4x4, servers: 8, gpus_per_server: 2,
     lending_limit: 6}
"""
# Bursty arrivals that outrun 64 training GPUs for hours, heavy-tailed durations, 30 %
# elastic jobs: queues form, so the policies' orderings, loaning and sharing differ (FIFO's
# mean JCT is 1.5-2.3x the others' on seeds 0-2).
DEMO_WORKLOAD = {"num_jobs": 400, "duration_days": 2, "arrivals": "bursty",
                 "median_duration_minutes": 45, "elastic_fraction": 0.3,
                 "gpu_sizes": [[1, 0.5], [2, 0.2], [4, 0.15], [8, 0.12], [16, 0.03]]}
DEMO_POLICIES = ("fifo", "sjf", "srtf", "tiresias", "elastic-tiresias", "aryl", "gandiva",
                 "muri-s")
DEMO_SEEDS = [0, 1, 2]
DEMO_SWEEP_GRID = {"load_scale": [0.5, 1.0, 1.5]}
DEMO_SLUG = "demo-contended"


@transaction.atomic
def demo_load() -> Scenario | None:
    """The demo's what-if study: a contended scenario on three seeds and a load sweep over
    it, launched once; idempotent (None when the scenario exists).

    The inference servers count their T4s as V100-equivalents (Aryl §5.2), so a job lent one
    runs at the speed it would on the training pool.
    """
    if Scenario.objects.filter(slug=DEMO_SLUG).exists():
        return None
    cluster = Cluster.objects.filter(name="demo-what-if").first() or cluster_create_from_spec(
        spec_text=DEMO_CLUSTER_SPEC, source="demo", kind=ClusterKind.WHAT_IF)
    workload = workload_create_from_generator(name="demo: 400 bursty jobs over 2 days",
                                              spec=DEMO_WORKLOAD, seed=0)
    load = inference_load_create_generated(name="demo: diurnal inference load",
                                           params={"days": 5})
    known = registry()
    scenario = scenario_create(
        name="Demo: the papers' policies on a contended cluster", slug=DEMO_SLUG,
        cluster=cluster, workload=workload, inference_load=load, seeds=DEMO_SEEDS,
        policies=[name for name in DEMO_POLICIES if name in known],
        description="8 x 8 V100 training servers and 8 inference servers lent when idle; "
                    "400 bursty jobs over 2 days, 30 % elastic; three seeds.",
    )
    scenario_launch(scenario=scenario)
    sweep_create(scenario=scenario, grid=DEMO_SWEEP_GRID, name="Demo: load from 0.5x to 1.5x")
    return scenario


def _cluster_for_spec(*, data: dict[str, Any], source: str) -> Cluster:
    """The stored cluster of that name when it has the same spec, else a new one."""
    from planner.clusters.services import cluster_create, cluster_spec_dict
    from simulation.workloads import cluster_spec_from_dict

    spec = cluster_spec_from_dict(data, source)
    existing = Cluster.objects.filter(name=spec.name).first()
    if existing is not None:
        if cluster_spec_dict(spec=cluster_to_spec(cluster=existing)) != cluster_spec_dict(
                spec=spec):
            raise InputError(f"a different cluster named '{spec.name}' exists", source=source,
                             field="cluster.name")
        return existing
    return cluster_create(spec=spec, source=source, kind=ClusterKind.WHAT_IF)


@transaction.atomic
def named_scenarios_load(*, names: Collection[str] | None = None) -> list[Scenario]:
    """The paper reproductions' named scenarios (simulation/scenarios/*.yaml), or those of
    `names`, as scenarios; returns the ones created.

    Idempotent by slug (the scenario's name); a stored scenario of that slug whose workload,
    policies or settings differ from the file's is an earlier version: it loses the slug
    (keeping its runs, renamed) and the file's version is created. A shared setting goes to
    each policy that declares it and to the engine otherwise (`split_settings`); the
    inference load is sized to the cluster. Nothing is launched here
    (`named_scenario_launch` does).
    """
    from simulation.scenarios import load_named_scenarios

    created = []
    for name, named in load_named_scenarios().items():
        if names is not None and name not in names:
            continue
        policies, engines = [], []
        for entry in named.policies:
            params, engine = split_settings(entry["policy"], named.settings)
            policies.append({"policy": entry["policy"], "params": {**params, **entry["params"]}})
            engines.append(engine)
        if any(engine != engines[0] for engine in engines):
            raise InputError("a setting is a parameter of some of its policies only: give it "
                             "in their params", source=named.source, field=name)
        load_params = None if named.inference_load is None else dict(named.inference_load)
        existing = (Scenario.objects.filter(slug=name)
                    .select_related("workload", "cluster", "inference_load").first())
        if existing is not None:
            load = existing.inference_load
            if (existing.workload.generator_spec == named.workload
                    and existing.cluster.name == named.cluster["name"]
                    and (load.content_sha256 if load else None) == (
                        None if load_params is None else sha256_json(load_params))
                    and existing.policies == policies and existing.engine_settings == engines[0]):
                continue
            # An earlier version of this named scenario: kept with its runs, under its name.
            existing.slug = ""
            existing.name = f"{existing.name} (earlier version #{existing.pk})"
            existing.save(update_fields=["slug", "name"])
        cluster = _cluster_for_spec(data=named.cluster, source=named.source)
        workload_row = (Workload.objects.filter(
            content_sha256=sha256_json({"spec": named.workload, "seed": 0})).first()
            or workload_create_from_generator(name=f"{name} workload", spec=named.workload))
        load = None
        if load_params is not None:
            load = (InferenceLoadProfile.objects.filter(
                kind=InferenceLoadKind.GENERATED, content_sha256=sha256_json(load_params))
                .first() or inference_load_create_generated(name=f"{name} inference load",
                                                            params=load_params))
        created.append(scenario_create(
            name=name, slug=name, description=named.description, cluster=cluster,
            workload=workload_row, inference_load=load, seeds=[0], policies=policies,
            engine_settings=engines[0],
        ))
    return created


def named_scenario_launch(*, name: str) -> Scenario:
    """Create the named scenario if needed and launch it, unless its runs are under way.

    One click on the reproductions page: a second click while the runs go on only shows them.
    """
    from simulation.scenarios import load_named_scenarios

    if name not in load_named_scenarios():
        raise InputError(f"unknown named scenario {name!r}", source="named scenarios",
                         field="name")
    named_scenarios_load(names={name})
    scenario = Scenario.objects.get(slug=name)
    if not scenario.runs.exclude(status__in=TERMINAL_STATUSES).exists():
        scenario_launch(scenario=scenario)
    return scenario
