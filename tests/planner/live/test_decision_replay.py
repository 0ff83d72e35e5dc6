"""POST decisions/<id>/replay, as the README documents, recomputes a logged decision.

Rule: the answer is the logged one recomputed from the stored request (`same: true` for a
deterministic decision); nothing is applied; GET, which clients used before, answers the same.
"""

from __future__ import annotations

import pytest

from planner.live.models import Decision
from tests.simulation.test_decide import DESIGN_RECLAIM


@pytest.mark.django_db
def test_post_replays_a_decision_and_get_still_does(operator) -> None:
    decided = operator.post("/api/v1/decisions/reclaim", DESIGN_RECLAIM, format="json")
    decision_id = int(decided["X-Decision-Id"])

    posted = operator.post(f"/api/v1/decisions/{decision_id}/replay")
    got = operator.get(f"/api/v1/decisions/{decision_id}/replay")

    assert posted.status_code == 200
    assert posted.json() == got.json() == {
        "decision": decision_id, "same": True, "response": decided.json()}
    assert decided.json()["servers"] == ["inf-1", "inf-2"]  # DESIGN.md's answer
    assert Decision.objects.count() == 1  # a replay logs nothing
    assert operator.post("/api/v1/decisions/999999/replay").status_code == 404
