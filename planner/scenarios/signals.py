"""File cleanup that must happen however rows are deleted (services, cascades, the admin),
and `run_ended`: sent after the commit that ends a run, for what waits on runs (capacity
searches) without this app knowing them."""

from django.db import transaction
from django.db.models.signals import post_delete
from django.dispatch import Signal, receiver

from planner.scenarios import results
from planner.scenarios.models import InferenceLoadProfile, RunResult, Workload

# Sent with `run_id` once a run's terminal status is committed (succeeded, reused, failed,
# cancelled); receivers must be idempotent and cheap, and a receiver's error is logged only.
run_ended = Signal()


@receiver(post_delete, sender=RunResult)
def _result_files_remove(sender, instance: RunResult, **kwargs) -> None:
    """Remove the result folder after commit, unless a reused run still shares it."""
    directory = instance.directory

    def remove() -> None:
        if not RunResult.objects.filter(directory=directory).exists():
            results.result_remove(directory=directory)

    transaction.on_commit(remove)


@receiver(post_delete, sender=Workload)
@receiver(post_delete, sender=InferenceLoadProfile)
def _uploaded_file_remove(sender, instance, **kwargs) -> None:
    if instance.file:
        file = instance.file
        transaction.on_commit(lambda: file.delete(save=False))
