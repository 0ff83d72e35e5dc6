"""A cluster's live state version and the log of what each version changed.

Every write to a cluster's live state bumps its `LiveStateVersion` in the write's own
transaction; writes that change only jobs or servers' loans also log which
(`LiveStateChange`). A web process that cached version v (`state_cache`) then needs, at
version V, only the rows the log names for v+1..V; a version the log has nothing for (a
server, pool or GPU type edit, a bulk write) sends it back to reading the whole state.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from django.db import connection

from planner.live.models import Job, LiveStateChange, LiveStateVersion

CHANGES_KEPT = 256
"""Versions of change log kept per cluster: a copy older than this is read again in full."""

_VERSIONS = LiveStateVersion._meta.db_table
_JOBS = Job._meta.db_table


def _bump(cluster: str, param: int) -> tuple[int, int] | None:
    """Move on the version of the cluster `cluster` (SQL naming its id) selects, in one
    statement that also locks the row (the ORM's `update()` cannot return the new value):
    (cluster id, new version), or `None` if the cluster has no version row."""
    with connection.cursor() as cursor:
        cursor.execute(f"UPDATE {_VERSIONS} SET version = version + 1 WHERE cluster_id = "
                       f"{cluster} RETURNING cluster_id, version", [param])
        row = cursor.fetchone()
    if row is not None:
        _changes_prune(cluster_id=row[0], version=row[1])
    return row


def state_version_bump(*, cluster_id: int, create: bool = False) -> int | None:
    """Move the cluster's version on and return it. Without a version row the cluster was
    never decided on, so no process can hold a copy: `None`, unless `create`, which starts
    the count at 1."""
    row = _bump("%s", cluster_id)
    if row is None:
        return LiveStateVersion.objects.create(cluster_id=cluster_id, version=1).version \
            if create else None
    return row[1]


def state_jobs_changed(*, cluster_id: int, job_ids: Iterable[int]) -> None:
    """Bump the cluster's version (if it has one) and log these jobs as what changed."""
    version = state_version_bump(cluster_id=cluster_id)
    if version is not None:
        state_changes_log(cluster_id=cluster_id, version=version, job_ids=job_ids)


def state_job_changed(*, job_id: int) -> None:
    """`state_jobs_changed` for a job whose cluster is not at hand (a placement's): the same
    statement finds the cluster and bumps its version."""
    row = _bump(f"(SELECT cluster_id FROM {_JOBS} WHERE id = %s)", job_id)
    if row is not None:
        state_changes_log(cluster_id=row[0], version=row[1], job_ids=[job_id])


def state_changes_log(*, cluster_id: int, version: int, job_ids: Iterable[int] = (),
                      server_ids: Iterable[int] = ()) -> None:
    """Record that `version` changed these jobs and servers' loans and nothing else (an
    entry naming neither says a version changed nothing, which an absent one would not)."""
    entries = [LiveStateChange(cluster_id=cluster_id, version=version, job_id=pk)
               for pk in set(job_ids)]
    entries += [LiveStateChange(cluster_id=cluster_id, version=version, server_id=pk)
                for pk in set(server_ids)]
    LiveStateChange.objects.bulk_create(
        entries or [LiveStateChange(cluster_id=cluster_id, version=version)])


@dataclass(frozen=True, slots=True)
class StateChanges:
    """The jobs and servers that versions since..upto changed, by database id."""

    job_ids: frozenset[int]
    server_ids: frozenset[int]


def state_changes_since(*, cluster_id: int, since: int, upto: int) -> StateChanges | None:
    """What versions since+1..upto changed, or `None` if the log cannot say (a version
    without entries, or one pruned already)."""
    rows = LiveStateChange.objects.filter(
        cluster_id=cluster_id, version__gt=since, version__lte=upto).values_list(
        "version", "job_id", "server_id")
    versions, jobs, servers = set(), set(), set()
    for version, job_id, server_id in rows:
        versions.add(version)
        if job_id is not None:
            jobs.add(job_id)
        if server_id is not None:
            servers.add(server_id)
    if len(versions) != upto - since:
        return None
    return StateChanges(frozenset(jobs), frozenset(servers))


def _changes_prune(*, cluster_id: int, version: int) -> None:
    if version % CHANGES_KEPT == 0:
        LiveStateChange.objects.filter(cluster_id=cluster_id,
                                       version__lte=version - CHANGES_KEPT).delete()
