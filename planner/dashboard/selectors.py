"""Reads the dashboard needs that the clusters and scenarios apps do not offer themselves."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.db.models import Count, Max, Q, QuerySet

from planner.clusters.models import Cluster, ClusterKind, Server, ServerStatus
from planner.live import selectors as live_selectors
from planner.live.models import ACTIVE_STATUSES, Decision, Job, JobStatus
from planner.reproductions.models import Reproduction
from planner.scenarios import selectors as scenario_selectors
from planner.scenarios.models import Run, RunStatus, Scenario, Sweep
from planner.scenarios.services import SWEEP_METRICS
from simulation.metrics import time_unit

IN_USE = (ServerStatus.BUSY, ServerStatus.ON_LOAN, ServerStatus.RECLAIMING)


@dataclass(frozen=True, slots=True)
class PoolState:
    """A pool as the operator sees it now: its servers counted by status."""

    name: str
    kind: str
    gpu_type: str
    gpus_per_server: int
    servers: int
    by_status: dict[str, int] = field(default_factory=dict)

    @property
    def gpus(self) -> int:
        return self.servers * self.gpus_per_server

    @property
    def in_use(self) -> int:
        return sum(self.by_status.get(status, 0) for status in IN_USE)

    @property
    def utilization(self) -> float:
        """Share of the pool's online servers that are busy, on loan or being reclaimed."""
        online = self.servers - self.by_status.get(ServerStatus.OFFLINE, 0)
        return self.in_use / online if online else 0.0

    @property
    def utilization_percent(self) -> int:
        return round(100 * self.utilization)


def cluster_pool_states(*, cluster: Cluster) -> list[PoolState]:
    """Every pool of `cluster` with its servers counted per status, in one grouped query."""
    counts: dict[int, dict[str, int]] = {}
    rows = (cluster.pools.values("id", "servers__status")
            .annotate(count=Count("servers")).order_by())
    for row in rows:
        if row["servers__status"] is not None:
            counts.setdefault(row["id"], {})[row["servers__status"]] = row["count"]
    states = []
    for pool in cluster.pools.select_related("gpu_type").order_by("name"):
        by_status = {status: counts.get(pool.id, {}).get(status, 0)
                     for status in ServerStatus.values}
        states.append(PoolState(
            name=pool.name, kind=pool.kind, gpu_type=pool.gpu_type.name,
            gpus_per_server=pool.gpus_per_server, servers=sum(by_status.values()),
            by_status=by_status,
        ))
    return states


# --- Runs and scenarios ----------------------------------------------------------------------

RECENT_RUNS = 200


def run_recent(*, scenario_id: int | None = None, limit: int = RECENT_RUNS) -> list[Run]:
    """The newest runs first (of one scenario, or all), at most `limit`."""
    runs = scenario_selectors.run_list(scenario_id=scenario_id)
    return list(runs.select_related("scenario", "sweep").order_by("-id")[:limit])


def run_filtered(*, scenario_id: int | None = None, status: str | None = None,
                 policy: str | None = None) -> QuerySet[Run]:
    """Runs matching every filter given, newest first (the runs page pages through them)."""
    runs = scenario_selectors.run_list(scenario_id=scenario_id, status=status)
    if policy:
        runs = runs.filter(policy=policy)
    return runs.select_related("scenario", "sweep").order_by("-id")


def run_policies() -> list[str]:
    """Every policy some run used, for the runs page's filter."""
    return sorted(set(Run.objects.values_list("policy", flat=True).distinct()))


def run_eta_seconds(*, progress: float, elapsed_seconds: float) -> float | None:
    """Seconds left at the rate so far: the whole run takes elapsed / progress, so what is
    left is elapsed x (1 - progress) / progress; None before any progress."""
    if progress <= 0:
        return None
    return elapsed_seconds * (1 - progress) / progress


@dataclass(frozen=True, slots=True)
class RunRow:
    """A run on the runs page: its times so far, and its error as a person reads it."""

    run: Run
    elapsed_seconds: float | None
    eta_seconds: float | None
    error_headline: str


def run_rows(*, runs: Sequence[Run], now: datetime) -> list[RunRow]:
    """`runs` with their duration (running: so far) and, while running, the time left."""
    rows = []
    for run in runs:
        end = run.finished_at or (now if run.status == RunStatus.RUNNING else None)
        elapsed = (end - run.started_at).total_seconds() if run.started_at and end else None
        eta = run_eta_seconds(progress=run.progress, elapsed_seconds=elapsed) \
            if run.status == RunStatus.RUNNING and elapsed is not None else None
        rows.append(RunRow(run=run, elapsed_seconds=elapsed, eta_seconds=eta,
                           error_headline=error_headline(run.error) if run.error else ""))
    return rows


@dataclass(frozen=True, slots=True)
class ComparedRun:
    """One policy's run on a comparison page and the label it has on every chart and table.

    A succeeded run is plotted; a failed one is listed with its error, never left out.
    """

    run: Run
    label: str

    @property
    def failed(self) -> bool:
        return self.run.status == RunStatus.FAILED

    @property
    def error(self) -> str:
        return short_error(self.run.error)


def short_error(text: str, *, limit: int = 300) -> str:
    """One line of a run's error for a table cell: a traceback's last line, else the first."""
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    if not lines:
        return "no error message recorded"
    line = lines[-1] if lines[0].startswith("Traceback (most recent call last)") else lines[0]
    return line if len(line) <= limit else line[:limit - 1] + "…"


_INPUT_ERROR = re.compile(r"^(?:[\w.]+\.)?InputError: ")


def error_headline(text: str) -> str:
    """`short_error` for a person: an input error without its class name, since its message
    already names the file, line and field."""
    return _INPUT_ERROR.sub("", short_error(text))


def scenario_comparison_runs(*, scenario: Scenario, seed: int) -> list[ComparedRun]:
    """Per policy of the scenario for `seed` (sweeps aside): its latest succeeded run, or,
    when none succeeded, its latest failed run.

    Labelled by policy name; a policy listed twice with different parameters gets its
    parameters in the label so its runs stay apart.
    """
    runs = (scenario_selectors.run_list(scenario_id=scenario.pk)
            .filter(sweep__isnull=True, seed=seed,
                    status__in=[RunStatus.SUCCEEDED, RunStatus.FAILED]))
    latest: dict[tuple[str, str], Run] = {}
    for run in runs:
        key = (run.policy, json.dumps(run.params, sort_keys=True))
        kept = latest.get(key)
        if kept is None or kept.status == RunStatus.FAILED or run.status == RunStatus.SUCCEEDED:
            latest[key] = run
    names = [policy for policy, _ in latest]
    order = {entry["policy"]: i for i, entry in enumerate(scenario.policies)}
    compared = []
    for (policy, params), run in sorted(latest.items(),
                                        key=lambda item: (order.get(item[0][0], 1e9), item[0])):
        label = policy if names.count(policy) == 1 else f"{policy} {params}"
        compared.append(ComparedRun(run=run, label=label))
    return compared


def scenario_seeds_finished(*, scenario: Scenario) -> list[int]:
    """Seeds for which at least one run of the scenario (outside sweeps) succeeded or failed."""
    runs = scenario_selectors.run_list(scenario_id=scenario.pk).filter(
        sweep__isnull=True, status__in=[RunStatus.SUCCEEDED, RunStatus.FAILED])
    return sorted(set(runs.values_list("seed", flat=True)))


@dataclass(frozen=True, slots=True)
class SettingRow:
    """One setting across the compared runs: its value per run, and whether they differ."""

    group: str
    name: str
    values: list[str]
    differs: bool


def comparison_settings(summaries: Sequence[Mapping[str, Any]]) -> list[SettingRow]:
    """Policy parameters, then engine settings, as each run used them (its summary).

    A run without a setting (another policy's parameter, or a result older than the
    summary's `engine` key) shows "—"; a row differs when two runs that have the setting
    hold different values.
    """
    rows = []
    for group, key in (("policy parameter", "params"), ("engine setting", "engine")):
        tables = [summary.get(key) or {} for summary in summaries]
        for name in sorted(set().union(*tables)):
            present = [_setting_text(table[name]) for table in tables if name in table]
            rows.append(SettingRow(
                group=group, name=name,
                values=[_setting_text(table[name]) if name in table else "—" for table in tables],
                differs=len(set(present)) > 1))
    return rows


def _setting_text(value: Any) -> str:
    """A setting as the table shows it; None (unset, unbounded) reads "none"."""
    return "none" if value is None else str(value)


def sweep_points(*, sweep: Sweep, metric: str) -> list[dict[str, Any]]:
    """One row per succeeded run of the sweep: label, grid point, seed and the metric's value.

    The label is the policy plus the grid's other axes, so each curve varies one parameter.
    """
    path = SWEEP_METRICS[metric]
    rows = []
    runs = scenario_selectors.run_list(sweep_id=sweep.pk, status=RunStatus.SUCCEEDED)
    for run in runs.select_related("result"):
        value: Any = run.result.summary
        for key in path:
            value = value.get(key) if isinstance(value, dict) else None
        if isinstance(value, int | float):
            rows.append({"policy": run.policy, "variant": run.variant, "seed": run.seed,
                         "value": float(value)})
    return rows


# --- Live jobs and decisions -----------------------------------------------------------------

LIVE_JOB_ROWS = 25
LIVE_DECISION_ROWS = 30


def cluster_live_jobs(*, cluster: Cluster, limit: int = LIVE_JOB_ROWS) -> dict[str, Any]:
    """Running jobs, then queued ones (each in submit order, `limit` of each), with their
    allocation, placement (server: GPUs) and remaining time, and how many there are."""
    jobs = live_selectors.job_list(cluster=cluster)
    rows = []
    for status in (JobStatus.RUNNING, JobStatus.QUEUED):
        for job in jobs.filter(status=status)[:limit]:
            placement = [f"{p.server.name}: {p.gpus}{' (flexible)' if p.flexible else ''}"
                         for p in job.placements.all()]
            unit, scale = time_unit(job.remaining_seconds)
            rows.append({"job": job, "gpus": sum(p.gpus for p in job.placements.all()),
                         "placement": placement,
                         "remaining": f"{job.remaining_seconds / scale:,.1f} {unit}"})
    counts = dict(jobs.filter(status__in=[JobStatus.RUNNING, JobStatus.QUEUED])
                  .order_by().values_list("status").annotate(n=Count("id")))
    return {"rows": rows, "running": counts.get(JobStatus.RUNNING, 0),
            "queued": counts.get(JobStatus.QUEUED, 0), "limit": limit}


def cluster_decisions(*, cluster: Cluster, limit: int = LIVE_DECISION_ROWS
                      ) -> list[dict[str, Any]]:
    """The newest decisions, each with a one-line account of what it did."""
    return [{"decision": d, "summary": decision_summary(kind=d.kind, response=d.response)}
            for d in live_selectors.decision_list(cluster=cluster)[:limit]]


def _names(items: Sequence[Any], *, shown: int = 6) -> str:
    """`a, b, c and 14 more`: a decision that moved many jobs stays one readable line."""
    names = [str(item) for item in items]
    more = len(names) - shown
    return ", ".join(names[:shown]) + (f" and {more} more" if more > 0 else "")


def decision_summary(*, kind: str, response: dict[str, Any]) -> str:
    """Loans, reclaims with the jobs they preempted, launches, scale-outs and scale-ins."""
    parts = []
    servers = response.get("servers") or []
    if kind == "loan":
        parts.append(f"lent {len(servers)} server(s): {_names(servers)}")
    if kind == "reclaim":
        parts.append(f"reclaimed {len(servers)} server(s): {_names(servers)}")
    for key, verb in (("preempted_jobs", "preempted"), ("preempt", "preempted")):
        if response.get(key):
            parts.append(f"{verb} {len(response[key])}: {_names(response[key])}")
    for key, verb in (("launch", "launched"), ("scale_out", "scaled out"),
                      ("scale_in", "scaled in"), ("scaled_in", "scaled in"),
                      ("migrate", "migrated")):
        entries = response.get(key) or []
        if entries:
            parts.append(f"{verb} {len(entries)}: "
                         f"{_names([e.get('job', e) for e in entries])}")
    if response.get("collateral_gpus"):
        parts.append(f"{response['collateral_gpus']} collateral GPU(s)")
    return "; ".join(parts) or "no change"


# --- Home page -------------------------------------------------------------------------------

RECENT_STUDIES = 5


@dataclass(frozen=True, slots=True)
class LiveClusterState:
    """A live cluster at a glance: servers by status, active jobs, its last decision."""

    cluster: Cluster
    by_status: dict[str, int]
    queued: int
    running: int
    last_decision_at: datetime | None

    @property
    def servers(self) -> int:
        return sum(self.by_status.values())


def live_cluster_states() -> list[LiveClusterState]:
    """Every live cluster (what-if ones left out) in three grouped queries, whatever their
    number of servers, jobs and decisions."""
    clusters = list(Cluster.objects.filter(kind=ClusterKind.LIVE).order_by("name"))
    servers: dict[int, dict[str, int]] = {}
    for row in (Server.objects.filter(pool__cluster__kind=ClusterKind.LIVE)
                .values("pool__cluster_id", "status").annotate(n=Count("id")).order_by()):
        servers.setdefault(row["pool__cluster_id"], {})[row["status"]] = row["n"]
    jobs: dict[tuple[int, str], int] = {
        (row["cluster_id"], row["status"]): row["n"]
        for row in (Job.objects.filter(cluster__kind=ClusterKind.LIVE,
                                       status__in=ACTIVE_STATUSES)
                    .values("cluster_id", "status").annotate(n=Count("id")).order_by())}
    decided = dict(Decision.objects.filter(cluster__kind=ClusterKind.LIVE)
                   .values("cluster_id").annotate(last=Max("created_at"))
                   .values_list("cluster_id", "last").order_by())
    return [LiveClusterState(
        cluster=cluster,
        by_status={status: servers.get(cluster.pk, {}).get(status, 0)
                   for status in ServerStatus.values},
        queued=jobs.get((cluster.pk, JobStatus.QUEUED), 0),
        running=jobs.get((cluster.pk, JobStatus.RUNNING), 0),
        last_decision_at=decided.get(cluster.pk),
    ) for cluster in clusters]


def scenario_recent(*, limit: int = RECENT_STUDIES) -> list[Scenario]:
    """The newest scenarios with their runs counted per status (`runs_<status>`)."""
    counts = {f"runs_{status}": Count("runs", filter=Q(runs__status=status))
              for status in (RunStatus.QUEUED, RunStatus.RUNNING, RunStatus.FAILED,
                             RunStatus.CANCELLED)}
    return list(scenario_selectors.scenario_list().annotate(**counts)[:limit])


def sweep_recent(*, limit: int = RECENT_STUDIES) -> list[Sweep]:
    """The newest sweeps with their runs counted (`run_count`, `runs_succeeded`)."""
    return list(scenario_selectors.sweep_list().annotate(
        runs_succeeded=Count("runs", filter=Q(runs__status=RunStatus.SUCCEEDED)))[:limit])


def reproduction_recent(*, limit: int = RECENT_STUDIES) -> list[Reproduction]:
    """The newest paper reproductions, without their (large) reports and logs."""
    return list(Reproduction.objects.defer("report", "progress_log")[:limit])
