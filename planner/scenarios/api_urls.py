"""Scenario, sweep and run routes under /api/v1/."""

from django.urls import path

from planner.scenarios import apis

urlpatterns = [
    path("runs/", apis.RunListApi.as_view(), name="run-list"),
    path("runs/<int:run_id>/", apis.RunDetailApi.as_view(), name="run-detail"),
    path("runs/<int:run_id>/cancel", apis.RunCancelApi.as_view(), name="run-cancel"),
    path("runs/<int:run_id>/rerun", apis.RunRerunApi.as_view(), name="run-rerun"),
    path("runs/<int:run_id>/export.json", apis.RunExportJsonApi.as_view(),
         name="run-export-json"),
    path("runs/<int:run_id>/export.csv", apis.RunExportCsvApi.as_view(),
         name="run-export-csv"),
    path("workloads/", apis.WorkloadListApi.as_view(), name="workload-list"),
    path("workloads/<int:workload_id>/", apis.WorkloadDetailApi.as_view(),
         name="workload-detail"),
    path("scenarios/", apis.ScenarioListApi.as_view(), name="scenario-list"),
    path("scenarios/<int:scenario_id>/", apis.ScenarioDetailApi.as_view(),
         name="scenario-detail"),
    path("scenarios/<int:scenario_id>/launch", apis.ScenarioLaunchApi.as_view(),
         name="scenario-launch"),
    path("scenarios/<int:scenario_id>/sweeps", apis.SweepCreateApi.as_view(),
         name="sweep-create"),
    path("sweeps/", apis.SweepListApi.as_view(), name="sweep-list"),
    path("sweeps/<int:sweep_id>/", apis.SweepDetailApi.as_view(), name="sweep-detail"),
]
