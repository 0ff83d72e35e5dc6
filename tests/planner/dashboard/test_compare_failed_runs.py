"""The comparison page lists a failed run with its error (never drops it), plots only the
finished runs, and shows the settings every run used side by side."""

import json
import re

import pytest
from django.urls import reverse

from planner.dashboard.selectors import comparison_settings, short_error
from planner.scenarios import services
from planner.scenarios.models import Run, RunResult, RunStatus
from planner.scenarios.services import run_execution
from tests.planner.factories import scenario_make

pytestmark = pytest.mark.django_db

DIVISION_ERROR = "ZeroDivisionError: float division by zero"


@pytest.fixture
def sjf_divides_by_zero(monkeypatch):
    """Runs of sjf fail in the engine as a policy bug would; other policies run for real."""
    real = run_execution.run_simulation

    def simulate(cluster, workload, policy, **kwargs):
        if policy == "sjf":
            raise ZeroDivisionError("float division by zero")
        return real(cluster, workload, policy, **kwargs)

    monkeypatch.setattr(run_execution, "run_simulation", simulate)


def _executed(policies) -> int:
    scenario = scenario_make(policies=policies)
    for run in services.scenario_launch(scenario=scenario):
        services.run_execute(run_id=run.pk)
    return scenario.pk


def _page(viewer, scenario_id: int) -> str:
    response = viewer.get(reverse("dashboard:scenario-compare", args=[scenario_id]))
    assert response.status_code == 200
    return response.content.decode()


def _legend(html: str, slug: str) -> list[str]:
    match = re.search(rf'<script id="data-{slug}" type="application/json">(.*?)</script>', html,
                      re.S)
    assert match, f"no figure {slug}"
    return [t["name"] for t in json.loads(match.group(1))["data"] if t.get("showlegend", True)]


def _summary_row(html: str, label: str) -> str:
    match = re.search(rf'<tr[^>]*>\s*<th scope="row"><span class="swatch"[^>]*></span>'
                      rf'{re.escape(label)}(.*?)</tr>', html, re.S)
    assert match, f"no summary row for {label}"
    return match.group(1)


def _setting_row(html: str, name: str) -> tuple[bool, list[str]]:
    """(highlighted, cell texts) of one row of the settings table."""
    table = re.search(r'<table class="data settings" id="settings">(.*?)</table>', html, re.S)
    assert table, "no settings table"
    row = re.search(rf'<tr( class="differs")?>\s*<th scope="row">{re.escape(name)}</th>'
                    r"(.*?)</tr>", table.group(1), re.S)
    assert row, f"no setting {name}"
    return bool(row.group(1)), re.findall(r"<td>(.*?)</td>", row.group(2))


def test_a_failed_run_is_a_row_and_a_note_and_is_not_plotted(viewer, sjf_divides_by_zero):
    html = _page(viewer, _executed(["fifo", "sjf"]))
    row = _summary_row(html, "sjf")
    assert '<span class="status status-failed">failed</span></th>' in row
    assert DIVISION_ERROR in row
    note = re.search(r'<div class="error-summary" role="alert" id="failed-runs">(.*?)</div>',
                     html, re.S).group(1)
    assert "<strong>sjf</strong>: " + DIVISION_ERROR in note
    assert "failed" not in _summary_row(html, "fifo")
    assert _legend(html, "jct-cdf") == ["fifo"]
    assert "Traceback" not in html


def test_a_scenario_whose_only_run_failed_shows_the_failure(viewer, sjf_divides_by_zero):
    html = _page(viewer, _executed(["sjf"]))
    assert "Nothing to compare yet" not in html
    assert DIVISION_ERROR in _summary_row(html, "sjf")
    assert "No run of this seed finished, so there is nothing to plot." in html


def test_a_later_success_replaces_an_earlier_failure(viewer, sjf_divides_by_zero, monkeypatch):
    scenario_id = _executed(["fifo", "sjf"])
    monkeypatch.undo()  # sjf runs for real from now on
    failed = Run.objects.get(policy="sjf", status=RunStatus.FAILED)
    services.run_execute(run_id=services.run_rerun(run_id=failed.pk).pk)
    html = _page(viewer, scenario_id)
    assert 'id="failed-runs"' not in html
    assert _legend(html, "jct-cdf") == ["fifo", "sjf"]


@pytest.mark.parametrize(("error", "shown"), [
    ("Traceback (most recent call last):\n  File \"engine.py\", line 3, in run\n"
     "ValueError: boom\n", "ValueError: boom"),
    ("input, field 'policy': sia cannot run\nsecond line", "input, field 'policy': sia cannot run"),
    ("", "no error message recorded"),
    ("x" * 400, "x" * 299 + "…"),
])
def test_short_error_is_one_line_without_a_traceback(error: str, shown: str):
    assert short_error(error) == shown


def test_settings_table_shows_parameters_and_highlights_what_differs(viewer):
    html = _page(viewer, _executed([
        {"policy": "tiresias", "params": {"promote_knob": "4", "restart_overhead": "10"}},
        "fifo"]))
    # columns are tiresias then fifo, in the scenario's order; fifo has no promote_knob
    assert _setting_row(html, "promote_knob") == (False, ["4.0", "—"])
    assert _setting_row(html, "restart_overhead") == (True, ["10.0", "63.0"])
    assert _setting_row(html, "cadence") == (False, ["event", "event"])
    assert _setting_row(html, "max_time") == (False, ["none", "none"])  # unbounded


def test_results_older_than_the_engine_key_still_render(viewer):
    scenario_id = _executed([{"policy": "tiresias", "params": {"promote_knob": "4"}}])
    for result in RunResult.objects.all():
        result.summary.pop("engine")
        result.save(update_fields=["summary"])
    html = _page(viewer, scenario_id)
    assert _setting_row(html, "promote_knob") == (False, ["4.0"])
    assert "Engine settings" not in html


def test_comparison_settings_marks_a_row_when_two_runs_disagree():
    rows = comparison_settings([
        {"params": {"lease": 600.0}, "engine": {"scaling_mode": "none", "seed": 0}},
        {"params": {}, "engine": {"scaling_mode": "stop-free", "seed": 0}},
        {"params": {"lease": 600.0}},
    ])
    assert [(r.group, r.name, r.values, r.differs) for r in rows] == [
        ("policy parameter", "lease", ["600.0", "—", "600.0"], False),
        ("engine setting", "scaling_mode", ["none", "stop-free", "—"], True),
        ("engine setting", "seed", ["0", "0", "—"], False),
    ]
