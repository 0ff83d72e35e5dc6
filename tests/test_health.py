"""Health checks: one-line reasons for unreachable services, the health API and home page.

Health is cheap (checked once per interval per process, workers read from heartbeat rows)
and discreet (each service's detail only for a role)."""

import os
import subprocess
import sys
from datetime import timedelta

import pytest
from django.utils import timezone
from rest_framework.test import APIClient

from planner.core.models import Heartbeat
from planner.core.services import (
    broker_check,
    health_cache_clear,
    heartbeat_record,
    url_redact,
)
from tests.planner.factories import user_with_role
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


@pytest.fixture
def fresh_health(settings):
    """Every call checks the services again (no report cached from another test)."""
    settings.HEALTH_CACHE_SECONDS = 0
    health_cache_clear()
    yield
    health_cache_clear()


@pytest.fixture
def viewer_client(db):
    client = APIClient()
    client.force_login(user_with_role("health-viewer", "viewer"))
    return client


@pytest.mark.django_db
def test_anonymous_callers_get_the_status_alone(client, fresh_health):
    """Rule: no database name, REDIS_URL or worker host name to anyone without a role."""
    response = client.get("/api/v1/health")

    assert response.status_code == 200
    assert set(response.json()) == {"status"}
    assert response.json()["status"] in {"ok", "degraded"}


def test_a_role_gets_each_service(viewer_client, fresh_health):
    body = viewer_client.get("/api/v1/health").json()

    assert set(body) == {"status", "database", "broker", "worker", "scheduler"}
    assert body["database"]["ok"] is True
    assert body["broker"]["ok"] is True
    healthy = all(body[name]["ok"] for name in ("database", "broker", "worker", "scheduler"))
    assert body["status"] == ("ok" if healthy else "degraded")


def test_health_is_degraded_with_the_reason_when_redis_is_unreachable(viewer_client, settings,
                                                                      fresh_health):
    port = closed_port()
    settings.REDIS_URL = f"redis://127.0.0.1:{port}/0"

    body = viewer_client.get("/api/v1/health").json()

    assert body["status"] == "degraded"
    assert body["broker"] == {
        "ok": False,
        "detail": f"cannot reach REDIS_URL redis://127.0.0.1:{port}/0 (connection refused)",
    }


def test_workers_and_the_scheduler_are_read_from_fresh_heartbeats(viewer_client, settings,
                                                                  fresh_health):
    """A worker counts when it consumes the runs queue and beat within three intervals;
    the scheduler when the maintenance ran within three of its intervals."""
    settings.PLANNER_WORKER_HEARTBEAT_SECONDS = 10
    settings.PLANNER_MAINTENANCE_SECONDS = 15
    heartbeat_record(name="fresh@host", kind="worker", queues="celery")
    heartbeat_record(name="other-queue@host", kind="worker", queues="maintenance")
    heartbeat_record(name="stale@host", kind="worker", queues="celery")
    Heartbeat.objects.filter(name="stale@host").update(
        seen_at=timezone.now() - timedelta(seconds=31))

    body = viewer_client.get("/api/v1/health").json()
    assert body["worker"] == {"ok": True, "detail": "1 worker(s): fresh@host"}
    assert body["scheduler"]["ok"] is False
    assert "never" in body["scheduler"]["detail"]

    heartbeat_record(name="maintenance", kind="maintenance")
    Heartbeat.objects.filter(name="fresh@host").update(
        seen_at=timezone.now() - timedelta(seconds=31))
    body = viewer_client.get("/api/v1/health").json()
    assert body["worker"]["ok"] is False
    assert body["scheduler"]["ok"] is True


def test_health_checks_the_services_once_per_interval_and_never_asks_the_workers(
        client, viewer_client, settings, private_redis):
    """Rule: many callers cost one check per HEALTH_CACHE_SECONDS per process, and no call
    broadcasts to the workers (the old health check waited a whole ping timeout). Counted on
    a Redis server of this test alone: its PING and PUBLISH commands."""
    settings.REDIS_URL = private_redis.url
    settings.HEALTH_CACHE_SECONDS = 60
    health_cache_clear()
    before = private_redis.client().info("commandstats")

    for _ in range(10):
        assert client.get("/api/v1/health").status_code == 200
        assert viewer_client.get("/api/v1/health").status_code == 200
    assert client.get("/").status_code == 200

    after = private_redis.client().info("commandstats")
    health_cache_clear()
    calls = {name: after.get(f"cmdstat_{name}", {}).get("calls", 0)
             - before.get(f"cmdstat_{name}", {}).get("calls", 0) for name in ("ping", "publish")}
    assert calls == {"ping": 1, "publish": 0}


def test_home_page_shows_each_service_to_a_role_only(client, viewer_client, fresh_health):
    anonymous = client.get("/").content.decode()
    signed_in = viewer_client.get("/").content.decode()

    assert "Health" in anonymous and 'class="badge' in anonymous
    for service in ("database", "broker", "worker", "scheduler"):
        assert f'<th scope="row">{service}</th>' not in anonymous
        assert f'<th scope="row">{service}</th>' in signed_in
    assert "Sign in" in anonymous


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
