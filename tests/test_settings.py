"""Settings come from the environment; production mode refuses unsafe values."""

import os
import runpy
import subprocess
import sys

import pytest
from django.core.exceptions import ImproperlyConfigured

from tests.support import REPO

SETTINGS_FILE = str(REPO / "planner" / "settings.py")
SERVICE_VARIABLES = ("DATABASE_URL", "REDIS_URL", "DEBUG", "SECRET_KEY", "PLANNER_ENV")


@pytest.fixture
def clean_env(monkeypatch):
    for name in SERVICE_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


def test_local_defaults_need_no_server(clean_env):
    loaded = runpy.run_path(SETTINGS_FILE)

    assert loaded["DEBUG"] is False
    assert loaded["CACHES"]["default"]["BACKEND"].endswith("LocMemCache")
    assert loaded["DATABASES"]["default"]["ENGINE"] == "django.db.backends.sqlite3"
    assert loaded["DATABASES"]["default"]["NAME"] == str(REPO / "var" / "db.sqlite3")
    assert loaded["DATABASES"]["default"]["TEST"]["NAME"] == str(REPO / "var" / "test_db.sqlite3")
    assert loaded["CELERY_BROKER_URL"].startswith("filesystem://")
    assert loaded["CELERY_RESULT_BACKEND"] is None
    assert (REPO / "var" / "celery" / "queue").is_dir()


def test_debug_is_off_unless_asked_for(clean_env):
    """Rule: DEBUG defaults to off in every mode; only an explicit DEBUG=1 (make run sets it)
    turns it on. Static files are then served by whitenoise from the sources."""
    for env in ("local", "test", ""):
        clean_env.setenv("PLANNER_ENV", env)
        loaded = runpy.run_path(SETTINGS_FILE)
        assert loaded["DEBUG"] is False, env
        assert "whitenoise.middleware.WhiteNoiseMiddleware" in loaded["MIDDLEWARE"]
        assert loaded["WHITENOISE_USE_FINDERS"] is True
    clean_env.setenv("PLANNER_ENV", "local")
    clean_env.setenv("DEBUG", "1")
    assert runpy.run_path(SETTINGS_FILE)["DEBUG"] is True


def test_redis_url_is_broker_result_backend_and_cache(clean_env):
    clean_env.setenv("REDIS_URL", "redis://127.0.0.1:6379/5")

    loaded = runpy.run_path(SETTINGS_FILE)

    assert loaded["CACHES"]["default"]["LOCATION"] == "redis://127.0.0.1:6379/5"
    assert loaded["CACHES"]["default"]["BACKEND"] == "planner.core.cache.PrefixedRedisCache"
    assert loaded["CELERY_BROKER_URL"] == "redis://127.0.0.1:6379/5"
    assert loaded["CELERY_RESULT_BACKEND"] == "redis://127.0.0.1:6379/5"
    visibility = loaded["CELERY_BROKER_TRANSPORT_OPTIONS"]["visibility_timeout"]
    assert visibility > loaded["CELERY_TASK_TIME_LIMIT"]


def test_celery_settings_are_safe_for_late_acks(settings):
    assert settings.CELERY_TASK_ACKS_LATE is True
    assert settings.CELERY_TASK_REJECT_ON_WORKER_LOST is True
    assert settings.CELERY_WORKER_PREFETCH_MULTIPLIER == 1
    assert settings.CELERY_ACCEPT_CONTENT == ["json"]
    assert settings.CELERY_TASK_IGNORE_RESULT is True
    assert settings.CELERY_TASK_SOFT_TIME_LIMIT < settings.CELERY_TASK_TIME_LIMIT


def test_production_refuses_debug(clean_env):
    clean_env.setenv("PLANNER_ENV", "production")
    clean_env.setenv("SECRET_KEY", "a-real-secret")
    clean_env.setenv("DEBUG", "1")

    with pytest.raises(ImproperlyConfigured, match="DEBUG on"):
        runpy.run_path(SETTINGS_FILE)


def test_production_refuses_the_default_secret_key(clean_env):
    clean_env.setenv("PLANNER_ENV", "production")

    with pytest.raises(ImproperlyConfigured, match="default SECRET_KEY"):
        runpy.run_path(SETTINGS_FILE)


def test_production_serves_hashed_static_files_with_whitenoise(clean_env):
    clean_env.setenv("PLANNER_ENV", "production")
    clean_env.setenv("SECRET_KEY", "a-real-secret")

    loaded = runpy.run_path(SETTINGS_FILE)

    assert loaded["DEBUG"] is False
    assert "whitenoise.middleware.WhiteNoiseMiddleware" in loaded["MIDDLEWARE"]
    assert loaded["STORAGES"]["staticfiles"]["BACKEND"].endswith(
        "CompressedManifestStaticFilesStorage"
    )


def test_manage_py_reports_a_configuration_error_in_one_line():
    completed = subprocess.run(
        [sys.executable, "manage.py", "check"],
        cwd=REPO,
        env={**os.environ, "PLANNER_ENV": "production", "DEBUG": "1", "SECRET_KEY": "x" * 50},
        capture_output=True,
        text=True,
        timeout=60,
    )

    assert completed.returncode == 2
    assert completed.stderr.splitlines() == [
        "planner: PLANNER_ENV=production refuses to start with DEBUG on"
    ]


def _urls_with_a_random_password() -> tuple[str, str]:
    import uuid

    password = uuid.uuid4().hex
    return (f"postgres://app:{password}@db.example:5432/planner",
            f"redis://:{password}@cache:6379/0")


def test_a_debug_error_page_shows_no_settings_and_no_url_password(rf, settings):
    """Rule: even with DEBUG on, the 500 page lists no setting, and a password inside a URL
    (DATABASE_URL in the environment, a local variable) is cut out. The password is random
    and made elsewhere, so neither the page's source excerpts nor a bare local hold it."""
    import sys
    from urllib.parse import urlsplit

    from django.views.debug import technical_500_response

    database_url, redis_url = _urls_with_a_random_password()
    settings.DEBUG = True
    settings.DATABASE_URL = database_url
    request = rf.get("/boom", DATABASE_URL=database_url, REDIS_URL=redis_url)
    try:
        raise RuntimeError(f"cannot reach {redis_url[:5]}")
    except RuntimeError:
        page = technical_500_response(request, *sys.exc_info()).content.decode()

    assert urlsplit(database_url).password not in page
    assert "postgres://app:***@db.example:5432/planner" in page
    assert "<td>INSTALLED_APPS</td>" not in page and "<td>ROOT_URLCONF</td>" not in page
