"""File cleanup that must happen however rows are deleted (services, cascades, the admin)."""

from django.db import transaction
from django.db.models.signals import post_delete
from django.dispatch import receiver

from planner.scenarios import results
from planner.scenarios.models import InferenceLoadProfile, RunResult, Workload


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
