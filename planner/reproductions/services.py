"""Starting and executing paper reproductions; the page and the task call these only."""

from __future__ import annotations

import logging
import uuid
from datetime import timedelta

from django.db import transaction
from django.utils import timezone

from planner.celery import app
from planner.reproductions.models import Reproduction, ReproductionStatus
from planner.scenarios.dispatch import PUBLISH_RETRY_POLICY
from simulation.errors import InputError
from simulation.reproductions import PAPERS, reproduce

logger = logging.getLogger(__name__)

# The longest single experiment of any paper prints its progress line within minutes; a
# reproduction silent for this long lost its worker and no longer blocks a new start.
STALE_AFTER = timedelta(hours=1)


def reproduction_start(*, paper: str) -> Reproduction:
    """Queue a reproduction of `paper`, or return the one already under way.

    Starting twice while one runs would only run the same minutes of simulation twice. A
    reproduction silent for STALE_AFTER is failed and replaced.
    """
    if paper not in PAPERS:
        raise InputError(f"unknown paper {paper!r} (known: {', '.join(PAPERS)})",
                         source="reproduction", field="paper")
    with transaction.atomic():
        active = (Reproduction.objects.select_for_update()
                  .filter(paper=paper, status__in=(ReproductionStatus.QUEUED,
                                                   ReproductionStatus.RUNNING)).first())
        if active is not None:
            if timezone.now() - active.updated_at < STALE_AFTER:
                return active
            active.status = ReproductionStatus.FAILED
            active.error = f"no progress for {STALE_AFTER}: its worker stopped"
            active.finished_at = timezone.now()
            active.save(update_fields=["status", "error", "finished_at", "updated_at"])
        reproduction = Reproduction.objects.create(paper=paper, task_id=uuid.uuid4().hex)
        transaction.on_commit(lambda: _dispatch(reproduction))
    return reproduction


def _dispatch(reproduction: Reproduction) -> None:
    """Send to a worker; a broker that does not answer fails it with the reason shown."""
    try:  # by name: the task module imports this one (planner.reproductions.tasks)
        app.send_task("reproductions.execute", args=[reproduction.pk],
                      task_id=reproduction.task_id, retry=True,
                      retry_policy=PUBLISH_RETRY_POLICY)
    except Exception as error:  # any broker failure (kombu, redis, socket)
        logger.warning("broker unreachable; reproduction %s not sent: %s", reproduction.pk,
                       error)
        Reproduction.objects.filter(pk=reproduction.pk).update(
            status=ReproductionStatus.FAILED, finished_at=timezone.now(),
            updated_at=timezone.now(),
            error="the task broker did not answer; start the reproduction again when it is back")


def reproduction_execute(*, reproduction_id: int, task_id: str) -> str:
    """Run the paper's reproduction, recording each progress line, then its report.

    Only the message whose id the reproduction holds runs it, once: a duplicate delivery
    finds it no longer queued and returns.
    """
    now = timezone.now()
    claimed = Reproduction.objects.filter(
        pk=reproduction_id, task_id=task_id, status=ReproductionStatus.QUEUED,
    ).update(status=ReproductionStatus.RUNNING, started_at=now, updated_at=now)
    if not claimed:
        return "skipped"
    paper = Reproduction.objects.values_list("paper", flat=True).get(pk=reproduction_id)
    lines: list[str] = []

    def progress(line: str) -> None:
        lines.append(line)
        Reproduction.objects.filter(pk=reproduction_id).update(
            progress_log="\n".join(lines), updated_at=timezone.now())

    try:
        report = reproduce(paper, progress)
    except Exception as error:  # a defect in a reproduction: shown on the page, logged
        logger.exception("reproduction %s of %s failed", reproduction_id, paper)
        Reproduction.objects.filter(pk=reproduction_id).update(
            status=ReproductionStatus.FAILED, error=f"{type(error).__name__}: {error}",
            finished_at=timezone.now(), updated_at=timezone.now())
        return "failed"
    Reproduction.objects.filter(pk=reproduction_id).update(
        status=ReproductionStatus.SUCCEEDED, report=report.to_dict(),
        finished_at=timezone.now(), updated_at=timezone.now())
    return "succeeded"
