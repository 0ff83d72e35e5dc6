"""How long the workload layer takes on realistic sizes: the 82k-job Philly summary and a
50,000-job synthetic trace (Aryl's 15-day production trace has ~50,000 jobs).

Run: .venv/bin/python benchmarks/bench_workloads.py   (best of 3 runs each)
"""

from __future__ import annotations

import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from simulation.workloads import (  # noqa: E402
    GeneratorSpec,
    generate_workload,
    load_trace,
    write_canonical_csv,
)

PHILLY = Path(__file__).resolve().parents[1].parent / "shared" / "traces" / "pollux_philly.csv"
REPEATS = 3


def best_of(action: Callable[[], object]) -> tuple[float, object]:
    """Fastest wall time of REPEATS runs, and the last result."""
    best, result = float("inf"), None
    for _ in range(REPEATS):
        start = time.perf_counter()
        result = action()
        best = min(best, time.perf_counter() - start)
    return best, result


def main() -> None:
    if PHILLY.exists():
        seconds, workload = best_of(lambda: load_trace(PHILLY))
        jobs = len(workload)  # type: ignore[arg-type]
        print(f"load pollux_philly.csv      {seconds:7.3f} s  {jobs:6d} jobs  "
              f"{seconds / jobs * 1e6:5.1f} us/job")
    else:
        print(f"load pollux_philly.csv      skipped: {PHILLY} not found")
    spec = GeneratorSpec(num_jobs=50_000, duration_days=15, elastic_fraction=0.3)
    for arrivals in ("poisson", "bursty", "diurnal"):
        varied = replace(spec, arrivals=arrivals)
        seconds, generated = best_of(lambda s=varied: generate_workload(s, seed=1))
        print(f"generate 50,000 ({arrivals:7s})  {seconds:7.3f} s  "
              f"{seconds / 50_000 * 1e6:5.1f} us/job")
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "generated.csv"
        write_seconds, _ = best_of(lambda: write_canonical_csv(generated, path))  # type: ignore[arg-type]
        read_seconds, _ = best_of(lambda: load_trace(path))
    print(f"write canonical 50,000      {write_seconds:7.3f} s")
    print(f"read canonical 50,000       {read_seconds:7.3f} s  "
          f"(ratio read/write {read_seconds / write_seconds:4.1f})")


if __name__ == "__main__":
    main()
