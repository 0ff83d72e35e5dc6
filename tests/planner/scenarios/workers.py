"""Extra Celery worker processes on a private queue, for tests that kill workers."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.support import REPO, session_database_url


def worker_start(*, queue: str, pool: str, log_path: Path, env: dict[str, str]) -> subprocess.Popen:
    """Start ``celery worker -Q queue`` in its own process group; wait until it answers."""
    from django.conf import settings

    from planner.celery import app

    nodename = f"{queue}-{pool}@pytest"
    command = [sys.executable, "-m", "celery", "-A", "planner", "worker", "--pool", pool,
               "--concurrency", "1", "-Q", queue, "-n", nodename, "-l", "warning"]
    full_env = {**os.environ, "DJANGO_SETTINGS_MODULE": "planner.settings",
                "DATABASE_URL": session_database_url(), "REDIS_URL": settings.REDIS_URL,
                "MEDIA_ROOT": str(settings.MEDIA_ROOT), **env}
    with log_path.open("ab") as log:
        process = subprocess.Popen(command, cwd=REPO, env=full_env, stdin=subprocess.DEVNULL,
                                   stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    deadline = time.monotonic() + 60
    while not app.control.ping(destination=[nodename], timeout=1.0):
        if process.poll() is not None or time.monotonic() > deadline:
            worker_kill(process=process)
            pytest.fail(f"worker {nodename} did not start:\n{log_path.read_text()[-2000:]}",
                        pytrace=False)
    return process


def worker_kill(*, process: subprocess.Popen) -> None:
    """SIGKILL the worker and every process it started: no chance to clean up."""
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    process.wait()


def worker_children(*, process: subprocess.Popen) -> list[int]:
    """The pool processes of a prefork worker."""
    children = Path(f"/proc/{process.pid}/task/{process.pid}/children").read_text().split()
    return [int(pid) for pid in children]


def wait_for(predicate, *, timeout: float, what: str, interval: float = 0.1):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    pytest.fail(f"timed out after {timeout:g} s waiting for {what}", pytrace=False)
