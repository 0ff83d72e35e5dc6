"""`make run`'s launcher serves pages with a worker and leaves no process behind on Ctrl-C.

It runs on this session's test database (migrated; the heartbeats live there) and Kombu's
filesystem broker."""

import json
import os
import re
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from tests.support import REPO, closed_port, session_database_url

START_SECONDS = 90.0


def _health(*, port: int) -> dict | None:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/v1/health", timeout=10) as reply:
            return json.load(reply)
    except (urllib.error.URLError, ConnectionError, TimeoutError):
        return None


def _process_groups_alive(pgids: set[int]) -> list[str]:
    alive = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (FileNotFoundError, ProcessLookupError, IndexError):
            continue
        state, pgid = fields[0], int(fields[2])
        if pgid in pgids and state != "Z":
            alive.append(stat.parent.name)
    return alive


def _log_wait(path: Path, pattern: str, *, timeout: float) -> re.Match:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = re.search(pattern, path.read_text(errors="replace"))
        if found:
            return found
        time.sleep(0.2)
    raise AssertionError(f"no {pattern!r} in:\n{path.read_text(errors='replace')[-3000:]}")


@pytest.mark.django_db(transaction=True)
def test_run_dev_serves_restarts_a_dead_worker_and_stops_everything_on_sigint(tmp_path):
    """make run's launcher: web, run worker and beat-driven maintenance all up (health ok,
    which needs a worker heartbeat and a maintenance run), DEBUG on for it alone, a killed
    worker started again, and nothing left behind after Ctrl-C."""
    port = closed_port()
    env = {key: value for key, value in os.environ.items()
           if key not in ("REDIS_URL", "DEBUG")}
    env.update(DATABASE_URL=session_database_url(), PLANNER_MAINTENANCE_SECONDS="2",
               CELERY_BEAT_SCHEDULE_FILENAME=str(tmp_path / "beat-schedule"))
    output = tmp_path / "run_dev.log"
    with output.open("wb") as log:
        launcher = subprocess.Popen(
            [sys.executable, "scripts/run_dev.py", "--port", str(port)],
            cwd=REPO,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    groups: set[int] = set()
    try:
        deadline = time.monotonic() + START_SECONDS
        health = None
        while time.monotonic() < deadline and launcher.poll() is None:
            health = _health(port=port)
            if health and health["status"] == "ok":
                break
            time.sleep(0.5)
        log_text = output.read_text(errors="replace")
        assert health == {"status": "ok"}, log_text
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=10) as reply:
            assert reply.status == 200
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/no-such-page/", timeout=10)
        except urllib.error.HTTPError as error:
            assert "Using the URLconf defined in" in error.read().decode()  # DEBUG is on

        pids = re.search(r"worker pid (\d+), web pid (\d+), maintenance pid (\d+)", log_text)
        assert pids, log_text
        groups = {int(pid) for pid in pids.groups()}
        os.killpg(int(pids[1]), signal.SIGKILL)
        restarted = _log_wait(output, r"planner: worker pid (\d+)", timeout=30)
        groups.add(int(restarted[1]))
        assert launcher.poll() is None

        launcher.send_signal(signal.SIGINT)
        assert launcher.wait(timeout=60) == 0
    finally:
        if launcher.poll() is None:  # a failed assertion: stop the children too
            launcher.send_signal(signal.SIGINT)
            try:
                launcher.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(launcher.pid, signal.SIGKILL)
                launcher.wait()

    log_text = output.read_text(errors="replace")
    assert f"http://127.0.0.1:{port}/" in log_text
    assert "the worker (pid" in log_text and "starting it again" in log_text
    assert _process_groups_alive(groups) == []
