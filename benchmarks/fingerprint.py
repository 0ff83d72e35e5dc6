"""Same answers? A digest of every job's record per policy and trace, to compare two commits.

A speed-up or a refactor must leave each job's start, end, preemptions and migrations as they
were. This runs each policy on each case and prints one line per (case, policy): a digest of
the job records (times rounded to the microsecond) and the summary's headline figures, so a
difference names the case and the policy. Save the lines of a known-good commit and check
a later one against them:

    .venv/bin/python benchmarks/fingerprint.py --save /tmp/before.txt
    .venv/bin/python benchmarks/fingerprint.py --check /tmp/before.txt
    .venv/bin/python benchmarks/fingerprint.py --policies srtf,srsf --cases muri3,philly3k
    .venv/bin/python benchmarks/fingerprint.py --policies gandiva --set time_slicing=fluid

Save and check under different hash seeds (`PYTHONHASHSEED=1` for `--save`, `4` for
`--check`): a choice that follows a set's iteration order gives other records in another
process, as the CLI, a worker and the tests each draw their own seed
(`tests/simulation/test_hash_seed.py`).

`--set` passes policy parameters to every run, so a mode that is no longer a policy's
default can still be checked against the lines saved when it was.

Cases: the Muri traces 1-4 on their 8 × 8 spec, the Tiresias 60-job trace on its 16 × 4 spec,
the first 3,000 Philly jobs on 60 × 8 GPUs (contended), and `sia0`, the SIA headline's
experiment 0 (four queues with quotas, 21 days of closed-loop history + 3 evaluated) for the
queue policies (`--policies sia,sia-vc,fcfs-pools,maxmin,ssf,gssf`; not in the default
cases, as the other policies ignore quotas).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
TRACES = REPO.parent / "shared" / "traces"
sys.path.insert(0, str(REPO))

from simulation.metrics import job_digest  # noqa: E402
from simulation.model import ClusterSpec, GpuType, PoolKind, PoolSpec, Workload  # noqa: E402
from simulation.runner import run_simulation  # noqa: E402
from simulation.workloads import load_cluster_spec, load_trace  # noqa: E402

POLICIES = ("fifo", "sjf", "srtf", "srsf", "tiresias", "elastic-tiresias", "themis", "antman",
            "gandiva", "muri-s", "muri-l")
CASES = ("muri1", "muri2", "muri3", "muri4", "tiresias60", "philly3k")
OTHER_CASES = ("sia0",)


def load_case(name: str) -> tuple[ClusterSpec, Workload]:
    """The cluster and workload a case name stands for."""
    if name.startswith("muri"):
        return (load_cluster_spec(TRACES / "muri_cluster_spec_n8g8.csv"),
                load_trace(TRACES / f"muri_trace{name[4:]}.csv"))
    if name == "tiresias60":
        return (load_cluster_spec(TRACES / "tiresias_cluster_spec_n16g4.csv"),
                load_trace(TRACES / "tiresias_60_job.csv"))
    if name == "philly3k":
        trace = load_trace(TRACES / "pollux_philly.csv")
        cluster = ClusterSpec("60x8", {"V100": GpuType("V100", 1.0, 32.0)},
                              (PoolSpec("training", PoolKind.TRAINING, "V100", 60, 8),))
        return cluster, Workload(tuple(trace.jobs[:3000]), source="philly[:3000]")
    if name == "sia0":
        from simulation.reproductions.sia import EVALUATED_DAYS, HISTORY_DAYS, setup
        from simulation.workloads.sia import generate_sia_workload, sia_cluster

        spec = setup(HISTORY_DAYS + EVALUATED_DAYS)
        return sia_cluster(spec, 0), generate_sia_workload(spec, seed=0)
    raise SystemExit(f"unknown case {name!r}; choose from {', '.join(CASES + OTHER_CASES)}")


def fingerprint_line(case: str, policy: str, cluster: ClusterSpec, workload: Workload,
                     settings: dict[str, str] | None = None) -> str:
    result = run_simulation(cluster, workload, policy, settings=settings)
    summary = result.summary
    return (f"{case} {policy} jobs={job_digest(result.jobs)} "
            f"jct={summary['jct']['mean']:.3f} makespan={summary['makespan']:.3f} "
            f"preemptions={summary['preemptions']}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--policies", default=",".join(POLICIES))
    parser.add_argument("--cases", default=",".join(CASES))
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="a policy parameter for every run (repeatable)")
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--save", type=Path, help="write the lines to this file")
    group.add_argument("--check", type=Path, help="compare with the lines of this file")
    args = parser.parse_args(argv)
    settings = dict(item.split("=", 1) for item in args.set)

    expected = {}
    if args.check:
        for line in args.check.read_text().splitlines():
            case, policy, rest = line.split(" ", 2)
            expected[(case, policy)] = rest
    lines, differing = [], 0
    for case in args.cases.split(","):
        cluster, workload = load_case(case)
        for policy in args.policies.split(","):
            started = time.perf_counter()
            line = fingerprint_line(case, policy, cluster, workload, settings)
            wall = time.perf_counter() - started
            lines.append(line)
            verdict = ""
            if args.check:
                was = expected.get((case, policy))
                same = was is not None and line.split(" ", 2)[2] == was
                differing += not same
                verdict = "  same" if same else f"  DIFFERS (was: {was})"
            print(f"{line}  [{wall:.1f} s]{verdict}", flush=True)
    if args.save:
        args.save.write_text("\n".join(lines) + "\n")
    if args.check:
        print(f"{differing} of {len(lines)} differ")
    return 1 if differing else 0


if __name__ == "__main__":
    sys.exit(main())
