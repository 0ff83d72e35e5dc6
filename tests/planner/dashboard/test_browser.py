"""The dashboard in a real browser: Playwright on Debian's Chromium against the live server.

Screenshots of every step are kept in test-artifacts/.
"""

import pytest

from planner.clusters.models import Server, ServerStatus
from planner.clusters.services import cluster_create_from_spec

SPEC = """
name: browser-lab
gpu_types: {V100: {speed: 1.0, memory_gb: 32}, T4: {speed: 0.25, memory_gb: 16}}
pools:
  - {name: training, kind: training, gpu_type: V100, servers: 3, gpus_per_server: 8}
  - {name: inference, kind: inference, gpu_type: T4, servers: 4, gpus_per_server: 4}
"""


def _legend_traces(page, chart_id: str) -> list[str]:
    return page.evaluate(
        "(id) => document.getElementById(id).data"
        ".filter(t => t.showlegend !== false).map(t => t.name)",
        chart_id,
    )


def _sign_in(page, live_server, django_user_model) -> None:
    from django.contrib.auth.models import Group

    user = django_user_model.objects.create_user("planner", password="pw-planner-1")
    user.groups.add(Group.objects.get_or_create(name="planner")[0])
    page.goto(f"{live_server.url}/accounts/login/")
    page.get_by_label("Username").fill("planner")
    page.get_by_label("Password").fill("pw-planner-1")
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_url("**/scenarios/")


@pytest.mark.django_db(transaction=True)
def test_cluster_overview_draws_states_and_refreshes_itself(
    live_server, page, screenshot, django_user_model
):
    cluster = cluster_create_from_spec(spec_text=SPEC, source="test")
    _sign_in(page, live_server, django_user_model)
    page.goto(f"{live_server.url}/clusters/{cluster.pk}/?refresh=1")
    page.wait_for_selector("body[data-charts-drawn='true']")
    assert _legend_traces(page, "chart-server-states") == [
        "idle", "busy", "on loan", "reclaiming", "offline"]
    assert page.console_errors == []
    screenshot("cluster-overview-idle")

    Server.objects.filter(pool__name="inference").update(status=ServerStatus.ON_LOAN)
    page.wait_for_function(
        "() => [...document.querySelectorAll('#cluster-live tbody tr')]"
        ".some(r => r.textContent.includes('inference') && r.cells[6].textContent.trim() === '4')",
        timeout=15_000,
    )
    page.wait_for_function("() => document.getElementById('chart-server-states').data")
    screenshot("cluster-overview-on-loan")


CLUSTER_SPEC = """name: browser-built
gpu_types: {V100: {speed: 1.0, memory_gb: 32}, T4: {speed: 0.25, memory_gb: 16}}
pools:
  - {name: training, kind: training, gpu_type: V100, servers: 2, gpus_per_server: 8}
  - {name: inference, kind: inference, gpu_type: T4, servers: 2, gpus_per_server: 8}
"""
POLICIES = ["fifo", "sjf", "srtf"]


@pytest.mark.django_db(transaction=True)
def test_build_run_and_compare_a_scenario(
    live_server, celery_worker_process, page, screenshot, django_user_model
):
    _sign_in(page, live_server, django_user_model)
    page.goto(f"{live_server.url}/scenarios/new/")

    page.get_by_role("button", name="Create and run").click()  # empty form: inline errors
    page.wait_for_selector("#error-summary")
    assert page.locator("#error-name").is_visible()
    screenshot("builder-errors")

    page.get_by_label("Scenario name").fill("browser what-if")
    page.get_by_label("New cluster spec (YAML or JSON)").fill(CLUSTER_SPEC)
    page.get_by_label("Generate a workload").check()
    page.get_by_label("Jobs", exact=True).fill("24")
    page.get_by_label("Diurnal generator").check()
    for policy in POLICIES:
        page.locator(f"input[name='policies'][value='{policy}']").check()
    page.get_by_label("Seeds").fill("0")
    screenshot("builder-filled")
    page.get_by_role("button", name="Create and run").click()

    page.wait_for_url("**/runs/?scenario=*")
    bars = page.locator("progress[data-progress-url]")
    assert bars.count() == len(POLICIES)
    page.wait_for_function(
        "() => [...document.querySelectorAll('progress[data-progress-url]')]"
        ".every(bar => bar.value === 100 && bar.dataset.status === 'succeeded')",
        timeout=120_000,
    )
    assert all(t.endswith("100 % · succeeded")
               for t in page.locator("[id^=progress-label-]").all_inner_texts())
    screenshot("runs-complete")

    page.get_by_role("link", name="Open the comparison").click()
    page.wait_for_selector("body[data-charts-drawn='true']", timeout=60_000)
    charts = page.locator("[data-figure]")
    assert charts.count() >= 8
    for chart_id in charts.evaluate_all("nodes => nodes.map(n => n.id)"):
        assert _legend_traces(page, chart_id) == POLICIES, chart_id
    colours = page.evaluate(
        "() => [...document.querySelectorAll('[data-figure]')].map(c => c.data.map("
        "t => (t.line && t.line.color) || (t.marker && t.marker.color)))"
    )
    assert all(row == colours[0] for row in colours)  # one colour per policy on every chart
    assert page.console_errors == []
    screenshot("comparison")

    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.tagName") == "A"  # keyboard reaches the nav
