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

import re
from typing import Any

from drf_spectacular.openapi import AutoSchema
from drf_spectacular.plumbing import ResolvedComponent
from rest_framework.permissions import AllowAny

from simulation.reclaim import reclaim_strategies


def _first_paragraph(text: str | None) -> str:
    return " ".join((text or "").strip().split("\n\n")[0].split())


# The reclaim strategies the simulator accepts, with their descriptions, for an enum in the
# schema (SPECTACULAR_SETTINGS names it ReclaimStrategyEnum): a newly registered strategy shows
# up by itself. Policies are `planner.core.fields.PolicyField`, which takes compositions too.
RECLAIM_STRATEGY_CHOICES = [(name, _first_paragraph(fn.__doc__) or name)
                            for name, fn in reclaim_strategies().items()]

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


# Each operation's tag, from its path under /api/v1/: the first pattern that matches wins.
TAGS = (
    (re.compile(r"^health"), "health"),
    (re.compile(r"^auth/"), "auth"),
    (re.compile(r"^workloads/"), "workloads"),
    (re.compile(r"^(sweeps/|scenarios/[^/]+/sweeps)"), "sweeps"),
    (re.compile(r"^scenarios/"), "scenarios"),
    (re.compile(r"^runs/"), "runs"),
    (re.compile(r"^capacity-searches/"), "capacity"),
    (re.compile(r"^(decisions/|clusters/[^/]+/decisions/)"), "live decisions"),
    (re.compile(r"^jobs/"), "live jobs"),
    (re.compile(r"^(clusters|pools|servers)/"), "live state"),
)
TAG_DESCRIPTIONS = {
    "health": "Is the planner up: database, broker, workers, periodic maintenance.",
    "auth": "API tokens: `POST /api/v1/auth/token` with a user name and password.",
    "workloads": "Job traces: uploaded in any supported format, or generated from settings.",
    "scenarios": "What-if questions: a cluster, a workload and load, policies and seeds; "
                 "launching one creates a run per policy and seed.",
    "runs": "Simulations: progress, results and their export, cancel, re-run.",
    "sweeps": "Parameter grids over a scenario, aggregated across seeds.",
    "capacity": "Capacity searches: per policy, the cheapest cluster size, loan headroom or "
                "parameter value meeting every target across the seeds, run as sweeps' runs.",
    "live state": "Clusters, pools and servers as the live API keeps them.",
    "live jobs": "Training jobs submitted to a live cluster: submit, report, cancel, hosts.",
    "live decisions": "Loan, reclaim and schedule decisions, stateful (on a cluster's live "
                      "state, applied) or stateless (on a snapshot), their log and replay.",
}


def tags_describe(result: dict[str, Any], generator: Any, request: Any, public: bool
                  ) -> dict[str, Any]:
    """Postprocessing hook: list the tags in TAGS order, each with its description."""
    result["tags"] = [{"name": name, "description": text}
                      for name, text in TAG_DESCRIPTIONS.items()]
    return result


class PlannerAutoSchema(AutoSchema):
    def get_tags(self) -> list[str]:
        path = self.path.removeprefix("/api/v1/")
        for pattern, tag in TAGS:
            if pattern.match(path):
                return [tag]
        return super().get_tags()

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
