"""A private Redis server a test may kill, and Celery processes that use it.

`redis-server` runs on a free port without persistence, so killing it loses every message it
held, as a crashed broker without an append-only file does. Workers started here find it
through REDIS_URL and report through their heartbeat rows in the test database (no broker
round trip needed to know they are up). `app_on` points this process's Celery app at the
private server too, so what a web request sends goes there.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import redis

from tests.support import REPO, session_database_url


@dataclass
class PrivateRedis:
    port: int
    folder: Path
    process: subprocess.Popen | None = None
    starts: int = 0
    log: Path = field(init=False)

    def __post_init__(self) -> None:
        self.log = self.folder / "redis.log"

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        command = ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1",
                   "--save", "", "--appendonly", "no", "--dir", str(self.folder)]
        with self.log.open("ab") as log:
            self.process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT,
                                            stdin=subprocess.DEVNULL, start_new_session=True)
        client = redis.Redis(port=self.port, socket_connect_timeout=0.2)
        deadline = time.monotonic() + 10
        while True:
            try:
                client.ping()
                break
            except redis.ConnectionError:
                if time.monotonic() > deadline or self.process.poll() is not None:
                    pytest.fail(f"redis-server did not start:\n{self.log.read_text()}",
                                pytrace=False)
                time.sleep(0.05)
        self.starts += 1

    def kill(self) -> None:
        """SIGKILL: no shutdown save, every queued message gone."""
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait()

    def client(self) -> redis.Redis:
        return redis.Redis(port=self.port, socket_connect_timeout=1, socket_timeout=2)


def celery_start(*, name: str, args: list[str], env: dict[str, str], log: Path
                 ) -> subprocess.Popen:
    """`celery -A planner <args>` on the test database, in its own process group."""
    from django.conf import settings

    full_env = {**os.environ, "DJANGO_SETTINGS_MODULE": "planner.settings",
                "DATABASE_URL": session_database_url(), "MEDIA_ROOT": str(settings.MEDIA_ROOT),
                **env}
    command = [sys.executable, "-m", "celery", "-A", "planner", *args, "-n", name,
               "-l", "info"]
    with log.open("ab") as out:
        return subprocess.Popen(command, cwd=REPO, env=full_env, stdin=subprocess.DEVNULL,
                                stdout=out, stderr=subprocess.STDOUT, start_new_session=True)


def heartbeats_wait(*, names: list[str], processes: list[subprocess.Popen], logs: list[Path],
                    timeout: float = 60) -> None:
    """Until every named worker wrote its heartbeat row (it is ready)."""
    from planner.core.models import Heartbeat

    deadline = time.monotonic() + timeout
    while set(Heartbeat.objects.filter(name__in=names).values_list("name", flat=True)) \
            != set(names):
        if time.monotonic() > deadline or any(p.poll() is not None for p in processes):
            tails = "\n".join(log.read_text(errors="replace")[-2000:] for log in logs)
            pytest.fail(f"workers {names} did not start:\n{tails}", pytrace=False)
        time.sleep(0.1)


def group_kill(process: subprocess.Popen) -> None:
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    process.wait()


@contextmanager
def app_on(url: str) -> Iterator[None]:
    """This process's Celery app sends to `url` meanwhile, then to its own broker again.

    The app's connection and producer pools are set aside, not closed: kombu keeps one pool
    per broker URL for the whole process, and a closed one would refuse every later send.
    """
    from planner.celery import app

    saved = app.conf.broker_url, app._pool, app.amqp._producer_pool
    app.conf.broker_url, app._pool, app.amqp._producer_pool = url, None, None
    try:
        yield
    finally:
        private = app._pool
        app.conf.broker_url, app._pool, app.amqp._producer_pool = saved
        if private is not None:
            private.force_close_all()
