"""Create Aryl's named scenarios (simulation/scenarios/*.yaml) as one-click scenarios."""

from django.core.management.base import BaseCommand, CommandError

from planner.scenarios.services import named_scenarios_load
from simulation.errors import InputError


class Command(BaseCommand):
    help = "Create the named scenarios shipped with the simulator; safe to run again."

    def handle(self, *args, **options) -> None:
        try:
            created = named_scenarios_load()
        except InputError as exc:
            raise CommandError(str(exc)) from None
        self.stdout.write(f"{len(created)} named scenario(s) created"
                          + (f": {', '.join(s.name for s in created)}" if created else ""))
