"""The OpenAPI schema tells a planner how to use the API without reading the code.

Rules: every operation under /api/v1/ has a summary and one tag of the documented areas, by
its path; the reclaim `strategy` is an enum of exactly what the simulator has registered, and
`policy` such an enum or a composition of a registered policy with stages; the main writes
carry example bodies; the description says how to get a token.
"""

from __future__ import annotations

import re

import pytest
from drf_spectacular.generators import SchemaGenerator

from simulation.policies import registry
from simulation.reclaim import reclaim_strategies

AREAS = ["health", "auth", "workloads", "scenarios", "runs", "sweeps", "capacity",
         "live state", "live jobs", "live decisions"]


@pytest.fixture(scope="module")
def schema() -> dict:
    return SchemaGenerator().get_schema(request=None, public=True)


def operations(schema: dict):
    for path, methods in schema["paths"].items():
        for method, operation in methods.items():
            yield f"{method.upper()} {path}", operation


def test_every_operation_has_a_summary_and_one_area_tag(schema):
    missing = [name for name, op in operations(schema) if not op.get("summary")]
    untagged = [name for name, op in operations(schema)
                if len(op.get("tags", [])) != 1 or op["tags"][0] not in AREAS]

    assert missing == [] and untagged == []
    assert [tag["name"] for tag in schema["tags"]] == AREAS
    assert all(tag["description"] for tag in schema["tags"])


@pytest.mark.parametrize(("operation", "tag"), [
    ("GET /api/v1/health", "health"),
    ("POST /api/v1/auth/token", "auth"),
    ("POST /api/v1/workloads/", "workloads"),
    ("POST /api/v1/scenarios/{scenario_id}/launch", "scenarios"),
    ("POST /api/v1/scenarios/{scenario_id}/sweeps", "sweeps"),
    ("GET /api/v1/runs/{run_id}/export.csv", "runs"),
    ("POST /api/v1/capacity-searches/", "capacity"),
    ("GET /api/v1/capacity-searches/{search_id}/", "capacity"),
    ("GET /api/v1/servers/", "live state"),
    ("POST /api/v1/jobs/{job_id}/progress", "live jobs"),
    ("POST /api/v1/clusters/{cluster_id}/decisions/reclaim", "live decisions"),
    ("POST /api/v1/decisions/{decision_id}/replay", "live decisions"),
])
def test_operations_are_tagged_by_area(schema, operation, tag):
    assert dict(operations(schema))[operation]["tags"] == [tag]


def test_policy_and_strategy_are_enums_of_the_registries(schema):
    components = schema["components"]["schemas"]

    assert components["ReclaimStrategyEnum"]["enum"] == sorted(reclaim_strategies())
    assert ref(components["ReclaimRequest"]["properties"]["strategy"]) == "ReclaimStrategyEnum"
    for owner in ("ScheduleRequest", "PolicyEntry"):
        registered, composed = components[owner]["properties"]["policy"]["anyOf"]
        assert registered["enum"] == sorted(registry())
        pattern = re.compile(composed["pattern"])
        assert pattern.match("elastic-tiresias+aryl-loan")
        assert not pattern.match("srtf") and not pattern.match("srtf+nosuch")


def ref(prop: dict) -> str:
    """The component a property refers to (directly, or through allOf with a description)."""
    target = prop.get("$ref") or prop["allOf"][0]["$ref"]
    return target.rsplit("/", 1)[1]


def test_main_writes_have_examples_and_the_token_is_explained(schema):
    ops = dict(operations(schema))
    for name, media in [("POST /api/v1/scenarios/", "application/json"),
                        ("POST /api/v1/workloads/", "application/json"),
                        ("POST /api/v1/decisions/reclaim", "application/json"),
                        ("POST /api/v1/clusters/{cluster_id}/decisions/schedule",
                         "application/json"),
                        ("POST /api/v1/jobs/", "application/json"),
                        ("POST /api/v1/auth/token", "application/json")]:
        assert ops[name]["requestBody"]["content"][media].get("examples"), name

    description = schema["info"]["description"]
    assert "POST /api/v1/auth/token" in description and "Authorization: Token" in description
    assert ops["POST /api/v1/auth/token"]["security"] == [{}]  # no token needed to get one
