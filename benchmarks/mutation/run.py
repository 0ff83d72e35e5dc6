"""Mutation testing of the policy, metric, figure and permission modules with mutmut 3.

Outside the CI suite (minutes per module): the working tree is copied once into
`benchmarks/out/mutation/_tree/` (gitignored), and for each module below that copy is
copied again into `benchmarks/out/mutation/<module>/`, where mutmut mutates only that module
and runs only the fast tests that exercise it, stopped after `--time-box` seconds; then
killed / survived / score is printed per module. Nothing is changed in the working tree
itself, so people editing it meanwhile are not disturbed, and every module of a run sees the
same snapshot. If the selected tests fail on the unmutated copy, the module reports an error
instead of a score.

Score = killed / (killed + survived + no tests): a mutant no selected test even executes
counts as undetected. Timeouts count as killed (the mutant broke termination), and mutants
left unchecked when the time box ran out are reported but not scored.

    benchmarks/mutation/run.sh                          # every module, 300 s each
    benchmarks/mutation/run.sh --module srtf --module muri --time-box 600
    benchmarks/mutation/run.sh --without tests/simulation/test_policy_rules.py ...

`--without` leaves test files out of the copy (to measure the score without them).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
OUT = REPO / "benchmarks" / "out" / "mutation"

SIM = "tests/simulation"
RULES = f"{SIM}/test_policy_rules.py"
# The long trace runs of these files are not "fast tests": deselected in every module.
SLOW = ("not muri_trace3 and not runs_are_deterministic and not learned_predictors "
        "and not history_period and not random_predictors and not virtual_clock_reproduces "
        "and not generator_follows")
ARYL = (f"{SIM}/test_aryl_allocation.py", f"{SIM}/test_aryl_pinned.py", RULES)


@dataclass(frozen=True)
class Module:
    """A source file to mutate, the tests relevant to it and, optionally, which of its
    functions to mutate (mutmut mutant-name globs; default: every function)."""

    source: str
    tests: tuple[str, ...]
    only: tuple[str, ...] = ()


# Not listed: simulation/reclaim/scf.py and baselines.py (scf, random, gpu-fraction). Their
# strategies are functions under @register_reclaim, and mutmut 3 does not mutate decorated
# functions, so it generates no mutant there.
MODULES: dict[str, Module] = {
    "fifo": Module("simulation/policies/fifo.py", (f"{SIM}/test_engine.py", RULES)),
    "sjf": Module("simulation/policies/sjf.py", (f"{SIM}/test_engine.py", RULES)),
    "srtf": Module("simulation/policies/srtf.py",
                   (f"{SIM}/test_engine.py", RULES, f"{SIM}/test_metric_rules.py")),
    "ordering": Module("simulation/policies/ordering.py",
                       (f"{SIM}/test_engine.py", RULES, f"{SIM}/test_metric_rules.py")),
    **{name: Module(f"simulation/policies/{name}.py",
                    (f"{SIM}/test_engine.py", RULES, f"{SIM}/test_priority_order_equivalence.py"))
       for name in ("queue_order", "running_order", "remaining_time_order",
                    "priority_schedule")},
    "tiresias": Module("simulation/policies/tiresias.py", (f"{SIM}/test_engine.py", RULES)),
    "elastic-tiresias": Module("simulation/policies/elastic_tiresias.py",
                               (f"{SIM}/test_elastic_tiresias.py", RULES)),
    "themis": Module("simulation/policies/themis.py", (f"{SIM}/test_themis_antman.py", RULES)),
    "themis-leases": Module("simulation/policies/themis_leases.py",
                            (f"{SIM}/test_themis_leases.py", f"{SIM}/test_themis_equivalence.py")),
    "antman": Module("simulation/policies/antman.py", (f"{SIM}/test_themis_antman.py", RULES)),
    "afs": Module("simulation/policies/afs.py", ARYL),
    "pollux-lite": Module("simulation/policies/pollux_lite.py", ARYL),
    "gandiva-elastic": Module("simulation/policies/gandiva_elastic.py", ARYL),
    "aryl": Module("simulation/policies/aryl.py", (*ARYL, f"{SIM}/test_decide.py")),
    "aryl-knapsack": Module("simulation/policies/aryl_knapsack.py", ARYL),
    "aryl-placement": Module("simulation/policies/aryl_placement.py",
                             (*ARYL, f"{SIM}/test_decide.py")),
    "gandiva": Module("simulation/policies/gandiva.py", (f"{SIM}/test_gandiva.py", RULES)),
    "gandiva-placement": Module("simulation/policies/gandiva_placement.py",
                                (f"{SIM}/test_gandiva.py", RULES)),
    "gandiva-time-slicing": Module("simulation/policies/gandiva_time_slicing.py",
                                   (f"{SIM}/test_gandiva.py", RULES)),
    "gandiva-packing": Module("simulation/policies/gandiva_packing.py",
                              (f"{SIM}/test_gandiva.py", RULES)),
    "gandiva-migration": Module("simulation/policies/gandiva_migration.py",
                                (f"{SIM}/test_gandiva.py", RULES)),
    "gandiva-grow-shrink": Module("simulation/policies/gandiva_grow_shrink.py",
                                  (f"{SIM}/test_gandiva.py", RULES)),
    "muri": Module("simulation/policies/muri.py", (f"{SIM}/test_muri.py", RULES)),
    "muri-selection": Module("simulation/policies/muri_selection.py",
                             (f"{SIM}/test_muri.py", f"{SIM}/test_muri_selection.py", RULES)),
    "muri-grouping": Module("simulation/policies/muri_grouping.py", (f"{SIM}/test_muri.py", RULES)),
    "muri-placement": Module("simulation/policies/muri_placement.py",
                             (f"{SIM}/test_muri.py", f"{SIM}/test_muri_churn.py", RULES)),
    "interleaving": Module("simulation/interleaving.py", (f"{SIM}/test_muri.py", RULES)),
    "interleaving-grouping": Module("simulation/interleaving_grouping.py",
                                    (f"{SIM}/test_muri.py", f"{SIM}/test_interleaving_model.py",
                                     RULES)),
    "sia": Module("simulation/policies/sia/sia.py", (f"{SIM}/test_sia.py",)),
    "sia-vc": Module("simulation/policies/sia/sia_vc.py",
                     (f"{SIM}/test_sia.py", f"{SIM}/test_sia_vc_rules.py")),
    "sia-common": Module("simulation/policies/sia/common.py",
                         (f"{SIM}/test_sia.py", f"{SIM}/test_sia_vc_rules.py")),
    "fcfs-pools": Module("simulation/policies/sia/fcfs_pools.py",
                         (f"{SIM}/test_sia.py", f"{SIM}/test_sia_vc_rules.py")),
    "maxmin": Module("simulation/policies/sia/maxmin.py", (f"{SIM}/test_sia.py",)),
    "ssf-gssf": Module("simulation/policies/sia/ssf.py", (f"{SIM}/test_sia.py",)),
    "reclaim-aryl": Module("simulation/reclaim/aryl.py",
                           (f"{SIM}/test_aryl_reclaim.py", f"{SIM}/test_aryl_pinned.py",
                            f"{SIM}/test_decide.py", RULES)),
    "metrics": Module("simulation/metrics.py",
                      (f"{SIM}/test_engine.py", f"{SIM}/test_metric_rules.py",
                       f"{SIM}/test_utilization.py")),
    "overhead": Module("simulation/overhead.py",
                       (f"{SIM}/test_scaling_overhead.py", f"{SIM}/test_elastic_tiresias.py")),
    "engine-blocking-index": Module(
        "simulation/engine.py", (f"{SIM}/test_engine.py", f"{SIM}/test_metric_rules.py"),
        only=("simulation.engine.xǁSimulationǁ_blocking_index__mutmut_*",
              "simulation.engine.xǁSimulationǁ_track_waiting__mutmut_*")),
    "figures": Module("planner/dashboard/figures.py",
                      ("tests/planner/dashboard/test_figures.py",
                       "tests/planner/dashboard/test_figure_data.py")),
    "live-permissions": Module("planner/live/permissions.py",
                               ("tests/planner/live/test_apis.py",
                                "tests/planner/live/test_viewer_permissions.py")),
}

# mutmut's exit codes (mutmut.stats.status_by_exit_code), grouped as reported here.
KILLED = {1, 3, 24, -24, 36, 152, 255, -9, -11}
SURVIVED = {0}
NO_TESTS = {5, 33}
NOTHING_COVERED = "could not find any test case for any mutant"
# The selected tests failed on the unmutated copy: no score (see the module's mutmut.log).
CLEAN_RUN_FAILED = ("failed to collect stats", "Failed to run clean test")


def copy_tree(target: Path, without: set[str]) -> None:
    """The working tree's tracked and untracked (not ignored) files, minus `without`."""
    listed = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=REPO,
                            check=True, capture_output=True).stdout.decode().split("\0")
    if target.exists():
        shutil.rmtree(target)
    for rel in filter(None, listed):
        if rel in without or rel.startswith(("benchmarks/out/", "var/", "test-artifacts/")):
            continue
        source = REPO / rel
        if source.is_file():
            (target / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target / rel)


def write_config(target: Path, module: Module) -> list[str]:
    """mutmut's setup.cfg (pyproject.toml has no [tool.mutmut]); returns the tests used."""
    tests = [t for t in module.tests if (target / t).exists()]
    lines = ["[mutmut]", "source_paths =", "    simulation", "    planner",
             "only_mutate =", f"    {module.source}", "pytest_add_cli_args_test_selection ="]
    lines += [f"    {t}" for t in tests]
    # manage.py in mutants/ makes pytest-django put mutants/ (not the unmutated copy around
    # it) first on sys.path, so `planner` is imported mutated.
    lines += ["also_copy =", "    manage.py"]
    lines += ["pytest_add_cli_args =", "    -p", "    no:cacheprovider", "    -q", "    -k",
              f"    {SLOW}", "timeout_multiplier = 10.0", ""]
    (target / "setup.cfg").write_text("\n".join(lines))
    return tests


def stop(process: subprocess.Popen) -> None:
    """End mutmut and the test processes it forked (its own process group): SIGINT lets it
    write the results it has, SIGKILL follows if it does not exit."""
    for sig, grace in ((signal.SIGINT, 30), (signal.SIGKILL, 10)):
        try:
            os.killpg(process.pid, sig)
            process.wait(timeout=grace)
            return
        except ProcessLookupError:
            return
        except subprocess.TimeoutExpired:
            continue


def meta_results(target: Path, module: Module) -> dict[str, int | None]:
    """Exit code per mutant; mutants mutmut generated but never ran are None."""
    mutated = target / "mutants" / module.source
    if not mutated.exists():
        return {}
    prefix = module.source.removesuffix(".py").replace("/", ".")
    names = re.findall(r"^\s*def (x\S*__mutmut_\d+)\(", mutated.read_text(), re.MULTILINE)
    codes: dict[str, int | None] = dict.fromkeys((f"{prefix}.{n}" for n in names), None)
    meta = target / "mutants" / f"{module.source}.meta"
    if meta.exists():
        codes.update(json.loads(meta.read_text())["exit_code_by_key"])
    if module.only:
        from fnmatch import fnmatch

        codes = {k: v for k, v in codes.items() if any(fnmatch(k, p) for p in module.only)}
    return codes


def tally(codes: dict[str, int | None]) -> dict[str, float | int]:
    killed = sum(c in KILLED for c in codes.values())
    survived = sum(c in SURVIVED for c in codes.values())
    no_tests = sum(c in NO_TESTS for c in codes.values())
    unchecked = sum(c is None for c in codes.values())
    other = len(codes) - killed - survived - no_tests - unchecked
    scored = killed + survived + no_tests
    return {"mutants": len(codes), "killed": killed, "survived": survived,
            "no_tests": no_tests, "unchecked": unchecked, "other": other,
            "score": round(100.0 * killed / scored, 1) if scored else 0.0}


def run_module(name: str, module: Module, args: argparse.Namespace, snapshot: Path) -> dict:
    target = Path(args.workdir) / name
    if target.exists():
        shutil.rmtree(target)
    shutil.copytree(snapshot, target, symlinks=True)
    tests = write_config(target, module)
    command = [args.mutmut, "run", "--max-children", str(args.max_children), *module.only]
    started = time.monotonic()
    with (target / "mutmut.log").open("w") as log:
        process = subprocess.Popen(["nice", "-n", "10", *command], cwd=target, stdout=log,
                                   stderr=subprocess.STDOUT, start_new_session=True,
                                   env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"})
        try:
            process.wait(timeout=args.time_box)
            boxed = False
        except subprocess.TimeoutExpired:
            boxed = True
            stop(process)
    codes = meta_results(target, module)
    log = (target / "mutmut.log").read_text(errors="replace")
    if NOTHING_COVERED in log:
        codes = dict.fromkeys(codes, 33)  # mutmut stopped: no selected test runs this module
    error = next((message for message in CLEAN_RUN_FAILED if message in log), None)
    survivors = sorted(k for k, v in codes.items() if v in SURVIVED | NO_TESTS)
    (target / "survivors.txt").write_text("\n".join(survivors) + "\n")
    row = {"module": name, "source": module.source, "tests": tests,
           "seconds": round(time.monotonic() - started), "time_boxed": boxed, "error": error,
           **tally(codes)}
    (target / "summary.json").write_text(json.dumps(row, indent=2))
    return row


def print_row(row: dict) -> None:
    if row.get("error"):
        print(f"{row['module']:22} error: {row['error']} (tests fail on the unmutated copy)",
              flush=True)
        return
    if not row["mutants"]:
        print(f"{row['module']:22} no mutants (mutmut 3 skips decorated functions)", flush=True)
        return
    boxed = " (time box)" if row["time_boxed"] else ""
    print(f"{row['module']:22} {row['mutants']:7} {row['killed']:6} {row['survived']:8} "
          f"{row['no_tests']:8} {row['unchecked']:9} {row['score']:5.1f}%  "
          f"{row['seconds']}{boxed}", flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--module", action="append", choices=sorted(MODULES),
                        help="module to mutate (repeatable; default: all)")
    parser.add_argument("--time-box", type=float, default=300.0,
                        help="seconds per module before mutmut is stopped")
    parser.add_argument("--without", action="append", default=[],
                        help="test file to leave out of the copy (repeatable)")
    parser.add_argument("--workdir", default=str(OUT))
    parser.add_argument("--max-children", type=int, default=1)
    parser.add_argument("--mutmut", default=shutil.which("mutmut") or "mutmut")
    parser.add_argument("--json", help="also write every row to this file")
    parser.add_argument("--report", action="store_true",
                        help="print the table of an earlier run in --workdir, run nothing")
    args = parser.parse_args()
    names = args.module or list(MODULES)
    print(f"{'module':22} {'mutants':>7} {'killed':>6} {'survived':>8} {'no tests':>8} "
          f"{'unchecked':>9} {'score':>6}  seconds")
    rows = []
    snapshot = Path(args.workdir) / "_tree"
    if not args.report:  # one copy of the working tree for every module of this run
        copy_tree(snapshot, set(args.without))
    for name in names:
        if args.report:
            summary = Path(args.workdir) / name / "summary.json"
            if not summary.exists():
                continue
            row = json.loads(summary.read_text())
        else:
            row = run_module(name, MODULES[name], args, snapshot)
        rows.append(row)
        print_row(row)
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
