"""Template variables every page needs."""

from django.http import HttpRequest
from django.utils.functional import SimpleLazyObject

from planner.core.roles import ADMIN, PLAN, ROLE_GROUPS, user_can, user_roles


def roles(request: HttpRequest) -> dict:
    """`can_plan`: show the what-if write links; `role_names`: the header's "signed in as"
    line (admin alone for staff, who hold every role). Both asked only by pages that use them.
    """

    def names() -> str:
        held = user_roles(request.user)
        return ADMIN if ADMIN in held else ", ".join(r for r in ROLE_GROUPS if r in held) \
            or "no role"

    return {"can_plan": SimpleLazyObject(lambda: user_can(request.user, PLAN)),
            "role_names": SimpleLazyObject(names)}
