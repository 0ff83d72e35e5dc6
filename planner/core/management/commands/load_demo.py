"""Load the demo data set (idempotent: running it twice changes nothing the second time)."""

from django.core.management.base import BaseCommand

from planner.core.services import demo_load


class Command(BaseCommand):
    help = "Load the demo clusters, workloads and runs; safe to run again."

    def handle(self, *args, **options) -> None:
        demo_load()
