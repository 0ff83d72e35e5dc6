"""A real Celery worker on the real Redis broker runs tasks against the test database."""

import json
import time
from pathlib import Path

import pytest
from django.db import connection

from planner.core.services import worker_check
from planner.core.tasks import ping, write_marker
from tests.planner.scenarios.workers import wait_for

pytestmark = pytest.mark.django_db(transaction=True)


def _wait_for_file(*, path: Path, timeout: float) -> str:
    deadline = time.monotonic() + timeout
    while not path.exists():
        if time.monotonic() > deadline:
            pytest.fail(f"no task wrote {path} within {timeout:g} s", pytrace=False)
        time.sleep(0.1)
    return path.read_text()


def test_ping_returns_pong_through_the_worker(celery_worker_process):
    result = ping.apply_async(ignore_result=False)

    assert result.get(timeout=60) == "pong"


def test_worker_uses_the_test_database(celery_worker_process, tmp_path):
    marker = tmp_path / "marker.json"

    write_marker.delay(str(marker))

    written = json.loads(_wait_for_file(path=marker, timeout=60))
    assert written["pid"] == celery_worker_process.process.pid
    assert written["vendor"] == connection.vendor
    assert written["name"] == str(connection.settings_dict["NAME"])


def test_worker_check_sees_the_workers_heartbeat(celery_worker_process):
    """The worker writes its heartbeat row once ready (and every interval after), naming the
    queues it consumes; the health check reads that row, not a broadcast ping."""
    status = wait_for(lambda: (found := worker_check(within_seconds=60, queue="celery")).ok
                      and found, timeout=15, what="the worker's heartbeat")

    assert celery_worker_process.nodename in status.detail
