"""Request and answer shapes of the what-if API's workloads and scenarios.

Inputs are `StrictSerializer`s (unknown keys refused by name); the services check everything
the shapes cannot say (a policy's parameters, a generator's knobs, whether a policy can run
on the cluster) and name the field in their `InputError`.
"""

from __future__ import annotations

from typing import Any

from django.urls import reverse
from drf_spectacular.utils import OpenApiExample, extend_schema_field
from rest_framework import serializers

from planner.core.fields import PolicyField
from planner.core.serializers import StrictSerializer
from planner.scenarios.models import Run, RunStatus, Scenario, Workload
from simulation.limits import MAX_INT, MAX_SEED
from simulation.workloads import FORMATS

# --- workloads -------------------------------------------------------------------------------


class WorkloadUploadSerializer(StrictSerializer):
    name = serializers.CharField(max_length=200, required=False, default="")
    file = serializers.FileField(allow_empty_file=True)
    format = serializers.ChoiceField(choices=FORMATS, required=False, allow_blank=True,
                                     default="", help_text="blank: detect from the header")


class WorkloadGenerateSerializer(StrictSerializer):
    name = serializers.CharField(max_length=200)
    generator = serializers.JSONField(
        help_text="generator settings (simulation.workloads.GeneratorSpec), e.g. "
                  "`num_jobs`, `duration_days` or `arrival_rate_per_hour`, "
                  "`median_duration_minutes`, `elastic_fraction`, `gpu_sizes` "
                  "([[gpus, weight], ...]); an unknown setting is refused by name")
    seed = serializers.IntegerField(min_value=0, max_value=MAX_SEED, default=0)


class WorkloadOutputSerializer(serializers.ModelSerializer):
    class Meta:
        model = Workload
        fields = ["id", "name", "kind", "format", "num_jobs", "generator_spec",
                  "generator_seed", "summary", "created_at"]


# --- scenarios -------------------------------------------------------------------------------


class PolicyEntrySerializer(serializers.Serializer):
    policy = PolicyField()
    params = serializers.DictField(
        required=False, default=dict,
        help_text="the policy's parameters (`python -m simulation policies` lists them)")


class InferenceLoadGeneratorSerializer(serializers.Serializer):
    """A diurnal inference load (Aryl Fig. 1), sized to the cluster's inference pools: the
    arguments of `generate_inference_load` (`planner.scenarios.inputs.INFERENCE_LOAD_PARAMS`),
    checked again by the service."""

    days = serializers.FloatField(min_value=0, max_value=366)
    step_seconds = serializers.FloatField(required=False, min_value=1)
    peak_to_trough = serializers.FloatField(required=False, min_value=1)
    peak_hour = serializers.FloatField(required=False, min_value=0, max_value=24)
    trough_hour = serializers.FloatField(required=False, min_value=0, max_value=24)
    peak_utilization = serializers.FloatField(required=False, min_value=0, max_value=1)
    noise = serializers.FloatField(required=False, min_value=0, max_value=1)
    seed = serializers.IntegerField(required=False, min_value=0, max_value=MAX_SEED)


class ScenarioCreateSerializer(StrictSerializer):
    name = serializers.CharField(max_length=200)
    description = serializers.CharField(required=False, allow_blank=True, default="")
    cluster = serializers.IntegerField(required=False, min_value=1, max_value=MAX_INT,
                                       help_text="an existing cluster's id; or cluster_spec")
    cluster_spec = serializers.CharField(
        required=False, help_text="a new cluster: its spec as YAML or JSON (DESIGN.md), or "
                                  "the Tiresias/Muri spec CSV")
    workload = serializers.IntegerField(min_value=1, max_value=MAX_INT,
                                        help_text="a workload's id (POST /api/v1/workloads/)")
    inference_load = serializers.IntegerField(required=False, min_value=1, max_value=MAX_INT,
                                              help_text="an inference load profile's id")
    inference_load_generator = InferenceLoadGeneratorSerializer(
        required=False, help_text="or a new generated diurnal load")
    policies = PolicyEntrySerializer(many=True, allow_empty=False)
    seeds = serializers.ListField(child=serializers.IntegerField(min_value=0,
                                                                 max_value=MAX_SEED),
                                  default=[0], help_text="one run per policy and seed")
    engine_settings = serializers.DictField(
        required=False, default=dict,
        help_text="engine settings shared by every policy, e.g. `reclaim_strategy`, "
                  "`scaling`, `cadence`")
    launch = serializers.BooleanField(
        default=False, help_text="also create the runs now, as POST scenarios/<id>/launch")


class RunBriefSerializer(serializers.ModelSerializer):
    url = serializers.SerializerMethodField()

    class Meta:
        model = Run
        fields = ["id", "policy", "seed", "status", "progress", "url"]

    def get_url(self, run: Run) -> str:
        return reverse("run-detail", args=[run.pk])


class ScenarioLinksSerializer(serializers.Serializer):
    launch = serializers.CharField(help_text="POST here to create the runs")
    runs = serializers.CharField()
    sweeps = serializers.CharField()
    compare = serializers.CharField(help_text="the comparison page")


class ScenarioOutputSerializer(serializers.ModelSerializer):
    policies = PolicyEntrySerializer(many=True)
    seeds = serializers.ListField(child=serializers.IntegerField())
    engine_settings = serializers.DictField()
    runs = serializers.SerializerMethodField()
    run_counts = serializers.SerializerMethodField()
    links = serializers.SerializerMethodField()

    class Meta:
        model = Scenario
        fields = ["id", "name", "slug", "description", "cluster", "workload",
                  "inference_load", "policies", "seeds", "engine_settings", "created_at",
                  "run_counts", "runs", "links"]

    @extend_schema_field(RunBriefSerializer(many=True))
    def get_runs(self, scenario: Scenario) -> list[dict[str, Any]]:
        """The scenario's own runs (not its sweeps'); a sweep's are under its `runs` link."""
        runs = [run for run in scenario.runs.all() if run.sweep_id is None]
        return RunBriefSerializer(runs, many=True).data

    @extend_schema_field({"type": "object", "additionalProperties": {"type": "integer"},
                          "example": {"queued": 0, "running": 1, "succeeded": 3,
                                      "failed": 0, "cancelled": 0}})
    def get_run_counts(self, scenario: Scenario) -> dict[str, int]:
        """Runs by status, sweeps' included."""
        counts = dict.fromkeys(RunStatus.values, 0)
        for run in scenario.runs.all():
            counts[run.status] += 1
        return counts

    @extend_schema_field(ScenarioLinksSerializer)
    def get_links(self, scenario: Scenario) -> dict[str, str]:
        return {
            "launch": reverse("scenario-launch", args=[scenario.pk]),
            "runs": f"{reverse('run-list')}?scenario={scenario.pk}",
            "sweeps": f"{reverse('sweep-list')}?scenario={scenario.pk}",
            "compare": reverse("dashboard:scenario-compare", args=[scenario.pk]),
        }


# --- examples for the schema -----------------------------------------------------------------

WORKLOAD_GENERATE_EXAMPLE = OpenApiExample(
    "generated workload", request_only=True, media_type="application/json",
    value={"name": "500 jobs in a day", "seed": 7,
           "generator": {"num_jobs": 500, "duration_days": 1, "median_duration_minutes": 30,
                         "elastic_fraction": 0.5}},
)
SCENARIO_CREATE_EXAMPLES = [
    OpenApiExample(
        "existing cluster and workload", request_only=True,
        value={"name": "aryl vs tiresias", "cluster": 1, "workload": 1,
               "inference_load_generator": {"days": 2, "peak_utilization": 0.9},
               "policies": [{"policy": "aryl"},
                            {"policy": "tiresias", "params": {}}],
               "seeds": [0, 1, 2], "engine_settings": {"reclaim_strategy": "aryl"},
               "launch": True},
    ),
    OpenApiExample(
        "new cluster from a spec", request_only=True,
        value={"name": "gandiva time slices", "workload": 1,
               "cluster_spec": "name: small\ngpu_types: {V100: {speed: 1.0, memory_gb: 32}}\n"
                               "pools:\n  - {name: training, kind: training, gpu_type: V100, "
                               "servers: 4, gpus_per_server: 8}\n",
               "policies": [{"policy": "gandiva", "params": {"time_slice": 60}},
                            {"policy": "fifo"}],
               "seeds": [0]},
    ),
]
SWEEP_CREATE_EXAMPLE = OpenApiExample(
    "load and prediction error", request_only=True,
    value={"name": "load x error", "grid": {"load_scale": [1, 2],
                                             "prediction_error_share": [0, 0.5]}},
)
