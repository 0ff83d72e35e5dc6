"""Roles of the live API: every role reads, `operator` (and admin) also decides and writes
jobs. The matrix itself, shared with the pages and the what-if API, is `planner.core.roles`."""

from __future__ import annotations

from planner.core.roles import (
    ADMIN,
    OPERATOR,
    PLANNER,
    VIEWER,
    CanDecide,
    CanRead,
    RoleTokenAuthentication,
    user_roles,
)
from planner.core.throttling import SharedScopedThrottle

__all__ = ["ADMIN", "OPERATOR", "PLANNER", "VIEWER", "CanDecide", "CanRead", "LiveThrottle",
           "RoleTokenAuthentication", "user_role"]

_STRENGTH = (ADMIN, OPERATOR, PLANNER, VIEWER)


def user_role(user) -> str | None:
    """The strongest role of `user` for the live API (admin, operator, planner, viewer), or
    None."""
    roles = user_roles(user)
    return next((role for role in _STRENGTH if role in roles), None)


LiveThrottle = SharedScopedThrottle
