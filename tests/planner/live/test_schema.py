"""Schemathesis against the live API's OpenAPI schema: generated requests (valid and not)
never get a server error. Kept small: a few examples per operation."""

from __future__ import annotations

import pytest
import schemathesis
from django.core.signals import request_finished, request_started
from django.core.wsgi import get_wsgi_application
from django.db import close_old_connections
from drf_spectacular.generators import SchemaGenerator
from hypothesis import HealthCheck, settings

from planner.clusters.models import Server, ServerStatus
from planner.live.services import job_submit
from tests.planner.live.conftest import live_cluster_make, user_make

LIVE_PATHS = r"^/api/v1/(clusters|pools|servers|jobs|decisions)"

schema = schemathesis.openapi.from_dict(
    SchemaGenerator().get_schema(request=None, public=True)
).include(path_regex=LIVE_PATHS)
schema.app = get_wsgi_application()


@pytest.fixture
def in_test_transaction():
    """Keep the WSGI handler from closing the test's connection, as Django's test client does."""
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    yield
    request_started.connect(close_old_connections)
    request_finished.connect(close_old_connections)


@pytest.fixture
def token(db, in_test_transaction) -> str:
    from rest_framework.authtoken.models import Token

    cluster = live_cluster_make(name="fuzz")
    Server.objects.filter(name__in=["inference-1", "inference-2"]).update(
        status=ServerStatus.ON_LOAN)
    for i in range(3):
        job_submit(cluster=cluster, name=f"fuzz-{i}", num_gpus=2, duration_seconds=60.0)
    return Token.objects.create(user=user_make(name="fuzzer", role="operator")).key


@schema.parametrize()
@settings(max_examples=6, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow,
                                 HealthCheck.filter_too_much])
def test_no_server_errors(case, token) -> None:
    response = case.call(headers={"Authorization": f"Token {token}"})
    assert response.status_code < 500, (case.method, case.path, response.text[:500])
