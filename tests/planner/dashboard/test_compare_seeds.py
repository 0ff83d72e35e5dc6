"""The comparison across seeds: means with their 95 % Student-t interval, pooled CDFs,
FIFO as the default baseline, and axes labelled in plain numbers."""

import math
import re

import pandas as pd
import pytest
from django.urls import reverse

from planner.dashboard import figures
from planner.scenarios import services
from tests.planner.factories import scenario_make


def _result(label: str, jct_mean: float, jobs: list[tuple[str, float]]) -> figures.PolicyResult:
    return figures.policy_result(
        label=label, summary={"jct": {"mean": jct_mean}, "policy": label, "preemptions": 3},
        jobs=[{"job_id": j, "jct": v, "queuing": 0.0} for j, v in jobs],
        timeseries=pd.DataFrame({"time": [0.0], "util_overall": [0.5]}))


def test_pooled_result_is_the_mean_with_its_student_t_half_width_and_pools_the_jobs():
    pooled = figures.pooled_result(label="fifo", per_seed={
        0: _result("fifo", 100.0, [("a", 10.0)]), 1: _result("fifo", 300.0, [("a", 30.0)])})
    # mean 200; s = 141.42, s / sqrt(2) = 100, t(0.975, 1) = 12.706: half-width 1,270.6 s.
    assert pooled.summary["jct"]["mean"] == 200.0
    assert pooled.ci95["jct.mean"] == pytest.approx(1270.62, abs=0.01)
    assert pooled.ci95["preemptions"] == 0.0 and pooled.summary["preemptions"] == 3.0
    assert "policy" not in pooled.summary  # text is not averaged
    assert list(pooled.jobs["job_id"]) == ["0:a", "1:a"] and pooled.seeds == 2
    assert pooled.timeseries.empty  # series differ per seed: a single seed shows them


def test_speedups_pair_each_job_with_the_same_seeds_baseline():
    base = figures.pooled_result(label="fifo", per_seed={
        0: _result("fifo", 1, [("a", 10.0)]), 1: _result("fifo", 1, [("a", 40.0)])})
    other = figures.pooled_result(label="sjf", per_seed={
        0: _result("sjf", 1, [("a", 5.0)]), 1: _result("sjf", 1, [("a", 40.0)])})
    table = figures.speedup_table([base, other], baseline="fifo")
    # Seed 0: 10 / 5 = 2; seed 1: 40 / 40 = 1; geomean sqrt(2). Crossing seeds would give 8.
    assert table["sjf"]["geomean"] == pytest.approx(math.sqrt(2), abs=1e-6)


def test_log_axis_ticks_are_1_2_5_in_plain_numbers():
    assert figures.log_ticks(0.3, 4.0) == [0.2, 0.5, 1.0, 2.0, 5.0, 10.0]
    assert figures.log_ticks(1.0, 1.0) == [0.5, 1.0, 2.0]


@pytest.mark.django_db
def test_the_page_shows_every_seed_by_default_and_one_seed_on_demand(viewer):
    scenario = scenario_make(policies=["sjf", "fifo"], seeds=[0, 1], num_jobs=12)
    for run in services.scenario_launch(scenario=scenario):
        services.run_execute(run_id=run.pk)
    url = reverse("dashboard:scenario-compare", args=[scenario.pk])

    page = viewer.get(url)
    html = page.content.decode()
    assert page.context["across"] is True and page.context["baseline"] == "fifo"
    means = [run.result.summary["jct"]["mean"]
             for run in scenario.runs.filter(policy="fifo").order_by("seed")]
    assert means[0] != means[1]  # each seed draws its own sample of the generated workload
    fifo = re.search(r'id="summary">.*?fifo</th>\s*<td class="num" title="([^"]+) s">.*?'
                     r'<span class="ci">± ', html, re.S)
    assert fifo and float(fifo.group(1)) == pytest.approx(sum(means) / 2)
    assert 'value="all" selected' in html and "export.csv" not in html

    single = viewer.get(url, {"seed": 1})
    assert single.context["across"] is False and single.context["seed"] == 1
    assert "export.csv" in single.content.decode()
    assert '<span class="ci">' not in single.content.decode()


def test_a_wide_log_axis_has_decade_ticks_only():
    # Ticks within [0.002 / 2.5, 300 * 2.5] = [0.0008, 750], one per decade.
    assert figures.log_ticks(0.002, 300.0) == [0.001, 0.01, 0.1, 1.0, 10.0, 100.0]
