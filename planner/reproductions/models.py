"""A run of one paper's reproduction (`python -m simulation reproduce PAPER`) on a worker.

The report is the command's JSON (`PaperReport.to_dict`), written once the whole paper has
run, so a half report is never shown; `progress_log` holds the lines the command prints.
"""

from django.db import models
from django.db.models import Q


class ReproductionStatus(models.TextChoices):
    QUEUED = "queued"
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"


class Reproduction(models.Model):
    paper = models.CharField(max_length=32, help_text="a name of simulation.reproductions.PAPERS")
    status = models.CharField(max_length=16, choices=ReproductionStatus.choices,
                              default=ReproductionStatus.QUEUED)
    task_id = models.CharField(max_length=64, blank=True)
    progress_log = models.TextField(blank=True)
    report = models.JSONField(null=True, blank=True)
    error = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    updated_at = models.DateTimeField(auto_now=True, help_text="last progress line or status")

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.CheckConstraint(condition=Q(status__in=ReproductionStatus.values),
                                   name="reproduction_status_valid"),
            models.CheckConstraint(
                condition=~Q(status=ReproductionStatus.SUCCEEDED) | Q(report__isnull=False),
                name="reproduction_succeeded_has_report"),
        ]

    def __str__(self) -> str:
        return f"{self.paper} #{self.pk} ({self.status})"

    @property
    def active(self) -> bool:
        return self.status in (ReproductionStatus.QUEUED, ReproductionStatus.RUNNING)
