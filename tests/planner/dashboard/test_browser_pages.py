"""The sweep and runs pages in a real browser (Playwright on Debian's Chromium); screenshots
are kept in test-artifacts/."""

import re
from datetime import timedelta

import pytest
from django.utils import timezone

from planner.scenarios.models import Run, RunStatus
from planner.scenarios.services import (
    run_execute,
    scenario_launch,
    sweep_aggregate,
    sweep_create,
)
from tests.planner.dashboard.test_browser import _sign_in
from tests.planner.factories import scenario_make


@pytest.fixture
def runs_kept_from_workers(monkeypatch):
    """These tests set their runs' states themselves. Their transactions commit (the live
    server must see the rows), so the runs would be sent to the broker, where the session's
    real Celery worker (started by earlier tests under REDIS_URL) would take them too."""
    monkeypatch.setattr("planner.scenarios.dispatch.runs_dispatch", lambda *, runs: None)


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("runs_kept_from_workers")
def test_sweep_page_reads_in_units_and_plain_grid_points(
    live_server, page, screenshot, django_user_model
):
    scenario = scenario_make(policies=["fifo", "sjf"], seeds=[0, 1])
    sweep = sweep_create(scenario=scenario, grid={"load_scale": [1, 2], "cluster_scale": [1]})
    for run in sweep.runs.all():
        assert run_execute(run_id=run.pk) == "succeeded"
    sweep_aggregate(sweep_id=sweep.pk)  # what the task does once the last run ended
    _sign_in(page, live_server, django_user_model)

    page.goto(f"{live_server.url}/sweeps/{sweep.pk}/?parameter=load_scale")
    page.wait_for_selector("body[data-charts-drawn='true']")
    y_title = page.evaluate("document.getElementById('chart-sweep').layout.yaxis.title.text")
    assert re.fullmatch(r"Mean JCT \((h|min|s)\)", y_title)
    assert page.locator("#chart-sweep .xtitle").text_content() == "load_scale (× arrival rate)"
    legend = page.evaluate("document.getElementById('chart-sweep').data"
                           ".filter(t => t.showlegend !== false).map(t => t.name)")
    assert legend == ["fifo · cluster_scale = 1", "sjf · cluster_scale = 1"]
    summary = page.locator("#sweep-summary").inner_text()
    assert summary.startswith("Grid cluster_scale ∈ {1} · load_scale ∈ {1, 2}")
    assert not summary.rstrip().endswith(",")
    assert page.console_errors == []
    screenshot("sweep-page")

    page.get_by_label("Metric").select_option(label="Overall GPU utilisation")
    page.get_by_role("button", name="Update").click()
    page.wait_for_selector("body[data-charts-drawn='true']")
    assert page.locator("#aggregate thead").inner_text().count("Overall GPU utilisation (%)") == 1
    screenshot("sweep-page-utilisation")


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("runs_kept_from_workers")
def test_runs_page_shows_eta_cancels_and_signs_out(
    live_server, page, screenshot, django_user_model
):
    queued, running, failed = scenario_launch(
        scenario=scenario_make(policies=["fifo", "sjf", "srtf"]))
    now = timezone.now()
    Run.objects.filter(pk=running.pk).update(
        status=RunStatus.RUNNING, progress=0.25, started_at=now - timedelta(seconds=60),
        heartbeat_at=now, task_id="")
    Run.objects.filter(pk=failed.pk).update(
        status=RunStatus.FAILED, started_at=now - timedelta(seconds=90), finished_at=now,
        error="Traceback (most recent call last):\n  File \"engine.py\", line 9\n"
              "simulation.errors.InputError: trace.csv, line 3: 'two' is not a number")
    Run.objects.filter(pk=queued.pk).update(task_id="")
    _sign_in(page, live_server, django_user_model)

    page.goto(f"{live_server.url}/runs/")
    eta = page.locator(f"#eta-{running.pk}")
    # 60 s for 25 %: 180 s left, i.e. 3.0 min (a little more by the time the page polls).
    assert re.fullmatch(r"ETA: 3\.\d min left", eta.inner_text())
    page.wait_for_function(  # live.js polled, runs.js redrew the duration from the clock
        f"() => /so far/.test(document.querySelector('#run-{running.pk} [data-cell=duration]')"
        ".textContent)")
    error = page.locator(f"#error-{failed.pk}")
    headline = error.locator(".error-headline").inner_text()
    assert headline == "trace.csv, line 3: 'two' is not a number"
    assert not error.locator("pre").is_visible()
    error.locator("summary").click()
    assert "Traceback" in error.locator("pre").inner_text()
    assert page.locator(f"#rerun-{failed.pk}").is_visible()
    assert not page.locator(f"#cancel-{failed.pk}").is_visible()
    assert page.console_errors == []
    screenshot("runs-page")

    Run.objects.filter(pk=running.pk).update(  # it ends while the page is open
        status=RunStatus.FAILED, finished_at=timezone.now(),
        error="InputError: load.csv, line 2: busy_servers is negative")
    page.wait_for_function(f"() => !document.getElementById('rerun-{running.pk}').hidden")
    row = page.locator(f"#run-{running.pk}")
    ended_error = row.locator(".error-headline").inner_text()
    assert ended_error == "load.csv, line 2: busy_servers is negative"
    assert re.fullmatch(r"\d\d:\d\d:\d\d", row.locator("[data-cell=finished]").inner_text())
    assert "so far" not in row.locator("[data-cell=duration]").inner_text()
    assert not page.locator(f"#eta-{running.pk}").is_visible()
    assert not page.locator(f"#cancel-{running.pk}").is_visible()
    screenshot("runs-page-run-ended")

    page.get_by_label("Status").select_option("failed")
    page.get_by_role("button", name="Filter").click()
    page.wait_for_url("**/runs/?status=failed**")
    assert page.locator("#runs tbody tr").count() == 2

    page.goto(f"{live_server.url}/runs/")
    page.get_by_role("button", name=f"Cancel run {queued.pk}").click()
    page.wait_for_selector(".messages")
    assert page.locator(".messages").inner_text() == f"Run {queued.pk} cancelled."
    assert Run.objects.get(pk=queued.pk).status == RunStatus.CANCELLED
    assert page.locator(f"#progress-label-{queued.pk}").inner_text() == "0 % · cancelled"
    screenshot("runs-page-cancelled")

    assert page.locator("#signed-in-as").inner_text() == "Signed in as planner (planner)"
    page.get_by_role("button", name="Sign out").click()
    page.wait_for_url(f"{live_server.url}/")
    page.goto(f"{live_server.url}/runs/")
    page.wait_for_url("**/accounts/login/**")
    screenshot("signed-out")
