"""A sweep aggregates when its last run ends (`run_ended`, sent after the run's commit)."""

from django.dispatch import receiver

from planner.scenarios.models import Run
from planner.scenarios.services.sweeps import sweep_finish_if_done
from planner.scenarios.signals import run_ended


@receiver(run_ended)
def _sweep_finish(sender, run_id: int, **kwargs) -> None:
    sweep_id = Run.objects.filter(pk=run_id).values_list("sweep_id", flat=True).first()
    if sweep_id is not None:
        sweep_finish_if_done(sweep_id=sweep_id)
