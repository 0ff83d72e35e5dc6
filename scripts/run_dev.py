"""Run the development web server, a Celery worker and the periodic maintenance together.

Three children, and a fourth for the live demo, each in its own process group:

- `celery worker` for what-if runs: two processes (one on a one-core machine), so a second
  run, or a sweep's runs, need not wait for the first; SQLite is safe with that (each write
  takes the lock at its transaction's start and waits up to 20 s, see settings);
- `celery worker -B -Q maintenance`: Celery beat embedded in a small worker of its own queue,
  so the periodic maintenance (fail lost runs, send runs the broker never got) runs on time
  even while the run worker is busy;
- `manage.py runserver`, with DEBUG=1 unless DEBUG is set (DEBUG is off by default elsewhere);
- `manage.py live_demo`: a REST client that replays a Philly day on the live demo cluster
  through the live API, so the operator page moves (`PLANNER_LIVE_DEMO=0` leaves it out).

A worker that exits (killed, or gave up on a broker) is started again after a short pause;
when the web server exits, or on SIGINT or SIGTERM, every group gets SIGINT, as a terminal's
Ctrl-C would send, then SIGKILL after a grace period, so no worker, pool process or
autoreloader is left behind.

Usage: python scripts/run_dev.py [--host 127.0.0.1] [--port 8000]
"""

import argparse
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
GRACE_SECONDS = 15.0
RESTART_PAUSE_SECONDS = 2.0
# A run is CPU-bound: more processes than cores only slow each other down.
WORKER_CONCURRENCY = min(2, os.cpu_count() or 1)


def commands(*, host: str, port: int) -> dict[str, list[str]]:
    python = sys.executable
    celery = [python, "-m", "celery", "-A", "planner"]
    queue = os.environ.get("PLANNER_MAINTENANCE_QUEUE", "maintenance")
    local = "127.0.0.1" if host in ("0.0.0.0", "") else host
    live_demo = ({} if os.environ.get("PLANNER_LIVE_DEMO", "1") == "0" else
                 {"live demo": [python, "manage.py", "live_demo", "--url",
                                f"http://{local}:{port}"]})
    return live_demo | {
        "worker": celery + ["worker", "-l", "info", "--concurrency", str(WORKER_CONCURRENCY),
                            "-n", "runs@%h"],
        "maintenance": celery + ["worker", "-B", "-l", "info", "--pool", "solo", "-Q", queue,
                                 "-n", "maintenance@%h"],
        "web": [python, "manage.py", "runserver", f"{host}:{port}"],
    }


def child_start(*, command: list[str]) -> subprocess.Popen:
    env = {**os.environ, "DEBUG": os.environ.get("DEBUG", "1")}
    return subprocess.Popen(command, cwd=REPO, env=env, start_new_session=True)


def children_stop(*, children: list[subprocess.Popen]) -> None:
    for child in children:
        if child.poll() is None:
            _signal_group(pid=child.pid, signum=signal.SIGINT)
    deadline = time.monotonic() + GRACE_SECONDS
    for child in children:
        try:
            child.wait(timeout=max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            pass
    for child in children:
        _signal_group(pid=child.pid, signum=signal.SIGKILL)
        child.wait()


def _signal_group(*, pid: int, signum: int) -> None:
    try:
        os.killpg(pid, signum)
    except ProcessLookupError:
        pass


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000)
    args = parser.parse_args()

    stop_requested = False

    def request_stop(signum: int, frame: object) -> None:
        nonlocal stop_requested
        stop_requested = True

    signal.signal(signal.SIGINT, request_stop)
    signal.signal(signal.SIGTERM, request_stop)

    planned = commands(host=args.host, port=args.port)
    running = {name: child_start(command=command) for name, command in planned.items()}
    ended: list[subprocess.Popen] = []
    print(
        f"planner: serving http://{args.host}:{args.port}/ with a Celery worker "
        f"(worker pid {running['worker'].pid}, web pid {running['web'].pid}, maintenance pid "
        f"{running['maintenance'].pid}"
        + (f", live demo pid {running['live demo'].pid}" if "live demo" in running else "")
        + "; Ctrl-C stops all)",
        flush=True,
    )
    exit_code = 0
    try:
        while not stop_requested:
            web = running["web"]
            if web.poll() is not None:
                print(f"planner: the web server exited with code {web.returncode}; stopping "
                      "the rest", file=sys.stderr, flush=True)
                exit_code = 1
                break
            for name in [name for name in running if name != "web"]:
                child = running[name]
                if child.poll() is not None:
                    print(f"planner: the {name} (pid {child.pid}) exited with code "
                          f"{child.returncode}; starting it again", file=sys.stderr, flush=True)
                    ended.append(child)
                    time.sleep(RESTART_PAUSE_SECONDS)
                    running[name] = child_start(command=planned[name])
                    print(f"planner: {name} pid {running[name].pid}", flush=True)
            time.sleep(0.2)
    finally:
        children_stop(children=list(running.values()) + ended)
    print("planner: stopped", flush=True)
    return exit_code


if __name__ == "__main__":
    sys.exit(main())
