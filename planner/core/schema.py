"""The OpenAPI schema's error answers, documented for every operation as they really happen.

drf-spectacular documents what a view returns on success (and what a view names in
`extend_schema`); the errors DRF and Django add on their own were missing, so a client (and
schemathesis' status code check) met answers the schema did not promise. Every operation
now lists, with one `Error` body (`{field: [messages]}` or `{"detail": message}`):

- 400 bad input, or a request Django refused (an unknown Host header);
- 401 no or a wrong token, 403 a role that may not do this;
- 404 an unknown id or page (and any unknown path under /api/);
- 413 a body over PLANNER_MAX_REQUEST_MB and 415 a body that is not JSON (operations with
  a body; multipart for uploads);
- 429 over a throttle rate (throttled views).
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.openapi import AutoSchema
from drf_spectacular.plumbing import ResolvedComponent
from rest_framework.permissions import AllowAny

from simulation.policies import registry
from simulation.reclaim import reclaim_strategies

# The values the simulator accepts, for enums in the schema (SPECTACULAR_SETTINGS names them
# PolicyEnum and ReclaimStrategyEnum): a newly registered policy shows up by itself.
POLICY_NAMES = list(registry())
RECLAIM_STRATEGY_NAMES = list(reclaim_strategies())

ERROR_SCHEMA = {
    "type": "object",
    "description": "What was wrong: a field (a JSON path into the request, or `request` for "
                   "the request as a whole) with its messages, or `detail` with one message.",
    "additionalProperties": {},
    "example": {"state.jobs[0].placement[0].server": ["unknown server 'inf-9'"]},
}
_DESCRIPTIONS = {
    "400": "bad input: {field: [message]}",
    "401": "not signed in: no token, or an unknown one",
    "403": "the user's role may not do this",
    "404": "no such object or page",
    "413": "the request body is over PLANNER_MAX_REQUEST_MB",
    "415": "the request body is not of a documented media type",
    "429": "over the throttle rate; retry after the Retry-After header's seconds",
}


class PlannerAutoSchema(AutoSchema):
    def _get_response_bodies(self, direction: str = "response") -> dict[str, Any]:
        responses = super()._get_response_bodies(direction)
        if direction != "response":
            return responses
        error = self._error_component()
        for code in self._error_codes():
            responses.setdefault(code, {
                "description": _DESCRIPTIONS[code],
                "content": {"application/json": {"schema": error.ref}},
            })
        return responses

    def _error_codes(self) -> list[str]:
        codes = ["400", "404"]
        if not all(isinstance(p, AllowAny) for p in self.view.get_permissions()):
            codes += ["401", "403"]
        if self.method in ("POST", "PUT", "PATCH"):
            codes += ["413", "415"]
        if getattr(self.view, "throttle_classes", None):
            codes.append("429")
        return codes

    def _error_component(self) -> ResolvedComponent:
        component = ResolvedComponent(name="Error", type=ResolvedComponent.SCHEMA,
                                      object="Error", schema=ERROR_SCHEMA)
        self.registry.register_on_missing(component)
        return component
