"""Reads the dashboard needs that the clusters and scenarios apps do not offer themselves."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from django.db.models import Count

from planner.clusters.models import Cluster, ServerStatus
from planner.live import selectors as live_selectors
from planner.scenarios import selectors as scenario_selectors
from planner.scenarios.models import Run, RunStatus, Scenario, Sweep
from planner.scenarios.services import SWEEP_METRICS

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


@dataclass(frozen=True, slots=True)
class ComparedRun:
    """One succeeded run on a comparison page and the label it has on every chart."""

    run: Run
    label: str


def scenario_comparison_runs(*, scenario: Scenario, seed: int) -> list[ComparedRun]:
    """The latest succeeded run of each of the scenario's policies for `seed` (sweeps aside).

    Labelled by policy name; a policy listed twice with different parameters gets its
    parameters in the label so its runs stay apart.
    """
    runs = (scenario_selectors.run_list(scenario_id=scenario.pk, status=RunStatus.SUCCEEDED)
            .filter(sweep__isnull=True, seed=seed))
    latest: dict[tuple[str, str], Run] = {}
    for run in runs:
        latest[(run.policy, json.dumps(run.params, sort_keys=True))] = run
    names = [policy for policy, _ in latest]
    order = {entry["policy"]: i for i, entry in enumerate(scenario.policies)}
    compared = []
    for (policy, params), run in sorted(latest.items(),
                                        key=lambda item: (order.get(item[0][0], 1e9), item[0])):
        label = policy if names.count(policy) == 1 else f"{policy} {params}"
        compared.append(ComparedRun(run=run, label=label))
    return compared


def scenario_seeds_with_results(*, scenario: Scenario) -> list[int]:
    """Seeds for which at least one run of the scenario (outside sweeps) succeeded."""
    runs = scenario_selectors.run_list(scenario_id=scenario.pk, status=RunStatus.SUCCEEDED)
    return sorted(set(runs.filter(sweep__isnull=True).values_list("seed", flat=True)))


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

LIVE_ROWS = 100


def cluster_live_jobs(*, cluster: Cluster, limit: int = LIVE_ROWS) -> list[dict[str, Any]]:
    """Queued and running jobs with their allocation and placement (server: GPUs)."""
    rows = []
    for job in live_selectors.job_list(cluster=cluster, active=True)[:limit]:
        placement = [f"{p.server.name}: {p.gpus}{' (flexible)' if p.flexible else ''}"
                     for p in job.placements.all()]
        rows.append({"job": job, "gpus": sum(p.gpus for p in job.placements.all()),
                     "placement": placement})
    return rows


def cluster_decisions(*, cluster: Cluster, limit: int = LIVE_ROWS) -> list[dict[str, Any]]:
    """The newest decisions, each with a one-line account of what it did."""
    return [{"decision": d, "summary": decision_summary(kind=d.kind, response=d.response)}
            for d in live_selectors.decision_list(cluster=cluster)[:limit]]


def decision_summary(*, kind: str, response: dict[str, Any]) -> str:
    """Loans, reclaims with the jobs they preempted, launches, scale-outs and scale-ins."""
    parts = []
    servers = response.get("servers") or []
    if kind == "loan":
        parts.append(f"lent {len(servers)} server(s): {', '.join(servers)}")
    if kind == "reclaim":
        parts.append(f"reclaimed {len(servers)} server(s): {', '.join(servers)}")
    for key, verb in (("preempted_jobs", "preempted"), ("preempt", "preempted")):
        if response.get(key):
            parts.append(f"{verb} {', '.join(map(str, response[key]))}")
    for key, verb in (("launch", "launched"), ("scale_out", "scaled out"),
                      ("scale_in", "scaled in"), ("scaled_in", "scaled in"),
                      ("migrate", "migrated")):
        entries = response.get(key) or []
        if entries:
            parts.append(f"{verb} {', '.join(str(e.get('job', e)) for e in entries)}")
    if response.get("collateral_gpus"):
        parts.append(f"{response['collateral_gpus']} collateral GPU(s)")
    return "; ".join(parts) or "no change"
