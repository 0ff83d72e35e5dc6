"""Request and answer shapes of the live API, for validation of job writes and for an
OpenAPI schema that describes each decision exactly. Decision bodies are validated by
`simulation.decide` itself (one validator, JSON-path field names); the serializers here
document them and refuse keys they do not declare (`StrictSerializer.check_shape`)."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from planner.clusters.models import Cluster, ClusterKind, Pool, PoolKind, Server
from planner.core.fields import PolicyField
from planner.core.schema import RECLAIM_STRATEGY_CHOICES
from planner.core.serializers import StrictSerializer
from planner.live.models import Decision, Job, JobStatus
from simulation.limits import (
    MAX_GPUS_PER_JOB,
    MAX_GPUS_PER_SERVER,
    MAX_JOB_SECONDS,
    MAX_SEED,
)

# The simulator's input limits (simulation/limits.py), so the schema documents them.
MAX_GPUS = MAX_GPUS_PER_JOB
MAX_SECONDS = MAX_JOB_SECONDS


# --- resources -------------------------------------------------------------------------------


class ClusterSerializer(serializers.ModelSerializer):
    class Meta:
        model = Cluster
        fields = ["id", "name", "description", "created_at", "updated_at"]


class PoolSerializer(serializers.ModelSerializer):
    gpu_type = serializers.CharField(source="gpu_type.name")

    class Meta:
        model = Pool
        fields = ["id", "cluster", "name", "kind", "gpu_type", "gpus_per_server",
                  "nominal_quota", "borrowing_limit", "lending_limit"]


class ServerSerializer(serializers.ModelSerializer):
    pool_name = serializers.CharField(source="pool.name")
    cluster = serializers.IntegerField(source="pool.cluster_id")

    class Meta:
        model = Server
        fields = ["id", "cluster", "pool", "pool_name", "name", "status", "updated_at"]


class SlotSerializer(serializers.Serializer):
    server = serializers.CharField(help_text="server id (host name)")
    gpus = serializers.IntegerField(min_value=1)
    flexible = serializers.BooleanField(default=False,
                                        help_text="workers beyond the elastic minimum")


class JobSerializer(serializers.ModelSerializer):
    placement = serializers.SerializerMethodField()
    workers = serializers.SerializerMethodField()

    class Meta:
        model = Job
        fields = ["id", "cluster", "name", "status", "model", "gpus_per_worker", "min_workers",
                  "max_workers", "num_gpus", "workers", "gpu_type", "preemptible", "priority",
                  "duration_seconds", "remaining_seconds", "progress", "preemptions",
                  "placement", "submitted_at", "started_at", "finished_at", "updated_at"]

    @extend_schema_field(SlotSerializer(many=True))
    def get_placement(self, job: Job) -> list[dict]:
        return [{"server": p.server.name, "gpus": p.gpus, "flexible": p.flexible}
                for p in job.placements.all()]

    def get_workers(self, job: Job) -> int:
        return sum(p.gpus for p in job.placements.all()) // job.gpus_per_worker


class JobSubmitSerializer(StrictSerializer):
    cluster = serializers.PrimaryKeyRelatedField(
        queryset=Cluster.objects.filter(kind=ClusterKind.LIVE),
        help_text="a live cluster (what-if clusters are scenario templates and take no jobs)")
    name = serializers.RegexField(r"^[A-Za-z0-9][A-Za-z0-9._:@/-]*$", max_length=100,
                                  help_text="the client's job id, unique in the cluster")
    num_gpus = serializers.IntegerField(min_value=1, max_value=MAX_GPUS,
                                        help_text="GPUs requested; duration is measured at it")
    duration_seconds = serializers.FloatField(min_value=0, max_value=MAX_SECONDS)
    remaining_seconds = serializers.FloatField(min_value=0, max_value=MAX_SECONDS,
                                               required=False)
    gpus_per_worker = serializers.IntegerField(min_value=1, max_value=1024, default=1)
    min_workers = serializers.IntegerField(min_value=1, max_value=MAX_GPUS, required=False,
                                           help_text="elastic minimum; default: requested")
    max_workers = serializers.IntegerField(min_value=1, max_value=MAX_GPUS, required=False,
                                           help_text="elastic maximum; default: requested")
    model = serializers.CharField(max_length=100, default="generic")
    gpu_type = serializers.CharField(max_length=40, default="", allow_blank=True)
    preemptible = serializers.BooleanField(default=True)
    priority = serializers.IntegerField(min_value=-1_000_000, max_value=1_000_000, default=0)


class JobReportSerializer(StrictSerializer):
    remaining_seconds = serializers.FloatField(min_value=0, max_value=MAX_SECONDS,
                                               required=False)
    progress = serializers.FloatField(min_value=0, max_value=1, required=False)
    finished = serializers.BooleanField(default=False)


class DecisionSerializer(serializers.ModelSerializer):
    actor = serializers.CharField(source="actor.username", default=None, allow_null=True)

    class Meta:
        model = Decision
        fields = ["id", "cluster", "kind", "stateful", "actor", "response", "created_at"]


class DecisionDetailSerializer(DecisionSerializer):
    request = serializers.JSONField(read_only=True, help_text="the exact request decided on")

    class Meta(DecisionSerializer.Meta):
        fields = [*DecisionSerializer.Meta.fields, "request"]


class ReplaySerializer(serializers.Serializer):
    decision = serializers.IntegerField()
    same = serializers.BooleanField(help_text="the recomputed answer equals the logged one")
    response = serializers.JSONField()


# --- decision requests (documentation) -------------------------------------------------------


class SnapshotServerSerializer(serializers.Serializer):
    id = serializers.CharField()
    pool = serializers.CharField()
    gpus = serializers.IntegerField(min_value=1, max_value=MAX_GPUS_PER_SERVER)
    gpu_type = serializers.CharField(default="V100")
    on_loan = serializers.BooleanField(default=False)
    kind = serializers.ChoiceField(choices=PoolKind.choices, required=False)


class SnapshotJobSerializer(serializers.Serializer):
    id = serializers.CharField()
    status = serializers.ChoiceField(choices=[JobStatus.QUEUED, JobStatus.RUNNING],
                                     default=JobStatus.QUEUED)
    gpus_per_worker = serializers.IntegerField(min_value=1, default=1)
    min_workers = serializers.IntegerField(min_value=1, required=False)
    max_workers = serializers.IntegerField(min_value=1, required=False)
    num_gpus = serializers.IntegerField(min_value=1, required=False)
    remaining_seconds = serializers.FloatField(min_value=0)
    duration = serializers.FloatField(min_value=0, required=False)
    submit_time = serializers.FloatField(min_value=0, required=False)
    model = serializers.CharField(required=False)
    gpu_type = serializers.CharField(required=False)
    preemptible = serializers.BooleanField(default=True)
    priority = serializers.IntegerField(default=0)
    placement = SlotSerializer(many=True, required=False)


class SnapshotPoolSerializer(serializers.Serializer):
    name = serializers.CharField()
    kind = serializers.ChoiceField(choices=PoolKind.choices, required=False)
    lending_limit = serializers.IntegerField(min_value=0, required=False, allow_null=True)


class GpuTypeSpeedSerializer(serializers.Serializer):
    speed = serializers.FloatField(default=1.0)
    memory_gb = serializers.FloatField(default=32.0)


class SnapshotSerializer(serializers.Serializer):
    now = serializers.FloatField(min_value=0, required=False)
    gpu_types = serializers.DictField(child=GpuTypeSpeedSerializer(), required=False)
    pools = SnapshotPoolSerializer(many=True, required=False)
    servers = SnapshotServerSerializer(many=True)
    jobs = SnapshotJobSerializer(many=True, required=False)


# Keys a client may send a stateful decision by mistake, and what to do instead.
STATEFUL_HINTS = {
    "state": "a stateful decision uses the cluster's own state; send a snapshot to "
             "POST /api/v1/decisions/<kind> instead",
    "queue": "a stateful decision uses the cluster's own state; submit the jobs first "
             "(POST /api/v1/jobs/), then schedule",
}


class LoanRequestSerializer(StrictSerializer):
    unknown_field_hints = STATEFUL_HINTS
    servers = serializers.ListField(child=serializers.CharField(), required=False,
                                    help_text="inference servers offered, by id")
    count = serializers.IntegerField(min_value=1, required=False,
                                     help_text="or: this many idle inference servers")
    pool = serializers.CharField(required=False, allow_null=True,
                                 help_text="with count: only this pool's servers")


class ReclaimRequestSerializer(StrictSerializer):
    unknown_field_hints = STATEFUL_HINTS
    count = serializers.IntegerField(min_value=1)
    strategy = serializers.ChoiceField(choices=RECLAIM_STRATEGY_CHOICES, default="aryl",
                                       help_text="which on-loan servers to give back")
    seed = serializers.IntegerField(min_value=0, max_value=MAX_SEED, default=0)
    grace_period_seconds = serializers.FloatField(min_value=0, default=30.0)


class ScheduleRequestSerializer(StrictSerializer):
    unknown_field_hints = STATEFUL_HINTS
    policy = PolicyField(help_text="a registered policy, or a composition of one with stages")
    params = serializers.DictField(required=False, help_text="the policy's parameters")
    seed = serializers.IntegerField(min_value=0, max_value=MAX_SEED, default=0)
    grace_period_seconds = serializers.FloatField(min_value=0, default=30.0)


class StatelessLoanRequestSerializer(LoanRequestSerializer):
    unknown_field_hints: dict[str, str] = {}
    state = SnapshotSerializer()


class StatelessReclaimRequestSerializer(ReclaimRequestSerializer):
    unknown_field_hints: dict[str, str] = {}
    state = SnapshotSerializer()


class StatelessScheduleRequestSerializer(ScheduleRequestSerializer):
    unknown_field_hints: dict[str, str] = {}
    state = SnapshotSerializer()
    queue = SnapshotJobSerializer(many=True, required=False, allow_null=True,
                                  help_text="waiting jobs (null: none)")


# --- decision answers ------------------------------------------------------------------------


class HostSlotsSerializer(serializers.Serializer):
    host = serializers.CharField()
    slots = serializers.IntegerField(help_text="GPUs (worker processes) joining or leaving")


class ScaleDecisionSerializer(serializers.Serializer):
    job = serializers.CharField()
    workers = serializers.IntegerField(help_text="workers added or removed")
    from_workers = serializers.IntegerField()
    target_workers = serializers.IntegerField(help_text="within [min_workers, max_workers]")
    min_workers = serializers.IntegerField()
    max_workers = serializers.IntegerField()
    join_hosts = HostSlotsSerializer(many=True)
    leave_hosts = HostSlotsSerializer(many=True)
    placement = SlotSerializer(many=True, help_text="the job's whole placement afterwards")
    grace_period_seconds = serializers.FloatField(help_text="before a leaving host goes")


class LaunchSerializer(serializers.Serializer):
    job = serializers.CharField()
    workers = serializers.IntegerField()
    placement = SlotSerializer(many=True)


class MigrateSerializer(serializers.Serializer):
    job = serializers.CharField()
    placement = SlotSerializer(many=True)


class ShareSerializer(serializers.Serializer):
    job = serializers.CharField()
    share = serializers.FloatField(help_text="the job's share of its GPUs' time now (1: alone)")


class LoanAnswerSerializer(serializers.Serializer):
    servers = serializers.ListField(child=serializers.CharField())


class ReclaimAnswerSerializer(serializers.Serializer):
    strategy = serializers.CharField()
    servers = serializers.ListField(child=serializers.CharField())
    preempted_jobs = serializers.ListField(child=serializers.CharField())
    scaled_in = ScaleDecisionSerializer(many=True)
    collateral_gpus = serializers.IntegerField()


class ScheduleAnswerSerializer(serializers.Serializer):
    policy = serializers.CharField()
    launch = LaunchSerializer(many=True)
    scale_out = ScaleDecisionSerializer(many=True)
    scale_in = ScaleDecisionSerializer(many=True)
    preempt = serializers.ListField(child=serializers.CharField())
    migrate = MigrateSerializer(many=True)
    share = ShareSerializer(many=True)
