"""Workloads, inference load profiles, scenarios, sweeps, runs and their results.

A run is one (scenario, policy, seed, sweep variant); its `content_hash` covers every input
and the engine's code, so an identical succeeded run is reused instead of computed again. A
result's per-job and time-series tables are Parquet files under MEDIA_ROOT; the row is
written only after the files are complete, so a half result is never visible.
"""

from django.db import models
from django.db.models import Q

from planner.clusters.models import Cluster


class WorkloadKind(models.TextChoices):
    UPLOAD = "upload", "uploaded trace"
    GENERATOR = "generator", "generated"


class Workload(models.Model):
    """A job trace: an uploaded file in any supported format, or a generator spec and seed."""

    name = models.CharField(max_length=200)
    kind = models.CharField(max_length=16, choices=WorkloadKind.choices)
    file = models.FileField(upload_to="workloads/", blank=True)
    format = models.CharField(max_length=32, blank=True, help_text="trace format as detected")
    generator_spec = models.JSONField(null=True, blank=True)
    generator_seed = models.PositiveIntegerField(default=0)
    content_sha256 = models.CharField(max_length=64, help_text="of the file, or of spec+seed")
    num_jobs = models.PositiveIntegerField()
    summary = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.CheckConstraint(
                condition=(Q(kind=WorkloadKind.UPLOAD) & ~Q(file=""))
                | (Q(kind=WorkloadKind.GENERATOR) & Q(generator_spec__isnull=False)),
                name="workload_has_file_or_spec",
            ),
        ]

    def __str__(self) -> str:
        return self.name


class InferenceLoadKind(models.TextChoices):
    GENERATED = "generated", "diurnal generator"
    UPLOAD = "upload", "uploaded CSV"


class InferenceLoadProfile(models.Model):
    """The inference cluster's own demand; sized to the scenario's inference pool at run time."""

    name = models.CharField(max_length=200)
    kind = models.CharField(max_length=16, choices=InferenceLoadKind.choices)
    file = models.FileField(upload_to="inference_loads/", blank=True)
    params = models.JSONField(default=dict, blank=True,
                              help_text="generate_inference_load arguments (days, seed ...)")
    content_sha256 = models.CharField(max_length=64)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.CheckConstraint(
                condition=Q(kind=InferenceLoadKind.GENERATED) | ~Q(file=""),
                name="inference_load_upload_has_file",
            ),
        ]

    def __str__(self) -> str:
        return self.name


class Scenario(models.Model):
    """A what-if question: this cluster, this workload and load, these policies and seeds.

    `policies` is a list of ``{"policy": name, "params": {...}}``; `engine_settings` holds
    `simulation.engine.EngineConfig` fields shared by every policy of the scenario.
    """

    name = models.CharField(max_length=200)
    slug = models.SlugField(max_length=100, blank=True, help_text="set for named scenarios")
    description = models.TextField(blank=True)
    cluster = models.ForeignKey(Cluster, on_delete=models.PROTECT, related_name="scenarios")
    workload = models.ForeignKey(Workload, on_delete=models.PROTECT, related_name="scenarios")
    inference_load = models.ForeignKey(InferenceLoadProfile, on_delete=models.PROTECT,
                                       null=True, blank=True, related_name="scenarios")
    policies = models.JSONField(default=list)
    seeds = models.JSONField(default=list)
    engine_settings = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.UniqueConstraint(fields=["slug"], condition=~Q(slug=""),
                                    name="scenario_slug_unique"),
        ]

    def __str__(self) -> str:
        return self.name


class SweepStatus(models.TextChoices):
    RUNNING = "running", "running"
    DONE = "done", "done"


class Sweep(models.Model):
    """A parameter grid over a scenario: every grid point x policy x seed is one run.

    `aggregate` is filled once every run ended: per grid point and policy, the mean and the
    95% confidence interval of the key metrics across seeds.
    """

    scenario = models.ForeignKey(Scenario, on_delete=models.CASCADE, related_name="sweeps")
    name = models.CharField(max_length=200, blank=True)
    grid = models.JSONField(default=dict)
    status = models.CharField(max_length=16, choices=SweepStatus.choices,
                              default=SweepStatus.RUNNING)
    aggregate = models.JSONField(default=list, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.CheckConstraint(condition=Q(status__in=SweepStatus.values),
                                   name="sweep_status_valid"),
        ]

    def __str__(self) -> str:
        return self.name or f"sweep {self.pk}"


class RunStatus(models.TextChoices):
    QUEUED = "queued", "queued"
    RUNNING = "running", "running"
    SUCCEEDED = "succeeded", "succeeded"
    FAILED = "failed", "failed"
    CANCELLED = "cancelled", "cancelled"


TERMINAL_STATUSES = (RunStatus.SUCCEEDED, RunStatus.FAILED, RunStatus.CANCELLED)


class Run(models.Model):
    """One simulation: scenario x policy x seed (x sweep variant), and how it went.

    `attempts` counts executions: a task redelivered after its worker died starts the next
    attempt, and an older attempt still alive notices and stops. A queued run is sent to the
    broker after its transaction commits (`dispatched_at`), or later by the maintenance.
    `heartbeat_at` is refreshed while a run executes; the reaper fails runs whose heartbeat
    went stale.
    """

    scenario = models.ForeignKey(Scenario, on_delete=models.CASCADE, related_name="runs")
    sweep = models.ForeignKey(Sweep, on_delete=models.CASCADE, null=True, blank=True,
                              related_name="runs")
    policy = models.CharField(max_length=64)
    params = models.JSONField(default=dict, blank=True)
    seed = models.PositiveIntegerField(default=0)
    variant = models.JSONField(default=dict, blank=True, help_text="the sweep's grid point")
    content_hash = models.CharField(max_length=64, db_index=True)
    status = models.CharField(max_length=16, choices=RunStatus.choices,
                              default=RunStatus.QUEUED)
    progress = models.FloatField(default=0.0)
    attempts = models.PositiveIntegerField(default=0)
    task_id = models.CharField(max_length=64, blank=True,
                               help_text="the message a worker may execute this run for")
    dispatched_at = models.DateTimeField(
        null=True, blank=True, help_text="when the run was sent to the broker; empty while "
        "the broker was unreachable (the periodic maintenance sends it)")
    reused_from = models.ForeignKey("self", on_delete=models.SET_NULL, null=True, blank=True,
                                    related_name="+", help_text="identical run whose result "
                                    "was copied instead of computing again")
    error = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    heartbeat_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["id"]
        indexes = [models.Index(fields=["status", "heartbeat_at"])]
        constraints = [
            models.CheckConstraint(condition=Q(status__in=RunStatus.values),
                                   name="run_status_valid"),
            models.CheckConstraint(condition=Q(progress__gte=0) & Q(progress__lte=1),
                                   name="run_progress_fraction"),
            models.CheckConstraint(
                condition=~Q(status=RunStatus.SUCCEEDED) | Q(progress=1),
                name="run_succeeded_is_complete",
            ),
        ]

    def __str__(self) -> str:
        return f"run {self.pk}: {self.policy} seed {self.seed}"

    @property
    def is_terminal(self) -> bool:
        return self.status in TERMINAL_STATUSES

    @property
    def wall_seconds(self) -> float | None:
        if self.started_at and self.finished_at:
            return (self.finished_at - self.started_at).total_seconds()
        return None


class RunResult(models.Model):
    """A finished run's summary (DESIGN.md's result contract) and where its tables are.

    `directory` is relative to MEDIA_ROOT and holds summary.json, jobs.parquet and
    timeseries.parquet; it is renamed into place complete before this row is written.
    """

    run = models.OneToOneField(Run, on_delete=models.CASCADE, related_name="result")
    summary = models.JSONField()
    directory = models.CharField(max_length=200)
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return f"result of run {self.run_id}"
