"""Fail runs whose worker stopped sending heartbeats (run it from cron, or by hand)."""

from django.conf import settings
from django.core.management.base import BaseCommand

from planner.scenarios.services import run_reap_stale


class Command(BaseCommand):
    help = "Mark running runs with a stale heartbeat as failed, with the reason."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--timeout", type=float, default=settings.PLANNER_RUN_STALE_SECONDS,
                            help="seconds without a heartbeat (default PLANNER_RUN_STALE_SECONDS)")

    def handle(self, *args, timeout: float, **options) -> None:
        reaped = run_reap_stale(timeout_seconds=timeout)
        self.stdout.write(f"{len(reaped)} stale run(s) marked failed"
                          + (f": {', '.join(map(str, reaped))}" if reaped else ""))
