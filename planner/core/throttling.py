"""Rate limits whose counts every web process shares.

DRF's throttles keep a list of timestamps per client in the cache and write it back after
each request: two processes that read the same list both append to their own copy, so with
gunicorn's workers (and LocMem, one cache per process) a client got several times its rate.
Here a count per client and fixed window is one atomic `incr` on the Django cache, which is
Redis whenever REDIS_URL is set, so N processes together let through exactly the limit.
A fixed window lets a client spend its limit at the end of one window and again at the start
of the next: at most twice the rate over any stretch of one window's length.

When the cache cannot be reached the request is let through and a warning logged: a Redis
outage must not turn every API call into a 500 (the broker outage is survived the same way).
"""

from __future__ import annotations

import logging
import time

from django.conf import settings
from django.core.cache.backends.base import BaseCache
from rest_framework.throttling import ScopedRateThrottle

logger = logging.getLogger(__name__)


def window_count(*, cache: BaseCache, key: str, window_seconds: int,
                 now: float | None = None) -> tuple[int, float]:
    """Add one to the count of `key` in the current window of `window_seconds`.

    Returns the count including this call and the seconds left in the window. Raises what
    the cache raises when it is unreachable.
    """
    now = time.time() if now is None else now
    window = int(now // window_seconds)
    slot = f"{key}:{window}"
    cache.add(slot, 0, timeout=window_seconds + 1)
    try:
        count = cache.incr(slot)
    except ValueError:  # expired between add and incr
        cache.add(slot, 0, timeout=window_seconds + 1)
        count = cache.incr(slot)
    return count, (window + 1) * window_seconds - now


class SharedScopedThrottle(ScopedRateThrottle):
    """DRF's scoped throttle (per user, per client IP when anonymous) on a shared counter.

    Rates come from PLANNER_LIVE_THROTTLE_RATES and PLANNER_WHATIF_THROTTLE_RATES on each
    request, so deployments and tests can change them; a scope without a rate is not
    throttled.
    """

    def get_rate(self) -> str | None:
        rates = {**settings.PLANNER_LIVE_THROTTLE_RATES, **settings.PLANNER_WHATIF_THROTTLE_RATES}
        return rates.get(self.scope)

    def allow_request(self, request, view) -> bool:
        self.scope = getattr(view, self.scope_attr, None)
        self.rate = self.get_rate() if self.scope else None
        if not self.rate:
            return True
        self.num_requests, self.duration = self.parse_rate(self.rate)
        self.key = self.get_cache_key(request, view)
        if self.key is None:
            return True
        try:
            count, self._wait = window_count(cache=self.cache, key=self.key,
                                             window_seconds=self.duration)
        except Exception as error:  # the cache (Redis) is down: serve, and say so in the log
            logger.warning("throttle %s not applied: cache unreachable (%s)", self.scope, error)
            return True
        return count <= self.num_requests

    def wait(self) -> float:
        return self._wait
