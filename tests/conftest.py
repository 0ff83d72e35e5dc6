"""Shared fixtures: a real Celery worker process on the Redis broker."""

import os
import shutil
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.support import REPO, closed_port, session_database_url, skip_or_fail

WORKER_START_SECONDS = 60.0
WORKER_STOP_SECONDS = 20.0


@dataclass(frozen=True)
class CeleryWorkerProcess:
    process: subprocess.Popen
    nodename: str
    log_path: Path

    def log_tail(self, lines: int = 20) -> str:
        text = self.log_path.read_text(errors="replace") if self.log_path.exists() else ""
        return "\n".join(text.splitlines()[-lines:])


def _worker_wait_ready(*, worker: CeleryWorkerProcess, timeout: float) -> None:
    from planner.celery import app

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if worker.process.poll() is not None:
            pytest.fail(
                f"celery worker exited with code {worker.process.returncode}:\n{worker.log_tail()}",
                pytrace=False,
            )
        if app.control.ping(destination=[worker.nodename], timeout=1.0):
            return
    pytest.fail(
        f"celery worker {worker.nodename} did not answer within {timeout:g} s:\n"
        f"{worker.log_tail()}",
        pytrace=False,
    )


def _worker_stop(*, process: subprocess.Popen) -> None:
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=WORKER_STOP_SECONDS)
        except subprocess.TimeoutExpired:
            pass
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    process.wait()


@pytest.fixture(scope="session", autouse=True)
def media_root(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A MEDIA_ROOT of this session for uploads and result files, shared with the worker.

    Inert when Django is not set up (`pytest -p no:django tests/simulation`: the engine's
    tests need no Django)."""
    from django.conf import settings
    from django.test.utils import override_settings

    folder = tmp_path_factory.mktemp("media")
    if not settings.configured:
        yield folder
        return
    with override_settings(MEDIA_ROOT=str(folder)):
        yield folder


@pytest.fixture(autouse=True)
def _cache_cleared() -> Iterator[None]:
    """Throttle and sign-in counts start at zero in every test (on Redis they would outlive
    the test, and user ids repeat across sessions)."""
    from django.conf import settings

    if not settings.configured:
        yield
        return
    from django.core.cache import cache

    cache.clear()
    yield


@pytest.fixture(scope="session")
def celery_worker_process(
    django_db_setup, media_root: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[CeleryWorkerProcess]:
    """A real ``celery -A planner worker --pool solo`` subprocess on the Redis broker.

    Tests using it must be marked ``@pytest.mark.django_db(transaction=True)``: the worker is
    another process, so it sees only committed rows. It is started with DATABASE_URL pointing
    at this session's test database (the SQLite test database is a file under var/ for that
    reason; on PostgreSQL it is ``test_<name>``), so tasks read and write the same rows as the
    test. It uses REDIS_URL as given, database number included: point it at a Redis database
    used only by tests (CI uses db 13). Without REDIS_URL the test is skipped, or fails where
    services are required. The worker runs in its own process group, killed at teardown,
    before pytest-django drops the test database. Task results need
    ``apply_async(ignore_result=False)`` because results are ignored by default.
    """
    from django.conf import settings

    from planner.core.services import broker_check

    if not settings.REDIS_URL:
        skip_or_fail("REDIS_URL is not set: the real-broker tests need Redis")
    status = broker_check(redis_url=settings.REDIS_URL, timeout=2.0)
    if not status.ok:
        skip_or_fail(status.detail)

    nodename = f"planner-test-{uuid.uuid4().hex[:8]}@pytest"
    log_path = tmp_path_factory.mktemp("celery") / "worker.log"
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "planner.settings",
        "DATABASE_URL": session_database_url(),
        "REDIS_URL": settings.REDIS_URL,
        "MEDIA_ROOT": str(media_root),
        # Transactional tests empty every table after them, its heartbeat row included.
        "PLANNER_WORKER_HEARTBEAT_SECONDS": "1",
    }
    command = [sys.executable, "-m", "celery", "-A", "planner", "worker", "--pool", "solo"]
    command += ["-l", "warning", "-n", nodename]
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            command,
            cwd=REPO,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    worker = CeleryWorkerProcess(process=process, nodename=nodename, log_path=log_path)
    try:
        _worker_wait_ready(worker=worker, timeout=WORKER_START_SECONDS)
        yield worker
    finally:
        _worker_stop(process=process)


@pytest.fixture
def private_redis(tmp_path: Path):
    """A `redis-server` of this test alone (tests/planner/scenarios/outage.py), killed after."""
    from tests.planner.scenarios.outage import PrivateRedis

    if shutil.which("redis-server") is None:
        skip_or_fail("redis-server is not installed: the broker outage tests start their own")
    server = PrivateRedis(port=closed_port(), folder=tmp_path)
    server.start()
    try:
        yield server
    finally:
        server.kill()
