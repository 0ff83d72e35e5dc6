"""The viewer role reads the live state and changes nothing (planner/live/permissions.py).

Every write the live API offers (submit, cancel, progress, the stateful loan, schedule and
reclaim decisions) is refused to a viewer with 403 *and* leaves the database as it was: a
permission check that answered 403 after writing, or not at all, would pass a status-code
test alone. An operator's same request is the control that shows the request would write.
"""

from __future__ import annotations

import pytest

from planner.clusters.models import Server, ServerStatus
from planner.live.models import Decision, Job, JobStatus
from planner.live.permissions import ADMIN, OPERATOR, VIEWER, user_role
from tests.planner.live.conftest import user_make

pytestmark = pytest.mark.django_db


def job_body(cluster, name: str = "train-1") -> dict:
    return {"cluster": cluster.pk, "name": name, "num_gpus": 2, "duration_seconds": 600}


def test_a_viewer_cannot_submit_a_job_and_no_row_is_created(cluster, viewer, operator):
    """POST /api/v1/jobs/ needs the operator role. Mutation guarded: CanRead (or no check)
    on the submit. The viewer gets 403 and the jobs table stays empty; the operator's
    identical request creates the job (201, one row)."""
    refused = viewer.post("/api/v1/jobs/", job_body(cluster), format="json")
    assert refused.status_code == 403
    assert Job.objects.count() == 0
    made = operator.post("/api/v1/jobs/", job_body(cluster), format="json")
    assert made.status_code == 201
    assert list(Job.objects.values_list("name", flat=True)) == ["train-1"]


def test_a_viewer_cannot_cancel_or_report_progress(cluster, viewer, operator):
    """Cancel and progress reports are job writes: 403 for a viewer, the job unchanged
    (still queued, 600 s left, not finished)."""
    job = operator.post("/api/v1/jobs/", job_body(cluster), format="json").json()
    assert viewer.post(f"/api/v1/jobs/{job['id']}/cancel", {}, format="json").status_code == 403
    report = viewer.post(f"/api/v1/jobs/{job['id']}/progress",
                         {"remaining_seconds": 5, "finished": True}, format="json")
    assert report.status_code == 403
    stored = Job.objects.get(pk=job["id"])
    assert stored.status == JobStatus.QUEUED
    assert stored.remaining_seconds == 600


def test_a_viewer_cannot_make_stateful_decisions(cluster, viewer, operator):
    """Loan, schedule and reclaim on a cluster change it: 403 for a viewer, no decision
    logged, no server lent. The operator's loan of one server is logged and applied."""
    base = f"/api/v1/clusters/{cluster.pk}/decisions"
    operator.post("/api/v1/jobs/", job_body(cluster), format="json")
    for url, body in ((f"{base}/loan", {"count": 1}), (f"{base}/schedule", {"policy": "fifo"}),
                      (f"{base}/reclaim", {"count": 1})):
        assert viewer.post(url, body, format="json").status_code == 403, url
    assert Decision.objects.count() == 0
    assert Server.objects.filter(status=ServerStatus.ON_LOAN).count() == 0
    assert Job.objects.get().status == JobStatus.QUEUED
    assert operator.post(f"{base}/loan", {"count": 1}, format="json").status_code == 200
    assert Decision.objects.count() == 1
    assert Server.objects.filter(status=ServerStatus.ON_LOAN).count() == 1


def test_the_strongest_role_wins():
    """A user in both groups is an operator; staff are admins; no group, no role."""
    both = user_make(name="both", role=VIEWER)
    both.groups.add(*user_make(name="op2", role=OPERATOR).groups.all())
    assert user_role(both) == OPERATOR
    assert user_role(user_make(name="only-viewer", role=VIEWER)) == VIEWER
    assert user_role(user_make(name="nobody", role=None)) is None
    staff = user_make(name="staff", role=None)
    staff.is_staff = True
    assert user_role(staff) == ADMIN
