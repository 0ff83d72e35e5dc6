"""Sending runs to the broker (planner/scenarios/dispatch.py), against a broker that is down.

Rules: a send that fails leaves the run queued and unsent, raising nothing; the maintenance
picks runs never sent (after the grace period) and runs sent before the broker's last start,
giving each a new task id; a message whose task id is no longer the run's is skipped.
"""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from planner.scenarios import dispatch, services
from planner.scenarios.models import Run, RunStatus
from tests.planner.factories import scenario_make
from tests.planner.scenarios.outage import app_on
from tests.support import closed_port

pytestmark = pytest.mark.django_db


@pytest.fixture
def run() -> Run:
    return services.run_create(scenario=scenario_make(policies=["fifo"]), policy="fifo",
                               settings={}, seed=0, variant={})


def test_a_broker_that_is_down_leaves_the_run_queued_and_unsent(run):
    with app_on(f"redis://127.0.0.1:{closed_port()}/0"):
        sent = dispatch.runs_dispatch(runs=[run])

    run.refresh_from_db()
    assert sent == 0
    assert (run.status, run.dispatched_at) == (RunStatus.QUEUED, None)


def test_pending_runs_are_the_unsent_and_those_sent_before_the_broker_started(run):
    now = timezone.now()
    fresh = services.run_create(scenario=run.scenario, policy="fifo", settings={}, seed=1,
                                variant={})
    sent_before = services.run_create(scenario=run.scenario, policy="fifo", settings={},
                                      seed=2, variant={})
    sent_after = services.run_create(scenario=run.scenario, policy="fifo", settings={},
                                     seed=3, variant={})
    Run.objects.filter(pk__in=[run.pk, sent_before.pk, sent_after.pk]).update(
        created_at=now - timedelta(minutes=5))
    Run.objects.filter(pk=sent_before.pk).update(dispatched_at=now - timedelta(minutes=4))
    Run.objects.filter(pk=sent_after.pk).update(dispatched_at=now - timedelta(minutes=1))
    old_ids = dict(Run.objects.values_list("pk", "task_id"))

    with app_on(f"redis://127.0.0.1:{closed_port()}/0"):  # down: picked, renamed, not sent
        picked = dispatch.runs_dispatch_pending(
            grace_seconds=60, broker_started_at=now - timedelta(minutes=2))

    assert picked == []  # none could be sent
    renamed = {pk for pk, task_id in Run.objects.values_list("pk", "task_id")
               if task_id != old_ids[pk]}
    assert renamed == {run.pk, sent_before.pk}  # not the fresh one, not the one sent after
    assert Run.objects.get(pk=fresh.pk).dispatched_at is None


def test_a_superseded_message_is_skipped_and_the_current_one_runs(run):
    assert services.run_execute(run_id=run.pk, task_id="an-older-send") == "skipped"
    assert Run.objects.get(pk=run.pk).status == RunStatus.QUEUED
    assert services.run_execute(run_id=run.pk, task_id=run.task_id) == "succeeded"
