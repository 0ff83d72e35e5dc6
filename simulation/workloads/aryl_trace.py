"""Aryl's production setup (§2, §7.1): the cluster, in the paper's speed-normalised units.

The cluster is 443 training servers of 8 V100 and 520 inference servers of 8 T4, a T4 being
a quarter of a V100 (Table 10). §5.2 says "the on-loan inference GPUs are normalized relative
to training GPUs when calculating the resource capacity", and Table 7 shows what that means
for running times: jobs on on-loan servers ran *no longer* than the same jobs on training
servers under the Baseline (running time = JCT - queuing: 5,803 s vs 6,974 s). A job moved to
T4 therefore gets the T4s worth its V100 request (four T4 per V100) and keeps its speed.

We model that by counting an inference server in V100-equivalent GPUs: 8 T4 = 2 GPUs of the
`T4x4` type at speed 1.0. A job asking for g GPUs takes g of them (4g physical T4) and runs
its V100 time; servers are still lent and reclaimed whole. The literal alternative, 8 T4 at
speed 0.25 each, runs a job that lands on T4 four times slower for as long as it lives: the
scheduler is non-preemptive, so nothing moves it back to a V100 when one frees up, and a
multi-day job launched on a loaned server late in the trace sets the makespan. Which long jobs
end up stranded there depends on which ones a reclaim happens to preempt (a preempted job
restarts on a V100), so the reclaim strategy alone moved the makespan by a third on the same
jobs (`tests/simulation/test_aryl_trace.py`).
"""

from __future__ import annotations

from simulation.model import ClusterSpec, GpuType, PoolKind, PoolSpec

TRAINING_SERVERS = 443
INFERENCE_SERVERS = 520
T4_PER_V100 = 4
NORMALISED_T4 = "T4x4"


def aryl_cluster(training_servers: int = TRAINING_SERVERS,
                 inference_servers: int = INFERENCE_SERVERS) -> ClusterSpec:
    """8-V100 training servers and 8-T4 inference servers counted in V100-equivalents."""
    return ClusterSpec(
        "aryl-production" if (training_servers, inference_servers) == (
            TRAINING_SERVERS, INFERENCE_SERVERS) else
        f"aryl-{training_servers}+{inference_servers}",
        {"V100": GpuType("V100", 1.0, 32.0), NORMALISED_T4: GpuType(NORMALISED_T4, 1.0, 64.0)},
        (PoolSpec("training", PoolKind.TRAINING, "V100", training_servers, 8),
         PoolSpec("inference", PoolKind.INFERENCE, NORMALISED_T4, inference_servers,
                  8 // T4_PER_V100)),
    )
