"""Model saves and deletes that change a cluster's live state move its version on.

These receivers cover everything that goes through `Model.save()` or `delete()`: the job
services, the admin and the shell. A job's or placement's change is logged as that job's
(`versions`), so a process holding an older copy of the state re-reads only that job; a
server, pool or GPU type change is not logged, which makes the next decision read everything.
A bulk write (`QuerySet.update`, `bulk_create`) sends no signal and must bump the version
itself, as `services.decision_stateful` does; it runs its writes under
`version_bumped_by_caller()` so deleting 300 placements costs one bump, not 300.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from django.db.models import F
from django.db.models.signals import post_delete, post_save
from django.dispatch import receiver

from planner.clusters.models import Cluster, GpuType, Pool, Server
from planner.live import versions
from planner.live.models import Job, LiveStateVersion, Placement

_caller = threading.local()


@contextmanager
def version_bumped_by_caller() -> Iterator[None]:
    """Within this block the receivers leave the version alone: the caller bumps it."""
    _caller.bumps = True
    try:
        yield
    finally:
        _caller.bumps = False


def _caller_bumps() -> bool:
    return getattr(_caller, "bumps", False)


def _bump(**filters: Any) -> None:
    if not _caller_bumps():
        LiveStateVersion.objects.filter(**filters).update(version=F("version") + 1)


def _cluster_deleted(origin: Any) -> bool:
    """Whether a delete cascades from a cluster's own (whose state goes with it)."""
    return isinstance(origin, Cluster) or getattr(origin, "model", None) is Cluster


@receiver(post_save, sender=Job)
@receiver(post_delete, sender=Job)
def job_changed(sender: type, instance: Job, origin: Any = None, **kwargs: Any) -> None:
    if not _cluster_deleted(origin) and not _caller_bumps():
        versions.state_jobs_changed(cluster_id=instance.cluster_id, job_ids=[instance.pk])


@receiver(post_save, sender=Placement)
@receiver(post_delete, sender=Placement)
def placement_changed(sender: type, instance: Placement, origin: Any = None,
                      **kwargs: Any) -> None:
    # Deleting a job deletes its placements first, while the job row is there to name the
    # cluster.
    if not _cluster_deleted(origin) and not _caller_bumps():
        versions.state_job_changed(job_id=instance.job_id)


@receiver(post_save, sender=Server)
@receiver(post_delete, sender=Server)
def server_changed(sender: type, instance: Server, origin: Any = None, **kwargs: Any) -> None:
    if not _cluster_deleted(origin):
        _bump(cluster__pools=instance.pool_id)


@receiver(post_save, sender=Pool)
@receiver(post_delete, sender=Pool)
def pool_changed(sender: type, instance: Pool, origin: Any = None, **kwargs: Any) -> None:
    if not _cluster_deleted(origin):
        _bump(cluster_id=instance.cluster_id)


@receiver(post_save, sender=GpuType)
def gpu_type_changed(sender: type, instance: GpuType, **kwargs: Any) -> None:
    _bump(cluster__pools__gpu_type=instance.pk)
