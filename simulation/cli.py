"""`python -m simulation run|policies|compare|decide|reproduce|size` (DESIGN.md, CLI).

User errors (a malformed trace, spec or setting) exit with code 2 and one line naming the
file, line and field; a policy that makes an invalid decision is a bug and exits with 1.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from simulation import capacity
from simulation.composition import SEPARATOR, describe_stages, resolve_policy, stages
from simulation.decide import DECIDERS
from simulation.engine import EngineConfig
from simulation.errors import InputError, InvalidDecision, InvariantViolation
from simulation.metrics import RunResult, time_unit
from simulation.model import ClusterSpec, InferenceLoad, PoolKind, Workload
from simulation.policies.base import Param, registry
from simulation.reclaim import reclaim_strategies
from simulation.reproductions import PAPERS, paper_names, reproduce
from simulation.reproductions.report import load_reports, markdown_table, rewrite_readme
from simulation.runner import run_simulation
from simulation.workloads import load_cluster_spec, load_inference_load, load_trace

COMPARE_COLUMNS = (
    "policy", "jobs", "jct_mean", "jct_median", "jct_p95", "jct_p99", "queuing_mean",
    "makespan", "preemptions", "preemption_ratio", "scaling_ops", "util_training",
    "util_overall", "cadence", "wall_seconds",
)


def _parse_settings(pairs: Sequence[str]) -> dict[str, str]:
    settings: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise InputError(f"expected key=value, got {pair!r}", source="--set")
        settings[key.strip()] = value.strip()
    return settings


def _inputs(args: argparse.Namespace) -> tuple[ClusterSpec, Workload, InferenceLoad | None]:
    cluster = load_cluster_spec(args.cluster)
    workload = load_trace(args.trace, format=args.format)
    load = None
    if args.inference_load:
        pools = cluster.pools_of_kind(PoolKind.INFERENCE)
        if not pools:
            raise InputError("an inference load needs an inference pool in the cluster",
                             source=args.cluster, field="pools")
        load = load_inference_load(args.inference_load, total_servers=pools[0].servers)
    return cluster, workload, load


class ProgressLines:
    """A long run's progress on stderr: nothing in its first QUIET_SECONDS (a short run
    stays silent), then a line at each further tenth of the jobs finished, or after
    QUIET_SECONDS without one (a run that reshuffles a queue finishes no job for a while)."""

    QUIET_SECONDS = 5.0

    def __init__(self, label: str) -> None:
        self.label = label
        self.started = self.last = time.perf_counter()
        self.tenths = 0

    def __call__(self, finished: float) -> None:
        now = time.perf_counter()
        tenths = int(finished * 10)
        if now - self.started < self.QUIET_SECONDS:
            return
        if tenths > self.tenths or now - self.last >= self.QUIET_SECONDS:
            self.tenths, self.last = tenths, now
            print(f"[{now - self.started:7.1f} s] {self.label}: {finished:.0%} of the jobs "
                  "finished", file=sys.stderr, flush=True)


class ProgressBar:
    """A long run's progress as a tqdm bar on a terminal's stderr: elapsed time and ETA,
    shown only after ProgressLines.QUIET_SECONDS so a short run stays silent."""

    def __init__(self, label: str, *, file=None) -> None:
        from tqdm import tqdm

        self.bar = tqdm(total=100, desc=label, unit="%", file=file or sys.stderr,
                        delay=ProgressLines.QUIET_SECONDS, leave=False,
                        bar_format="{desc}: {percentage:3.0f}% of the jobs finished |{bar}| "
                                   "{elapsed} elapsed, {remaining} left")

    def __call__(self, finished: float) -> None:
        self.bar.update(max(0.0, round(finished * 100, 1) - self.bar.n))

    def close(self) -> None:
        self.bar.close()


def run_progress(label: str) -> ProgressBar | ProgressLines:
    """A bar on a terminal; lines in a log or a pipe, where a bar's redraws would be noise."""
    return ProgressBar(label) if sys.stderr.isatty() else ProgressLines(label)


def _run_one(args: argparse.Namespace, policy: str, inputs: tuple, out: Path) -> RunResult:
    cluster, workload, load = inputs
    progress = run_progress(policy)
    try:
        result = run_simulation(
            cluster, workload, policy, settings=_parse_settings(args.set), seed=args.seed,
            inference_load=load, progress=progress,
        )
    finally:
        if isinstance(progress, ProgressBar):
            progress.close()
    result.write(out)
    return result


def _row(result: RunResult) -> dict[str, object]:
    s = result.summary
    return {
        "policy": s["policy"], "jobs": s["jobs"],
        "jct_mean": s["jct"]["mean"], "jct_median": s["jct"]["median"],
        "jct_p95": s["jct"]["p95"], "jct_p99": s["jct"]["p99"],
        "queuing_mean": s["queuing"]["mean"], "makespan": s["makespan"],
        "preemptions": s["preemptions"], "preemption_ratio": s["preemption_ratio"],
        "scaling_ops": s["scaling_ops"], "cadence": s["cadence"],
        "util_training": s["gpu_utilization"]["training"],
        "util_overall": s["gpu_utilization"]["overall"], "wall_seconds": s["wall_seconds"],
    }


TIME_COLUMNS = ("jct_mean", "jct_median", "jct_p95", "jct_p99", "queuing_mean", "makespan")
SHARE_COLUMNS = ("util_training", "util_overall")
def table_cells(rows: list[dict[str, object]]) -> tuple[list[str], list[list[str]]]:
    """Headers and cells for people: each time column in one unit (named in its header)
    that suits its largest value, shares in %, ratios to two decimals. The CSV keeps the
    raw seconds."""
    headers, columns = [], []
    for column in COMPARE_COLUMNS:
        values = [row[column] for row in rows]
        if column in TIME_COLUMNS:
            unit, scale = time_unit(max(float(v) for v in values))
            headers.append(f"{column} ({unit})")
            columns.append([f"{float(v) / scale:,.1f}" for v in values])
        elif column in SHARE_COLUMNS:
            headers.append(column)
            columns.append([f"{float(v):.1%}" for v in values])
        elif column == "preemption_ratio":
            headers.append(column)
            columns.append([f"{float(v):.2f}" for v in values])
        elif column == "wall_seconds":
            headers.append("wall (s)")
            columns.append([f"{float(v):.1f}" for v in values])
        else:
            headers.append(column)
            columns.append([str(v) for v in values])
    return headers, [list(cells) for cells in zip(*columns, strict=True)]


def _print_table(rows: list[dict[str, object]]) -> None:
    headers, cells = table_cells(rows)
    widths = [max(len(h), *(len(r[i]) for r in cells)) for i, h in enumerate(headers)]
    print("  ".join(h.rjust(w) for h, w in zip(headers, widths, strict=True)))
    for r in cells:
        print("  ".join(v.rjust(w) for v, w in zip(r, widths, strict=True)))


def cmd_run(args: argparse.Namespace) -> int:
    result = _run_one(args, args.policy, _inputs(args), Path(args.out))
    _print_table([_row(result)])
    print(f"wrote {args.out}/summary.json, jobs.csv, timeseries.csv")
    return 0


def cmd_compare(args: argparse.Namespace) -> int:
    inputs = _inputs(args)
    out = Path(args.out)
    rows = [_row(_run_one(args, policy, inputs, out / policy)) for policy in args.policy]
    with (out / "comparison.csv").open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(COMPARE_COLUMNS))
        writer.writeheader()
        writer.writerows(rows)
    _print_table(rows)
    print(f"wrote {out}/comparison.csv and one folder per policy")
    return 0


def _print_params(params: Sequence[Param], indent: str = "    ") -> None:
    for p in params:
        bounds = f", {p.bounds[0]:g} to {p.bounds[1]:g}" if p.bounds else ""
        print(f"{indent}{p.name} ({p.type.__name__}, default {p.default!r}{bounds}): {p.help}")


def cmd_policies(args: argparse.Namespace) -> int:
    """Every policy with its paper, stages, parameters and the engine defaults it runs with;
    then the stages a composition may add."""
    defaults = EngineConfig()
    for name, cls in registry().items():
        print(f"{name}: {cls.description}")
        if cls.paper:
            print(f"    paper: {cls.paper}")
        print(f"    stages: {describe_stages(cls)}")
        _print_params(cls.params)
        interval = cls.interval
        rounds = "at every event" + (f" and every {interval:g} s" if interval else "")
        print(f"    runs (cadence=event): {rounds}")
        if cls.engine_defaults:
            print("    engine defaults (its paper's mechanisms): " + ", ".join(
                f"{k}={v!r}" for k, v in sorted(cls.engine_defaults.items())))
    print(f"stages a composition adds after its policy (--policy POLICY{SEPARATOR}STAGE, e.g. "
          f"elastic-tiresias{SEPARATOR}aryl-loan):")
    for stage in stages().values():
        sets = ", ".join(f"{k}={v!r}" for k, v in stage.engine_settings.items())
        print(f"    {stage.name} ({stage.layer}): {stage.description}"
              + (f" Sets {sets}." if sets else ""))
        _print_params(stage.params, indent="        ")
    print("reclaim strategies (--set reclaim_strategy=NAME): "
          + ", ".join(reclaim_strategies()))
    print("engine settings (--set key=value), defaults for every policy unless it says "
          "otherwise above: " + ", ".join(
              f"{k}={getattr(defaults, k)!r}" for k in EngineConfig.__dataclass_fields__
              if k != "seed"))
    return 0


def cmd_decide(args: argparse.Namespace) -> int:
    """One live decision on the REST API's request body; the answer as JSON on stdout."""
    text = Path(args.input).read_text()
    try:
        request = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(exc.msg, source=args.input, line=exc.lineno) from None
    try:
        answer = DECIDERS[args.kind](request)
    except InputError as exc:
        raise InputError(exc.message, source=args.input, field=exc.field) from None
    print(json.dumps(answer, indent=2))
    return 0


def cmd_reproduce(args: argparse.Namespace) -> int:
    """Run papers' headline experiments; one JSON per paper and the table of every paper
    whose JSON is in `--out` (so papers can be re-run one at a time)."""
    names = paper_names(args.paper)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()

    def progress(message: str) -> None:
        print(f"[{time.perf_counter() - started:7.1f} s] {message}", file=sys.stderr,
              flush=True)

    for name in names:
        progress(f"{name}: start")
        report = reproduce(name, progress)
        (out / f"{name}.json").write_text(json.dumps(report.to_dict(), indent=2) + "\n")
        progress(f"{name}: done in {report.wall_seconds:.1f} s")
    reports = load_reports(out)
    table = markdown_table(reports)
    (out / "reproductions.md").write_text(table + "\n")
    print(table)
    if args.readme:
        rewrite_readme(Path(args.readme), reports)
        print(f"rewrote the Reproductions block of {args.readme}")
    print(f"wrote {out}/<paper>.json and {out}/reproductions.md")
    return 0


SIZE_COLUMNS = ("policy", "status", "level", "size", "cost_per_hour", "evaluations")


def _size_evaluator(args: argparse.Namespace, inputs: tuple, problem: capacity.Problem):
    """Points of a round simulated together: in this process, or on `--jobs` processes."""
    cluster, workload, load = inputs
    settings = _parse_settings(args.set)
    with_jobs = problem.needs_reference
    if args.jobs <= 1:
        def evaluate(points: list[capacity.Point]) -> dict:
            return {p: capacity.evaluate_point(cluster, workload, p, problem.axis,
                                               settings=settings, inference_load=load,
                                               with_jobs=with_jobs) for p in points}
        return evaluate, None
    from concurrent.futures import ProcessPoolExecutor

    pool = ProcessPoolExecutor(max_workers=args.jobs)

    def evaluate_parallel(points: list[capacity.Point]) -> dict:
        futures = {p: pool.submit(capacity.evaluate_point, cluster, workload, p, problem.axis,
                                  settings=settings, inference_load=load, with_jobs=with_jobs)
                   for p in points}
        return {p: future.result() for p, future in futures.items()}
    return evaluate_parallel, pool


def _size_problem(args: argparse.Namespace, inputs: tuple) -> tuple[capacity.Problem,
                                                                    capacity.CostModel]:
    """The question from the arguments; an InputError names the argument at fault."""
    cluster, workload, _ = inputs
    targets = tuple(capacity.Target.parse(text, field="--target") for text in args.target)
    if not targets:
        raise InputError("give at least one --target METRIC<=BOUND", field="--target")
    costs = capacity.CostModel.checked(capacity.parse_pairs(args.cost, field="--cost"),
                                       capacity.parse_pairs(args.server_cost,
                                                            field="--server-cost"))
    if args.loan + bool(args.pool) + bool(args.param) != 1:
        raise InputError("size exactly one of --pool NAME (repeatable), --loan or --param NAME",
                         field="--pool")
    axis = (capacity.Axis(capacity.AXIS_SERVERS, pools=tuple(args.pool)) if args.pool
            else capacity.Axis(capacity.AXIS_LOAN) if args.loan
            else capacity.Axis(capacity.AXIS_PARAM, param=args.param))
    try:
        axis.check(cluster)
        costs.check(cluster)
    except InputError as exc:
        where = {"axis.pools": "--pool", "axis.kind": "--loan", "axis.param": "--param",
                 "costs.gpu_hour": "--cost"}.get(exc.field or "", exc.field)
        raise InputError(exc.message, field=where) from None
    settings = _parse_settings(args.set)
    for policy in args.policy:
        try:
            resolve_policy(policy)
        except InputError as exc:
            raise InputError(exc.message, field="--policy") from None
    if args.min is None or args.max is None:
        if axis.kind == capacity.AXIS_PARAM:
            raise InputError(f"give --min and --max for {args.param}", field="--min")
        low, high = axis.default_range(cluster, workload)
        low = low if args.min is None else args.min
        high = high if args.max is None else args.max
    else:
        low, high = args.min, args.max
    if axis.kind == capacity.AXIS_SERVERS:
        low = max(low, axis.fitting_level(cluster, workload, max(high, 1)))
    try:
        axis.check_range(cluster, low, high)
    except InputError as exc:
        raise InputError(exc.message, field=f"--{exc.field}") from None
    try:
        seeds = tuple(int(s) for s in args.seeds.split(","))
    except ValueError:
        raise InputError(f"expected comma-separated whole numbers, got {args.seeds!r}",
                         field="--seeds") from None
    # As many levels per policy as processes: a round lasts as long as its slowest policy's
    # runs, so that policy alone should be able to fill the processes.
    per_round = args.points_per_round or args.jobs
    try:
        problem = capacity.Problem(
            policies=tuple(args.policy), targets=targets, axis=axis, low=low, high=high,
            seeds=seeds, points_per_round=per_round, baseline=args.baseline or "",
            reference_level=axis.reference(cluster, settings))
    except InputError as exc:
        where = {"range": "--min/--max", "seeds": "--seeds", "policies": "--policy",
                 "targets": "--target", "points_per_round": "--points-per-round"}
        raise InputError(exc.message, field=where.get(exc.field or "", exc.field)) from None
    if problem.baseline and problem.baseline not in problem.policies:
        raise InputError(f"{problem.baseline!r} is not one of the --policy values",
                         field="--baseline")
    return problem, costs


def size_rows(result: dict) -> list[dict[str, object]]:
    return [{"policy": p["policy"], "status": p["status"], "level": p.get("level", ""),
             "size": p.get("size", ""), "cost_per_hour": p.get("cost_per_hour", ""),
             "evaluations": p["evaluations"],
             **{t["metric"]: p["metrics"][t["metric"]]["mean"] if "metrics" in p else ""
                for t in result["targets"]},
             **{f"{t['metric']}_ci95": p["metrics"][t["metric"]]["ci95"] if "metrics" in p
                else "" for t in result["targets"]}}
            for p in result["policies"]]


def _print_size(result: dict, wall: float) -> None:
    headers = ["policy", "answer", "size", "cost/h", "runs"] + [
        t["text"] for t in result["targets"]]
    cells = []
    for p in result["policies"]:
        row = [p["policy"], p["status"] if p["status"] != "found" else str(p["level"]),
               p.get("size", f"not met at {p['closest']['size']} (--max)"
                     if "closest" in p else p.get("error", "")),
               f"{p['cost_per_hour']:,.2f}" if "cost_per_hour" in p else "",
               str(p["evaluations"])]
        for t in result["targets"]:
            stats = p.get("metrics", p.get("closest", {}).get("metrics", {})).get(t["metric"])
            if stats is None:
                row.append("")
                continue
            row.append(capacity.format_mean_ci(t["metric"], stats))
        cells.append(row)
    widths = [max(len(h), *(len(r[i]) for r in cells)) for i, h in enumerate(headers)]
    print("  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True)))
    for r in cells:
        print("  ".join(v.ljust(w) for v, w in zip(r, widths, strict=True)))
    for p in result["policies"]:
        if p["non_monotone"]:
            pairs = ", ".join(f"{a} meets but {b} misses" for a, b in p["non_monotone"])
            print(f"warning: {p['policy']} is not monotone in the level ({pairs}); the answer "
                  "is the least level above which every evaluated level met the targets")
        if p.get("at_range_bottom"):
            print(f"note: {p['policy']} meets the targets at the bottom of the range "
                  f"({p['level']}); a smaller size may too (lower --min)")
    if result["saving"]:
        print(result["saving"]["sentence"])
    print(f"rule: {result['rule']}; {result['evaluations']} runs in {result['rounds']} "
          f"rounds, {wall:.1f} s")


def cmd_size(args: argparse.Namespace) -> int:
    """The cheapest size per policy that meets every target (simulation/capacity.py)."""
    if args.jobs < 1:
        raise InputError("must be at least 1", field="--jobs")
    inputs = _inputs(args)
    problem, costs = _size_problem(args, inputs)
    evaluate, pool = _size_evaluator(args, inputs, problem)
    started = time.perf_counter()

    def progress(rounds: int, runs: int) -> None:
        print(f"[{time.perf_counter() - started:7.1f} s] round {rounds}: {runs} runs so far",
              file=sys.stderr, flush=True)

    try:
        result = capacity.search(problem, evaluate, cluster=inputs[0], costs=costs,
                                 progress=progress)
    finally:
        if pool is not None:
            pool.shutdown(cancel_futures=True)
    result["wall_seconds"] = round(time.perf_counter() - started, 3)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "capacity.json").write_text(json.dumps(result, indent=2) + "\n")
    rows = size_rows(result)
    with (out / "capacity.csv").open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    _print_size(result, result["wall_seconds"])
    print(f"wrote {out}/capacity.json and capacity.csv")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m simulation",
                                     description="GPU cluster scheduling simulator")
    sub = parser.add_subparsers(dest="command", required=True)

    def inputs(p: argparse.ArgumentParser, *, seed: bool = True) -> None:
        p.add_argument("--cluster", required=True, help="cluster spec (YAML, JSON or CSV)")
        p.add_argument("--trace", required=True, help="workload trace CSV (any known format)")
        p.add_argument("--format", default=None, help="override trace format detection")
        p.add_argument("--inference-load", default=None, help="inference load CSV")
        p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                       help="policy parameter or engine setting (see `policies`)")
        if seed:
            p.add_argument("--seed", type=int, default=0)
        p.add_argument("--out", required=True, help="output folder")

    run = sub.add_parser("run", help="run one policy")
    inputs(run)
    run.add_argument("--policy", required=True)
    run.set_defaults(func=cmd_run)

    compare = sub.add_parser("compare", help="run several policies on the same inputs")
    inputs(compare)
    compare.add_argument("--policy", action="append", required=True)
    compare.set_defaults(func=cmd_compare)

    policies = sub.add_parser("policies", help="list policies and their parameters")
    policies.set_defaults(func=cmd_policies)

    decide = sub.add_parser("decide", help="one live decision on a cluster state snapshot")
    decide.add_argument("kind", choices=sorted(DECIDERS))
    decide.add_argument("--input", required=True, help="request JSON, as the REST API takes")
    decide.set_defaults(func=cmd_decide)

    size = sub.add_parser("size", help="per policy, the cheapest size meeting every target")
    inputs(size, seed=False)
    size.add_argument("--policy", action="append", required=True)
    size.add_argument("--target", action="append", default=[], metavar="METRIC<=BOUND",
                      help="e.g. queuing.p95<=1h, jct.mean<=21600, slowed_share<=1%%")
    size.add_argument("--cost", action="append", default=[], metavar="GPU_TYPE=PRICE",
                      help="price per GPU-hour of a GPU type (every type the cluster uses)")
    size.add_argument("--server-cost", action="append", default=[], metavar="GPU_TYPE=PRICE",
                      help="fixed price per server-hour of a GPU type's servers")
    size.add_argument("--pool", action="append", default=[],
                      help="size this pool's servers (repeat: the others keep their ratio)")
    size.add_argument("--loan", action="store_true",
                      help="size the inference servers lendable (loan_headroom)")
    size.add_argument("--param", default=None, help="size this integer policy parameter")
    size.add_argument("--min", type=int, default=None, help="least level to consider")
    size.add_argument("--max", type=int, default=None, help="largest level to consider")
    size.add_argument("--seeds", default="0", help="comma-separated seeds (default 0)")
    size.add_argument("--baseline", default=None, help="policy the saving is measured "
                      "against and slowed_share refers to (default fifo, else the first)")
    size.add_argument("--jobs", type=int, default=1, help="parallel processes")
    size.add_argument("--points-per-round", type=int, default=None,
                      help="levels per policy per round (default: --jobs)")
    size.set_defaults(func=cmd_size)

    repro = sub.add_parser("reproduce", help="papers' headline results, paper beside ours")
    repro.add_argument("paper", help=f"a paper name ({', '.join(PAPERS)}) or all")
    repro.add_argument("--out", default="out/reproductions", help="folder for JSON + table")
    repro.add_argument("--readme", default=None,
                       help="rewrite this README's Reproductions block: rows of the papers "
                       "in --out's JSON replaced, other papers' rows kept")
    repro.set_defaults(func=cmd_reproduce)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except InputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except FileNotFoundError as exc:
        print(f"error: {exc.filename}: no such file", file=sys.stderr)
        return 2
    except (InvalidDecision, InvariantViolation) as exc:
        print(f"policy error (a bug, please report): {exc}", file=sys.stderr)
        return 1
    except BrokenPipeError:
        # The reader left (`policies | head`): stop quietly, as Unix tools do. Python would
        # flush stdout again at exit and raise once more, so point it at /dev/null first.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
