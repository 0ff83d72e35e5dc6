"""Prometheus metrics, read from the database at scrape time.

Requests are served by several gunicorn processes and runs by Celery workers, so counters
kept in one process's memory would each tell a part of the story (and reset with it). Every
number here is instead read from the tables all processes write, when Prometheus scrapes:

- `planner_servers{cluster,pool,status}` and `planner_servers_on_loan{cluster,pool}`
  (on loan or being reclaimed): gauges from the live servers;
- `planner_live_jobs{cluster,status}`: queued (the queue length) and running live jobs;
- `planner_decisions_total{kind,stateful}`: rows of the decision log, a counter;
- `planner_decision_duration_seconds{kind}`: a histogram of the latency each decision stored
  (`Decision.duration_seconds`; decisions logged before it was recorded are left out);
- `planner_runs{status}` (queued, running) and `planner_runs_finished_total{status}`
  (succeeded, failed, cancelled): what-if runs.

A counter read from a table goes down when rows are deleted (a deleted scenario's runs);
Prometheus' `rate()` takes that as a counter reset, which is what it is.
"""

from __future__ import annotations

from collections.abc import Iterator

from django.db.models import Count, Q, Sum
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)
from prometheus_client.registry import Collector, CollectorRegistry

from planner.clusters.models import ClusterKind, Pool, Server, ServerStatus
from planner.live.models import ACTIVE_STATUSES, Decision, DecisionKind, Job
from planner.live.selectors import ON_LOAN_STATUSES
from planner.scenarios.models import TERMINAL_STATUSES, Run, RunStatus

# Upper bounds (seconds) of the decision latency buckets: a small decision answers in
# milliseconds, a 2,000-job snapshot in tens of them, a stateful one waiting for its cluster's
# lock in up to seconds.
DECISION_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)


def _servers() -> Iterator[Metric]:
    by_status = GaugeMetricFamily("planner_servers", "Servers by pool and status.",
                                  labels=["cluster", "pool", "status"])
    on_loan = GaugeMetricFamily("planner_servers_on_loan",
                                "Inference servers lent to training (on loan or being "
                                "reclaimed).", labels=["cluster", "pool"])
    counts = {(row["pool_id"], row["status"]): row["n"]
              for row in Server.objects.values("pool_id", "status").annotate(n=Count("id"))}
    live = Pool.objects.filter(cluster__kind=ClusterKind.LIVE)  # what-if templates don't run
    for pool in live.select_related("cluster").order_by("cluster__name", "name"):
        for status in ServerStatus.values:
            by_status.add_metric([pool.cluster.name, pool.name, status],
                                 counts.get((pool.pk, status), 0))
        on_loan.add_metric([pool.cluster.name, pool.name],
                           sum(counts.get((pool.pk, status), 0) for status in ON_LOAN_STATUSES))
    yield by_status
    yield on_loan


def _live_jobs() -> Iterator[Metric]:
    jobs = GaugeMetricFamily("planner_live_jobs", "Live jobs queued (the queue length) and "
                             "running, per cluster.", labels=["cluster", "status"])
    rows = (Job.objects.filter(status__in=ACTIVE_STATUSES)
            .values("cluster__name", "status").annotate(n=Count("id"))
            .order_by("cluster__name", "status"))
    for row in rows:
        jobs.add_metric([row["cluster__name"], row["status"]], row["n"])
    yield jobs


def _decisions() -> Iterator[Metric]:
    total = CounterMetricFamily("planner_decisions", "Decisions logged, by kind and whether "
                                "they were taken on a cluster's live state.",
                                labels=["kind", "stateful"])
    for row in (Decision.objects.values("kind", "stateful").annotate(n=Count("id"))
                .order_by("kind", "stateful")):
        total.add_metric([row["kind"], str(row["stateful"]).lower()], row["n"])
    yield total

    latency = HistogramMetricFamily(
        "planner_decision_duration_seconds", "Time the service took to answer a decision: "
        "lock wait, state read, decision and its application.", labels=["kind"])
    timed = Q(duration_seconds__isnull=False)
    buckets = {f"le{i}": Count("id", filter=timed & Q(duration_seconds__lte=bound))
               for i, bound in enumerate(DECISION_BUCKETS)}
    rows = {row["kind"]: row for row in Decision.objects.values("kind").annotate(
        count=Count("id", filter=timed), total=Sum("duration_seconds"), **buckets)}
    for kind in DecisionKind.values:
        row = rows.get(kind)
        if row is None or row["count"] == 0:
            continue
        cumulative = [(repr(bound), row[f"le{i}"]) for i, bound in enumerate(DECISION_BUCKETS)]
        latency.add_metric([kind], [*cumulative, ("+Inf", row["count"])],
                           sum_value=row["total"])
    yield latency


def _runs() -> Iterator[Metric]:
    active = GaugeMetricFamily("planner_runs", "What-if runs queued or running.",
                               labels=["status"])
    finished = CounterMetricFamily("planner_runs_finished", "What-if runs ended, by outcome.",
                                   labels=["status"])
    counts = dict(Run.objects.values_list("status").annotate(n=Count("id")))
    for status in RunStatus.values:
        family = finished if status in TERMINAL_STATUSES else active
        family.add_metric([status], counts.get(status, 0))
    yield active
    yield finished


class DatabaseCollector(Collector):
    """Every planner metric, read from the database when collected (module docstring)."""

    def collect(self) -> Iterator[Metric]:
        yield from _servers()
        yield from _live_jobs()
        yield from _decisions()
        yield from _runs()


# A registry of its own: the client's default one also holds this process's own metrics,
# which would describe whichever web process happened to answer the scrape.
REGISTRY = CollectorRegistry(auto_describe=False)
REGISTRY.register(DatabaseCollector())
