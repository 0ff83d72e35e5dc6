"""EDL §6.2 transient idle GPUs and §2.3's example: EDL vs stop-resume vs ideal.

A ResNet50 job on 4 persistent GPUs borrows 1, 2 or 4 idle GPUs that are revoked every
4 minutes (paper: EDL reaches at least 97% of ideal; stop-resume is worse than not scaling).
Then the shortest idle interval at which stop-resume stops losing to the baseline (paper:
11.7 min with one idle GPU), by bisection on engine runs and by the closed form, for
stop-resume pauses of 30, 45 and 60 s (EDL Fig. 4b: 40 to over 60 s).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from simulation.composition import create_policy  # noqa: E402
from simulation.dlt_models import strong_scaling_throughput  # noqa: E402
from simulation.engine import EngineConfig, Simulation  # noqa: E402
from simulation.transient import (  # noqa: E402
    SCHEMES,
    analytic_break_even,
    break_even_interval,
    run_transient,
)
from simulation.workloads.gandiva_edl import edl_cluster, edl_synthetic_workload  # noqa: E402


def main() -> None:
    started = time.perf_counter()
    print("EDL §6.2: ResNet50 on 4 persistent GPUs, idle GPUs revoked every 4 min")
    print(f"{'idle GPUs':<10}" + "".join(f"{s:>14}" for s in SCHEMES) + f"{'EDL/ideal':>11}"
          + f"{'loss SR GPU·s':>15}{'loss EDL GPU·s':>16}")
    for transient in (1, 2, 4):
        runs = {s: run_transient(s, 240.0, transient=transient) for s in SCHEMES}
        line = f"{transient:<10}" + "".join(
            f"{runs[s].relative_throughput:>14.3f}" for s in SCHEMES)
        line += f"{runs['edl'].relative_throughput / runs['ideal'].relative_throughput:>11.1%}"
        line += f"{runs['stop-resume'].resource_loss_gpu_seconds:>15.0f}"
        line += f"{runs['edl'].resource_loss_gpu_seconds:>16.0f}"
        print(line)
    print("§2.3 example: 4 GPUs + 1 idle for 4 min, 30 s per stop-resume adjustment")
    print(f"  stop-resume effective {5 * (240 - 2 * 30)} GPU·s vs {4 * 240} GPU·s without it")
    print("break-even idle interval for stop-resume, 1 idle GPU (paper: 11.7 min)")
    for pause in (30.0, 45.0, 60.0):
        simulated = break_even_interval("stop-resume", stop_resume_pause=pause)
        print(f"  pause {pause:>4.0f} s: simulated {simulated / 60:5.2f} min, "
              f"closed form {analytic_break_even(pause) / 60:5.2f} min")
    edl = break_even_interval("edl")
    print(f"EDL break-even: {edl:.1f} s (worker preparation 30 s + broadcast 0.5 s)")
    print("EDL §6.3 synthetic workload (16 x 4-GPU jobs, one per 30 s, 4 x 8 GPUs)")
    for name, mode in (("tiresias", "none"), ("elastic-tiresias", "stop-free"),
                       ("elastic-tiresias", "stop-resume")):
        result = Simulation(edl_cluster(), edl_synthetic_workload(seed=0),
                            create_policy(name, {"compaction_threshold": 0}
                                          if name != "tiresias" else {}),
                            config=EngineConfig(scaling_mode=mode),
                            throughput=strong_scaling_throughput()).run()
        s = result.summary
        print(f"  {name:<17}{mode:<12} JCT mean {s['jct']['mean']:8.0f} s, makespan "
              f"{s['makespan']:7.0f} s, scaling ops {s['scaling_ops']:3d}, "
              f"loss {s['overhead_gpu_seconds']:8.0f} GPU·s")
    print(f"wall {time.perf_counter() - started:.1f} s")


if __name__ == "__main__":
    main()
