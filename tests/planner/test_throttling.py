"""Throttles count per client across every web process (planner/core/throttling.py).

Rule: with REDIS_URL the counts live in Redis and each request is one atomic increment, so
two processes together let through exactly the limit (with LocMem, or DRF's read-modify-write
of a timestamp list, each process or each racing writer counted alone). The what-if API is
throttled like the live one.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import uuid

import pytest
from django.conf import settings
from django.core.cache import caches
from django.test import override_settings

from planner.core.throttling import window_count
from tests.planner.factories import scenario_make, user_with_role
from tests.planner.live.conftest import client_for
from tests.support import REPO, closed_port, skip_or_fail

COUNTER = """
import json, sys, time, django
django.setup()
from django.core.cache import cache
from planner.core.throttling import window_count
key, n, now = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
print(json.dumps([window_count(cache=cache, key=key, window_seconds=60, now=now)[0]
                  for _ in range(n)]))
"""


@pytest.fixture
def redis_cache():
    if not settings.REDIS_URL:
        skip_or_fail("REDIS_URL is not set: the shared throttle counts need Redis")
    return caches["default"]


def test_two_processes_share_one_count_and_no_increment_is_lost(redis_cache):
    """Another process and this one count the same key at once: together they see each
    count from 1 to 100 exactly once, so a limit of N lets N requests through in total."""
    key, now = f"test-throttle-{uuid.uuid4().hex}", time.time()
    other = subprocess.Popen([sys.executable, "-c", COUNTER, key, "50", str(now)], cwd=REPO,
                             env={**os.environ, "DJANGO_SETTINGS_MODULE": "planner.settings"},
                             stdout=subprocess.PIPE, text=True)
    second_client = caches.create_connection("default")  # its own connection pool
    mine = []
    deadline = time.monotonic() + 60
    while other.poll() is None and time.monotonic() < deadline:
        mine.append(window_count(cache=second_client, key=key, window_seconds=60, now=now)[0])
        time.sleep(0.002)
    theirs = json.loads(other.communicate(timeout=60)[0])

    assert len(theirs) == 50
    assert sorted(mine + theirs) == list(range(1, len(mine) + 51))


@pytest.mark.django_db
def test_the_what_if_api_answers_429_over_its_rates():
    planner = client_for(user_with_role("busy-planner", "planner"))
    scenario = scenario_make(policies=["fifo"])
    rates = {"whatif-read": "3/min", "whatif-write": "2/min"}
    with override_settings(PLANNER_WHATIF_THROTTLE_RATES=rates):
        launches = [planner.post(f"/api/v1/scenarios/{scenario.pk}/launch").status_code
                    for _ in range(3)]
        reads = [planner.get("/api/v1/runs/").status_code for _ in range(4)]
    assert launches == [201, 201, 429]
    assert reads == [200, 200, 200, 429]


@pytest.mark.django_db
def test_an_unreachable_cache_lets_requests_through(settings):
    """A Redis outage must not turn API calls into errors: the throttle stands aside."""
    viewer = client_for(user_with_role("calm-viewer", "viewer"))
    settings.CACHES = {"default": {
        "BACKEND": "planner.core.cache.PrefixedRedisCache",
        "LOCATION": f"redis://127.0.0.1:{closed_port()}/0", "KEY_PREFIX": "planner",
        "OPTIONS": {"socket_connect_timeout": 0.2, "socket_timeout": 0.2}}}
    settings.PLANNER_WHATIF_THROTTLE_RATES = {"whatif-read": "1/min"}

    codes = [viewer.get("/api/v1/runs/").status_code for _ in range(3)]

    assert codes == [200, 200, 200]


def test_clearing_the_cache_keeps_celerys_keys(redis_cache):
    """Django's RedisCache clears with FLUSHDB, which would drop queued tasks sharing the
    database; ours deletes its own prefix only."""
    import redis

    raw = redis.Redis.from_url(settings.REDIS_URL)
    marker = f"not-ours-{uuid.uuid4().hex}"
    raw.set(marker, "1", ex=60)
    redis_cache.set("ours", 1)

    redis_cache.clear()

    assert redis_cache.get("ours") is None
    assert raw.get(marker) == b"1"
    raw.delete(marker)
