"""Figures are pure functions of run results: tested on real simulator output, without Django."""

import json

import numpy as np
import plotly.io as pio
import pytest

from planner.dashboard import figures
from simulation.metrics import speedups
from simulation.policies import registry
from simulation.runner import run_simulation
from simulation.workloads import (
    GeneratorSpec,
    cluster_spec_from_dict,
    generate_inference_load,
    generate_workload,
)

CLUSTER = {
    "name": "tiny",
    "gpu_types": {"V100": {"speed": 1.0, "memory_gb": 32}, "T4": {"speed": 0.25, "memory_gb": 16}},
    "pools": [
        {"name": "training", "kind": "training", "gpu_type": "V100", "servers": 2,
         "gpus_per_server": 4},
        {"name": "inference", "kind": "inference", "gpu_type": "T4", "servers": 4,
         "gpus_per_server": 4},
    ],
}
POLICIES = ("fifo", "sjf", "tiresias")


@pytest.fixture(scope="module")
def results() -> list[figures.PolicyResult]:
    cluster = cluster_spec_from_dict(CLUSTER, source="test")
    workload = generate_workload(
        GeneratorSpec(num_jobs=40, arrival_rate_per_hour=30, gpu_sizes=((1, 0.6), (2, 0.3),
                                                                         (4, 0.1))),
        seed=3,
    )
    load = generate_inference_load(4, 1.0, seed=3)
    out = []
    for policy in POLICIES:
        run = run_simulation(cluster, workload, policy, seed=3, inference_load=load)
        out.append(figures.policy_result(label=policy, summary=run.summary, jobs=run.jobs,
                                         timeseries=run.timeseries))
    return out


def _legend_names(fig) -> list[str]:
    return [trace.name for trace in fig.data if trace.showlegend is not False]


def test_every_comparison_chart_has_one_legend_trace_per_policy(results):
    charts = figures.comparison_charts(results, baseline="fifo")

    slugs = [chart.slug for chart in charts]
    assert slugs[:4] == ["jct-cdf", "queuing-cdf", "jct-percentiles", "queuing-percentiles"]
    assert {"series-util-training", "series-util-inference", "series-util-overall",
            "series-on-loan-servers", "preemptions", "scaling", "speedups"} <= set(slugs)
    for chart in charts:
        assert _legend_names(chart.figure) == list(POLICIES), chart.slug


def test_a_policy_has_the_same_colour_on_every_chart(results):
    colours: dict[str, set[str]] = {policy: set() for policy in POLICIES}
    for chart in figures.comparison_charts(results, baseline="fifo"):
        for trace in chart.figure.data:
            colour = trace.marker.color if trace.type == "bar" else trace.line.color
            colours[trace.name].add(colour)
    assert all(len(found) == 1 for found in colours.values()), colours
    assert len({next(iter(found)) for found in colours.values()}) == len(POLICIES)


def test_colours_are_distinct_in_a_view_and_follow_the_order_given():
    """Colours go by place in the scenario's policy list: the 12 policies of a view never
    share one, and a policy keeps its colour in every view built from the same order."""
    names = list(registry())[:12]
    colors = figures.policy_colors(names)
    assert len(set(colors.values())) == 12
    assert colors[names[0]] == "#0072B2" and colors[names[1]] == "#E69F00"  # Okabe-Ito
    assert figures.policy_colors(names + ["extra"])[names[5]] == colors[names[5]]
    assert figures.policy_colors(["b", "a", "b"]) == {"b": "#0072B2", "a": "#E69F00"}


def test_cdf_of_a_large_sample_is_downsampled_onto_the_exact_curve():
    values = np.random.default_rng(0).exponential(100.0, size=50_000)
    x, y = figures.cdf_points(values)

    assert len(x) == len(y) <= figures.CDF_POINTS
    assert x[0] == values.min() and x[-1] == values.max() and y[-1] == 1.0
    ordered = np.sort(values)
    exact = np.searchsorted(ordered, x, side="right") / values.size
    assert np.allclose(exact, y)
    assert np.all(np.diff(x) >= 0) and np.all(np.diff(y) > 0)


def test_small_samples_keep_every_point_and_unfinished_jobs_are_left_out():
    result = figures.policy_result(
        label="fifo",
        summary={"jct": {}, "queuing": {}},
        jobs=[{"job_id": "a", "jct": "30", "queuing": "0"},
              {"job_id": "b", "jct": "", "queuing": ""},
              {"job_id": "c", "jct": "10", "queuing": "5"}],
        timeseries=[],
    )
    fig = figures.cdf_figure([result], column="jct", name="JCT")
    assert list(fig.data[0].x) == [10.0, 30.0]
    assert list(fig.data[0].y) == [0.5, 1.0]


def test_time_series_are_averaged_down_keeping_their_mean():
    rows = [{"time": 60.0 * i, "util_overall": (i % 7) / 7} for i in range(10_000)]
    result = figures.policy_result(label="fifo", summary={}, jobs=[], timeseries=rows)
    fig = figures.series_figure([result], column="util_overall", name="overall")

    y = np.asarray(fig.data[0].y, dtype=float)
    assert len(y) == figures.SERIES_POINTS
    assert y.mean() == pytest.approx(np.mean([r["util_overall"] for r in rows]), rel=1e-4)


def test_speedup_table_equals_the_simulator_metric(results):
    assert np.all(figures.speedup_ratios(results[0], results[0]) == 1.0)
    table = figures.speedup_table(results, baseline="fifo")
    assert table["fifo"]["geomean"] == 1.0 and table["fifo"]["slowed_share"] == 0.0
    base_rows = results[0].jobs.to_dict("records")
    for r in results:
        expected = speedups(base_rows, r.jobs.to_dict("records"))
        assert table[r.label] == pytest.approx(expected, abs=1e-5), r.label
    assert table["sjf"]["jobs"] == len(figures.speedup_ratios(results[0], results[1]))
    with pytest.raises(ValueError, match="baseline 'gandalf'"):
        figures.speedup_table(results, baseline="gandalf")


def test_sweep_band_is_the_t_interval_over_seeds_and_stays_out_of_the_legend():
    points = [
        {"label": policy, "value": value, "seed": seed, "jct_mean": base * value + seed}
        for policy, base in (("fifo", 10.0), ("sjf", 5.0))
        for value in (1, 2, 4)
        for seed in (0, 1, 2)
    ]
    fig = figures.sweep_figure(points, parameter="load", metric="jct_mean")

    assert _legend_names(fig) == ["fifo", "sjf"]
    fifo = next(t for t in fig.data if t.name == "fifo")
    assert list(fifo.x) == [1, 2, 4]
    assert np.allclose(fifo.y, [11.0, 21.0, 41.0])
    band = next(t for t in fig.data if t.name == "fifo 95% CI")
    half = 4.302653 * 1.0 / np.sqrt(3)  # t(0.975, 2) * sd / sqrt(n), sd of seeds 0,1,2 is 1
    assert np.allclose(band.y[:3], np.array([11.0, 21.0, 41.0]) + half, atol=1e-4)
    assert band.fillcolor.startswith("rgba(")


def test_one_seed_gives_no_band_and_an_empty_sweep_gives_an_empty_chart():
    fig = figures.sweep_figure([{"label": "fifo", "value": "a", "seed": 0, "m": 2.0}],
                               parameter="p", metric="m")
    band = fig.data[0]
    assert list(band.y) == [2.0, 2.0]
    assert figures.sweep_figure([], parameter="p", metric="m").data == ()


def test_figures_serialise_to_compact_json(results):
    payload = [pio.to_json(c.figure, validate=False)
               for c in figures.comparison_charts(results, baseline="fifo")]
    assert all("bdata" in p for p in payload[:2])  # numpy arrays travel as base64
    assert all("layout" not in json.loads(p)["layout"]["template"] for p in payload)
    assert sum(map(len, payload)) < 200_000


def test_server_states_stack_per_pool_with_fixed_colours():
    fig = figures.server_state_figure({
        "training": {"idle": 2, "busy": 6},
        "inference": {"idle": 1, "busy": 3, "on_loan": 4},
    })
    assert [t.name for t in fig.data] == ["idle", "busy", "on loan", "reclaiming", "offline"]
    on_loan = fig.data[2]
    assert list(on_loan.y) == ["training", "inference"] and list(on_loan.x) == [0, 4]
    assert on_loan.marker.color == figures.STATE_COLORS["on_loan"]
