"""Settings for the GPU cluster planner: one module, every value read from the environment.

Local defaults need nothing installed (SQLite file, Celery on Kombu's filesystem transport);
production sets PLANNER_ENV=production plus DATABASE_URL, REDIS_URL, SECRET_KEY and
ALLOWED_HOSTS. The README's configuration table lists every variable read here.
"""

import os
from pathlib import Path

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = BASE_DIR / "var"
VAR_DIR.mkdir(exist_ok=True)


# --- Environment helpers ---------------------------------------------------------------------

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}


def env_str(name: str, default: str) -> str:
    return os.environ.get(name, default)


def env_bool(name: str, default: bool) -> bool:
    raw = os.environ.get(name)
    if raw is None:
        return default
    value = raw.strip().lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise ImproperlyConfigured(f"{name}={raw!r} is not a boolean (use 1/0, true/false)")


def env_int(name: str, default: int) -> int:
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    try:
        return int(raw)
    except ValueError as exc:
        raise ImproperlyConfigured(f"{name}={raw!r} is not an integer") from exc


def env_float(name: str, default: float) -> float:
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    try:
        return float(raw)
    except ValueError as exc:
        raise ImproperlyConfigured(f"{name}={raw!r} is not a number") from exc


def env_list(name: str, default: str) -> list[str]:
    return [item.strip() for item in env_str(name, default).split(",") if item.strip()]


# --- Mode and security -----------------------------------------------------------------------

PLANNER_ENV = env_str("PLANNER_ENV", "local")
IS_PRODUCTION = PLANNER_ENV == "production"

DEFAULT_SECRET_KEY = "insecure-local-planner-key-change-me"
SECRET_KEY = env_str("SECRET_KEY", DEFAULT_SECRET_KEY)
# Off unless asked for: `make run` (scripts/run_dev.py) sets DEBUG=1 for its children. Even on,
# error pages never list settings (planner.core.debug).
DEBUG = env_bool("DEBUG", default=False)
DEFAULT_EXCEPTION_REPORTER_FILTER = "planner.core.debug.NoSettingsExceptionReporterFilter"
ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", "127.0.0.1,localhost,[::1]")
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS", "")

if IS_PRODUCTION:
    if DEBUG:
        raise ImproperlyConfigured("PLANNER_ENV=production refuses to start with DEBUG on")
    if SECRET_KEY == DEFAULT_SECRET_KEY:
        raise ImproperlyConfigured("PLANNER_ENV=production refuses the default SECRET_KEY")
    SESSION_COOKIE_SECURE = env_bool("SECURE_COOKIES", default=True)
    CSRF_COOKIE_SECURE = SESSION_COOKIE_SECURE
    if env_bool("BEHIND_TLS_PROXY", default=False):
        SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")


# --- Applications ----------------------------------------------------------------------------

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "rest_framework.authtoken",
    "django_filters",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "planner.core",
    "planner.clusters",
    "planner.scenarios",
    "planner.dashboard",
    "planner.live",
    "planner.reproductions",
    "planner.capacity",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "planner.middleware.drf_view_cycle_break",
]

ROOT_URLCONF = "planner.urls"
WSGI_APPLICATION = "planner.wsgi.application"
ASGI_APPLICATION = "planner.asgi.application"
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "planner.core.context_processors.roles",
            ],
        },
    },
]


# --- Database --------------------------------------------------------------------------------
# DATABASE_URL (PostgreSQL in production); default: SQLite file var/db.sqlite3. Tests on
# SQLite use a file (not :memory:) so a Celery worker subprocess can open the same database.

DEFAULT_DATABASE_URL = f"sqlite:///{VAR_DIR / 'db.sqlite3'}"
DATABASE_URL = env_str("DATABASE_URL", DEFAULT_DATABASE_URL) or DEFAULT_DATABASE_URL
DATABASES = {
    "default": dj_database_url.parse(
        DATABASE_URL,
        conn_max_age=env_int("DATABASE_CONN_MAX_AGE", 60),
        conn_health_checks=True,
    )
}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    DATABASES["default"]["TEST"] = {"NAME": str(VAR_DIR / "test_db.sqlite3")}
    # Web and worker processes write the same file: take the write lock when a transaction
    # starts (a deferred one that upgrades later fails at once with "database is locked")
    # and wait for it up to 20 s.
    DATABASES["default"].setdefault("OPTIONS", {})
    DATABASES["default"]["OPTIONS"].update({"transaction_mode": "IMMEDIATE", "timeout": 20})
elif DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql":
    DATABASES["default"].setdefault("OPTIONS", {})
    DATABASES["default"]["OPTIONS"].setdefault(
        "connect_timeout", env_int("DATABASE_CONNECT_TIMEOUT", 5)
    )


# --- Authentication --------------------------------------------------------------------------

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]


# --- Internationalisation --------------------------------------------------------------------

LANGUAGE_CODE = "en-us"
TIME_ZONE = env_str("TIME_ZONE", "UTC")
USE_I18N = True
USE_TZ = True


# --- Static files ----------------------------------------------------------------------------
# Sources in static/ at the repo top; every asset is local (no CDN). With DEBUG, runserver
# serves them as-is; without, whitenoise does: in production the collected, hashed files,
# elsewhere the sources directly (no collectstatic needed).

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = Path(env_str("STATIC_ROOT", str(BASE_DIR / "staticfiles")))
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
}
if not DEBUG:
    MIDDLEWARE.insert(1, "whitenoise.middleware.WhiteNoiseMiddleware")
    WHITENOISE_USE_FINDERS = not IS_PRODUCTION
    # Find files per request outside production: scanning them all at start costs ~0.1 s
    # per handler, i.e. per test client.
    WHITENOISE_AUTOREFRESH = not IS_PRODUCTION
    if not IS_PRODUCTION:
        STATIC_ROOT.mkdir(parents=True, exist_ok=True)  # whitenoise warns when it is missing
if IS_PRODUCTION:
    STORAGES["staticfiles"] = {"BACKEND": "whitenoise.storage.CompressedManifestStaticFilesStorage"}


# --- REST API --------------------------------------------------------------------------------

REST_FRAMEWORK = {
    # Token first (as the live API): an anonymous client is told 401 with
    # `WWW-Authenticate: Token`, and the schema lists the token scheme first.
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "rest_framework.authentication.TokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["planner.core.roles.CanRead"],
    "DEFAULT_FILTER_BACKENDS": ["django_filters.rest_framework.DjangoFilterBackend"],
    # JSON bodies only (uploads name MultiPartParser themselves), bounded and checked.
    "DEFAULT_PARSER_CLASSES": ["planner.live.parsers.FastJSONParser"],
    "DEFAULT_PAGINATION_CLASS": "planner.core.pagination.StrictPageNumberPagination",
    "PAGE_SIZE": 50,
    "DEFAULT_SCHEMA_CLASS": "planner.core.schema.PlannerAutoSchema",
}

SPECTACULAR_SETTINGS = {
    "TITLE": "GPU cluster planner API",
    "DESCRIPTION": (
        "Clusters, workloads, what-if scenarios, runs and sweeps, and live scheduling "
        "decisions.\n\n"
        "**Authentication.** REST clients send `Authorization: Token <token>`. Get the token "
        "with `POST /api/v1/auth/token` and `{\"username\": ..., \"password\": ...}` "
        "(answer: `{\"token\": ...}`; failed attempts count against the sign-in limit), "
        "from an admin (Auth Token → Tokens), or with `python manage.py drf_create_token "
        "USER`. The browser uses its signed-in session. Reads need a role (viewer, planner "
        "or operator); what-if writes the planner role; live writes the operator role.\n\n"
        "**Errors** are JSON naming the field by its JSON path into the request, e.g. "
        "`{\"policies[0].params.time_slice\": [\"...\"]}`; a field the endpoint does not "
        "know is refused as `{\"<field>\": [\"unknown field\"]}`."
    ),
    # Enums as components (drf-spectacular's default hook), then the tags' descriptions.
    "POSTPROCESSING_HOOKS": ["drf_spectacular.hooks.postprocess_schema_enums",
                             "planner.core.schema.tags_describe"],
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    "ENUM_NAME_OVERRIDES": {
        "PoolKindEnum": "planner.clusters.models.PoolKind",
        "DecisionKindEnum": "planner.live.models.DecisionKind",
        "ServerStatusEnum": "planner.clusters.models.ServerStatus",
        "JobStatusEnum": "planner.live.models.JobStatus",
        "RunStatusEnum": "planner.scenarios.models.RunStatus",
        "SweepStatusEnum": "planner.scenarios.models.SweepStatus",
        "ReclaimStrategyEnum": "planner.core.schema.RECLAIM_STRATEGY_CHOICES",
    },
}


# --- Celery ----------------------------------------------------------------------------------
# REDIS_URL set: Redis is broker and result backend. Unset: Kombu's filesystem transport under
# var/celery/ (no server needed) and no result backend; tasks store their results in the
# database themselves, so results are ignored unless a task asks otherwise.

REDIS_URL = env_str("REDIS_URL", "")
CELERY_TASK_TIME_LIMIT = env_int("CELERY_TASK_TIME_LIMIT", 3600)
CELERY_TASK_SOFT_TIME_LIMIT = env_int("CELERY_TASK_SOFT_TIME_LIMIT", 3300)
CELERY_FILESYSTEM_DIR = VAR_DIR / "celery"

if REDIS_URL:
    CELERY_BROKER_URL = REDIS_URL
    CELERY_RESULT_BACKEND = REDIS_URL
    # With acks_late an unacked task is redelivered after the visibility timeout: keep it
    # above the hard time limit so a long run is never started twice.
    CELERY_BROKER_TRANSPORT_OPTIONS = {"visibility_timeout": CELERY_TASK_TIME_LIMIT + 600}
else:
    CELERY_BROKER_URL = "filesystem://localhost/"
    CELERY_RESULT_BACKEND = None
    for _folder in ("queue", "control", "processed"):
        (CELERY_FILESYSTEM_DIR / _folder).mkdir(parents=True, exist_ok=True)
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        "data_folder_in": str(CELERY_FILESYSTEM_DIR / "queue"),
        "data_folder_out": str(CELERY_FILESYSTEM_DIR / "queue"),
        "control_folder": str(CELERY_FILESYSTEM_DIR / "control"),
        "processed_folder": str(CELERY_FILESYSTEM_DIR / "processed"),
        "store_processed": False,
        "polling_interval": 0.25,
    }

CELERY_TASK_IGNORE_RESULT = True
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_SERIALIZER = "json"
CELERY_RESULT_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_RESULT_ACCEPT_CONTENT = ["json"]
CELERY_RESULT_EXPIRES = env_int("CELERY_RESULT_EXPIRES", 86400)
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
# A worker whose broker went away retries for as long as it takes (Celery's default gives up
# after 100 attempts and the worker exits).
CELERY_BROKER_CONNECTION_RETRY = True
CELERY_BROKER_CONNECTION_MAX_RETRIES = None
CELERY_TIMEZONE = TIME_ZONE

# Periodic maintenance (planner.scenarios.maintenance.maintenance_run): fail runs whose worker was
# lost, send runs the broker never got, finish stalled sweeps. `celery -A planner beat` sends
# it every PLANNER_MAINTENANCE_SECONDS to its own queue, so a worker busy with long runs never
# delays it: start one worker on that queue (`celery -A planner worker -Q maintenance`).
PLANNER_MAINTENANCE_SECONDS = env_float("PLANNER_MAINTENANCE_SECONDS", 15.0)
PLANNER_MAINTENANCE_QUEUE = env_str("PLANNER_MAINTENANCE_QUEUE", "maintenance")
# `capacity.maintenance` moves on capacity searches whose last run's signal was lost.
CELERY_TASK_ROUTES = {"scenarios.maintenance": {"queue": PLANNER_MAINTENANCE_QUEUE},
                      "capacity.maintenance": {"queue": PLANNER_MAINTENANCE_QUEUE}}
CELERY_BEAT_SCHEDULE = {
    "maintenance": {
        "task": "scenarios.maintenance",
        "schedule": PLANNER_MAINTENANCE_SECONDS,
        "options": {"expires": PLANNER_MAINTENANCE_SECONDS},
    },
    "capacity-maintenance": {
        "task": "capacity.maintenance",
        "schedule": PLANNER_MAINTENANCE_SECONDS,
        "options": {"expires": PLANNER_MAINTENANCE_SECONDS},
    },
}
CELERY_BEAT_SCHEDULE_FILENAME = env_str("CELERY_BEAT_SCHEDULE_FILENAME",
                                        str(VAR_DIR / "celerybeat-schedule"))
# How often each worker writes its heartbeat row (the health check reads those).
PLANNER_WORKER_HEARTBEAT_SECONDS = env_float("PLANNER_WORKER_HEARTBEAT_SECONDS", 10.0)


# --- Planner: uploads, result files, what-if runs ------------------------------------------
# Uploaded traces and run results (Parquet) live under MEDIA_ROOT; every web and worker host
# must see the same folder (a shared volume when scaling out).

MEDIA_URL = "media/"
MEDIA_ROOT = Path(env_str("MEDIA_ROOT", str(BASE_DIR / "media")))
PLANNER_MAX_UPLOAD_MB = env_int("PLANNER_MAX_UPLOAD_MB", 50)
PLANNER_RUN_HEARTBEAT_SECONDS = env_float("PLANNER_RUN_HEARTBEAT_SECONDS", 10.0)
PLANNER_RUN_STALE_SECONDS = env_float("PLANNER_RUN_STALE_SECONDS", 300.0)
PLANNER_RUN_MAX_ATTEMPTS = env_int("PLANNER_RUN_MAX_ATTEMPTS", 3)
# A queued run not sent to the broker this long after its creation is sent by the maintenance.
PLANNER_RUN_DISPATCH_GRACE_SECONDS = env_float("PLANNER_RUN_DISPATCH_GRACE_SECONDS", 10.0)
PLANNER_SWEEP_MAX_RUNS = env_int("PLANNER_SWEEP_MAX_RUNS", 500)
# Runs one launch of a scenario creates (policies x seeds), and seeds one scenario lists.
PLANNER_SCENARIO_MAX_RUNS = env_int("PLANNER_SCENARIO_MAX_RUNS", 200)
PLANNER_MAX_SEEDS = env_int("PLANNER_MAX_SEEDS", 100)
# Request bodies (JSON and forms; uploaded files count against PLANNER_MAX_UPLOAD_MB).
PLANNER_MAX_REQUEST_MB = env_int("PLANNER_MAX_REQUEST_MB", 10)
DATA_UPLOAD_MAX_MEMORY_SIZE = PLANNER_MAX_REQUEST_MB * 1024 * 1024


# --- Cache, throttles, sign-in limits -------------------------------------------------------
# Redis (REDIS_URL's database, keys under "planner:") when set, so every web process shares
# throttle and sign-in counts; otherwise LocMem, per process, for one local machine.

if REDIS_URL:
    CACHES = {"default": {
        "BACKEND": "planner.core.cache.PrefixedRedisCache",
        "LOCATION": REDIS_URL,
        "KEY_PREFIX": "planner",
        "OPTIONS": {"socket_connect_timeout": 1.0, "socket_timeout": 1.0},
    }}
else:
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}

# Scoped throttle rates per user (per address when anonymous), e.g. "600/min"; an empty value
# turns a scope off (planner.core.throttling.SharedScopedThrottle).
PLANNER_LIVE_THROTTLE_RATES = {
    "live-read": env_str("PLANNER_THROTTLE_READ", "1200/min") or None,
    "live-decide": env_str("PLANNER_THROTTLE_DECIDE", "600/min") or None,
}
PLANNER_WHATIF_THROTTLE_RATES = {
    "whatif-read": env_str("PLANNER_THROTTLE_WHATIF_READ", "1200/min") or None,
    "whatif-write": env_str("PLANNER_THROTTLE_WHATIF_WRITE", "60/min") or None,
}
PLANNER_SIGNIN_MAX_FAILURES = env_int("PLANNER_SIGNIN_MAX_FAILURES", 5)
PLANNER_SIGNIN_WINDOW_SECONDS = env_int("PLANNER_SIGNIN_WINDOW_SECONDS", 900)


# --- Health checks and metrics ---------------------------------------------------------------

HEALTH_CONNECT_TIMEOUT = env_float("HEALTH_CONNECT_TIMEOUT", 2.0)
# Each web process checks the services at most once per this many seconds.
HEALTH_CACHE_SECONDS = env_float("HEALTH_CACHE_SECONDS", 5.0)
# /metrics (Prometheus): with a token, only for `Authorization: Bearer <token>`; without one,
# open outside production and refused in production.
PLANNER_METRICS_TOKEN = env_str("PLANNER_METRICS_TOKEN", "")


# --- Logging ---------------------------------------------------------------------------------

LOG_LEVEL = env_str("LOG_LEVEL", "INFO").upper()
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "root": {"handlers": ["console"], "level": "WARNING"},
    "loggers": {"planner": {"level": LOG_LEVEL}},
}
