"""Core routes under /api/v1/."""

from django.urls import path

from planner.core.apis import HealthApi, TokenObtainApi

urlpatterns = [
    path("health", HealthApi.as_view(), name="health"),
    path("auth/token", TokenObtainApi.as_view(), name="auth-token"),
]
