"""Heartbeats of the background processes, read by the health check instead of the broker."""

from django.db import models


class HeartbeatKind(models.TextChoices):
    WORKER = "worker", "Celery worker"
    MAINTENANCE = "maintenance", "periodic maintenance"


class Heartbeat(models.Model):
    """A background process's last sign of life.

    A Celery worker writes its row every PLANNER_WORKER_HEARTBEAT_SECONDS from a thread of its
    main process (and deletes it on a clean stop); the periodic maintenance task writes the
    row named "maintenance" each time it runs. The health check reads these rows, so asking
    whether workers are alive costs one query, not a broadcast to every worker.
    """

    name = models.CharField(max_length=255, unique=True, help_text="worker node name")
    kind = models.CharField(max_length=16, choices=HeartbeatKind.choices)
    queues = models.CharField(max_length=255, blank=True,
                              help_text="comma-separated queues a worker consumes")
    seen_at = models.DateTimeField()

    class Meta:
        ordering = ["name"]
        constraints = [
            models.CheckConstraint(condition=models.Q(kind__in=HeartbeatKind.values),
                                   name="heartbeat_kind_valid"),
        ]

    def __str__(self) -> str:
        return f"{self.name} seen {self.seen_at:%Y-%m-%d %H:%M:%S}"
