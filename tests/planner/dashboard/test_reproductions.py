"""Paper reproductions page: started through a real Celery worker, the report shown beside
the paper's figures, and the rules of starting one."""

from __future__ import annotations

import json
import re
import time
from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from planner.dashboard.figures import VERDICT_COLORS, reproduction_ratio_figure
from planner.reproductions import services
from planner.reproductions.models import Reproduction, ReproductionStatus
from simulation.reproductions import reproduce
from simulation.reproductions.report import Ablation, PaperReport, Row

WORKER_SECONDS = 300


def _stored(rows: list[Row]) -> Reproduction:
    report = PaperReport("edl", "EDL", rows, wall_seconds=1.5).to_dict()
    return Reproduction.objects.create(paper="edl", status=ReproductionStatus.SUCCEEDED,
                                       report=report)


def _chart(html: str, slug: str) -> dict:
    found = re.search(rf'<script id="data-{slug}" type="application/json">(.*?)</script>', html,
                      re.S)
    assert found, f"no chart {slug}"
    return json.loads(found.group(1))


@pytest.mark.django_db
def test_unknown_paper_is_refused_naming_the_known_ones_and_nothing_is_saved(planner):
    response = planner.post(reverse("reproductions:start"), {"paper": "nope"})
    assert response.status_code == 400
    html = response.content.decode()
    assert "unknown paper &#x27;nope&#x27;" in html and "aryl, edl, gandiva, muri, sia" in html
    assert not Reproduction.objects.exists()


@pytest.mark.django_db
def test_a_viewer_reads_the_page_but_cannot_start_a_reproduction(viewer):
    page = viewer.get(reverse("reproductions:list")).content.decode()
    assert "Aryl: capacity loaning" in page and "never run" in page
    assert 'value="all"' not in page  # no start buttons without the planner role
    assert viewer.post(reverse("reproductions:start"), {"paper": "edl"}).status_code == 403
    assert not Reproduction.objects.exists()


@pytest.mark.django_db
def test_a_second_start_joins_the_first_until_it_goes_silent():
    first = services.reproduction_start(paper="edl")
    assert services.reproduction_start(paper="edl").pk == first.pk
    assert services.reproduction_start(paper="aryl").pk != first.pk  # another paper
    silent = timezone.now() - services.STALE_AFTER - timedelta(seconds=1)
    Reproduction.objects.filter(pk=first.pk).update(updated_at=silent)
    second = services.reproduction_start(paper="edl")
    first.refresh_from_db()
    assert second.pk != first.pk and second.status == ReproductionStatus.QUEUED
    assert first.status == ReproductionStatus.FAILED and "no progress" in first.error


@pytest.mark.django_db
def test_the_report_shows_each_claim_beside_ours_with_its_verdict(viewer):
    rows = [
        Row("Table 3", "mean JCT", -0.895, -0.80, "235,068 s", "ours s", "why",
            ablations=(Ablation("every job inelastic", -0.5, "flat", "compaction"),)),
        Row("Table 3", "p95 JCT", -0.5, 0.2, "p", "o", ""),
        Row("Figure 16", "GPU utilisation", None, 0.1, "higher", "o", "", expected_sign=1),
        Row("§6.2", "break-even", 11.7, 40.0, "11.7 min", "40 min", "", unit="min"),
    ]
    html = viewer.get(reverse("reproductions:detail", args=[_stored(rows).pk])).content.decode()
    # Figures formatted as the CLI's table: a change in %, other units with their unit.
    for text in ("-89.5%", "-80.0%", "+20.0%", "11.7 min", "40 min", "0.89", "-0.40"):
        assert text in html, text
    assert 'verdict-reproduced" title="reproduced">reproduced' in html
    assert 'verdict-deviates" title="deviates">deviates' in html
    assert 'title="direction reproduced, size outside tolerance">direction only' in html  # 3.4
    assert "ablation: every job inelastic" in html and "-50.0%" in html
    assert "<strong>2</strong> reproduced" in html  # mean JCT and Figure 16
    bars = _chart(html, "ratios")["data"][0]
    # Only claims with a paper figure get a bar; 3.42 is drawn at the axis edge (3.0).
    assert bars["x"] == pytest.approx([0.80 / 0.895, -0.4, 3.0])
    assert bars["text"] == ["0.89", "-0.40", "3.42"]
    assert bars["marker"]["color"] == [VERDICT_COLORS["reproduced"], VERDICT_COLORS["deviates"],
                                       VERDICT_COLORS["direction reproduced, size outside "
                                                      "tolerance"]]


def test_ratio_figure_shades_the_tolerance_band():
    fig = reproduction_ratio_figure([], tolerance=0.25)
    band = fig.layout.shapes[0]
    assert (band.x0, band.x1) == (0.75, 1.25)


@pytest.mark.django_db(transaction=True)
def test_a_started_reproduction_runs_on_the_worker_and_reports_the_commands_rows(
        celery_worker_process, planner):
    response = planner.post(reverse("reproductions:start"), {"paper": "gandiva"})
    reproduction = Reproduction.objects.get()
    assert response.status_code == 302
    assert response["Location"] == reverse("reproductions:detail", args=[reproduction.pk])
    # The command a user runs, here while the worker runs it on the other core.
    expected = json.loads(json.dumps(reproduce("gandiva", lambda line: None).to_dict()["rows"]))
    deadline = time.monotonic() + WORKER_SECONDS
    while reproduction.active and time.monotonic() < deadline:
        time.sleep(0.5)
        reproduction.refresh_from_db()
    assert reproduction.status == ReproductionStatus.SUCCEEDED, (
        reproduction.error or celery_worker_process.log_tail())
    # The worker ran the same command: the same rows, in order, and its lines.
    assert reproduction.report["rows"] == expected
    assert reproduction.progress_log.startswith("gandiva")
    page = planner.get(reverse("reproductions:detail", args=[reproduction.pk])).content.decode()
    assert expected[0]["experiment"] in page and 'http-equiv="refresh"' not in page


@pytest.mark.django_db
def test_a_named_scenario_opens_and_launches_in_one_click_and_only_once(planner):
    from planner.scenarios.models import Run, Scenario

    url = reverse("reproductions:scenario-run", args=["gandiva-6.4"])
    response = planner.post(url)
    scenario = Scenario.objects.get(slug="gandiva-6.4")
    assert response["Location"] == f"{reverse('dashboard:run-list')}?scenario={scenario.pk}"
    # fifo and gandiva, seed 0, on the reproduction's 500 jobs.
    assert sorted(Run.objects.values_list("policy", flat=True)) == ["fifo", "gandiva"]
    assert scenario.workload.num_jobs == 500
    planner.post(url)  # its runs are still queued: nothing is launched twice
    assert Run.objects.count() == 2
    page = planner.get(reverse("reproductions:list")).content.decode()
    assert f"?scenario={scenario.pk}" in page  # the paper's row links the opened scenario
    assert planner.post(reverse("reproductions:scenario-run", args=["nope"])).status_code == 404


@pytest.mark.django_db
def test_a_viewer_cannot_launch_a_named_scenario(viewer):
    from planner.scenarios.models import Scenario

    url = reverse("reproductions:scenario-run", args=["gandiva-6.4"])
    assert viewer.post(url).status_code == 403
    assert not Scenario.objects.exists()
