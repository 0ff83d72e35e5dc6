"""Capacity searches (issue #19): per policy, the cheapest size of a scenario's cluster that
meets every target, found by `simulation.capacity` with its evaluations run as ordinary runs.

A search runs in rounds: each round's points (policy x level x seed) are `Run` rows of the
scenario with the level as a variant or setting, so the workers run them in parallel and the
result cache reuses identical ones; `CapacityPoint` links each run to its point. When the
last run of a round ends, the next round is planned from the measurements (see services).
"""

from django.db import models
from django.db.models import Q

from planner.scenarios.models import Run, Scenario


class CapacityStatus(models.TextChoices):
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"


class CapacitySearch(models.Model):
    """One question and its answer. `targets` is ``[{"metric", "bound"}]``, `costs`
    ``{"gpu_hour": {type: price}, "server_hour": {...}}``, `axis` ``{"kind", "pools",
    "param"}`` (simulation.capacity.Axis); `result` is `simulation.capacity.answer`'s JSON,
    refreshed after every round so a running search shows what it knows."""

    scenario = models.ForeignKey(Scenario, on_delete=models.CASCADE,
                                 related_name="capacity_searches")
    name = models.CharField(max_length=200, blank=True)
    policies = models.JSONField(default=list)
    targets = models.JSONField(default=list)
    costs = models.JSONField(default=dict)
    axis = models.JSONField(default=dict)
    low = models.PositiveIntegerField()
    high = models.PositiveIntegerField()
    seeds = models.JSONField(default=list)
    points_per_round = models.PositiveSmallIntegerField(default=1)
    baseline = models.CharField(max_length=64, blank=True)
    reference_level = models.IntegerField(null=True, blank=True,
                                          help_text="the axis' level as the scenario gives it")
    status = models.CharField(max_length=16, choices=CapacityStatus.choices,
                              default=CapacityStatus.RUNNING)
    rounds = models.PositiveIntegerField(default=0)
    failures = models.JSONField(default=dict, blank=True, help_text="policy -> why it stopped")
    result = models.JSONField(null=True, blank=True)
    error = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.CheckConstraint(condition=Q(status__in=CapacityStatus.values),
                                   name="capacity_status_valid"),
            models.CheckConstraint(condition=Q(low__lte=models.F("high")),
                                   name="capacity_range_ordered"),
            models.CheckConstraint(
                condition=~Q(status=CapacityStatus.SUCCEEDED) | Q(result__isnull=False),
                name="capacity_succeeded_has_result"),
        ]

    def __str__(self) -> str:
        return self.name or f"capacity search {self.pk}"

    @property
    def active(self) -> bool:
        return self.status == CapacityStatus.RUNNING


class CapacityPoint(models.Model):
    """One evaluation of a search: a policy at a level on a seed, and the run doing it.
    `measurement` holds what the targets read from the run once it succeeded."""

    search = models.ForeignKey(CapacitySearch, on_delete=models.CASCADE, related_name="points")
    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="capacity_points")
    policy = models.CharField(max_length=64)
    level = models.IntegerField()
    seed = models.PositiveIntegerField()
    round = models.PositiveIntegerField()
    measurement = models.JSONField(null=True, blank=True)

    class Meta:
        ordering = ["round", "policy", "level", "seed"]
        constraints = [
            models.UniqueConstraint(fields=["search", "policy", "level", "seed"],
                                    name="capacity_point_unique"),
        ]

    def __str__(self) -> str:
        return f"{self.policy} at {self.level}, seed {self.seed}"
