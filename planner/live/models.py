"""Live state the decision API keeps next to the clusters app's servers.

A live `Job` is a training job a REST client submitted to a cluster; its `Placement` rows say
how many GPUs it holds on which server (`flexible`: workers beyond the elastic minimum, which
a reclaim may scale in). Every loan, reclaim and schedule answer is stored as a `Decision`
with the exact request the simulator's decide functions saw, so it can be replayed. An
`IdempotencyRecord` keeps the first answer to a state-changing POST under its key.
"""

import zlib
from typing import Any

from django.conf import settings
from django.db import models
from django.db.models import F, Q

from planner.clusters.models import Cluster, Server
from planner.live.jsonio import json_bytes, json_loads


class JobStatus(models.TextChoices):
    QUEUED = "queued", "queued"
    RUNNING = "running", "running"
    FINISHED = "finished", "finished"
    CANCELLED = "cancelled", "cancelled"


ACTIVE_STATUSES = (JobStatus.QUEUED, JobStatus.RUNNING)


class Job(models.Model):
    """A submitted training job; `name` is the client's job id, unique in its cluster.

    `duration_seconds` is the expected running time at `num_gpus` on the reference GPU and
    `remaining_seconds` what is left of it, as the job last reported.
    """

    cluster = models.ForeignKey(Cluster, on_delete=models.CASCADE, related_name="live_jobs")
    name = models.CharField(max_length=100)
    status = models.CharField(max_length=16, choices=JobStatus.choices,
                              default=JobStatus.QUEUED)
    model = models.CharField(max_length=100, default="generic")
    gpus_per_worker = models.PositiveIntegerField(default=1)
    min_workers = models.PositiveIntegerField(default=1)
    max_workers = models.PositiveIntegerField(default=1)
    num_gpus = models.PositiveIntegerField()
    gpu_type = models.CharField(max_length=40, blank=True)
    preemptible = models.BooleanField(default=True)
    priority = models.IntegerField(default=0)
    duration_seconds = models.FloatField()
    remaining_seconds = models.FloatField()
    progress = models.FloatField(default=0.0)
    preemptions = models.PositiveIntegerField(default=0)
    submitted_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["cluster", "submitted_at", "id"]
        constraints = [
            models.UniqueConstraint(fields=["cluster", "name"], name="live_job_name_unique"),
            models.CheckConstraint(condition=Q(status__in=JobStatus.values),
                                   name="live_job_status_valid"),
            models.CheckConstraint(condition=Q(gpus_per_worker__gte=1),
                                   name="live_job_gpus_per_worker_positive"),
            models.CheckConstraint(condition=Q(min_workers__gte=1),
                                   name="live_job_min_workers_positive"),
            models.CheckConstraint(condition=Q(max_workers__gte=F("min_workers")),
                                   name="live_job_worker_range"),
            models.CheckConstraint(condition=Q(remaining_seconds__gte=0),
                                   name="live_job_remaining_not_negative"),
            models.CheckConstraint(condition=Q(progress__gte=0) & Q(progress__lte=1),
                                   name="live_job_progress_fraction"),
        ]
        indexes = [models.Index(fields=["cluster", "status"])]

    def __str__(self) -> str:
        return self.name

    @property
    def elastic(self) -> bool:
        return self.max_workers > self.min_workers


class Placement(models.Model):
    """GPUs a running job holds on one server (base or flexible workers)."""

    job = models.ForeignKey(Job, on_delete=models.CASCADE, related_name="placements")
    # RESTRICT: a server holding GPUs of a job cannot be deleted, but its cluster can (the
    # jobs and their placements go with it); PROTECT refused that too.
    server = models.ForeignKey(Server, on_delete=models.RESTRICT, related_name="placements")
    gpus = models.PositiveIntegerField()
    flexible = models.BooleanField(default=False)

    class Meta:
        ordering = ["job", "id"]
        constraints = [
            models.UniqueConstraint(fields=["job", "server", "flexible"],
                                    name="live_placement_unique"),
            models.CheckConstraint(condition=Q(gpus__gte=1), name="live_placement_gpus_positive"),
        ]


class CompressedJSONField(models.BinaryField):
    """A JSON value stored zlib-compressed.

    A decision's request holds the whole snapshot: 700 KB of JSON for 500 servers and 2,000
    jobs, which as `jsonb` took longer to write than the decision took to compute. Compressed
    it is about 25 KB, and it reads back as the same value, so replays stay exact.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("editable", True)
        super().__init__(*args, **kwargs)

    def from_db_value(self, value: Any, expression: Any, connection: Any) -> Any:
        return None if value is None else json_loads(zlib.decompress(value))

    def get_prep_value(self, value: Any) -> Any:
        return None if value is None else zlib.compress(json_bytes(value), 1)

    def to_python(self, value: Any) -> Any:
        return json_loads(value.encode()) if isinstance(value, str) else value

    def value_to_string(self, obj: models.Model) -> str:
        return json_bytes(self.value_from_object(obj)).decode()


class DecisionKind(models.TextChoices):
    LOAN = "loan", "loan"
    RECLAIM = "reclaim", "reclaim"
    SCHEDULE = "schedule", "schedule"


class Decision(models.Model):
    """One answer of the decision API and the request that produced it (for replay).

    `cluster` is empty for a stateless decision (the snapshot came in the request);
    `request` is always the full body `simulation.decide` was called with. Storing the
    latency here, not in a process's memory, lets /metrics report it for every web process.
    """

    cluster = models.ForeignKey(Cluster, on_delete=models.CASCADE, null=True, blank=True,
                                related_name="decisions")
    kind = models.CharField(max_length=16, choices=DecisionKind.choices)
    stateful = models.BooleanField()
    actor = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True,
                              blank=True, related_name="decisions")
    request = CompressedJSONField()
    response = models.JSONField()
    duration_seconds = models.FloatField(
        null=True, blank=True, help_text="how long the service took to answer: lock wait, "
        "state read, decision and its application (empty for decisions logged before it was "
        "recorded); /metrics' decision latency histogram")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.CheckConstraint(condition=Q(kind__in=DecisionKind.values),
                                   name="live_decision_kind_valid"),
            models.CheckConstraint(condition=Q(stateful=False) | Q(cluster__isnull=False),
                                   name="live_decision_stateful_has_cluster"),
        ]
        indexes = [models.Index(fields=["cluster", "kind", "-created_at"])]

    def __str__(self) -> str:
        return f"{self.kind} #{self.pk}"


class LiveStateVersion(models.Model):
    """A counter bumped by every write to a cluster's live state (`planner.live.state_cache`).

    Each web process keeps the last state it decided on, keyed by this number; a request
    that finds the number unchanged under the cluster lock may decide on that copy instead of
    reading 2,000 jobs again. A table of its own, so no form or `Cluster.save()` ever writes a
    stale number back.
    """

    cluster = models.OneToOneField(Cluster, on_delete=models.CASCADE, primary_key=True,
                                   related_name="live_state_version")
    version = models.BigIntegerField(default=0)

    def __str__(self) -> str:
        return f"{self.cluster_id} v{self.version}"


class LiveStateChange(models.Model):
    """What one version of a cluster's live state changed: a job (its row or placements) or
    a server's loan. A process that cached an older version re-reads just these rows
    (`state_cache.CachedState.refreshed`); a version with no entry here (a server, pool or
    GPU type edit) means anything may have changed, and it reads the whole state again.

    Plain ids, not foreign keys: the entry must outlive a deleted job. Entries older than
    `versions.CHANGES_KEPT` versions are pruned.
    """

    cluster = models.ForeignKey(Cluster, on_delete=models.CASCADE, related_name="+")
    version = models.BigIntegerField()
    job_id = models.BigIntegerField(null=True, blank=True)
    server_id = models.BigIntegerField(null=True, blank=True)

    class Meta:
        indexes = [models.Index(fields=["cluster", "version"])]

    def __str__(self) -> str:
        what = f"job {self.job_id}" if self.job_id is not None else f"server {self.server_id}"
        return f"{self.cluster_id} v{self.version}: {what}"


class IdempotencyRecord(models.Model):
    """The first answer to a state-changing POST sent with `Idempotency-Key: key`."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE,
                             related_name="idempotency_records")
    key = models.CharField(max_length=200)
    request_hash = models.CharField(max_length=64)
    status_code = models.PositiveSmallIntegerField()
    response = models.JSONField()
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["user", "key"], name="live_idempotency_key_unique"),
        ]
