"""GPU types, clusters, pools and servers.

A cluster is pools of identical servers (DESIGN.md's cluster spec). The Server rows are the
pool's inventory: a what-if run takes their count as the pool size, and the live decision API
changes their status (idle, busy, on loan ...) as the real cluster does.

A cluster is `live` (a real cluster the operators watch, made in the admin or through the
services) or `what-if` (made from a spec for a scenario: the builder, the scenario API, the
demo and the named scenarios). Only live clusters are on the Live pages; a what-if one is
reached from its scenarios.
"""

from django.db import models
from django.db.models import Q


class GpuType(models.Model):
    """A GPU model; `speed` is relative to the reference V100 (Aryl: a T4 is 1/4 of a V100)."""

    name = models.CharField(max_length=40, unique=True)
    speed = models.FloatField(default=1.0)
    memory_gb = models.FloatField(default=32.0)

    class Meta:
        ordering = ["name"]
        constraints = [
            models.CheckConstraint(condition=Q(speed__gt=0), name="gpu_type_speed_positive"),
            models.CheckConstraint(condition=Q(memory_gb__gt=0), name="gpu_type_memory_positive"),
        ]

    def __str__(self) -> str:
        return self.name


class ClusterKind(models.TextChoices):
    LIVE = "live", "live"
    WHAT_IF = "what-if", "what-if (a scenario's template)"


class Cluster(models.Model):
    name = models.CharField(max_length=100, unique=True)
    kind = models.CharField(max_length=16, choices=ClusterKind.choices,
                            default=ClusterKind.LIVE,
                            help_text="live: a real cluster; what-if: made for a scenario")
    description = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name"]
        constraints = [
            models.CheckConstraint(condition=Q(kind__in=ClusterKind.values),
                                   name="cluster_kind_valid"),
        ]

    def __str__(self) -> str:
        return self.name


class PoolKind(models.TextChoices):
    TRAINING = "training", "training"
    INFERENCE = "inference", "inference (lends servers to training)"
    QUOTA = "quota", "quota (a tenant's share of one physical cluster)"


class Pool(models.Model):
    """A pool of identical servers, with Kueue-style limits.

    `nominal_quota` (GPUs) is what the pool is guaranteed, default all of its GPUs;
    `borrowing_limit` (GPUs) caps what it may borrow from other pools beyond that (empty: no
    cap); `lending_limit` (servers, as in the cluster spec and the engine) caps how many of its
    servers an inference pool lends to training at once (empty: all of them).
    """

    cluster = models.ForeignKey(Cluster, on_delete=models.CASCADE, related_name="pools")
    name = models.CharField(max_length=100)
    kind = models.CharField(max_length=16, choices=PoolKind.choices)
    gpu_type = models.ForeignKey(GpuType, on_delete=models.PROTECT, related_name="pools")
    gpus_per_server = models.PositiveIntegerField()
    nominal_quota = models.PositiveIntegerField(
        null=True, blank=True, help_text="GPUs guaranteed to the pool; empty: all of its GPUs"
    )
    borrowing_limit = models.PositiveIntegerField(
        null=True, blank=True, help_text="GPUs the pool may borrow beyond its quota; empty: no cap"
    )
    lending_limit = models.PositiveIntegerField(
        null=True, blank=True, help_text="servers the pool may lend at once; empty: all of them"
    )

    class Meta:
        ordering = ["cluster", "name"]
        constraints = [
            models.UniqueConstraint(fields=["cluster", "name"], name="pool_name_unique"),
            models.CheckConstraint(
                condition=Q(kind__in=PoolKind.values), name="pool_kind_valid"
            ),
            models.CheckConstraint(
                condition=Q(gpus_per_server__gt=0), name="pool_gpus_per_server_positive"
            ),
            models.CheckConstraint(
                condition=Q(lending_limit__isnull=True) | Q(kind=PoolKind.INFERENCE),
                name="pool_only_inference_lends",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.cluster.name}/{self.name}"


class ServerStatus(models.TextChoices):
    IDLE = "idle", "idle"
    BUSY = "busy", "busy"
    ON_LOAN = "on_loan", "on loan to training"
    RECLAIMING = "reclaiming", "being reclaimed"
    OFFLINE = "offline", "offline"


class Server(models.Model):
    """One server of a pool: a what-if template row and the live state of the real machine."""

    pool = models.ForeignKey(Pool, on_delete=models.CASCADE, related_name="servers")
    name = models.CharField(max_length=100)
    status = models.CharField(max_length=16, choices=ServerStatus.choices,
                              default=ServerStatus.IDLE)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["pool", "id"]
        constraints = [
            models.UniqueConstraint(fields=["pool", "name"], name="server_name_unique"),
            models.CheckConstraint(
                condition=Q(status__in=ServerStatus.values), name="server_status_valid"
            ),
        ]

    def __str__(self) -> str:
        return self.name
