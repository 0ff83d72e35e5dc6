"""The numbers the comparison charts plot, checked against a 3-job result computed by hand.

A chart can have the right legend and colours and still plot the wrong column; these tests
read each trace's x and y. No Django: figures are pure functions of run results.
"""

from __future__ import annotations

import numpy as np
import pytest

from planner.dashboard import figures

# Three jobs run under a baseline (fifo) and under sjf. Per job: (JCT, queuing delay) in s.
FIFO_JOBS = {"a": (20.0, 10.0), "b": (30.0, 0.0), "c": (40.0, 25.0)}
SJF_JOBS = {"a": (10.0, 0.0), "b": (60.0, 45.0), "c": (20.0, 5.0)}
# summary["jct"] of each: fifo [20, 30, 40] and sjf [10, 20, 60] (numpy's linear percentiles:
# p95 sits at index 1.9, p99 at 1.98 of the sorted three).
FIFO_JCT = {"mean": 30.0, "median": 30.0, "p95": 39.0, "p99": 39.8}
SJF_JCT = {"mean": 30.0, "median": 20.0, "p95": 56.0, "p99": 59.2}


def result(label: str, jobs: dict[str, tuple[float, float]], jct: dict[str, float],
           summary_extra: dict | None = None) -> figures.PolicyResult:
    rows = [{"job_id": job_id, "submit": 0.0, "jct": j, "queuing": q}
            for job_id, (j, q) in jobs.items()]
    series = [{"time": 60.0, "util_overall": 0.5}, {"time": 120.0, "util_overall": 1.0}]
    return figures.policy_result(label=label, summary={"jct": jct, **(summary_extra or {})},
                                 jobs=rows, timeseries=series)


@pytest.fixture
def results() -> list[figures.PolicyResult]:
    return [result("fifo", FIFO_JOBS, FIFO_JCT), result("sjf", SJF_JOBS, SJF_JCT)]


def trace(fig, name: str):
    return next(t for t in fig.data if t.name == name)


def chart(charts, slug: str):
    return next(c.figure for c in charts if c.slug == slug)


def test_jct_cdf_chart_plots_completion_times_not_queuing_delays(results):
    """The "JCT CDF" chart's x values are the finished jobs' JCTs, each at its share of jobs.
    Mutation guarded: the chart built from the `queuing` column.

    sjf JCTs sorted: 10, 20, 60 s at 1/3, 2/3, 1 (its queuing delays would be 0, 5, 45);
    fifo: 20, 30, 40. Medians under 2 minutes: the axis is in seconds.
    """
    fig = chart(figures.comparison_charts(results, baseline="fifo"), "jct-cdf")
    assert list(trace(fig, "sjf").x) == [10.0, 20.0, 60.0]
    assert list(trace(fig, "fifo").x) == [20.0, 30.0, 40.0]
    assert np.allclose(trace(fig, "sjf").y, [1 / 3, 2 / 3, 1.0])
    assert fig.layout.xaxis.title.text == "JCT (s)"


def test_queuing_cdf_chart_plots_queuing_delays(results):
    """The "queuing delay CDF" plots each finished job's time waited: sjf 0, 5, 45 s."""
    fig = chart(figures.comparison_charts(results, baseline="fifo"), "queuing-cdf")
    assert list(trace(fig, "sjf").x) == [0.0, 5.0, 45.0]
    assert list(trace(fig, "fifo").x) == [0.0, 10.0, 25.0]


def test_long_times_are_plotted_in_minutes():
    """A CDF whose typical (median) value is 2 minutes or more is drawn in minutes: JCTs of
    600, 1200 and 1800 s are x = 10, 20, 30 min. Mutation guarded: a wrong unit scale."""
    long = result("fifo", {"a": (600.0, 0.0), "b": (1200.0, 0.0), "c": (1800.0, 0.0)},
                  FIFO_JCT)
    fig = figures.cdf_figure([long], column="jct", name="JCT")
    assert list(fig.data[0].x) == [10.0, 20.0, 30.0]
    assert fig.layout.xaxis.title.text == "JCT (min)"


def test_speedup_chart_plots_baseline_jct_over_jct(results):
    """Per-job speedup = baseline JCT / JCT (SIA §6.1): above 1 is faster than the baseline.
    Mutation guarded: the ratio inverted.

    sjf against fifo: a 20/10 = 2, b 30/60 = 0.5, c 40/20 = 2, sorted 0.5, 2, 2 at 1/3, 2/3,
    1 (inverted it would be 0.5, 0.5, 2). The baseline against itself is 1 for every job.
    """
    fig = chart(figures.comparison_charts(results, baseline="fifo"), "speedups")
    assert list(trace(fig, "sjf").x) == [0.5, 2.0, 2.0]
    assert np.allclose(trace(fig, "sjf").y, [1 / 3, 2 / 3, 1.0])
    assert list(trace(fig, "fifo").x) == [1.0, 1.0, 1.0]
    assert list(figures.speedup_ratios(results[0], results[1])) == [2.0, 0.5, 2.0]


def test_speedup_table_statistics(results):
    """Geometric mean (2 · 0.5 · 2)^(1/3) = 2^(1/3) = 1.259921; p5 0.5 + 0.1 · 1.5 = 0.65;
    p95 2; one job of three slowed, by 30 s = 0.5 min."""
    table = figures.speedup_table(results, baseline="fifo")
    assert table["sjf"] == pytest.approx({
        "jobs": 3, "geomean": 1.259921, "p5": 0.65, "p95": 2.0, "slowed_share": 0.333333,
        "slowdown_minutes_total": 0.5, "slowdown_minutes_max": 0.5,
    }, abs=1e-6)
    assert table["fifo"]["geomean"] == 1.0 and table["fifo"]["slowed_share"] == 0.0


def test_percentile_bars_are_the_summary_values(results):
    """JCT percentile bars: mean, median, p95, p99 from each run's summary, in seconds."""
    fig = chart(figures.comparison_charts(results, baseline=None), "jct-percentiles")
    assert list(trace(fig, "fifo").x) == ["mean", "median", "p95", "p99"]
    assert list(trace(fig, "fifo").y) == [30.0, 30.0, 39.0, 39.8]
    assert list(trace(fig, "sjf").y) == [30.0, 20.0, 56.0, 59.2]


def test_utilisation_series_is_plotted_over_time(results):
    """Overall utilisation rows (60 s: 50 %, 120 s: 100 %) plot at 1 and 2 minutes."""
    fig = chart(figures.comparison_charts(results, baseline=None), "series-util-overall")
    assert list(trace(fig, "sjf").x) == [1.0, 2.0]
    assert list(trace(fig, "sjf").y) == [0.5, 1.0]


def test_preemption_chart_reads_the_named_counters():
    """Bars of the preemption chart: scheduler preemptions, reclaim preemptions, collateral
    GPUs, servers freed by scale-in, read from the summary's (nested) counters."""
    run = result("aryl", FIFO_JOBS, FIFO_JCT, {
        "preemptions": 7,
        "loaning": {"reclaim_preemptions": 3, "collateral_gpus": 12,
                    "servers_freed_by_scale_in": 2},
    })
    fig = chart(figures.comparison_charts([run], baseline=None), "preemptions")
    assert list(fig.data[0].y) == [7, 3, 12, 2]
