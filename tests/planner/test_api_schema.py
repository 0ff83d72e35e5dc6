"""Schemathesis over every /api/v1/ operation with every check: the answers must agree with the
OpenAPI schema drf-spectacular publishes (status codes, content types, headers and response
bodies), valid requests must be accepted and invalid ones refused, never with a server error.

Requests go through the WSGI application, as an admin (staff) client with a token, against a
small live cluster and a scenario with one finished run, so the operations that need rows
find some. Kept bounded and deterministic: a few derandomized examples per operation.
"""

from __future__ import annotations

import re

import pytest
import schemathesis
from django.core.signals import request_finished, request_started
from django.core.wsgi import get_wsgi_application
from django.db import close_old_connections
from drf_spectacular.generators import SchemaGenerator
from hypothesis import HealthCheck, Phase, settings
from schemathesis.specs.openapi.checks import positive_data_acceptance

from planner.clusters.models import Server, ServerStatus
from planner.live.services import decision_stateful, job_submit
from planner.scenarios import services as scenario_services
from tests.planner.factories import scenario_make
from tests.planner.live.conftest import live_cluster_make

schema = schemathesis.openapi.from_dict(
    SchemaGenerator().get_schema(request=None, public=True)
).include(path_regex=r"^/api/v1/")
schema.app = get_wsgi_application()


@pytest.fixture(autouse=True)
def media_root(settings, tmp_path):
    settings.MEDIA_ROOT = str(tmp_path)


@pytest.fixture(autouse=True)
def no_throttles(settings):
    """Thousands of requests a minute: the throttles (documented, 429) would answer most."""
    settings.PLANNER_LIVE_THROTTLE_RATES = {"live-read": None, "live-decide": None}


@pytest.fixture
def in_test_transaction():
    """Keep the WSGI handler from closing the test's connection, as Django's test client does."""
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    yield
    request_started.connect(close_old_connections)
    request_finished.connect(close_old_connections)


@pytest.fixture
def token(db, in_test_transaction, django_user_model) -> str:
    from rest_framework.authtoken.models import Token

    cluster = live_cluster_make(name="fuzz")
    Server.objects.filter(name__in=["inference-1", "inference-2"]).update(
        status=ServerStatus.ON_LOAN)
    for i in range(3):
        job_submit(cluster=cluster, name=f"fuzz-{i}", num_gpus=2, duration_seconds=60.0)
    admin = django_user_model.objects.create_user("fuzzer", is_staff=True)
    decision_stateful(cluster_id=cluster.pk, kind="schedule", body={"policy": "fifo"},
                      actor=admin)
    (run,) = scenario_services.scenario_launch(scenario=scenario_make(policies=["fifo"]))
    scenario_services.run_execute(run_id=run.pk)
    return Token.objects.create(user=admin).key


# Whether these requests are valid depends on rows and on content no schema can state: the
# snapshot's placements must name its own servers, a job must fit the cluster it names, an
# upload must be a trace, a scenario must name a workload that exists and policies that can
# run on it, a capacity search must name a scenario that exists (the schema's example says 1,
# which is a row only when no earlier test on PostgreSQL moved the id sequence), credentials
# must be a user's. So a request the schema allows may rightly get 400
# here, and
# `positive_data_acceptance` (valid by the schema => 2xx) does not apply to them; every
# other check does.
REFERENTIAL = re.compile(r"^POST /api/v1/(decisions/\w+|clusters/\{cluster_id\}/decisions/\w+"
                         r"|jobs/|workloads/|scenarios/|capacity-searches/|auth/token)$")


@schema.parametrize()
@settings(max_examples=2, deadline=None, derandomize=True, database=None,
          phases=[Phase.explicit, Phase.generate],
          suppress_health_check=list(HealthCheck))
def test_api_conforms_to_its_schema(case, token) -> None:
    excluded = [positive_data_acceptance] if REFERENTIAL.match(case.operation.label) else []
    case.call_and_validate(headers={"Authorization": f"Token {token}"},
                           excluded_checks=excluded)
