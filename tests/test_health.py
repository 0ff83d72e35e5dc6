"""Health checks: one-line reasons for unreachable services, the health API and home page."""

import os
import subprocess
import sys

import pytest

from planner.core.services import broker_check, url_redact
from tests.support import REPO, closed_port


def _check_services(**env: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "manage.py", "check_services", "--timeout", "2"],
        cwd=REPO,
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_url_redact_hides_the_password():
    assert url_redact(url="redis://:s3cret@cache:6379/2") == "redis://:***@cache:6379/2"
    assert url_redact(url="postgres://app:pw@db/planner") == "postgres://app:***@db/planner"
    assert url_redact(url="redis://127.0.0.1:6379/0") == "redis://127.0.0.1:6379/0"


def test_broker_check_names_variable_and_address_when_refused():
    port = closed_port()

    status = broker_check(redis_url=f"redis://127.0.0.1:{port}/0", timeout=2.0)

    assert not status.ok
    assert (
        status.detail == f"cannot reach REDIS_URL redis://127.0.0.1:{port}/0 (connection refused)"
    )


def test_check_services_prints_one_line_and_exits_2_for_a_wrong_redis_url():
    port = closed_port()

    completed = _check_services(REDIS_URL=f"redis://127.0.0.1:{port}/0")

    assert completed.returncode == 2
    assert completed.stderr.splitlines() == [
        f"planner: cannot reach REDIS_URL redis://127.0.0.1:{port}/0 (connection refused)"
    ]


def test_check_services_prints_one_line_and_exits_2_for_a_wrong_database_url():
    port = closed_port()
    url = f"postgres://postgres@127.0.0.1:{port}/planner"

    completed = _check_services(DATABASE_URL=url)

    assert completed.returncode == 2
    assert completed.stderr.splitlines() == [
        f"planner: cannot reach DATABASE_URL {url} (connection refused)"
    ]


@pytest.mark.django_db
def test_health_api_reports_each_service(client, settings):
    settings.HEALTH_WORKER_TIMEOUT = 0.3

    response = client.get("/api/v1/health")

    assert response.status_code == 200
    body = response.json()
    assert set(body) == {"status", "database", "broker", "worker"}
    assert body["status"] in {"ok", "degraded"}
    assert body["database"]["ok"] is True
    assert body["broker"]["ok"] is True
    assert set(body["worker"]) == {"ok", "detail"}
    assert body["status"] == ("ok" if body["worker"]["ok"] else "degraded")


@pytest.mark.django_db
def test_health_api_is_degraded_with_the_reason_when_redis_is_unreachable(client, settings):
    port = closed_port()
    settings.REDIS_URL = f"redis://127.0.0.1:{port}/0"

    body = client.get("/api/v1/health").json()

    assert body["status"] == "degraded"
    assert body["broker"] == {
        "ok": False,
        "detail": f"cannot reach REDIS_URL redis://127.0.0.1:{port}/0 (connection refused)",
    }
    assert body["worker"]["ok"] is False


@pytest.mark.django_db
def test_home_page_shows_the_health_block(client, settings):
    settings.HEALTH_WORKER_TIMEOUT = 0.3

    response = client.get("/")

    assert response.status_code == 200
    page = response.content.decode()
    assert "Health" in page
    for service in ("database", "broker", "worker"):
        assert f'<th scope="row">{service}</th>' in page


def test_openapi_schema_documents_the_health_endpoint(client):
    response = client.get("/api/schema/")

    assert response.status_code == 200
    assert "/api/v1/health" in response.content.decode()


def test_api_docs_are_served_offline(client):
    response = client.get("/api/docs/")

    assert response.status_code == 200
    page = response.content.decode()
    assert "drf_spectacular_sidecar/swagger-ui-dist" in page
    assert "cdn." not in page
