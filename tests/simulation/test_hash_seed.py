"""The same inputs give the same schedule whatever Python's string hash seed.

A set of job ids iterates in an order that depends on `PYTHONHASHSEED`, which differs
between processes: the CLI, a Celery worker and the test process each draw their own. A
policy whose choice follows such an order (a tie broken by a set's iteration) gives
different job records in different processes, which the in-process pinned digests never
see. Each case below runs in two subprocesses under two fixed seeds, and their job
digests must agree.

The cases exercise what has gone wrong before: Gandiva's §6.3 run (its first 600 jobs,
where a job once sat in two packs) time-slices hundreds of units per server and packs (two
packs once tied on their launch ranks, and the rotation's newcomers then came out in set
order); Muri-L groups and matches jobs; and Tiresias with Gandiva's packing stage packs
Philly jobs given Table 1's models.
"""

from __future__ import annotations

import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

RUNS = """
from pathlib import Path
from simulation.dlt_models import GANDIVA_TABLE1
from simulation.metrics import job_digest
from simulation.model import ClusterSpec, GpuType, PoolKind, PoolSpec, Workload
from simulation.reproductions.gandiva import GANDIVA_63, run_gandiva_experiment
from simulation.runner import run_simulation
from simulation.workloads import load_cluster_spec, load_trace
from simulation.workloads.gandiva_edl import gandiva_eight_model_workload
from simulation.workloads.model_mix import with_models

traces = Path({traces!r})
section_63 = Workload(gandiva_eight_model_workload(seed=0).jobs[:600])
result, _ = run_gandiva_experiment(section_63, 45, "gandiva", GANDIVA_63)
print("gandiva §6.3", job_digest(result.jobs))
spec = load_cluster_spec(traces / "muri_cluster_spec_n8g8.csv")
jobs = Workload(load_trace(traces / "muri_trace1.csv").jobs[:400])
print("muri-l", job_digest(run_simulation(spec, jobs, "muri-l").jobs))
philly = load_trace(traces / "pollux_philly.csv").jobs[:1500]
jobs = with_models(Workload(philly), tuple(m.name for m in GANDIVA_TABLE1))
spec = ClusterSpec("30x8", {{"V100": GpuType("V100", 1.0, 32.0)}},
                   (PoolSpec("training", PoolKind.TRAINING, "V100", 30, 8),))
result = run_simulation(spec, jobs, "tiresias+gandiva-pack")
assert result.summary["policy_counters"]["packings_kept"] > 0
print("tiresias+gandiva-pack", job_digest(result.jobs))
"""


def _digests(seed: int) -> str:
    code = RUNS.format(traces=str(REPO.parent / "shared" / "traces"))
    env = {**os.environ, "PYTHONHASHSEED": str(seed), "PYTHONPATH": str(REPO)}
    done = subprocess.run([sys.executable, "-c", code], env=env, cwd=REPO,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def test_two_hash_seeds_give_the_same_job_records() -> None:
    with ThreadPoolExecutor(2) as pool:
        first, second = pool.map(_digests, (1, 4))
    assert len(first.splitlines()) == 3
    assert first == second
