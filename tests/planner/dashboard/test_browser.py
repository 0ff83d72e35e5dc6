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


@pytest.mark.django_db(transaction=True)
def test_cluster_overview_draws_states_and_refreshes_itself(live_server, page, screenshot):
    cluster = cluster_create_from_spec(spec_text=SPEC, source="test")
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
