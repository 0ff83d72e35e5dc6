"""Template variables every page needs."""

from django.http import HttpRequest
from django.utils.functional import SimpleLazyObject

from planner.core.roles import PLAN, user_can


def roles(request: HttpRequest) -> dict:
    """`can_plan`: show the what-if write links (asked only by pages that use it)."""
    return {"can_plan": SimpleLazyObject(lambda: user_can(request.user, PLAN))}
