"""Health of the planner's backing services, plus the demo loader.

Every check returns a ServiceStatus whose detail is one line naming the environment variable
and the (password-redacted) URL it could not reach, e.g.
``cannot reach REDIS_URL redis://127.0.0.1:6390/0 (connection refused)``. The same text is
printed by ``manage.py check_services`` and returned by ``GET /api/v1/health``.
"""

import json
import logging
import os
import socket
import threading
import time
from dataclasses import asdict, dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import redis
from django.conf import settings
from django.db import DatabaseError, connections
from django.utils import timezone

from planner.core.models import Heartbeat, HeartbeatKind

logger = logging.getLogger(__name__)

DEFAULT_PORTS = {"postgresql": 5432, "mysql": 3306, "redis": 6379, "rediss": 6379}


@dataclass(frozen=True)
class ServiceStatus:
    ok: bool
    detail: str


def url_redact(*, url: str) -> str:
    """The URL with its password replaced by ``***`` so it can be printed and logged."""
    parts = urlsplit(url)
    if not parts.password:
        return url
    netloc = parts.netloc.replace(f":{parts.password}@", ":***@", 1)
    return urlunsplit(parts._replace(netloc=netloc))


def _reason(*, error: BaseException, timeout: float) -> str:
    if isinstance(error, ConnectionRefusedError):
        return "connection refused"
    if isinstance(error, socket.gaierror):
        return "unknown host"
    if isinstance(error, TimeoutError):
        return f"no answer within {timeout:g} s"
    if isinstance(error, OSError) and error.strerror:
        return error.strerror.lower()
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    if not lines:
        return type(error).__name__
    first = " ".join(lines[0].split())
    # libpq wraps the server's answer in "connection to server at ... failed: FATAL: ..."
    return first.split("FATAL:", 1)[1].strip() if "FATAL:" in first else first


def tcp_probe(*, host: str, port: int, timeout: float) -> str | None:
    """Open and close a TCP connection; the reason it failed, or None when it worked."""
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return None
    except OSError as error:
        return _reason(error=error, timeout=timeout)


def _unreachable(*, variable: str, url: str, reason: str) -> ServiceStatus:
    detail = f"cannot reach {variable} {url_redact(url=url)} ({reason})"
    return ServiceStatus(ok=False, detail=detail)


def database_check(*, timeout: float, alias: str = "default") -> ServiceStatus:
    """Connect to the database and run ``SELECT 1``."""
    connection = connections[alias]
    url = settings.DATABASE_URL
    params = connection.settings_dict
    host = params.get("HOST") or ""
    if connection.vendor in DEFAULT_PORTS and host and not host.startswith("/"):
        port = int(params.get("PORT") or DEFAULT_PORTS[connection.vendor])
        reason = tcp_probe(host=host, port=port, timeout=timeout)
        if reason:
            return _unreachable(variable="DATABASE_URL", url=url, reason=reason)
    try:
        connection.ensure_connection()
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
    except Exception as error:
        connection.close()
        return _unreachable(
            variable="DATABASE_URL", url=url, reason=_reason(error=error, timeout=timeout)
        )
    return ServiceStatus(ok=True, detail=f"{connection.vendor} database {params['NAME']}")


def broker_check(*, redis_url: str, timeout: float) -> ServiceStatus:
    """PING Redis when REDIS_URL is set; otherwise check the filesystem broker's folders."""
    if not redis_url:
        return _filesystem_broker_check()
    parts = urlsplit(redis_url)
    if parts.scheme in ("redis", "rediss"):
        reason = tcp_probe(
            host=parts.hostname or "localhost",
            port=parts.port or DEFAULT_PORTS[parts.scheme],
            timeout=timeout,
        )
        if reason:
            return _unreachable(variable="REDIS_URL", url=redis_url, reason=reason)
    client = redis.Redis.from_url(redis_url, socket_connect_timeout=timeout, socket_timeout=timeout)
    try:
        client.ping()
    except Exception as error:
        return _unreachable(
            variable="REDIS_URL", url=redis_url, reason=_reason(error=error, timeout=timeout)
        )
    finally:
        client.close()
    return ServiceStatus(ok=True, detail=f"redis {url_redact(url=redis_url)}")


def _filesystem_broker_check() -> ServiceStatus:
    options = settings.CELERY_BROKER_TRANSPORT_OPTIONS
    for key in ("data_folder_in", "control_folder"):
        folder = Path(options[key])
        if not (folder.is_dir() and os.access(folder, os.W_OK)):
            return ServiceStatus(
                ok=False, detail=f"filesystem broker folder {folder} is missing or read-only"
            )
    return ServiceStatus(
        ok=True, detail=f"filesystem broker in {settings.CELERY_FILESYSTEM_DIR} (REDIS_URL unset)"
    )


def broker_started_at(*, redis_url: str, timeout: float) -> datetime | None:
    """When the Redis broker last started (from its uptime), 1 s late rather than early.

    Messages sent before then may be lost (a restart without persistence). None when the
    broker is the filesystem transport (its messages are files that survive) or unreachable.
    """
    if not redis_url:
        return None
    client = redis.Redis.from_url(redis_url, socket_connect_timeout=timeout, socket_timeout=timeout)
    try:
        uptime = int(client.info("server")["uptime_in_seconds"])
    except Exception as error:
        logger.warning("broker start time unknown: %s", _reason(error=error, timeout=timeout))
        return None
    finally:
        client.close()
    return timezone.now() - timedelta(seconds=uptime - 1)


# --- Heartbeats --------------------------------------------------------------------------------


def heartbeat_record(*, name: str, kind: str, queues: str = "") -> None:
    Heartbeat.objects.update_or_create(
        name=name, defaults={"kind": kind, "queues": queues, "seen_at": timezone.now()})


def heartbeat_remove(*, name: str) -> None:
    Heartbeat.objects.filter(name=name).delete()


class WorkerHeartbeat:
    """Writes this worker's heartbeat row from a thread of its main process.

    A thread, not the worker's timer: with the solo pool a run holds the main loop for
    minutes, and the worker must still look alive. A write that fails (database restarting)
    is logged and retried at the next beat.
    """

    def __init__(self, *, name: str, queues: list[str], interval: float) -> None:
        self.name, self.queues, self.interval = name, ",".join(sorted(queues)), interval
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._beat, daemon=True, name="worker-heartbeat")

    def _beat(self) -> None:
        while True:
            try:
                heartbeat_record(name=self.name, kind=HeartbeatKind.WORKER, queues=self.queues)
            except Exception as error:
                logger.warning("worker heartbeat not written: %s", error)
            finally:
                connections.close_all()
            if self._stop.wait(self.interval):
                return

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
        try:
            heartbeat_remove(name=self.name)
        finally:
            connections.close_all()


def worker_check(*, within_seconds: float, queue: str) -> ServiceStatus:
    """Workers that consume `queue` and wrote a heartbeat in the last `within_seconds`."""
    since = timezone.now() - timedelta(seconds=within_seconds)
    names = [beat.name for beat in Heartbeat.objects.filter(
        kind=HeartbeatKind.WORKER, seen_at__gte=since) if queue in beat.queues.split(",")]
    if not names:
        return ServiceStatus(
            ok=False, detail=f"no Celery worker for the {queue!r} queue seen in the last "
            f"{within_seconds:g} s (start one: celery -A planner worker)")
    return ServiceStatus(ok=True, detail=f"{len(names)} worker(s): {', '.join(names)}")


def scheduler_check(*, within_seconds: float) -> ServiceStatus:
    """Whether the periodic maintenance (Celery beat and a maintenance worker) ran lately."""
    beat = Heartbeat.objects.filter(name="maintenance",
                                    kind=HeartbeatKind.MAINTENANCE).first()
    age = (timezone.now() - beat.seen_at).total_seconds() if beat else None
    if age is None or age > within_seconds:
        last = "never" if age is None else f"{age:.0f} s ago"
        return ServiceStatus(
            ok=False, detail=f"the periodic maintenance last ran {last} (start celery -A "
            f"planner beat and a worker for the {settings.PLANNER_MAINTENANCE_QUEUE!r} queue)")
    return ServiceStatus(ok=True, detail=f"maintenance ran {age:.0f} s ago")


def services_check(*, timeout: float) -> list[ServiceStatus]:
    """Database and broker: what must be reachable before migrating, serving or testing."""
    return [
        database_check(timeout=timeout),
        broker_check(redis_url=settings.REDIS_URL, timeout=timeout),
    ]


def health_report(*, connect_timeout: float) -> dict[str, Any]:
    """The health document: database and broker reachability, worker and scheduler heartbeats.

    Costs a query, a TCP connect and a Redis PING; no message goes to the workers.
    """
    from planner.celery import app

    database = database_check(timeout=connect_timeout)
    broker = broker_check(redis_url=settings.REDIS_URL, timeout=connect_timeout)
    worker = scheduler = ServiceStatus(ok=False, detail="not checked: database unreachable")
    if database.ok:
        try:
            stale = 3 * settings.PLANNER_WORKER_HEARTBEAT_SECONDS
            worker = worker_check(within_seconds=stale, queue=app.conf.task_default_queue)
            scheduler = scheduler_check(within_seconds=3 * settings.PLANNER_MAINTENANCE_SECONDS)
        except DatabaseError as error:  # e.g. not migrated yet
            worker = scheduler = ServiceStatus(
                ok=False, detail=f"heartbeats unreadable ({_reason(error=error, timeout=0)})")
    healthy = database.ok and broker.ok and worker.ok and scheduler.ok
    return {
        "status": "ok" if healthy else "degraded",
        "database": asdict(database),
        "broker": asdict(broker),
        "worker": asdict(worker),
        "scheduler": asdict(scheduler),
    }


_health_lock = threading.Lock()
_health_cached: tuple[float, dict[str, Any]] | None = None


def health_report_cached(*, max_age: float) -> dict[str, Any]:
    """`health_report`, computed at most once per `max_age` seconds in this process.

    However many clients poll, the services are checked once per interval (callers that
    arrive while it is computed wait for that answer instead of checking again).
    """
    global _health_cached
    with _health_lock:
        if _health_cached is None or time.monotonic() - _health_cached[0] >= max_age:
            report = health_report(connect_timeout=settings.HEALTH_CONNECT_TIMEOUT)
            _health_cached = (time.monotonic(), report)
        return _health_cached[1]


def health_cache_clear() -> None:
    """Forget the cached report: the next call checks the services again."""
    global _health_cached
    with _health_lock:
        _health_cached = None


def health_public(*, report: dict[str, Any]) -> dict[str, Any]:
    """What anyone may see: up or degraded, no host, database or worker names."""
    return {"status": report["status"]}


def database_identity() -> dict[str, str]:
    """Which database this process talks to; lets a test prove a worker shares its database."""
    connection = connections["default"]
    return {"vendor": connection.vendor, "name": str(connection.settings_dict["NAME"])}


def marker_write(*, path: str) -> None:
    """Write this process's database identity to ``path`` atomically (rename into place)."""
    target = Path(path)
    partial = target.with_name(target.name + ".partial")
    partial.write_text(json.dumps({"pid": os.getpid(), **database_identity()}))
    partial.replace(target)


DEMO_USERNAME = "demo"


def demo_user_ensure() -> bool:
    """A local sign-in for the demo (`demo` / `demo`, staff, operator); never in production.

    Pages and the API need a signed-in user, and a newcomer's first `make run` has none.
    Returns whether the account exists afterwards.
    """
    from django.contrib.auth import get_user_model
    from django.contrib.auth.models import Group

    if settings.IS_PRODUCTION:
        return False
    user, created = get_user_model().objects.get_or_create(
        username=DEMO_USERNAME, defaults={"is_staff": True, "is_superuser": True}
    )
    if created:
        user.set_password(DEMO_USERNAME)
        user.save(update_fields=["password"])
        operator = Group.objects.filter(name="operator").first()
        if operator is not None:
            user.groups.add(operator)
    return True


def demo_load() -> None:
    """Load the demo's what-if study, its live cluster and the local demo sign-in; idempotent.

    The live cluster is driven by `manage.py live_demo`, which `make run` starts."""
    from planner.live.services import live_demo_cluster_ensure
    from planner.scenarios.services import demo_load as scenario_demo_load

    demo_user_ensure()
    live_demo_cluster_ensure()
    scenario = scenario_demo_load()
    if scenario is None:
        logger.info("demo data already loaded")
    else:
        logger.info("demo scenario %s created with %d run(s)", scenario.pk, scenario.runs.count())
