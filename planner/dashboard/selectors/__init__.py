"""Reads for the dashboard's pages, one module per page family (as `views/`).

- `live`: the operator page and the live clusters at a glance;
- `runs`: the runs page;
- `compare`: the comparison page;
- `sweeps`: the sweep page;
- `home`: the home page's recent studies.

The names below are what the views import.
"""

from planner.dashboard.selectors.compare import (
    ComparedRun,
    SettingRow,
    comparison_settings,
    scenario_comparison_runs,
    scenario_seeds_finished,
)
from planner.dashboard.selectors.home import (
    reproduction_recent,
    scenario_recent,
    sweep_recent,
)
from planner.dashboard.selectors.live import (
    LiveClusterState,
    PoolState,
    cluster_decisions,
    cluster_live_jobs,
    cluster_pool_states,
    decision_summary,
    live_cluster_states,
)
from planner.dashboard.selectors.runs import (
    RunRow,
    error_headline,
    run_eta_seconds,
    run_filtered,
    run_policies,
    run_rows,
    short_error,
)
from planner.dashboard.selectors.sweeps import sweep_points

__all__ = [
    "ComparedRun", "LiveClusterState", "PoolState", "RunRow", "SettingRow",
    "cluster_decisions", "cluster_live_jobs", "cluster_pool_states", "comparison_settings",
    "decision_summary", "error_headline", "live_cluster_states", "reproduction_recent",
    "run_eta_seconds", "run_filtered", "run_policies", "run_rows",
    "scenario_comparison_runs", "scenario_recent", "scenario_seeds_finished", "short_error",
    "sweep_points", "sweep_recent",
]
