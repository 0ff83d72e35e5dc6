"""Helpers for tests that need real services (Redis, PostgreSQL) or child processes.

Tests that need Redis or PostgreSQL skip with a one-line reason when the service is not
configured, except where services are required (env ``CI`` set, or ``REQUIRE_SERVICES=1``):
there they fail with that reason instead.
"""

import os
import socket
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import pytest

REPO = Path(__file__).resolve().parent.parent


def services_required() -> bool:
    ci = os.environ.get("CI", "").strip().lower()
    return os.environ.get("REQUIRE_SERVICES") == "1" or ci not in ("", "0", "false", "no")


def skip_or_fail(reason: str) -> None:
    """Skip the test, or fail it where services are required (CI, REQUIRE_SERVICES=1)."""
    if services_required():
        pytest.fail(f"{reason} (required here: CI or REQUIRE_SERVICES=1 is set)", pytrace=False)
    pytest.skip(reason)


def closed_port() -> int:
    """A local TCP port nothing listens on (bound, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def session_database_url() -> str:
    """DATABASE_URL of the database this test session uses (the test database), for children."""
    from django.conf import settings

    database = settings.DATABASES["default"]
    if database["ENGINE"] == "django.db.backends.sqlite3":
        return f"sqlite:///{database['NAME']}"
    parts = urlsplit(settings.DATABASE_URL)
    return urlunsplit(parts._replace(path=f"/{database['NAME']}"))
