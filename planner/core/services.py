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
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import redis
from django.conf import settings
from django.db import connections

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


def _filesystem_pidbox_prune(*, max_age: float) -> None:
    folder = Path(settings.CELERY_BROKER_TRANSPORT_OPTIONS["data_folder_in"])
    cutoff = time.time() - max_age
    for message in folder.glob("*.pidbox.msg"):
        try:
            if message.stat().st_mtime < cutoff:
                message.unlink()
        except FileNotFoundError:
            continue


def worker_check(*, timeout: float) -> ServiceStatus:
    """Broadcast a Celery ping and list the workers that answer within ``timeout`` seconds.

    Works on both brokers: Kombu's filesystem transport supports the fanout exchange that
    Celery's remote control uses, so no heartbeat file is needed. That transport has no
    message expiry, though: a ping sent while no worker runs stays in the queue folder, so
    pings older than a minute are pruned first.
    """
    from planner.celery import app

    if not settings.REDIS_URL:
        _filesystem_pidbox_prune(max_age=60.0)
    try:
        replies = app.control.ping(timeout=timeout)
    except Exception as error:
        return ServiceStatus(
            ok=False, detail=f"worker ping failed ({_reason(error=error, timeout=timeout)})"
        )
    names = sorted(name for reply in replies for name in reply)
    if not names:
        return ServiceStatus(
            ok=False,
            detail=f"no Celery worker answered within {timeout:g} s "
            "(start one: celery -A planner worker)",
        )
    return ServiceStatus(ok=True, detail=f"{len(names)} worker(s): {', '.join(names)}")


def services_check(*, timeout: float) -> list[ServiceStatus]:
    """Database and broker: what must be reachable before migrating, serving or testing."""
    return [
        database_check(timeout=timeout),
        broker_check(redis_url=settings.REDIS_URL, timeout=timeout),
    ]


def health_report(*, connect_timeout: float, worker_timeout: float) -> dict[str, Any]:
    """The health document served at /api/v1/health and shown on the home page."""
    database = database_check(timeout=connect_timeout)
    broker = broker_check(redis_url=settings.REDIS_URL, timeout=connect_timeout)
    if broker.ok:
        worker = worker_check(timeout=worker_timeout)
    else:
        worker = ServiceStatus(ok=False, detail="not checked: broker unreachable")
    healthy = database.ok and broker.ok and worker.ok
    return {
        "status": "ok" if healthy else "degraded",
        "database": asdict(database),
        "broker": asdict(broker),
        "worker": asdict(worker),
    }


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
    """Load the demo clusters, workloads and runs, and the local demo sign-in; idempotent."""
    from planner.scenarios.services import demo_load as scenario_demo_load

    demo_user_ensure()
    scenario = scenario_demo_load()
    if scenario is None:
        logger.info("demo data already loaded")
    else:
        logger.info("demo scenario %s created with %d run(s)", scenario.pk, scenario.runs.count())
