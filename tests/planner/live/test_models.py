"""The decision log keeps requests compressed and gives back exactly what was stored."""

from __future__ import annotations

import pytest

from planner.live.models import Decision


@pytest.mark.django_db
def test_decision_request_reads_back_equal_including_huge_integers_and_unicode() -> None:
    request = {"count": 1, "seed": 2**70, "note": "größe ✓", "state": {
        "now": 0.1 + 0.2, "servers": [{"id": f"s{i}", "pool": "p", "gpus": 8}
                                      for i in range(50)], "jobs": []}}
    decision = Decision.objects.create(kind="reclaim", stateful=False, request=request,
                                       response={"servers": []})
    stored = Decision.objects.get(pk=decision.pk).request
    assert stored == request and type(stored["seed"]) is int
