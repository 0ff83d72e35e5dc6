"""The scenario builder in a real browser: an example spec, an upload that survives an error,
a horizon warning, the busy state, then the scenario page and its clone.

Screenshots of every step are kept in test-artifacts/.
"""

import pytest

from planner.scenarios.models import Scenario
from tests.planner.dashboard.test_browser import _sign_in

# Arrivals over 3 days; the builder's default generated load covers 1 day.
THREE_DAY_TRACE = ("job_id,submit_time,num_gpus,duration\n"
                   "a,0,1,600\nb,86400,2,600\nc,259200,4,600\n")


@pytest.mark.django_db(transaction=True)
def test_builder_keeps_the_upload_warns_and_shows_it_is_busy(
    live_server, page, screenshot, django_user_model, tmp_path
):
    trace = tmp_path / "three-days.csv"
    trace.write_text(THREE_DAY_TRACE)
    _sign_in(page, live_server, django_user_model)
    page.goto(f"{live_server.url}/scenarios/new/")

    page.get_by_label("Scenario name").fill("browser upload")
    page.get_by_role("button", name="Heterogeneous, with an inference pool").click()
    assert "lending_limit: 6" in page.get_by_label("New cluster spec (YAML or JSON)").input_value()
    page.get_by_label("Upload a trace").check()
    page.get_by_label("Trace file").set_input_files(str(trace))
    page.get_by_label("Diurnal generator").check()
    page.locator("input[name='policies'][value='fifo']").check()
    page.get_by_text("Parameters and stages of fifo").click()
    page.locator("input[name='stage__fifo__capacity'][value='aryl-loan']").check()
    page.get_by_label("Seeds").fill("0, 1, x")  # an error elsewhere than the trace
    page.get_by_label("Engine settings").fill("warp_speed=9")
    page.get_by_role("button", name="Create and run").click()

    page.wait_for_selector("#error-summary")
    summary = page.locator("#error-summary").inner_text()
    assert "Seeds" in summary and "Engine settings" in summary  # both in one round
    assert "three-days.csv" in page.locator("#kept-trace").inner_text()
    screenshot("builder-upload-error")

    page.get_by_label("Seeds").fill("0, 1")
    page.get_by_label("Engine settings").fill("")
    page.get_by_role("button", name="Create and run").click()  # no file chosen again
    page.wait_for_selector("#warning-summary")
    assert "covers 24.0 hours but the jobs arrive over 3.0 days" in page.locator(
        "#warning-summary").inner_text()
    assert page.locator("#error-summary").count() == 0
    screenshot("builder-warning")

    # Stop this one submit after the page's own handler ran, so the busy state stays on
    # screen; then send the form as the handler left it (with the carried warning key).
    page.evaluate("() => document.getElementById('builder').addEventListener("
                  "'submit', event => event.preventDefault(), {once: true})")
    page.get_by_role("button", name="Create anyway").click()
    assert page.locator("#create-run").is_disabled()
    assert page.locator("#create-anyway").is_disabled()
    # fifo with its own capacity stage and with aryl-loan, two seeds each
    assert page.locator("#create-run").inner_text() == "Creating scenario and launching 4 runs…"
    assert page.locator("#builder").get_attribute("aria-busy") == "true"
    screenshot("builder-busy")
    page.evaluate("() => document.getElementById('builder').submit()")

    page.wait_for_url("**/runs/?scenario=*")
    scenario = Scenario.objects.get()
    assert scenario.workload.num_jobs == 3 and scenario.seeds == [0, 1]
    assert [entry["policy"] for entry in scenario.policies] == ["fifo", "fifo+aryl-loan"]
    assert scenario.cluster.name == "browser upload cluster"

    page.goto(f"{live_server.url}/scenarios/{scenario.pk}/")
    assert "lends up to 6 servers" in page.locator("#pools").inner_text()
    screenshot("scenario-page")
    page.get_by_role("link", name="Clone").click()
    page.wait_for_selector("#clone-note")
    assert page.get_by_label("Scenario name").input_value() == "browser upload (copy)"
    assert page.get_by_label("Use a stored workload").is_checked()
    assert page.console_errors == []
    screenshot("builder-clone")
