"""Reads of the what-if side for pages and the API, one module per entity.

- `scenarios`: scenarios with their inputs and run counts, and the policy catalogue;
- `workloads`: stored workloads and inference loads;
- `runs`: runs, their result frames and downloads;
- `sweeps`: sweeps, their progress and aggregate.

The names below are what the rest of the planner imports.
"""

from planner.scenarios.selectors.runs import (
    EXPORT_TABLES,
    run_export_csv,
    run_export_json,
    run_get,
    run_list,
    run_result_frames,
)
from planner.scenarios.selectors.scenarios import policy_catalog, scenario_get, scenario_list
from planner.scenarios.selectors.sweeps import (
    sweep_aggregate,
    sweep_get,
    sweep_list,
    sweep_progress,
)
from planner.scenarios.selectors.workloads import inference_load_list, workload_list

__all__ = [
    "EXPORT_TABLES", "inference_load_list", "policy_catalog", "run_export_csv",
    "run_export_json", "run_get", "run_list", "run_result_frames", "scenario_get",
    "scenario_list", "sweep_aggregate", "sweep_get", "sweep_list", "sweep_progress",
    "workload_list",
]
