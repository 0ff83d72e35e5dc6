"""The live demo cluster in a real browser: the replay client drives it through the live API
while the operator page refreshes itself, so jobs arriving, loans, launches and a reclaim show
up as they happen. Screenshots are kept in test-artifacts/."""

import pytest
from rest_framework.authtoken.models import Token

from planner.live.replay import LiveApi, LiveReplay, replay_jobs
from planner.live.services import live_demo_cluster_ensure
from tests.planner.dashboard.test_browser import _sign_in
from tests.planner.live.conftest import user_make


def _stat(page, name: str) -> int:
    return int(page.locator(f"dl.stats div:has(dt:text-is('{name}')) dd").inner_text())


@pytest.mark.django_db(transaction=True)
def test_the_operator_page_follows_the_live_demo_replay(
    live_server, page, screenshot, django_user_model
):
    cluster = live_demo_cluster_ensure()
    token, _ = Token.objects.get_or_create(user=user_make(name="replayer", role="operator"))
    inference = {"busy": 0}
    replay = LiveReplay(
        api=LiveApi(base_url=live_server.url, token=token.key), cluster_id=cluster.pk,
        jobs=replay_jobs(speed=1.0, prefix="t-"), inference_servers=12, lending_limit=10,
        inference_busy=lambda now: inference["busy"])
    _sign_in(page, live_server, django_user_model)
    page.goto(f"{live_server.url}/clusters/{cluster.pk}/?refresh=1")
    assert page.locator("#jobs-title").inner_text() == "Jobs: 0 running, 0 queued"

    # The first 120 Philly arrivals at once: 12 idle inference servers, 10 of them lendable.
    replay.tick(replay.jobs[119].submit)
    running = sum(1 for job in replay.active.values() if job.workers)
    # 48 training GPUs and 10 loaned servers of 2: more jobs run than training alone holds.
    assert 48 < running <= 68 and len(replay.active) == 120
    page.wait_for_function("document.getElementById('jobs-title').textContent === "
                           f"'Jobs: {running} running, {120 - running} queued'")
    assert _stat(page, "On loan") == 10
    log = page.locator("#decision-log").inner_text()
    assert "lent 10 server(s)" in log and "launched" in log
    screenshot("live-demo-loans")

    inference["busy"] = 12  # the inference load takes every server back
    replay.tick(replay.jobs[119].submit + 1)
    page.wait_for_function("document.getElementById('decision-log').textContent"
                           ".includes('reclaimed 10 server(s)')")
    assert _stat(page, "On loan") == 0
    # These first jobs ask for 1 GPU (nothing to scale in): every one beyond the training
    # pool's 48 ran on a loaned server, and the reclaim preempted it.
    assert f"preempted {running - 48}: " in page.locator("#decision-log").inner_text()
    assert page.locator("#jobs-title").inner_text() == f"Jobs: 48 running, {120 - 48} queued"
    screenshot("live-demo-reclaim")
    assert page.console_errors == []
