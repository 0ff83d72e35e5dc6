"""`make run`'s launcher serves pages with a worker and leaves no process behind on Ctrl-C."""

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

from tests.support import REPO, closed_port

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


def test_run_dev_serves_with_a_worker_and_stops_everything_on_sigint(tmp_path):
    port = closed_port()
    env = {key: value for key, value in os.environ.items() if key != "REDIS_URL"}
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
    try:
        deadline = time.monotonic() + START_SECONDS
        health = None
        while time.monotonic() < deadline and launcher.poll() is None:
            health = _health(port=port)
            if health and health["worker"]["ok"]:
                break
            time.sleep(0.5)
        log_text = output.read_text(errors="replace")
        assert health and health["status"] == "ok", log_text
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=10) as reply:
            assert reply.status == 200

        launcher.send_signal(signal.SIGINT)
        assert launcher.wait(timeout=60) == 0
    finally:
        if launcher.poll() is None:
            os.killpg(launcher.pid, signal.SIGKILL)
            launcher.wait()

    log_text = output.read_text(errors="replace")
    pids = re.search(r"worker pid (\d+), web pid (\d+)", log_text)
    assert pids, log_text
    assert f"http://127.0.0.1:{port}/" in log_text
    assert _process_groups_alive({int(pids[1]), int(pids[2])}) == []
