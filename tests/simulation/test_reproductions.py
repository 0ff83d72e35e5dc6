"""Paper reproductions (issue #15): the verdict rule on hand-derived cases, the README block,
the CLI's user errors, and the inputs the EDL and Gandiva experiments build."""

from __future__ import annotations

import dataclasses
from types import SimpleNamespace

import pytest

from simulation.cli import main
from simulation.dlt_models import model_info
from simulation.errors import InputError
from simulation.model import JobSpec, Workload
from simulation.reproductions import aryl, muri, paper_names, sia
from simulation.reproductions.edl import edl_philly_workload
from simulation.reproductions.gandiva import (
    baseline_utilisation,
    last_to_end,
    logged_utilisation,
    median_draw,
)
from simulation.reproductions.report import (
    DEVIATES,
    DIRECTION_ONLY,
    README_END,
    README_START,
    REPRODUCED,
    Ablation,
    Row,
    markdown_table,
    range_verdict,
    rewrite_readme,
    verdict,
)


@pytest.mark.parametrize(("paper", "ours", "expected"), [
    (-0.895, -0.60, DIRECTION_ONLY),  # EDL Table 3: 0.60 / 0.895 = 0.67, outside 1 ± 0.25
    (-0.895, -0.80, REPRODUCED),      # 0.894 of the paper's change
    (-0.80, -1.00, REPRODUCED),       # 1.25: on the edge, inside
    (-0.80, -1.01, DIRECTION_ONLY),   # 1.2625: just outside
    (-0.151, 0.354, DEVIATES),        # Gandiva Table 5 makespan: opposite sign
    (0.253, 0.0, DEVIATES),           # no change has no direction
    (11.7, 7.9, DIRECTION_ONLY),      # a positive value: 0.675 of the paper's
])
def test_verdict_compares_sign_then_ratio(paper, ours, expected):
    assert verdict(paper, ours) == expected


@pytest.mark.parametrize(("low", "high", "ours", "expected"), [
    (-0.558, -0.115, -0.30, REPRODUCED),      # Muri: JCT speedup 1.13-2.26x, inside
    (-0.558, -0.115, -0.10, REPRODUCED),      # 0.87 of the nearest edge
    (-0.558, -0.115, -0.05, DIRECTION_ONLY),  # 0.43 of it
    (-0.558, -0.115, -0.69, REPRODUCED),      # 1.24 of the far edge: inside 1 ± 0.25
    (-0.558, -0.115, -0.80, DIRECTION_ONLY),  # 1.43
    (-0.558, -0.115, 0.10, DEVIATES),         # slower than the baseline
    (-0.394, 0.0, 0.0, REPRODUCED),           # makespan speedup 1-1.65x: no change is in it
    (-0.394, 0.0, 0.02, DEVIATES),            # beyond an edge of zero
])
def test_range_claims_are_held_to_their_nearest_edge(low, high, ours, expected):
    row = Row("Fig. 9", "mean JCT", None, ours, "", "", "", paper_range=(low, high))
    assert row.verdict == range_verdict(low, high, ours) == expected
    if low <= ours <= high:
        assert row.ratio in (1.0, None)  # None: ours is 0, an edge of the range
    assert row.paper_text == f"{low:+.1%} to {high:+.1%}"


def test_verdict_on_a_direction_only_claim():
    assert verdict(None, 0.154, expected_sign=1) == REPRODUCED
    assert verdict(None, -0.1, expected_sign=1) == DEVIATES
    with pytest.raises(ValueError):
        verdict(None, 0.1)


def test_row_ratio_and_table_cells():
    row = Row("Table 3", "mean JCT", -0.895, -0.6, "a", "b", "x | y")
    assert row.ratio == pytest.approx(0.6 / 0.895)
    report = {"paper": "edl", "wall_seconds": 12.3, "rows": [row.to_dict()]}
    table = markdown_table([report])
    assert "| edl | Table 3 | mean JCT | -89.5% (a) | -60.0% (b) | 0.67 | " in table
    assert "x \\| y" in table  # a pipe in a note does not split the cell
    assert "edl 12 s" in table


def _report(paper: str, wall: float, *metrics: str) -> dict:
    rows = [Row("Table 1", metric, -0.5, -0.4, "a", "b", "",
                ablations=(Ablation("half", -0.2, "c", ""),)).to_dict() for metric in metrics]
    return {"paper": paper, "wall_seconds": wall, "rows": rows}


def test_readme_block_keeps_the_rows_of_papers_not_rerun(tmp_path):
    """Re-running one paper replaces its rows (ablations included) and its wall time, and
    keeps every other paper's rows and wall time as the README had them."""
    readme = tmp_path / "README.md"
    first = markdown_table([_report("aryl", 100, "old-aryl"), _report("sia", 50, "old-sia"),
                            _report("edl", 20, "old-edl")])
    readme.write_text(f"# t\n{README_START}\n{first}\n{README_END}\ntail\n")
    rewrite_readme(readme, [_report("sia", 70, "new-sia-1", "new-sia-2")])
    text = readme.read_text()
    assert text.startswith(f"# t\n{README_START}\n") and text.endswith(f"{README_END}\ntail\n")
    table = text.split(README_START + "\n")[1].split("\n" + README_END)[0]
    assert table == markdown_table([_report("aryl", 100, "old-aryl"),
                                    _report("edl", 20, "old-edl"),
                                    _report("sia", 70, "new-sia-1", "new-sia-2")])
    assert "old-sia" not in table and table.count("↳ ablation: half") == 4
    assert table.endswith("aryl 100 s, edl 20 s, sia 70 s.")
    readme.write_text("# no markers\n")
    with pytest.raises(InputError):
        rewrite_readme(readme, [])


def test_unknown_paper_exits_2_naming_the_known_ones(tmp_path, capsys):
    assert main(["reproduce", "nope", "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "unknown paper 'nope'" in err and "aryl, edl, gandiva, muri, sia, all" in err
    assert paper_names("all") == ["aryl", "edl", "gandiva", "muri", "sia"]


def test_edl_philly_jobs_are_elastic_from_half_to_twice_and_start_at_zero():
    base = Workload((JobSpec("a", 100.0, 1, 60.0), JobSpec("b", 130.0, 8, 60.0),
                     JobSpec("c", 160.0, 3, 60.0)))
    jobs = edl_philly_workload(base, 1, 3, seed=4).jobs
    assert [(j.submit_time, j.min_workers, j.max_workers) for j in jobs] == [
        (0.0, 4, 16), (30.0, 2, 6)]  # ⌈0.5·8⌉ = 4, ⌈0.5·3⌉ = 2
    assert [j.model for j in jobs] == [j.model for j in edl_philly_workload(base, 1, 3, seed=4)
                                       .jobs]
    flat = edl_philly_workload(base, 0, 1, elastic=False).jobs[0]
    assert not flat.elastic and flat.num_gpus == 1


def test_gandiva_utilisation_over_the_stable_regime():
    # 20-200 min window = 10,800 s. A 2-GPU job busy 0-6,600 s overlaps 5,400 s of it.
    model, util = "vae", 0.087  # Gandiva Table 1: VAE uses 8.7 % of a GPU
    assert model_info(model).gpu_util == util
    rows = [{"start": 0.0, "end": 6600.0, "num_gpus": 2, "model": model},
            {"start": None, "end": None, "num_gpus": 4, "model": model}]
    assert baseline_utilisation(rows, 4) == pytest.approx(5400 * 2 * util / (4 * 10800))
    # 90 busy GPU-cores from 1,200 s to 12,000 s, the whole window, on 180 GPUs.
    log = [(0.0, 0.0), (1200.0, 90.0), (12000.0, 0.0)]
    assert logged_utilisation(log, 180) == pytest.approx(0.5)


def test_the_job_ending_last_says_how_it_ran():
    # a: 4.5 h of work, queued 1 h, ends at 10 h: 9 h running for 4.5 h of work = 50 %.
    # b has more work (5 h) but ends earlier; c never ran. So a is the 2nd longest of 3.
    a = {"job_id": "a", "submit": 0.0, "start": 3600.0, "end": 36000.0, "queuing": 3600.0,
         "duration": 16200.0, "num_gpus": 2}
    b = {**a, "job_id": "b", "start": 0.0, "end": 30000.0, "queuing": 0.0, "duration": 18000.0}
    c = {**a, "job_id": "c", "start": None, "end": None, "duration": 100.0}
    result = SimpleNamespace(jobs=[b, a, c])
    assert last_to_end(result) == (
        "a, the 2nd longest of 3 (4.5 h of work on 2 GPUs, submitted at 0.0 h), ending at "
        "10.0 h: queued 1.0 h, then ran at 50% of full speed")


def _figures(**overrides: float) -> dict[str, aryl.Figures]:
    """Every Aryl experiment with the same figures, then the named ones changed."""
    plain = aryl.Figures(queuing=1000.0, jct=10_000.0, usage=0.5, preemption_ratio=0.1,
                         reclaim_preemptions=100, collateral_damage=0.2, makespan=1e6)
    figures = dict.fromkeys(aryl.EXPERIMENTS, plain)
    for name, value in overrides.items():
        key, attr = name.split("__")
        figures[key.replace("_", "-")] = dataclasses.replace(figures[key.replace("_", "-")],
                                                             **{attr: value})
    return figures


def _row(rows, experiment: str, metric: str):
    [row] = [r for r in rows if r.experiment == experiment and r.metric == metric]
    return row


def test_aryl_rows_compare_each_system_with_its_own_reference():
    f = _figures(basic__queuing=500.0, baseline__queuing=2000.0, loan_aryl__reclaim_preemptions=60,
                 loan_scf__reclaim_preemptions=80, basic_bfd__preemption_ratio=0.15,
                 ideal_imperfect__jct=12_000.0)
    table5 = aryl.table5_rows(f)
    basic = _row(table5, "Table 5: Basic vs Baseline", "mean queuing")
    assert basic.ours == pytest.approx(500 / 2000 - 1)  # -75 %
    assert basic.paper == pytest.approx(2008 / 3072 - 1)
    # The Gandiva row is measured against the Baseline, not against Basic.
    assert _row(table5, "Table 5: Scaling, Gandiva vs Baseline", "mean queuing").ours == \
        pytest.approx(1000 / 2000 - 1)
    fig8 = _row(aryl.figure8_rows(f), "Figure 8 (no scaling): Aryl vs SCF",
                "jobs preempted by reclaims")
    assert (fig8.ours, fig8.paper) == (pytest.approx(60 / 80 - 1), pytest.approx(1 / 1.5 - 1))
    assert fig8.verdict == DIRECTION_ONLY  # -25 % against the paper's -33 %: 0.75
    fig10 = _row(aryl.figure10_rows(f), "Figure 10: Ideal, imperfect vs linear", "mean JCT")
    assert fig10.ours == pytest.approx(0.2) and fig10.verdict == REPRODUCED  # +20 % vs +19 %
    table6 = _row(aryl.table6_rows(f), "Table 6: Basic, plain BFD vs grouped",
                  "preemption ratio")
    assert table6.ours == pytest.approx(0.15 / 0.1 - 1)  # +50 % against the paper's +23 %


def test_aryl_experiments_run_on_the_calibrated_trace_and_its_contended_cluster():
    # A 2 % trace (1,008 jobs): the plumbing, not the figures. The contended run has 7 of
    # the 9 training servers (8 V100 each) and the same 10 inference servers (2 each).
    lines: list[str] = []
    f = aryl.run_experiments(lines.append, ["baseline", "contended-baseline"], scale=0.02)
    assert set(f) == {"baseline", "contended-baseline"}
    assert "1008 jobs, 92 GPUs" in lines[0] and "1008 jobs, 76 GPUs" in lines[1]
    assert f["contended-baseline"].queuing > f["baseline"].queuing
    assert f["baseline"].preemption_ratio == 0.0 and f["baseline"].reclaim_preemptions == 0


def test_muri_rows_hold_muri_to_its_best_baseline_and_section_6_3s_ranges():
    fig = muri.Figures
    f = {("srtf", 3): fig(jct_mean=200.0, jct_p99=1000.0, makespan=5000.0, restarts_per_job=1),
         ("srsf", 3): fig(150.0, 1200.0, 5000.0, 1.0),
         ("muri-s", 3): fig(100.0, 600.0, 5000.0, 2.0)}
    rows = {r.metric: r for r in muri.speedup_rows(f, "muri-s", muri.KNOWN, "Figure 9")}
    assert set(rows) == {"mean JCT", "makespan", "p99 JCT"}  # trace 3 only: the others skip
    # Mean JCT against SRSF (150 s, the better one): 1.5x, inside 1.13-2.26x.
    assert rows["mean JCT"].ours == pytest.approx(100 / 150 - 1)
    assert rows["mean JCT"].paper_range == pytest.approx((1 / 2.26 - 1, 1 / 1.13 - 1))
    assert rows["mean JCT"].verdict == REPRODUCED
    assert rows["p99 JCT"].ours == pytest.approx(600 / 1000 - 1)  # against SRTF this time
    assert rows["makespan"].ours == 0.0 and rows["makespan"].verdict == REPRODUCED  # 1x is in
    f |= {("muri-l", 3): fig(100.0, 0.0, 1000.0, 0.0),
          ("muri-l-priority", 3): fig(110.0, 0.0, 1100.0, 0.0),
          ("muri-l-worst", 3): fig(90.0, 0.0, 1200.0, 0.0)}
    by_label = {(r.experiment, r.metric): r for r in muri.figure11_rows(f)}
    blossom = "Figure 11: trace 3, Muri-L without Blossom"
    worst = "Figure 11: trace 3, Muri-L worst ordering"
    assert by_label[blossom, "mean JCT"].verdict == REPRODUCED  # +10 %, up to +14 %
    assert by_label[blossom, "makespan"].verdict == DIRECTION_ONLY  # +10 % against 6 %
    assert by_label[worst, "mean JCT"].verdict == DEVIATES  # better, where the paper is worse
    assert by_label[worst, "makespan"].ours == pytest.approx(0.2)


def test_sia_statistics_of_per_job_speedups():
    # Baseline JCTs 20, 30, 40 s; ours 10, 60, 20 s: speedups 2, 0.5, 2.
    base = [{"job_id": k, "jct": v} for k, v in (("a", 20.0), ("b", 30.0), ("c", 40.0))]
    ours = [{"job_id": k, "jct": v} for k, v in (("a", 10.0), ("b", 60.0), ("c", 20.0))]
    stats = sia._stats(base, ours)
    assert stats["geomean"] == pytest.approx(2 ** (1 / 3))
    assert stats["mean"] == pytest.approx(1.5)
    assert stats["p90"] == pytest.approx(2.0)  # sorted 0.5, 2, 2: position 1.8 of 0..2
    assert stats["slowed"] == pytest.approx(1 / 3)
    assert stats["slow_minutes"] == pytest.approx(0.5)  # b lost 30 s


def test_a_gandiva_figure_is_its_median_draws_change_with_every_draw_shown():
    # Three draws, mean JCT FIFO -> Gandiva (-> without packing), in minutes:
    # 100 -> 80 (-> 90): -20 %, -10 %;  100 -> 110 (-> 70): +10 %, -30 %;
    # 200 -> 190 (-> 220): -5 %, +10 %.  Sorted changes -20, -5, +10: the median draw is
    # the third; without packing sorted -30, -10, +10: its median -10 % (of the first draw).
    figures = [(100.0, 80.0, 90.0), (100.0, 110.0, 70.0), (200.0, 190.0, 220.0)]
    median = median_draw(figures, lambda minutes: f"{minutes:.0f} min")
    assert median.index == 2
    assert median.change == pytest.approx(-0.05)
    assert median.detail == "190 min vs 200 min, median draw"
    assert median.each == "Each draw: -20.0%, +10.0%, -5.0%."
    assert median.ablated == pytest.approx(-0.10)
    assert median.ablated_each == "Each draw: -10.0%, -30.0%, +10.0%."
    # an even count takes the lower of the middle two
    assert median_draw(figures[:2], str).index == 0
