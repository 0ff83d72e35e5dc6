"""Gandiva (Xiao et al., OSDI'18) §6.3 and §6.4 headline results, paper beside ours.

§6.3 (time-slicing and packing, migration off, no grow-shrink): the eight-model mix of
Table 1, 1,000 jobs over two hours on 45 four-GPU servers (`gandiva_eight_model_workload`),
Gandiva against "a baseline scheduler that does bin-packing but does not oversubscribe"
(FIFO with backfill). Paper: mean time to the first 100 mini-batches 498 s vs 2,203 s
(-77 %), utilisation over the stable regime 20-200 min 62.8 % vs 50.1 % (+25 %).
Utilisation is Table 1's GPU-core utilisation (GPUs x share x the model's utilisation).

§6.4 (time-slicing and migration, Table 5): the paper replays a private 9-day, 8,800-job
Microsoft trace on 100 GPUs against YARN's capacity scheduler. The trace is not public; the
closest input is `gandiva_trace_mix_workload` (Table 2's models in the trace's 10/60/30 %
CV/NLP/Speech mix, lognormal running times), 500 jobs at 60 an hour on 25 four-GPU servers,
in five draws (`DRAWS_64`): the comparison swings with the draw, so each figure is the
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
DRAWS_64 = (0, 1, 2, 3, 4)  # seeds of §6.4's stand-in workload
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


def section_63(progress: Progress, workload: Workload | None = None) -> list[Row]:
    workload = workload or gandiva_eight_model_workload(seed=0)
    gpus = gandiva_cluster().total_gpus
    progress(f"gandiva §6.3: baseline (fifo + backfill), {len(workload)} jobs")
    base, _ = run_gandiva_experiment(workload, 45, "fifo", {"backfill": True})
    progress("gandiva §6.3: gandiva (time-slicing in quanta + packing)")
    ours, policy = run_gandiva_experiment(workload, 45, "gandiva", GANDIVA_63)
    progress("gandiva §6.3 ablation: fluid time-slicing")
    fluid, fluid_policy = run_gandiva_experiment(workload, 45, "gandiva",
                                                 {**GANDIVA_63, "time_slicing": "fluid"})
    fb_base = base.summary["early_feedback"]["mean"]
    fb_ours = ours.summary["early_feedback"]["mean"]
    fb_fluid = fluid.summary["early_feedback"]["mean"]
    util_base = baseline_utilisation(base.jobs, gpus)
    util_ours = logged_utilisation(policy.utilisation_log, gpus)
    util_fluid = logged_utilisation(fluid_policy.utilisation_log, gpus)
    fluid_note = ("time-slicing as a fluid N/M share instead of suspend/resume quanta: an "
                  "over-subscribed job starts at once at a fraction of its speed")
    return [
        Row("§6.3 early feedback", "mean time to 100 mini-batches", 498 / 2203 - 1,
            _change(fb_ours, fb_base), "498 s vs 2,203 s", f"{fb_ours:.0f} s vs {fb_base:.0f} s",
            "Same workload generator and cluster as the paper; suspend/resume in 60 s "
            "round-robin quanta, so a job arriving at a full server waits for its turn. The "
            "fluid ablation shows what skipping that wait does to this metric.",
            ablations=(Ablation("fluid share", _change(fb_fluid, fb_base),
                                f"{fb_fluid:.0f} s", fluid_note),)),
        Row("§6.3 utilisation", "GPU utilisation 20-200 min", 62.8 / 50.1 - 1,
            _change(util_ours, util_base), "62.8 % vs 50.1 %",
            f"{util_ours:.1%} vs {util_base:.1%}",
            "Paper's own job mix; its baseline sat at 50 %, ours at "
            f"{util_base:.0%} (the mix's running times and GPU demand are drawn from the "
            "ranges §6.3 gives, not its exact jobs), so less headroom is left for packing.",
            ablations=(Ablation("fluid share", _change(util_fluid, util_base),
                                f"{util_fluid:.1%}", fluid_note),)),
    ]


def section_64(progress: Progress, workloads: list[Workload] | None = None,
               servers: int = 25) -> list[Row]:
    """Table 5 on `DRAWS_64` draws of the stand-in workload: each figure is the median
    draw's change (median of the draws' changes), every draw's change in the note.

    One draw is not enough: the comparison swings with the draw (mean JCT from -32 % to
    +4 % over the five), as a few long jobs decide how much over-subscription costs."""
    workloads = workloads or [gandiva_trace_mix_workload(num_jobs=500, seed=seed)
                              for seed in DRAWS_64]
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
    jct = median_draw(draws, lambda r: r.summary["jct"]["mean"])
    span = median_draw(draws, lambda r: r.summary["makespan"])
    base, ours, _ = draws[span.index]
    return [
        Row("§6.4 trace (Table 5)", "mean JCT", 656 / 832 - 1, jct.change, "656 vs 832 min",
            jct.detail, f"{private} {jct.each}",
            ablations=(Ablation("packing off", jct.unpacked, "median",
                                f"Gandiva with packing disabled, all else equal. "
                                f"{jct.unpacked_each}"),)),
        Row("§6.4 trace (Table 5)", "makespan", 11349 / 13371 - 1, span.change,
            "11,349 vs 13,371 min", span.detail,
            f"{private} {span.each} Here the makespan is the end of one of the longest "
            "jobs, not the time to work through nine days of load: in the median draw, "
            "under FIFO the "
            f"last job to end is {last_to_end(base)}; under Gandiva {last_to_end(ours)} "
            "(Algorithm 1 starts every job at once, over-subscribing servers, so a long "
            "job shares its GPUs until departures leave it room). The ablation without "
            "packing isolates packing's share.",
            ablations=(Ablation("packing off", span.unpacked, "median",
                                f"Gandiva with packing disabled, all else equal. "
                                f"{span.unpacked_each}"),)),
    ]


@dataclass(frozen=True)
class MedianDraw:
    """A figure's change over the draws: the median draw's, and how to show it."""

    index: int  # the median draw
    change: float  # Gandiva against FIFO in that draw
    detail: str  # its figures
    each: str  # every draw's change
    unpacked: float  # the median of the draws' changes without packing
    unpacked_each: str


def median_draw(draws: list[tuple[RunResult, RunResult, RunResult]],
                 figure: Callable[[RunResult], float]) -> MedianDraw:
    """The draw whose change of `figure` (Gandiva against FIFO) is the median, the lower
    of the middle two for an even count, with every draw's change listed."""
    changes = [_change(figure(ours), figure(base)) for base, ours, _ in draws]
    unpacked = [_change(figure(off), figure(base)) for base, _, off in draws]
    index = sorted(range(len(draws)), key=changes.__getitem__)[(len(draws) - 1) // 2]
    base, ours, off = draws[index]
    detail = f"{figure(ours) / 60:,.0f} vs {figure(base) / 60:,.0f} min, median draw"
    middle = sorted(unpacked)[(len(unpacked) - 1) // 2]
    return MedianDraw(index, changes[index], detail, _each(changes), middle, _each(unpacked))


def _each(changes: list[float]) -> str:
    return "Each draw: " + ", ".join(f"{c:+.1%}" for c in changes) + "."


def reproduce(progress: Progress) -> PaperReport:
    """Gandiva §6.3 (early feedback, utilisation) and §6.4 (Table 5)."""
    return PaperReport("gandiva", PAPERS["gandiva"].title,
                       section_63(progress) + section_64(progress))
