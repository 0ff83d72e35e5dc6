"""Gandiva (Xiao et al., OSDI'18) §6.3 and §6.4 headline results, paper beside ours.

§6.3 (time-slicing and packing, migration off, no grow-shrink): the eight-model mix of
Table 1, 1,000 jobs over two hours on 45 four-GPU servers (`gandiva_eight_model_workload`,
five draws as for §6.4 below),
Gandiva against "a baseline scheduler that does bin-packing but does not oversubscribe"
(FIFO with backfill). Paper: mean time to the first 100 mini-batches 498 s vs 2,203 s
(-77 %), utilisation over the stable regime 20-200 min 62.8 % vs 50.1 % (+25 %).
Utilisation is Table 1's GPU-core utilisation (GPUs x share x the model's utilisation).

§6.4 (time-slicing and migration, Table 5): the paper replays a private 9-day, 8,800-job
Microsoft trace on 100 GPUs against YARN's capacity scheduler. The trace is not public; the
closest input is `gandiva_trace_mix_workload` (Table 2's models in the trace's 10/60/30 %
CV/NLP/Speech mix, lognormal running times), 500 jobs at 60 an hour on 25 four-GPU servers,
in five draws (`DRAWS`): the comparison swings with the draw, so each figure is the
median draw's, with every draw's shown.
The capacity scheduler with one queue is FIFO with exclusive GPUs, so the baseline is
`fifo` without backfill. Paper: mean JCT 832 -> 656 min (-21 %), makespan 13,371 ->
11,349 min (-15 %); the paper quotes these as 26.8 % and 17.8 % "improvement", i.e.
baseline / Gandiva - 1.

Gandiva time-slices by suspend/resume in 60 s round-robin quanta (its default,
`time_slicing="quanta"`); the fluid model (every job on an over-subscribed server at N/M of
its speed at once) is shown as an ablation of §6.3: without the wait for a turn, a job's
first 100 mini-batches come within seconds, which is why it overshoots the paper's -77 %.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from simulation.composition import create_policy
from simulation.dlt_models import model_info
from simulation.engine import EngineConfig, Simulation
from simulation.metrics import RunResult
from simulation.model import Workload
from simulation.policies.base import Policy
from simulation.reproductions import PAPERS, Progress
from simulation.reproductions.report import Ablation, PaperReport, Row
from simulation.workloads.gandiva_edl import (
    gandiva_cluster,
    gandiva_eight_model_workload,
    gandiva_trace_mix_workload,
)

WINDOW = (20 * 60.0, 200 * 60.0)  # §6.3's stable regime
DRAWS = (0, 1, 2, 3, 4)  # seeds of each section's workload
GANDIVA_63 = {"migration": False, "grow_shrink": False, "log_utilisation": True}
GANDIVA_64 = {"grow_shrink": False}


def baseline_utilisation(jobs: list[dict], gpus: int) -> float:
    """Busy GPU-cores of non-preemptive jobs (each at full speed) inside WINDOW."""
    lo, hi = WINDOW
    busy = 0.0
    for row in jobs:
        if row["start"] is None:
            continue
        end = row["end"] if row["end"] is not None else hi
        overlap = max(0.0, min(end, hi) - max(row["start"], lo))
        busy += overlap * row["num_gpus"] * model_info(row["model"]).gpu_util
    return busy / (gpus * (hi - lo))


def logged_utilisation(log: list[tuple[float, float]], gpus: int) -> float:
    """Gandiva's logged busy GPU-cores (time, value steps) averaged over WINDOW."""
    lo, hi = WINDOW
    busy = 0.0
    for (t0, value), (t1, _) in zip(log, log[1:], strict=False):
        busy += value * max(0.0, min(t1, hi) - max(t0, lo))
    return busy / (gpus * (hi - lo))


def run_gandiva_experiment(
    workload: Workload, servers: int, policy: str, params: dict[str, object]
) -> tuple[RunResult, Policy]:
    """One engine run on `servers` four-GPU P40 servers; 1 s migration pause (§6.1)."""
    scheduler = create_policy(policy, params)
    result = Simulation(gandiva_cluster(servers), workload, scheduler,
                        config=EngineConfig(migration_pause=1.0)).run()
    return result, scheduler


def _change(ours: float, base: float) -> float:
    return ours / base - 1.0


def last_to_end(result: RunResult) -> str:
    """The job whose end is the run's makespan: its work, size and how it ran.

    On the 500-job stand-in the makespan is the end of one of its longest jobs (lognormal
    running times up to three days against eight hours of arrivals), not the time to work
    through a loaded trace as over the paper's nine days; this says which job and why it
    ended when it did ("ran at X % of full speed": its work over its time since it started,
    under suspend/resume, packing and migration pauses)."""
    row = max((r for r in result.jobs if r["end"] is not None), key=lambda r: r["end"])
    ran = row["end"] - row["start"]
    rank = 1 + sum(r["duration"] > row["duration"] for r in result.jobs)
    teen = rank % 100 in (11, 12, 13)
    suffix = "th" if teen else {1: "st", 2: "nd", 3: "rd"}.get(rank % 10, "th")
    nth = "" if rank == 1 else f"{rank}{suffix} "
    hours = {key: row[key] / 3600 for key in ("duration", "submit", "end", "queuing")}
    return (f"{row['job_id']}, the {nth}longest of {len(result.jobs)} "
            f"({hours['duration']:.1f} h of work on {row['num_gpus']} GPUs, submitted at "
            f"{hours['submit']:.1f} h), ending at {hours['end']:.1f} h: queued "
            f"{hours['queuing']:.1f} h, then ran at {row['duration'] / ran:.0%} of full speed")


def section_63(progress: Progress, workloads: list[Workload] | None = None) -> list[Row]:
    """§6.3 on `DRAWS` draws of the paper's job mix: each figure is the median draw's
    change, every draw's in the note (over draws 0-3 the utilisation gain ran from +14 % to
    +26 %; the early-feedback gain hardly moves)."""
    workloads = workloads or [gandiva_eight_model_workload(seed=seed) for seed in DRAWS]
    gpus = gandiva_cluster().total_gpus
    feedback, utilisation = [], []
    for i, workload in enumerate(workloads):
        progress(f"gandiva §6.3, draw {i + 1} of {len(workloads)}: baseline (fifo + "
                 "backfill), gandiva (time-slicing in quanta + packing), gandiva with fluid "
                 f"time-slicing; {len(workload)} jobs")
        base, _ = run_gandiva_experiment(workload, 45, "fifo", {"backfill": True})
        ours, policy = run_gandiva_experiment(workload, 45, "gandiva", GANDIVA_63)
        fluid, fluid_policy = run_gandiva_experiment(workload, 45, "gandiva",
                                                     {**GANDIVA_63, "time_slicing": "fluid"})
        feedback.append(tuple(r.summary["early_feedback"]["mean"] for r in (base, ours, fluid)))
        utilisation.append((baseline_utilisation(base.jobs, gpus),
                            logged_utilisation(policy.utilisation_log, gpus),
                            logged_utilisation(fluid_policy.utilisation_log, gpus)))
    fb = median_draw(feedback, lambda seconds: f"{seconds:,.0f} s")
    util = median_draw(utilisation, lambda share: f"{share:.1%}")
    fluid_note = ("time-slicing as a fluid N/M share instead of suspend/resume quanta: an "
                  "over-subscribed job starts at once at a fraction of its speed.")
    return [
        Row("§6.3 early feedback", "mean time to 100 mini-batches", 498 / 2203 - 1,
            fb.change, "498 s vs 2,203 s", fb.detail,
            "Same workload generator and cluster as the paper; suspend/resume in 60 s "
            "round-robin quanta, so a job arriving at a full server waits for its turn. The "
            f"fluid ablation shows what skipping that wait does to this metric. {fb.each}",
            ablations=(Ablation("fluid share", fb.ablated, "median",
                                f"{fluid_note} {fb.ablated_each}"),)),
        Row("§6.3 utilisation", "GPU utilisation 20-200 min", 62.8 / 50.1 - 1,
            util.change, "62.8 % vs 50.1 %", util.detail,
            "Paper's own job mix; its baseline sat at 50 %, ours at "
            f"{utilisation[util.index][0]:.0%} in the median draw (the mix's running times "
            "and GPU demand are drawn from the ranges §6.3 gives, not its exact jobs), so "
            f"less headroom is left for packing. {util.each}",
            ablations=(Ablation("fluid share", util.ablated, "median",
                                f"{fluid_note} {util.ablated_each}"),)),
    ]


def section_64(progress: Progress, workloads: list[Workload] | None = None,
               servers: int = 25) -> list[Row]:
    """Table 5 on `DRAWS` draws of the stand-in workload: each figure is the median
    draw's change (median of the draws' changes), every draw's change in the note.

    One draw is not enough: the comparison swings with the draw (mean JCT from -32 % to
    +4 % over the five), as a few long jobs decide how much over-subscription costs."""
    workloads = workloads or [gandiva_trace_mix_workload(num_jobs=500, seed=seed)
                              for seed in DRAWS]
    draws = []
    for i, workload in enumerate(workloads):
        progress(f"gandiva §6.4, draw {i + 1} of {len(workloads)}: capacity scheduler "
                 f"(fifo), gandiva, gandiva without packing; {len(workload)} jobs")
        base, _ = run_gandiva_experiment(workload, servers, "fifo", {})
        ours, _ = run_gandiva_experiment(workload, servers, "gandiva", GANDIVA_64)
        unpacked, _ = run_gandiva_experiment(workload, servers, "gandiva",
                                             {**GANDIVA_64, "packing": False})
        draws.append((base, ours, unpacked))
    private = ("The 9-day Microsoft trace is private: closest public input is Table 2's "
               f"model mix with lognormal running times (gandiva_trace_mix_workload), "
               f"{len(draws)} draws of it.")
    jct = median_draw([tuple(r.summary["jct"]["mean"] for r in runs) for runs in draws],
                      _minutes)
    span = median_draw([tuple(r.summary["makespan"] for r in runs) for runs in draws],
                       _minutes)
    base, ours, _ = draws[span.index]
    return [
        Row("§6.4 trace (Table 5)", "mean JCT", 656 / 832 - 1, jct.change, "656 vs 832 min",
            jct.detail, f"{private} {jct.each}",
            ablations=(Ablation("packing off", jct.ablated, "median",
                                f"Gandiva with packing disabled, all else equal. "
                                f"{jct.ablated_each}"),)),
        Row("§6.4 trace (Table 5)", "makespan", 11349 / 13371 - 1, span.change,
            "11,349 vs 13,371 min", span.detail,
            f"{private} {span.each} Here the makespan is the end of one of the longest "
            "jobs, not the time to work through nine days of load: in the median draw, "
            "under FIFO the "
            f"last job to end is {last_to_end(base)}; under Gandiva {last_to_end(ours)} "
            "(Algorithm 1 starts every job at once, over-subscribing servers, so a long "
            "job shares its GPUs until departures leave it room). The ablation without "
            "packing isolates packing's share.",
            ablations=(Ablation("packing off", span.ablated, "median",
                                f"Gandiva with packing disabled, all else equal. "
                                f"{span.ablated_each}"),)),
    ]


@dataclass(frozen=True)
class MedianDraw:
    """A figure's change over the draws: the median draw's, and how to show it."""

    index: int  # the median draw
    change: float  # Gandiva against the baseline in that draw
    detail: str  # its figures
    each: str  # every draw's change
    ablated: float  # the median of the draws' changes under the ablation
    ablated_each: str


def median_draw(figures: list[tuple[float, ...]], show: Callable[[float], str]) -> MedianDraw:
    """Per draw (the baseline's figure, Gandiva's, the ablation's): the draw whose change
    (Gandiva against the baseline) is the median, the lower of the middle two for an even
    count, shown with `show`, and every draw's change listed; the ablation's median."""
    changes = [_change(ours, base) for base, ours, _ in figures]
    ablated = [_change(off, base) for base, _, off in figures]
    index = sorted(range(len(figures)), key=changes.__getitem__)[(len(figures) - 1) // 2]
    base, ours, _ = figures[index]
    middle = sorted(ablated)[(len(ablated) - 1) // 2]
    return MedianDraw(index, changes[index], f"{show(ours)} vs {show(base)}, median draw",
                      _each(changes), middle, _each(ablated))


def _minutes(seconds: float) -> str:
    return f"{seconds / 60:,.0f} min"


def _each(changes: list[float]) -> str:
    return "Each draw: " + ", ".join(f"{c:+.1%}" for c in changes) + "."


def reproduce(progress: Progress) -> PaperReport:
    """Gandiva §6.3 (early feedback, utilisation) and §6.4 (Table 5)."""
    return PaperReport("gandiva", PAPERS["gandiva"].title,
                       section_63(progress) + section_64(progress))
