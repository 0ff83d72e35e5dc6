"""Live decision API routes under /api/v1/."""

from django.urls import path

from planner.live import apis

urlpatterns = [
    path("clusters/", apis.ClusterListApi.as_view(), name="live-cluster-list"),
    path("clusters/<int:cluster_id>/", apis.ClusterDetailApi.as_view(),
         name="live-cluster-detail"),
    path("clusters/<int:cluster_id>/decisions/loan", apis.ClusterLoanApi.as_view(),
         name="live-cluster-loan"),
    path("clusters/<int:cluster_id>/decisions/reclaim", apis.ClusterReclaimApi.as_view(),
         name="live-cluster-reclaim"),
    path("clusters/<int:cluster_id>/decisions/schedule", apis.ClusterScheduleApi.as_view(),
         name="live-cluster-schedule"),
    path("pools/", apis.PoolListApi.as_view(), name="live-pool-list"),
    path("servers/", apis.ServerListApi.as_view(), name="live-server-list"),
    path("jobs/", apis.JobListApi.as_view(), name="live-job-list"),
    path("jobs/<int:job_id>/", apis.JobDetailApi.as_view(), name="live-job-detail"),
    path("jobs/<int:job_id>/cancel", apis.JobCancelApi.as_view(), name="live-job-cancel"),
    path("jobs/<int:job_id>/progress", apis.JobReportApi.as_view(), name="live-job-progress"),
    path("jobs/<int:job_id>/hosts", apis.JobHostsApi.as_view(), name="live-job-hosts"),
    path("decisions/", apis.DecisionListApi.as_view(), name="live-decision-list"),
    path("decisions/loan", apis.DecideLoanApi.as_view(), name="live-decide-loan"),
    path("decisions/reclaim", apis.DecideReclaimApi.as_view(), name="live-decide-reclaim"),
    path("decisions/schedule", apis.DecideScheduleApi.as_view(), name="live-decide-schedule"),
    path("decisions/<int:decision_id>/", apis.DecisionDetailApi.as_view(),
         name="live-decision-detail"),
    path("decisions/<int:decision_id>/replay", apis.DecisionReplayApi.as_view(),
         name="live-decision-replay"),
]
