"""Roles of the live API, as Django groups: `viewer` reads, `operator` also decides and
writes jobs; staff users are admins and may do both. Other signed-in users get nothing here."""

from __future__ import annotations

from django.conf import settings
from rest_framework.permissions import BasePermission
from rest_framework.request import Request
from rest_framework.throttling import ScopedRateThrottle

VIEWER = "viewer"
OPERATOR = "operator"
ADMIN = "admin"
ROLE_GROUPS = (VIEWER, OPERATOR)


def user_role(user) -> str | None:
    """The strongest role of `user`, or None."""
    if not user or not user.is_authenticated:
        return None
    if user.is_staff or user.is_superuser:
        return ADMIN
    groups = set(user.groups.values_list("name", flat=True))
    if OPERATOR in groups:
        return OPERATOR
    if VIEWER in groups:
        return VIEWER
    return None


class CanRead(BasePermission):
    message = "reading live state needs the viewer, operator or admin role"

    def has_permission(self, request: Request, view) -> bool:
        return user_role(request.user) is not None


class CanDecide(BasePermission):
    message = "decisions and job writes need the operator or admin role"

    def has_permission(self, request: Request, view) -> bool:
        return user_role(request.user) in (OPERATOR, ADMIN)


class LiveThrottle(ScopedRateThrottle):
    """DRF's scoped throttle with rates read from settings on each request
    (PLANNER_LIVE_THROTTLE_RATES), so deployments and tests can change them."""

    def get_rate(self) -> str | None:
        return settings.PLANNER_LIVE_THROTTLE_RATES.get(self.scope)
