"""A capacity search moves on when a run of its round ends (scenarios' `run_ended`)."""

from django.dispatch import receiver

from planner.capacity import services
from planner.scenarios.signals import run_ended


@receiver(run_ended)
def _advance_searches(sender, run_id: int, **kwargs) -> None:
    services.capacity_searches_advance_for_run(run_id=run_id)
