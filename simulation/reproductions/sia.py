"""SIA ("Anticipatory Resource Allocation for ML Training") §6 headline, Tables 10 and 12.

The paper's workloads are private CloudML traces. Ours is SIA's own setup (`SiaSetup`:
4 quota pools, loads 0.6-1.1, bursty arrivals, skewed durations) with §3's users
(`arrivals="closed-loop"`: they submit after studying their last results, on weekdays),
the structure WillJobsArrive's features are built for (Table 9's recent and future
completions, §5.4.1). §6.1 picks each experiment's queues "independently at random from the
traces", so its queues differ (Table 12's: median widths 1-8 GPUs, median durations 2 to
1,340 minutes): our experiments use `queue_mix="varied"`, a queue mix drawn per seed. Its
pools belong to a public cloud's customers, so each queue's users keep the hours of a time
zone of their own (`time_zones="per-queue"`): with one clock for all, every pool idles in
the same night, and pooled over `EXPERIMENTS` SIA slowed 8.6 % of jobs for a 1.31x geometric
mean speedup, against 2.6 % and 1.43x with a clock per queue (2026-11-26). Table 12 keeps
one clock (`TABLE_12_TIME_ZONES`).

- Table 10: WillJobsArrive trained on three weeks of history and scored on the fourth
  (precision, recall and F-score for the 5-minute, 1-hour and 12-hour windows; the paper
  validates on "a set-aside corpus from a different two-week period"), on experiment 0.
- Headline (§1, §6): SIA against the production scheduler (FCFS per pool) on three days
  after 21 days of history the predictors learn from, pooled over `EXPERIMENTS` seeds
  ("we report results from many tens of experiments"; three keep the command to minutes):
  average speedup 2.83x and 16.6x at the 90th percentile; and against a scheduler that
  shares idle quota naively (max-min), the share of jobs slowed down is "orders of
  magnitude" lower. We read "average" as the geometric mean of per-job speedups (the metric
  of `simulation.metrics.speedups`) and report the arithmetic mean in the row's detail;
  the slowdown claim is a direction (a plot).
- §4.1's alternatives on the same jobs (§6.2, Figures 5 and 13): SSF per pool and gSSF
  over one global pool, both with true durations; rows compare the share of jobs they slow
  with SIA's, and their mean speedups are ablations of the headline row.
- Ablations on the mean speedup: SIA with perfect predictions (the predictors' ceiling),
  with perfect arrival predictions only (whose slowdowns are whose), with random arrival
  predictions, max-min, SSF and gSSF.
- Table 12: one experiment's four queues as the paper describes them
  (`queue_mix="table12"`: median widths 1, 8, 1, 4 GPUs, median durations 86, 1,340, 2,
  1,280 minutes, quotas 3, 16, 2, 8, loads 0.48-0.67): the geometric mean speedup of each
  queue and of all jobs under SIA, with max-min's beside it, over a week after the history
  (its day-long queues submit about a job a day).
- Figure 16 (§6.4, locality, §5.5): every job on one 8-GPU server in a buddy cell, the jobs
  of experiment 0. SIA with `locality=cells` and HiveD* (`hived`) against FCFS per pool
  with cells. The paper plots no number, so the rows are directions: SIA still speeds jobs
  up; it slows far fewer jobs than HiveD*; and "the additional constraints reduce the gains
  from anticipation", read as SIA's speedup gain (geometric mean - 1) with cells below
  experiment 0's without. HiveD proper (preemption) runs as an ablation with half the jobs
  made preemptible, as SIA's jobs are not.
"""

from __future__ import annotations

import dataclasses
import random

import numpy as np

from simulation.metrics import RunResult, jct_pairs
from simulation.model import ClusterSpec, Workload
from simulation.policies.sia.common import queue_quotas, virtual_start_times
from simulation.predictors.arrivals import DAY, WillJobsArrive, pool_histories
from simulation.reproductions import PAPERS, Progress
from simulation.reproductions.report import Ablation, PaperReport, Row
from simulation.runner import run_simulation
from simulation.workloads.sia import SiaSetup, generate_sia_workload, sia_cluster

SEED = 0  # experiment 0: Table 10, Table 12 and Figure 16
EXPERIMENTS = (0, 1, 2)  # the headline's seeds, one queue mix and workload each
HISTORY_DAYS = 21.0
EVALUATED_DAYS = 3.0
PREDICTOR_DAYS = (21.0, 28.0)  # trained on [0, 21), scored on [21, 28) days
TABLE_10 = {5.0: (0.66, 0.85, 0.74), 60.0: (0.62, 0.72, 0.67), 720.0: (0.66, 0.64, 0.65)}
SHARING_BASELINES = ("maxmin", "ssf", "gssf")  # §4.1's alternatives, on the same jobs
SIA_RUNS = {
    "sia": {},
    "sia-perfect": {"arrivals": "perfect", "durations": "perfect"},
    "sia-perfect-arrivals": {"arrivals": "perfect"},
    "sia-random": {"arrivals": "random"},
}


# Table 12: SIA's and max-min's geometric mean speedup per queue, then over all jobs.
TABLE_12_SIA = (1.6, 1.0, 52.46, 1.0, 30.26)
TABLE_12_MAXMIN = (1.75, 1.16, 9.88, 2.33, 7.61)
TABLE_12_DAYS = 7.0  # evaluated: its day-long queues submit about a job a day
# Table 12's one experiment keeps one clock for its four queues: with a clock per queue its
# all-jobs row falls to 14.3x for SIA and rises to 106x for max-min (paper 30.26x, 7.61x),
# against 35.9x and 46.0x with one (2026-11-26). Which its private pools had is unknown.
TABLE_12_TIME_ZONES = "shared"


def setup(days: float, queue_mix: str = "varied") -> SiaSetup:
    """§6.1's experiments on a clock per queue; Table 12's on one (`TABLE_12_TIME_ZONES`)."""
    time_zones = TABLE_12_TIME_ZONES if queue_mix == "table12" else "per-queue"
    return SiaSetup(queues=4, days=days, arrivals="closed-loop", queue_mix=queue_mix,
                    time_zones=time_zones)


def table10_rows(progress: Progress) -> list[Row]:
    """WillJobsArrive's precision, recall and F-score per window."""
    trained, scored = (d * DAY for d in PREDICTOR_DAYS)
    spec = setup(PREDICTOR_DAYS[1])
    workload = generate_sia_workload(spec, seed=SEED)
    starts = virtual_start_times(workload.jobs, queue_quotas(sia_cluster(spec, SEED)))
    progress(f"sia Table 10: WillJobsArrive on {len(workload)} closed-loop jobs, "
             f"{PREDICTOR_DAYS[0]:.0f} days of history")
    model = WillJobsArrive(seed=SEED).fit(pool_histories(workload.jobs, starts, until=trained),
                                          0.0, trained)
    later = pool_histories(workload.jobs, starts)
    scores = model.evaluate(later, trained, scored)
    aucs = model.roc_auc(later, trained, scored)
    rows = []
    for minutes, (precision, recall, f_score) in TABLE_10.items():
        ours = scores[minutes]
        note = ""
        if minutes == 5.0:
            note = ("Our 5-minute window is hard: few samples see an arrival (the detail's "
                    "share), and a burst follows its user's last results by a random think "
                    "time.")
        if minutes == 720.0:
            note = ("Our users keep most queues busy through a working day: most 12-hour "
                    "windows see an arrival (the detail's share), which makes this window easy.")
        rows.append(Row(
            "Table 10", f"F-score, {minutes:g}-minute window", f_score, ours.f_score,
            f"precision {precision}, recall {recall}",
            f"precision {ours.precision:.2f}, recall {ours.recall:.2f}, ROC AUC "
            f"{aucs[minutes]:.2f} ({ours.samples} samples, {ours.positives / ours.samples:.0%} "
            "positive)", note, unit="F-score"))
    return rows


def _evaluated(result: RunResult, split: float) -> list[dict]:
    return [row for row in result.jobs if float(row["submit"]) >= split]


def _stats(base: list[dict], jobs: list[dict]) -> dict[str, float]:
    """Geometric and arithmetic mean and p90 of per-job speedups, the share of jobs slowed
    and their minutes of slowdown (as `simulation.metrics.speedups`)."""
    return _pair_stats(jct_pairs(base, jobs))


def _pair_stats(pairs: list[tuple[float, float]]) -> dict[str, float]:
    """`_stats` of (baseline JCT, JCT) pairs, which may pool several experiments."""
    array = np.array(pairs)
    ratios = array[:, 0] / array[:, 1]
    return {"geomean": float(np.exp(np.log(ratios).mean())), "mean": float(ratios.mean()),
            "p90": float(np.percentile(ratios, 90)),
            "slowed": float((ratios < 1 - 1e-9).mean()),
            "slow_minutes": float(np.maximum(array[:, 1] - array[:, 0], 0.0).sum() / 60.0)}


def _experiment(seed: int, days: float, queue_mix: str = "varied"
                ) -> tuple[ClusterSpec, Workload]:
    spec = setup(days, queue_mix)
    return sia_cluster(spec, seed), generate_sia_workload(spec, seed=seed)


def _run(cluster: ClusterSpec, workload: Workload, key: str) -> RunResult:
    """One of the headline's runs: an SIA variant of `SIA_RUNS` or a baseline policy."""
    if key in SIA_RUNS:
        return run_simulation(cluster, workload, "sia", seed=SEED,
                              settings={"history_days": HISTORY_DAYS, **SIA_RUNS[key]})
    return run_simulation(cluster, workload, key, seed=SEED)


def headline_rows(progress: Progress) -> tuple[list[Row], dict[str, dict[str, float]]]:
    """SIA vs FCFS per pool (speedups) and vs max-min, SSF and gSSF (jobs slowed), pooled
    over `EXPERIMENTS`; and experiment 0's stats of every run."""
    split = HISTORY_DAYS * DAY
    pairs: dict[str, list[tuple[float, float]]] = {}
    first: dict[str, dict[str, float]] = {}
    per_experiment: dict[str, list[str]] = {}
    evaluated = 0
    for seed in EXPERIMENTS:
        cluster, workload = _experiment(seed, HISTORY_DAYS + EVALUATED_DAYS)
        progress(f"sia headline, experiment {seed}: fcfs-pools on {len(workload)} jobs "
                 f"({HISTORY_DAYS:.0f} days of history + {EVALUATED_DAYS:.0f} evaluated)")
        base = _evaluated(run_simulation(cluster, workload, "fcfs-pools", seed=SEED), split)
        evaluated += len(base)
        for key in (*SIA_RUNS, *SHARING_BASELINES):
            progress(f"sia headline, experiment {seed}: {key}")
            these = jct_pairs(base, _evaluated(_run(cluster, workload, key), split))
            pairs.setdefault(key, []).extend(these)
            stats = _pair_stats(these)
            per_experiment.setdefault(key, []).append(
                f"{stats['geomean']:.2f}x/{stats['slowed']:.0%}")
            if seed == SEED:
                first[key] = stats
    stats = {key: _pair_stats(values) for key, values in pairs.items()}
    sia = stats["sia"]
    setup_note = (f"SIA's setup with closed-loop users and queues that differ (§6.1), each "
                  "queue's users on a clock of their own, "
                  f"{len(EXPERIMENTS)} experiments (seeds {', '.join(map(str, EXPERIMENTS))}):"
                  f" {evaluated} jobs in their {EVALUATED_DAYS:.0f} evaluated days, after "
                  f"{HISTORY_DAYS:.0f} days the predictors learn from (the paper's CloudML "
                  "traces are private). Per experiment, geomean/slowed: "
                  f"{', '.join(per_experiment['sia'])}. Learned predictions cost much of the "
                  "gain: with perfect ones SIA slows no job. Every job SIA slows is a "
                  "WillJobsArrive miss (GPUs lent that their owner needs), and one miss in a "
                  "backlogged FCFS queue delays every job queued behind it: with perfect "
                  "arrival predictions and learned durations almost none is slowed "
                  "(ablations). The gap to the paper's 2.83x is in the queues: our users "
                  "submit a working day's experiments from the morning on, so FCFS queues "
                  "back up for hours, where reordering (SSF) gains far more than lending "
                  "idle quota without slowdowns can.")
    ablations = tuple(
        Ablation(label, stats[key]["geomean"], f"p90 {stats[key]['p90']:.2f}x, "
                 f"{stats[key]['slowed']:.1%} slowed; per experiment "
                 f"{', '.join(per_experiment[key])}", note)
        for key, label, note in (
            ("sia-perfect", "perfect predictions",
             "The predictors' ceiling on these jobs: the paper finds perfect predictions "
             "only slightly faster than learned ones."),
            ("sia-perfect-arrivals", "perfect arrival predictions, learned durations",
             "JobDuration's errors only forgo shares; the slowdowns are WillJobsArrive's."),
            ("sia-random", "random arrival predictions",
             "WillJobsArrive ~ U{0, 1} (§6.3): lends blindly, and slows donors."),
            ("maxmin", "max-min (naive sharing)", "Lends every idle GPU at once."),
            ("ssf", "SSF (per pool, true durations)",
             "No sharing; shortest service first reorders each queue."),
            ("gssf", "gSSF (one global pool, true durations)",
             "Shares everything and reorders: the fastest, and it slows jobs."),
        ))
    slowed_rows = [
        Row(f"§6.2: SIA vs {label}", "share of jobs slowed", None,
            _change(sia["slowed"], stats[policy]["slowed"]), claim,
            f"{sia['slowed']:.1%} vs {stats[policy]['slowed']:.1%} "
            f"({sia['slow_minutes']:,.0f} vs {stats[policy]['slow_minutes']:,.0f} min of "
            f"slowdown; {label}'s mean speedup {stats[policy]['geomean']:.2f}x)",
            note, expected_sign=-1)
        for policy, label, claim, note in (
            ("ssf", "SSF", "equivalent or better speed-up, far fewer slowdowns (Figure 13)",
             "SSF gets its speedups by reordering each queue with exact durations, which "
             "slows the long jobs; SIA keeps each queue's own order."),
            ("gssf", "gSSF", "equivalent or better speed-up, far fewer slowdowns (Figure 5)",
             ""),
        )]
    rows = [
        Row("§1, §6 headline: SIA vs production FCFS", "mean speedup", 2.83, sia["geomean"],
            "2.83x on average", f"geometric {sia['geomean']:.2f}x, arithmetic {sia['mean']:.2f}x",
            setup_note, unit="x", ablations=ablations),
        Row("§1, §6 headline: SIA vs production FCFS", "p90 speedup", 16.6, sia["p90"],
            "16.6x at the 90th percentile", f"{sia['p90']:.2f}x "
            f"(perfect predictions {stats['sia-perfect']['p90']:.2f}x)", "", unit="x"),
        Row("§1, §6: SIA vs naive sharing (max-min)", "share of jobs slowed", -0.9,
            _change(sia["slowed"], stats["maxmin"]["slowed"]),
            "orders of magnitude fewer, read as at least 10x (-90 %)",
            f"{sia['slowed']:.1%} vs {stats['maxmin']['slowed']:.1%} (max-min's mean "
            f"speedup {stats['maxmin']['geomean']:.2f}x)",
            "SIA lends idle quota only where its predictions say the owner will not need "
            "it; its slowdowns are WillJobsArrive's misses (perfect predictions: "
            f"{stats['sia-perfect']['slowed']:.1%} slowed).",
            ablations=(Ablation(
                "minutes of slowdown instead of jobs slowed",
                _change(stats["sia"]["slow_minutes"], stats["maxmin"]["slow_minutes"]),
                f"{stats['sia']['slow_minutes']:,.0f} vs "
                f"{stats['maxmin']['slow_minutes']:,.0f} min", ""),)),
        *slowed_rows,
    ]
    return rows, first


def preemptible_share(workload: Workload, share: float, seed: int) -> Workload:
    """`workload` with a random `share` of its jobs preemptible (SIA's generator makes none)."""
    rng = random.Random(seed)
    return dataclasses.replace(workload, jobs=tuple(
        dataclasses.replace(job, preemptible=rng.random() < share) for job in workload.jobs))


def figure16_rows(progress: Progress, cluster: ClusterSpec, workload: Workload,
                  plain_sia: dict[str, float]) -> list[Row]:
    """§6.4 Figure 16: SIA and HiveD* with locality cells, against FCFS with cells."""
    split = HISTORY_DAYS * DAY
    cells = {"locality": "cells"}
    progress("sia Figure 16: fcfs-pools with locality cells")
    base = _evaluated(run_simulation(cluster, workload, "fcfs-pools", seed=SEED,
                                     settings=cells), split)
    progress("sia Figure 16: sia with locality cells")
    sia = _stats(base, _evaluated(run_simulation(
        cluster, workload, "sia", seed=SEED, settings={"history_days": HISTORY_DAYS, **cells}),
        split))
    progress("sia Figure 16: hived (HiveD*), and HiveD with preemption")
    hived = _stats(base, _evaluated(run_simulation(cluster, workload, "hived", seed=SEED),
                                    split))
    half = preemptible_share(workload, 0.5, SEED)
    preempting = _stats(base, _evaluated(run_simulation(
        cluster, half, "hived", seed=SEED, settings={"preemption": True}), split))
    experiment = "§6.4 Figure 16: locality cells (one 8-GPU server per job)"
    gain = (sia["geomean"] - 1.0) / (plain_sia["geomean"] - 1.0) - 1.0
    return [
        Row(experiment, "mean speedup, SIA vs FCFS (both with cells)", None,
            sia["geomean"] - 1.0, "sizable speed-up (a plot)",
            f"geometric {sia['geomean']:.2f}x, p90 {sia['p90']:.2f}x, "
            f"{sia['slowed']:.1%} slowed",
            "FCFS with cells is itself slower than without (a 4-GPU head waits for a whole "
            "4-GPU cell), which is the reference here.", expected_sign=1),
        Row(experiment, "share of jobs slowed, SIA vs HiveD*", None,
            _change(sia["slowed"], hived["slowed"]), "significantly fewer (a plot)",
            f"{sia['slowed']:.1%} vs {hived['slowed']:.1%} ({sia['slow_minutes']:,.0f} vs "
            f"{hived['slow_minutes']:,.0f} min of slowdown; HiveD*'s mean speedup "
            f"{hived['geomean']:.2f}x)",
            "HiveD* lends every idle cell at once and cannot take it back; SIA lends only "
            "what its predictions leave unreserved, never next to a dedicated cell. Its "
            "slowdowns are WillJobsArrive misses (perfect predictions: 1 % of experiment 0's "
            "jobs): an 8-GPU job of q3 lent q2's whole server 50 minutes before q2's morning "
            "burst, which waited 1.3 hours, and so did every q2 job queued behind it that day "
            "(2026-11-26).",
            expected_sign=-1, ablations=(Ablation(
                "HiveD with preemption, half the jobs preemptible",
                _change(sia["slowed"], preempting["slowed"]),
                f"HiveD {preempting['slowed']:.1%} slowed, mean speedup "
                f"{preempting['geomean']:.2f}x",
                "Preempting lent jobs gives owners their cells back; what still slows are "
                "the non-preemptible half and the preempted jobs themselves."),)),
        Row(experiment, "SIA's speedup gain with cells vs without", None, gain,
            "the constraints reduce the gains from anticipation",
            f"gain {sia['geomean'] - 1.0:+.1%} with cells vs "
            f"{plain_sia['geomean'] - 1.0:+.1%} without (experiment 0)", "", expected_sign=-1),
    ]


def _change(ours: float, base: float) -> float:
    return ours / base - 1.0 if base else (-1.0 if ours < base else 0.0)


def table12_rows(progress: Progress) -> list[Row]:
    """Table 12: each queue's geometric mean speedup under SIA (max-min beside it) in one
    experiment with the paper's four queues, over `TABLE_12_DAYS` after the history."""
    split = HISTORY_DAYS * DAY
    cluster, workload = _experiment(SEED, HISTORY_DAYS + TABLE_12_DAYS, "table12")
    progress(f"sia Table 12: fcfs-pools, sia and maxmin on {len(workload)} jobs of its queues")
    base = _evaluated(run_simulation(cluster, workload, "fcfs-pools", seed=SEED), split)
    queues = [pool.name for pool in cluster.pools]
    geomeans = {}
    for key in ("sia", "maxmin"):
        jobs = _evaluated(_run(cluster, workload, key), split)
        by_queue = [[row for row in jobs if row["pool"] == queue] for queue in queues]
        geomeans[key] = [_stats(base, part)["geomean"] for part in (*by_queue, jobs)]
    counts = [sum(row["pool"] == queue for row in base) for queue in queues]
    experiment = "Table 12: one experiment's four queues"
    rows = []
    for i, label in enumerate([f"queue {i} ({counts[i]} jobs)" for i in range(len(queues))]
                              + [f"all ({len(base)} jobs)"]):
        note = ""
        if i == 2:
            note = ("2-minute jobs on a 2-GPU quota: FCFS queues a working day's bursts for "
                    "hours, and any idle GPU elsewhere drains them, so both sharing schedulers "
                    "speed them up by orders of magnitude; the paper's max-min (9.88x) "
                    "gained far less here than ours.")
        if i == len(queues):
            note = ("All jobs: queue 2's short jobs are most of them, as in the paper "
                    "(30.26x for SIA, 7.61x for max-min).")
        rows.append(Row(experiment, f"SIA's geometric mean speedup, {label}", TABLE_12_SIA[i],
                        geomeans["sia"][i], f"max-min {TABLE_12_MAXMIN[i]}x",
                        f"max-min {geomeans['maxmin'][i]:.2f}x", note, unit="x"))
    return rows


def reproduce(progress: Progress) -> PaperReport:
    """SIA Table 10, the §1/§6 headline, Table 12 and §6.4 Figure 16 on closed-loop users."""
    table10 = table10_rows(progress)
    headline, first = headline_rows(progress)
    cluster, workload = _experiment(SEED, HISTORY_DAYS + EVALUATED_DAYS)
    return PaperReport("sia", PAPERS["sia"].title, table10 + headline + table12_rows(progress)
                       + figure16_rows(progress, cluster, workload, first["sia"]))
