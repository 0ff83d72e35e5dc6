"""EDL (Wu et al., TPDS'22) §2.3, §6.2 and §6.3 headline results, paper beside ours.

Table 3 / Figure 16 (§6.3 "production cluster simulation"): Tiresias vs Elastic-Tiresias,
three queues split at 500 and 10,000 GPU·s, N = 10, r = 0.5, on the Microsoft (Philly)
trace with models "chosen uniformly at random from TensorFlow's official benchmarks".
What we assumed where §6.3 is silent or its input is private:
- Trace: the paper's >100,000-job trace is not public in that form; the closest public input
  is `pollux_philly.csv` (82,247 Philly jobs). A full run of the elastic policy on it takes
  too long for this command, so we take the 3,000 jobs from index 30,000 (5.7 days of the
  busiest stretch of the trace, offered load about 690 GPUs), shifted to start at 0.
- Cluster: the paper does not state it; its Tiresias mean JCT is 218x its median, a heavily
  overloaded cluster. We use 8 servers x 8 V100 (64 GPUs), where Tiresias' mean is about
  200x its median on this slice; an ablation on 16 servers shows the gain shrinks with load.
- Elastic jobs: §5.1 says jobs are elastic unless users mark them inelastic, so every job
  is elastic: min = ⌈r·p⌉ workers (r = 0.5), max = 2p (the paper gives no upper bound;
  expansion is further limited by the locality rule of footnote 4).
- Scaling: strong scaling (§6 "by default"), the per-model curves of `dlt_models`
  (`scaling=models`); resizes cost EDL's stop-free overheads (the policy's engine default).
Figure 16 is a plot with no numbers: its rows check the direction (higher utilisation and
cluster efficiency). Cluster efficiency averaged over a run is the 1-GPU-equivalent work
done / (GPUs x makespan) (§6.3's normalised throughput S(p)/S(1) summed over jobs).

§2.3 example and §6.2 "use of transient resources" are engine runs of
`simulation.transient` (ResNet50 on 4 persistent GPUs, idle GPUs revoked every 4 minutes).
"""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path

import numpy as np

from simulation.dlt_models import EDL_BENCHMARK_MODELS, strong_scaling_throughput
from simulation.metrics import RunResult
from simulation.model import ClusterSpec, GpuType, PoolKind, PoolSpec, Workload
from simulation.reproductions import PAPERS, Progress
from simulation.reproductions.report import Ablation, PaperReport, Row
from simulation.runner import run_simulation
from simulation.throughput import ThroughputModel
from simulation.transient import analytic_break_even, break_even_interval, run_transient
from simulation.workloads import load_trace

TRACES_DIR = Path(__file__).resolve().parents[2].parent / "shared" / "traces"
PHILLY_SLICE = (30_000, 33_000)
SERVERS = 8
LIGHTER_SERVERS = 16
QOS_RATIO = 0.5
SETTINGS = {"scaling": "models"}


def edl_philly_workload(
    base: Workload, lo: int, hi: int, *, elastic: bool = True, seed: int = 0
) -> Workload:
    """Jobs `lo:hi` of `base` from time 0, each with a uniformly random TF-benchmark model;
    elastic between ⌈r·p⌉ and 2p GPUs (module docstring), or all inelastic."""
    jobs = base.jobs[lo:hi]
    start = jobs[0].submit_time
    picks = np.random.default_rng(seed).integers(0, len(EDL_BENCHMARK_MODELS), len(jobs))
    out = []
    for job, pick in zip(jobs, picks, strict=True):
        bounds = ({"min_workers": math.ceil(QOS_RATIO * job.num_gpus),
                   "max_workers": 2 * job.num_gpus} if elastic else {})
        out.append(replace(job, submit_time=job.submit_time - start,
                           model=EDL_BENCHMARK_MODELS[int(pick)].name, **bounds))
    return Workload(tuple(out), source=f"{base.source}[{lo}:{hi}]", format="generated")


def edl_cluster(servers: int = SERVERS) -> ClusterSpec:
    return ClusterSpec(f"{servers}x8", {"V100": GpuType("V100")},
                       (PoolSpec("gpu", PoolKind.TRAINING, "V100", servers, 8),))


def cluster_efficiency(result: RunResult, gpus: int) -> float:
    """Σ_j S(p_j)/S(1) over the run, averaged: 1-GPU-equivalent work / (GPUs x makespan)."""
    curves = strong_scaling_throughput()
    work = sum(row["duration"] * curves.speedup(row["model"], row["num_gpus"])
               for row in result.jobs if row["end"] is not None)
    return work / (gpus * result.summary["makespan"])


def _change(ours: float, base: float) -> float:
    return ours / base - 1.0


def table3(progress: Progress, workload: Workload | None = None,
           inelastic: Workload | None = None, servers: int = SERVERS,
           lighter_servers: int = LIGHTER_SERVERS) -> list[Row]:
    """Table 3 and Figure 16 rows, with the all-inelastic ablation."""
    if workload is None or inelastic is None:
        philly = load_trace(TRACES_DIR / "pollux_philly.csv")
        workload = edl_philly_workload(philly, *PHILLY_SLICE)
        inelastic = edl_philly_workload(philly, *PHILLY_SLICE, elastic=False)
    cluster = edl_cluster(servers)
    gpus = cluster.total_gpus
    progress(f"edl Table 3: tiresias, {len(workload)} Philly jobs on {gpus} GPUs")
    base = run_simulation(cluster, workload, "tiresias", settings=SETTINGS)
    progress("edl Table 3: elastic-tiresias")
    ours = run_simulation(cluster, workload, "elastic-tiresias", settings=SETTINGS)
    progress("edl Table 3 ablation: elastic-tiresias with every job inelastic")
    flat = run_simulation(cluster, inelastic, "elastic-tiresias", settings=SETTINGS)
    b, o, f = base.summary, ours.summary, flat.summary
    lighter = edl_cluster(lighter_servers)
    progress(f"edl Table 3 ablation: both on {lighter.total_gpus} GPUs (lighter load)")
    lb = run_simulation(lighter, workload, "tiresias", settings=SETTINGS).summary
    lo = run_simulation(lighter, workload, "elastic-tiresias", settings=SETTINGS).summary
    setup = (f"Philly jobs {PHILLY_SLICE[0]}-{PHILLY_SLICE[1]} of pollux_philly.csv on "
             f"{gpus} GPUs (the paper's trace and cluster are not public), every job "
             f"elastic {QOS_RATIO:g}p-2p, random TF-benchmark models, strong scaling.")
    inelastic_note = ("Every job inelastic (min = max): nothing can be scaled, yet compaction "
                      "(when more than N jobs wait) still starts any waiting job that fits "
                      "the free GPUs, in Tiresias order, before Tiresias' own plan. On this "
                      "slice that alone gives most of the gain, so it is not elasticity. On "
                      "muri_trace3 (8x8, scaling=models) we measured -0.5 % inelastic and "
                      "-7.7 % with every job made elastic the same way.")
    rows = []
    for stat, paper, detail in (("mean", 24_658 / 235_068 - 1, "24,658 vs 235,068 s"),
                                ("median", 561 / 1_080 - 1, "561 vs 1,080 s"),
                                ("p95", 88_886 / 1_914_470 - 1, "88,886 vs 1,914,470 s")):
        ablations = ()
        if stat == "mean":
            ablations = (Ablation("every job inelastic",
                                  _change(f["jct"]["mean"], b["jct"]["mean"]),
                                  f"{f['jct']['mean']:,.0f} s", inelastic_note),
                         Ablation(f"{lighter.total_gpus} GPUs",
                                  _change(lo["jct"]["mean"], lb["jct"]["mean"]),
                                  f"{lo['jct']['mean']:,.0f} vs {lb['jct']['mean']:,.0f} s; "
                                  f"Tiresias mean/median "
                                  f"{lb['jct']['mean'] / lb['jct']['median']:.0f}x",
                                  "Same jobs on twice the GPUs: less queuing, so less for "
                                  "compaction to save; the gain grows with overload."))
        rows.append(Row(
            "Table 3", f"{stat} JCT", paper, _change(o["jct"][stat], b["jct"][stat]), detail,
            f"{o['jct'][stat]:,.0f} vs {b['jct'][stat]:,.0f} s",
            setup + (f" Tiresias mean/median: paper 218x, ours "
                     f"{b['jct']['mean'] / b['jct']['median']:.0f}x." if stat == "mean"
                     else " The policy leaves the median JCT unchanged on this slice."
                     if stat == "median" else ""),
            ablations=ablations))
    util_b, util_o = b["gpu_utilization"]["training"], o["gpu_utilization"]["training"]
    eff_b, eff_o = cluster_efficiency(base, gpus), cluster_efficiency(ours, gpus)
    rows.append(Row("Figure 16", "GPU utilisation", None, _change(util_o, util_b),
                    "higher (plot, no number)", f"{util_o:.1%} vs {util_b:.1%}",
                    "Time-averaged over each run; same setup as Table 3.", expected_sign=1))
    rows.append(Row("Figure 16", "cluster efficiency", None, _change(eff_o, eff_b),
                    "higher (plot, no number)", f"{eff_o:.3f} vs {eff_b:.3f}",
                    "Σ S(p)/S(1) per GPU averaged over the run: both runs do the same work, "
                    "so it rises as the makespan falls.", expected_sign=1))
    return rows


def transient_rows(progress: Progress) -> list[Row]:
    """§2.3's worked example and §6.2's transient-GPU results as engine runs."""
    progress("edl §2.3: 4 GPUs + 1 idle for 4 min, 30 s stop-resume, linear GPU·s")
    linear = ThroughputModel()
    sr = run_transient("stop-resume", 240.0, stop_resume_pause=30.0, throughput=linear)
    progress("edl §6.2: ResNet50 + 1 idle GPU revoked every 4 min, four schemes")
    runs = {s: run_transient(s, 240.0) for s in ("stop-resume", "edl", "ideal")}
    progress("edl §6.2: stop-resume break-even idle interval (bisection on engine runs)")
    break_even = break_even_interval("stop-resume") / 60
    closed = analytic_break_even(45.0) / 60
    edl_vs_ideal = runs["edl"].relative_throughput / runs["ideal"].relative_throughput
    return [
        Row("§2.3 example", "stop-resume effective GPU·s vs not scaling", 900 / 960 - 1,
            sr.relative_throughput - 1, "900 vs 960 GPU·s",
            f"{sr.relative_throughput:.4f} x baseline throughput",
            "Engine run, 40 idle/busy cycles, linear scaling as in §2.3's arithmetic. The "
            "paper puts both 30 s adjustments inside the 4-minute idle window; in the engine "
            "the scale-in pause falls after the GPU is revoked, on 4 GPUs, so the loss per "
            "cycle is 30 s x 1 GPU net rather than 60 s x 5 GPUs - 60 s x 4 GPUs."),
        Row("§6.2 Fig. 14b", "stop-resume throughput vs baseline", None,
            runs["stop-resume"].relative_throughput - 1, "below baseline (plot)",
            f"{runs['stop-resume'].relative_throughput:.3f} x baseline",
            "45 s stop-resume pause (§2.3: 40 to over 60 s), strong scaling ResNet50.",
            expected_sign=-1),
        Row("§6.2 Fig. 14b", "EDL throughput vs ideal", -0.03, edl_vs_ideal - 1,
            "at least 97 % of ideal", f"{edl_vs_ideal:.1%} of ideal",
            "The paper gives a bound (≥ 97 %), so -3 % is its worst case; a smaller loss "
            "than -3 % is within the claim even where the verdict calls the size different."),
        Row("§6.2", "stop-resume break-even idle interval", 11.7, break_even,
            "11.7 min", f"{break_even:.2f} min (closed form {closed:.2f} min)",
            "Shortest revocation interval at which stop-resume beats not scaling, 1 idle "
            "GPU, 45 s pause; it depends on the pause and the model's scaling curve.",
            unit="min"),
    ]


def reproduce(progress: Progress) -> PaperReport:
    """EDL §2.3, §6.2 (transient GPUs) and §6.3 (Table 3, Figure 16)."""
    return PaperReport("edl", PAPERS["edl"].title,
                       transient_rows(progress) + table3(progress))
