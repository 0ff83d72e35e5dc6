"""Replay a Philly day on the live demo cluster through the live REST API, round after round."""

import time
import urllib.error
import urllib.request

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError
from rest_framework.authtoken.models import Token

from planner.core.services import DEMO_USERNAME, demo_user_ensure
from planner.live.replay import (
    LiveApi,
    LiveReplay,
    diurnal_busy,
    replay_jobs,
    replay_reset,
    replay_run,
)
from planner.live.services import live_demo_cluster_ensure

SERVER_WAIT_SECONDS = 120.0
ROUND_TAIL = 43200.0  # trace seconds


class Command(BaseCommand):
    help = ("Drive the live demo cluster: replay a real Philly day through the live API on a "
            "fast clock (jobs arrive, servers are lent and reclaimed, Aryl schedules).")

    def add_arguments(self, parser) -> None:
        parser.add_argument("--url", default="http://127.0.0.1:8000",
                            help="the planner's address")
        parser.add_argument("--speed", type=float, default=120.0,
                            help="trace seconds per wall second (120: a day in 12 min)")
        parser.add_argument("--rounds", type=int, default=0,
                            help="replays before stopping (0: forever)")
        parser.add_argument("--policy", default="aryl")

    def handle(self, *args, url: str, speed: float, rounds: int, policy: str,
               **options) -> None:
        if speed <= 0:
            raise CommandError("--speed must be positive")
        if not demo_user_ensure():
            raise CommandError("the live demo needs the local demo account; it is never "
                               "created with PLANNER_ENV=production")
        cluster = live_demo_cluster_ensure()
        user = get_user_model().objects.get(username=DEMO_USERNAME)
        token, _ = Token.objects.get_or_create(user=user)
        api = LiveApi(base_url=url, token=token.key)
        self._server_wait(url=url)
        pool = {p.kind: p for p in cluster.pools.all()}["inference"]
        servers = pool.servers.count()
        played = 0
        while not rounds or played < rounds:
            cancelled = replay_reset(api=api, cluster_id=cluster.pk)
            prefix = f"r{time.strftime('%Y%m%dT%H%M%S')}-"
            replay = LiveReplay(
                api=api, cluster_id=cluster.pk, policy=policy,
                jobs=replay_jobs(speed=speed, prefix=prefix), inference_servers=servers,
                lending_limit=pool.lending_limit if pool.lending_limit is not None else servers,
                inference_busy=diurnal_busy(servers=servers, speed=speed))
            self.stdout.write(f"live demo: replaying {len(replay.jobs)} Philly jobs on "
                              f"{cluster.name} at {speed:g}x ({cancelled} left-over jobs "
                              f"cancelled)")
            # A round ends half a trace day after the last arrival; the few multi-day jobs
            # still running then are cancelled by the next round's reset.
            replay_run(replay=replay, stop_after=replay.jobs[-1].submit + ROUND_TAIL / speed)
            played += 1
            self.stdout.write(f"live demo: round {played} done, {replay.finished} jobs finished")

    def _server_wait(self, *, url: str) -> None:
        deadline = time.monotonic() + SERVER_WAIT_SECONDS
        while True:
            try:
                urllib.request.urlopen(url.rstrip("/") + "/api/v1/health", timeout=5).close()
                return
            except (urllib.error.URLError, OSError) as error:
                if time.monotonic() > deadline:
                    raise CommandError(f"the planner at {url} did not answer: {error}") from None
                time.sleep(1.0)
