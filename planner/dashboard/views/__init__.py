"""Dashboard pages: thin views over the clusters/scenarios selectors and services, one module
per page family (clusters, scenarios and the builder, runs, the comparison, sweeps).

Every page needs a role (`planner.core.roles`): any role reads, the scenario builder needs
`planner`. Anonymous visitors are sent to the sign-in page; a user without the role gets 403.

Figures come from `planner.dashboard.figures` (pure functions) and reach the page as JSON in
`json_script` tags; `static/js/charts.js` draws them and `static/js/live.js` keeps live parts
current by re-fetching their fragment views.
"""

from planner.dashboard.views.clusters import cluster_detail, cluster_list, cluster_live
from planner.dashboard.views.common import chart_payloads
from planner.dashboard.views.compare import scenario_compare, summary_cells
from planner.dashboard.views.runs import run_cancel, run_list, run_rerun
from planner.dashboard.views.scenarios import (
    scenario_delete_confirm,
    scenario_detail,
    scenario_launch_again,
    scenario_list,
    scenario_new,
    sweep_new,
)
from planner.dashboard.views.sweeps import sweep_detail, sweep_list

__all__ = [
    "chart_payloads", "cluster_detail", "cluster_list", "cluster_live", "run_cancel", "run_list",
    "run_rerun", "scenario_compare", "scenario_delete_confirm", "scenario_detail",
    "scenario_launch_again", "scenario_list", "scenario_new", "summary_cells", "sweep_detail",
    "sweep_list", "sweep_new",
]
