"""Core routes under /api/v1/."""

from django.urls import path

from planner.core.apis import HealthApi

urlpatterns = [
    path("health", HealthApi.as_view(), name="health"),
]
