"""One role matrix for every page and both APIs (planner/core/roles.py).

Rule: reading needs a role (any of viewer, planner, operator; staff are admins); what-if
writes (upload, launch, sweep, re-run, cancel, the scenario builder) need `planner`; live
writes (jobs, stateful and stateless decisions) need `operator`. Anonymous visitors are sent
to the sign-in page (pages) or told 401 (API); a signed-in user without the capability gets
403. The health summary, the front page and the API's schema are public.

Each role's test sends every request once and compares the whole table of answers with the
expected one, so a wrong cell names its endpoint. An allowed request must succeed with its
own status (201 for a launch ...), not merely pass the permission check, and a role refused
a kind of write must leave those tables as they were (a check that answered 403 after
writing would pass on status codes alone).
"""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from django.test import Client
from rest_framework.test import APIClient

from planner.core.roles import OPERATE, PLAN, READ
from planner.live.models import Decision, Job
from planner.scenarios import services
from planner.scenarios.models import Run, Scenario, Sweep, Workload
from tests.planner.factories import SPEC_YAML, TRACE_CSV, scenario_make, upload, user_with_role
from tests.planner.live.conftest import client_for, live_cluster_make
from tests.simulation.test_decide import DESIGN_RECLAIM

pytestmark = pytest.mark.django_db

PUBLIC = "public"
ROLES = ("anonymous", "none", "viewer", "planner", "operator", "admin")
HOLDERS = {READ: {"viewer", "planner", "operator", "admin"}, PLAN: {"planner", "admin"},
           OPERATE: {"operator", "admin"}}

BUILDER = {"name": "matrix", "cluster": "", "cluster_spec": SPEC_YAML.format(name="built"),
           "workload_source": "generator",
           "gen_num_jobs": "4", "gen_arrival_rate_per_hour": "30",
           "gen_median_duration_minutes": "10", "gen_elastic_fraction": "0", "gen_seed": "1",
           "inference_source": "none", "inference_days": "1", "policies": ["fifo"],
           "seeds": "0", "engine_settings": ""}

# (name, kind, method, path, body, capability, status when allowed); `kind` is "page" or
# "api". Paths name the objects of `world` in braces. Writes come after the reads that
# need the state they change.
MATRIX = [
    ("home page", "page", "get", "/", None, PUBLIC, 200),
    ("cluster list page", "page", "get", "/clusters/", None, READ, 200),
    ("cluster page", "page", "get", "/clusters/{cluster}/", None, READ, 200),
    ("cluster live fragment", "page", "get", "/clusters/{cluster}/live/", None, READ, 200),
    ("scenario list page", "page", "get", "/scenarios/", None, READ, 200),
    ("run list page", "page", "get", "/runs/", None, READ, 200),
    ("comparison page", "page", "get", "/scenarios/{scenario}/compare/", None, READ, 200),
    ("sweep page", "page", "get", "/sweeps/{sweep}/", None, READ, 200),
    ("scenario builder", "page", "get", "/scenarios/new/", None, PLAN, 200),
    ("scenario builder submit", "page", "post", "/scenarios/new/", BUILDER, PLAN, 302),
    ("health", "api", "get", "/api/v1/health", None, PUBLIC, 200),
    ("API schema", "api", "get", "/api/schema/", None, PUBLIC, 200),
    ("runs", "api", "get", "/api/v1/runs/", None, READ, 200),
    ("run", "api", "get", "/api/v1/runs/{finished}/", None, READ, 200),
    ("run export json", "api", "get", "/api/v1/runs/{finished}/export.json", None, READ, 200),
    ("run export csv", "api", "get", "/api/v1/runs/{finished}/export.csv", None, READ, 200),
    ("sweep", "api", "get", "/api/v1/sweeps/{sweep}/", None, READ, 200),
    ("sweeps", "api", "get", "/api/v1/sweeps/", None, READ, 200),
    ("workloads", "api", "get", "/api/v1/workloads/", None, READ, 200),
    ("scenarios", "api", "get", "/api/v1/scenarios/", None, READ, 200),
    ("scenario", "api", "get", "/api/v1/scenarios/{scenario}/", None, READ, 200),
    ("run cancel", "api", "post", "/api/v1/runs/{queued}/cancel", {}, PLAN, 200),
    ("run re-run", "api", "post", "/api/v1/runs/{finished}/rerun", {}, PLAN, 201),
    ("workload upload", "api", "post", "/api/v1/workloads/", "upload", PLAN, 201),
    ("workload generate", "api", "post", "/api/v1/workloads/",
     {"name": "g", "generator": {"num_jobs": 3}}, PLAN, 201),
    ("scenario launch", "api", "post", "/api/v1/scenarios/{scenario}/launch", {}, PLAN, 201),
    ("sweep create", "api", "post", "/api/v1/scenarios/{scenario}/sweeps",
     {"grid": {"load_scale": [1, 2]}}, PLAN, 201),
    ("live clusters", "api", "get", "/api/v1/clusters/", None, READ, 200),
    ("live cluster", "api", "get", "/api/v1/clusters/{cluster}/", None, READ, 200),
    ("live pools", "api", "get", "/api/v1/pools/", None, READ, 200),
    ("live servers", "api", "get", "/api/v1/servers/", None, READ, 200),
    ("live jobs", "api", "get", "/api/v1/jobs/", None, READ, 200),
    ("live job", "api", "get", "/api/v1/jobs/{job}/", None, READ, 200),
    ("live job hosts", "api", "get", "/api/v1/jobs/{job}/hosts", None, READ, 200),
    ("decision log", "api", "get", "/api/v1/decisions/", None, READ, 200),
    ("decision", "api", "get", "/api/v1/decisions/{decision}/", None, READ, 200),
    ("decision replay", "api", "get", "/api/v1/decisions/{decision}/replay", None, READ, 200),
    ("decision replay by POST", "api", "post", "/api/v1/decisions/{decision}/replay", {}, READ,
     200),
    ("job submit", "api", "post", "/api/v1/jobs/",
     {"cluster": "{cluster}", "name": "m", "num_gpus": 1, "duration_seconds": 60}, OPERATE, 201),
    ("job progress", "api", "post", "/api/v1/jobs/{job}/progress", {"remaining_seconds": 30},
     OPERATE, 200),
    ("job cancel", "api", "post", "/api/v1/jobs/{job}/cancel", {}, OPERATE, 200),
    ("loan", "api", "post", "/api/v1/clusters/{cluster}/decisions/loan", {"count": 1},
     OPERATE, 200),
    ("schedule", "api", "post", "/api/v1/clusters/{cluster}/decisions/schedule",
     {"policy": "fifo"}, OPERATE, 200),
    ("reclaim", "api", "post", "/api/v1/clusters/{cluster}/decisions/reclaim", {"count": 1},
     OPERATE, 200),
    ("stateless reclaim", "api", "post", "/api/v1/decisions/reclaim", DESIGN_RECLAIM, OPERATE,
     200),
]


def expected(role: str, kind: str, capability: str, allowed: int) -> int:
    if capability == PUBLIC:
        return allowed
    if role == "anonymous":
        return 302 if kind == "page" else 401
    return allowed if role in HOLDERS[capability] else 403


def user_for(role: str) -> User | None:
    if role == "anonymous":
        return None
    if role == "admin":
        return User.objects.create_user("matrix-admin", password="pw", is_staff=True)
    return user_with_role(f"matrix-{role}", None if role == "none" else role)


def world() -> dict[str, int]:
    """A live cluster with a job and a decision, a scenario with a finished and a queued
    run, and a sweep."""
    cluster = live_cluster_make(name="matrix")
    operator = client_for(user_with_role("matrix-setup", "operator"))
    job = operator.post("/api/v1/jobs/", {"cluster": cluster.pk, "name": "j", "num_gpus": 1,
                                          "duration_seconds": 600}, format="json").json()
    operator.post(f"/api/v1/clusters/{cluster.pk}/decisions/loan", {"count": 1}, format="json")
    scenario = scenario_make(policies=["fifo"], cluster_name="matrix-what-if")
    (finished,) = services.scenario_launch(scenario=scenario)
    services.run_execute(run_id=finished.pk)
    queued = services.run_create(scenario=scenario, policy="fifo", settings={}, seed=7,
                                 variant={})
    sweep = Sweep.objects.create(scenario=scenario, grid={"load_scale": [1]})
    return {"cluster": cluster.pk, "job": job["id"], "decision": Decision.objects.get().pk,
            "scenario": scenario.pk, "finished": finished.pk, "queued": queued.pk,
            "sweep": sweep.pk}


def send(role: str, user: User | None, kind: str, method: str, path: str, body, ids) -> int:
    path = path.format(**ids)
    if kind == "page":
        client = Client()
        if user is not None:
            client.force_login(user)
        return getattr(client, method)(path, body or {}).status_code
    client = client_for(user) if user is not None else APIClient()
    if body is None:
        return client.get(path).status_code
    if body == "upload":
        return client.post(path, {"name": "m", "file": upload("m.csv", TRACE_CSV)},
                           format="multipart").status_code
    body = {key: (value.format(**ids) if isinstance(value, str) else value)
            for key, value in body.items()}
    return client.post(path, body, format="json").status_code


def what_if_rows() -> tuple[int, ...]:
    return (Run.objects.count(), Sweep.objects.count(), Workload.objects.count(),
            Scenario.objects.count(), Run.objects.filter(status="queued").count())


def live_rows() -> tuple[int, ...]:
    return (Job.objects.count(), Decision.objects.count(),
            Job.objects.filter(status="queued").count())


@pytest.mark.parametrize("role", ROLES)
def test_every_page_and_endpoint_answers_by_role(role):
    ids = world()
    user = user_for(role)
    what_if, live = what_if_rows(), live_rows()

    answers = {name: send(role, user, kind, method, path, body, ids)
               for name, kind, method, path, body, _, _ in MATRIX}

    assert answers == {name: expected(role, kind, capability, allowed)
                       for name, kind, _, _, _, capability, allowed in MATRIX}
    if role not in HOLDERS[PLAN]:  # refused before writing: no run, sweep, workload ...
        assert what_if_rows() == what_if
    if role not in HOLDERS[OPERATE]:  # ... nor job or decision, and the job still queued
        assert live_rows() == live


def test_a_refused_page_names_the_role_it_needs():
    nobody, viewer = Client(), Client()
    nobody.force_login(user_for("none"))
    viewer.force_login(user_for("viewer"))

    refused_read = nobody.get("/clusters/")
    refused_write = viewer.get("/scenarios/new/")

    assert refused_read.status_code == refused_write.status_code == 403
    assert "Reading needs the viewer, planner or operator role" in refused_read.content.decode()
    assert "need the planner role" in refused_write.content.decode()
