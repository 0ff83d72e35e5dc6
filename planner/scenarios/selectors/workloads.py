"""Stored workloads and inference loads, the inputs a scenario picks from."""

from __future__ import annotations

from django.db.models import QuerySet

from planner.scenarios.models import InferenceLoadProfile, Workload


def workload_list() -> QuerySet[Workload]:
    return Workload.objects.all()


def inference_load_list() -> QuerySet[InferenceLoadProfile]:
    return InferenceLoadProfile.objects.all()
