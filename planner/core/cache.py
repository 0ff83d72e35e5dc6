"""The Django cache on Redis, sharing the database number of REDIS_URL with Celery.

Django's RedisCache clears with FLUSHDB, which would also drop Celery's queued messages and
the bindings its workers listen on. This one deletes only the keys under its KEY_PREFIX.
"""

from __future__ import annotations

from django.core.cache.backends.redis import RedisCache


class PrefixedRedisCache(RedisCache):
    def clear(self) -> bool:
        client = self._cache.get_client(None, write=True)
        pattern = self.make_key("*").replace(f":{self.version}:", ":*:", 1)
        deleted = 0
        batch = []
        for key in client.scan_iter(match=pattern, count=500):
            batch.append(key)
            if len(batch) == 500:
                deleted += client.delete(*batch)
                batch = []
        if batch:
            deleted += client.delete(*batch)
        return bool(deleted)
