"""The periodic maintenance (Celery beat, every PLANNER_MAINTENANCE_SECONDS): fail runs whose
worker was lost, send runs the broker does not hold (`dispatch`), finish sweeps whose
aggregation message was lost."""

from __future__ import annotations

from datetime import timedelta

from django.conf import settings
from django.db.models import Exists, Max, OuterRef
from django.utils import timezone

from planner.core.services import broker_started_at, heartbeat_record
from planner.scenarios.dispatch import runs_dispatch_pending
from planner.scenarios.models import TERMINAL_STATUSES, Run, Sweep, SweepStatus
from planner.scenarios.services import run_reap_stale, sweep_aggregate


def sweeps_finish_stalled(*, grace_seconds: float) -> list[int]:
    """Aggregate running sweeps whose runs all ended over `grace_seconds` ago.

    The last run of a sweep enqueues the aggregation itself; this catches the sweeps whose
    enqueue was lost (broker down at that moment).
    """
    cutoff = timezone.now() - timedelta(seconds=grace_seconds)
    unfinished = Run.objects.filter(sweep=OuterRef("pk")).exclude(status__in=TERMINAL_STATUSES)
    stalled = (Sweep.objects.filter(status=SweepStatus.RUNNING)
               .annotate(last_end=Max("runs__finished_at"))
               .filter(~Exists(unfinished), last_end__lt=cutoff).values_list("pk", flat=True))
    done = []
    for sweep_id in stalled:
        sweep_aggregate(sweep_id=sweep_id)
        done.append(sweep_id)
    return done


def maintenance_run() -> dict[str, list[int]]:
    """The periodic maintenance: fail lost runs, send pending ones, finish stalled sweeps."""
    reaped = run_reap_stale(timeout_seconds=settings.PLANNER_RUN_STALE_SECONDS)
    started = broker_started_at(redis_url=settings.REDIS_URL,
                                timeout=settings.HEALTH_CONNECT_TIMEOUT)
    grace = settings.PLANNER_RUN_DISPATCH_GRACE_SECONDS
    dispatched = runs_dispatch_pending(grace_seconds=grace, broker_started_at=started)
    sweeps = sweeps_finish_stalled(grace_seconds=grace)
    heartbeat_record(name="maintenance", kind="maintenance")
    return {"reaped": reaped, "dispatched": dispatched, "sweeps_finished": sweeps}
