"""Run the development web server and one Celery worker together; Ctrl-C stops both.

Each child runs in its own process group. On SIGINT or SIGTERM (or when either child exits)
every group gets SIGINT, as a terminal's Ctrl-C would send, then SIGKILL after a grace
period, so no worker, pool process or autoreloader is left behind.

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


def children_start(*, host: str, port: int) -> list[subprocess.Popen]:
    python = sys.executable
    commands = [
        [python, "-m", "celery", "-A", "planner", "worker", "-l", "info", "--concurrency", "1"],
        [python, "manage.py", "runserver", f"{host}:{port}"],
    ]
    return [subprocess.Popen(command, cwd=REPO, start_new_session=True) for command in commands]


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

    children = children_start(host=args.host, port=args.port)
    worker, web = children
    print(
        f"planner: serving http://{args.host}:{args.port}/ with a Celery worker "
        f"(worker pid {worker.pid}, web pid {web.pid}; Ctrl-C stops both)",
        flush=True,
    )
    exit_code = 0
    try:
        while not stop_requested:
            exited = [child for child in children if child.poll() is not None]
            if exited:
                print(
                    f"planner: {' '.join(map(str, exited[0].args[1:4]))} exited with code "
                    f"{exited[0].returncode}; stopping the rest",
                    file=sys.stderr,
                    flush=True,
                )
                exit_code = 1
                break
            time.sleep(0.2)
    finally:
        children_stop(children=children)
    print("planner: stopped", flush=True)
    return exit_code


if __name__ == "__main__":
    sys.exit(main())
