"""An API request's parsed body is freed with its response, not left to the cyclic collector
(`planner.middleware`)."""

from __future__ import annotations

import gc

import pytest

from planner.live.selectors import cluster_snapshot
from planner.live.services import decision_stateful


def _cyclic_garbage_after(call) -> list:
    """The objects only the cyclic collector would free once `call` and its result are gone."""
    gc.collect()
    was = gc.isenabled()
    gc.disable()
    try:
        call()
        gc.set_debug(gc.DEBUG_SAVEALL)
        gc.collect()
        return list(gc.garbage)
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
        if was:
            gc.enable()


@pytest.mark.django_db
def test_a_stateless_decisions_snapshot_goes_with_its_response(cluster, operator) -> None:
    decision_stateful(cluster_id=cluster.pk, kind="loan", body={"count": 3}, actor=None)
    body = {"count": 1, "state": cluster_snapshot(cluster=cluster)}

    def decide() -> None:
        response = operator.post("/api/v1/decisions/reclaim", body, format="json")
        assert response.status_code == 200, response.content

    decide()  # first requests build caches that live on
    garbage = _cyclic_garbage_after(decide)
    snapshots = [o for o in garbage if isinstance(o, dict) and "state" in o and "count" in o]
    assert snapshots == []
    servers = [o for o in garbage if isinstance(o, dict) and o.get("pool") == "inference"]
    assert servers == []


@pytest.mark.django_db
def test_the_browsable_api_still_renders_with_the_cycles_broken(cluster, operator) -> None:
    response = operator.get(f"/api/v1/clusters/{cluster.pk}/", HTTP_ACCEPT="text/html")
    assert response.status_code == 200
    assert b"<html" in response.content and cluster.name.encode() in response.content
