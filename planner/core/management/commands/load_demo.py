"""Load the demo data set (idempotent: running it twice changes nothing the second time)."""

from django.conf import settings
from django.core.management.base import BaseCommand

from planner.core.services import DEMO_USERNAME, demo_load


class Command(BaseCommand):
    help = "Load the demo clusters, workloads and runs; safe to run again."

    def handle(self, *args, **options) -> None:
        demo_load()
        if not settings.IS_PRODUCTION:
            self.stdout.write(f"demo sign-in: {DEMO_USERNAME} / {DEMO_USERNAME}")
