"""Fail fast, in one line per service, when DATABASE_URL or REDIS_URL cannot be reached."""

from django.conf import settings
from django.core.management.base import BaseCommand, CommandParser

from planner.core.services import services_check


class Command(BaseCommand):
    help = "Check that the database and the Celery broker answer; exit 2 naming any that does not."
    requires_system_checks: list = []
    requires_migrations_checks = False

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--timeout",
            type=float,
            default=settings.HEALTH_CONNECT_TIMEOUT,
            help="seconds to wait for each service (default: HEALTH_CONNECT_TIMEOUT)",
        )

    def handle(self, *args, timeout: float, **options) -> None:
        statuses = services_check(timeout=timeout)
        failures = [status for status in statuses if not status.ok]
        for status in failures:
            self.stderr.write(f"planner: {status.detail}")
        if failures:
            raise SystemExit(2)
        self.stdout.write("planner: ok: " + "; ".join(status.detail for status in statuses))
