"""Writes of the what-if side, one module per entity; every Celery task's body.

- `workloads`: workloads and inference loads (uploads parsed completely before saving);
- `scenarios`: scenarios created from stored inputs, specs or an API body, and deleted;
- `runs`: runs created or reused, launched, sent after the commit, cancelled, re-run;
- `run_execution`: a run's execution (the task body) and the reaping of lost runs;
- `sweeps`: grids of runs and their aggregate across seeds;
- `named`: the demo's study and the paper reproductions' named scenarios.

User mistakes raise `simulation.errors.InputError` (field, line, one-line message) before
anything is saved; the API turns them into HTTP 400. The names below are what the rest of
the planner imports.
"""

from planner.scenarios.services.named import (
    DEMO_SLUG,
    demo_load,
    named_scenario_launch,
    named_scenarios_load,
)
from planner.scenarios.services.run_execution import RunAborted, run_execute, run_reap_stale
from planner.scenarios.services.runs import (
    run_cancel,
    run_create,
    run_rerun,
    runs_enqueue,
    scenario_launch,
)
from planner.scenarios.services.scenarios import (
    scenario_create,
    scenario_create_from_inputs,
    scenario_create_from_specs,
    scenario_delete,
)
from planner.scenarios.services.sweeps import (
    SWEEP_METRICS,
    sweep_aggregate,
    sweep_create,
    sweep_finish_if_done,
)
from planner.scenarios.services.workloads import (
    inference_load_create_from_upload,
    inference_load_create_generated,
    upload_text,
    workload_create_from_generator,
    workload_create_from_upload,
    workload_summary,
)

__all__ = [
    "DEMO_SLUG", "RunAborted", "SWEEP_METRICS", "demo_load", "inference_load_create_from_upload",
    "inference_load_create_generated", "named_scenario_launch", "named_scenarios_load",
    "run_cancel", "run_create", "run_execute", "run_reap_stale", "run_rerun", "runs_enqueue",
    "scenario_create", "scenario_create_from_inputs", "scenario_create_from_specs",
    "scenario_delete", "scenario_launch", "sweep_aggregate", "sweep_create",
    "sweep_finish_if_done", "upload_text", "workload_create_from_generator",
    "workload_create_from_upload", "workload_summary",
]
