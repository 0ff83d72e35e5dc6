"""Dashboard pages, mounted at the site root; sign-in is Django's, with an attempt limit."""

from django.contrib.auth import views as auth_views
from django.urls import path

from planner.core.signin import SignInView
from planner.dashboard import views

app_name = "dashboard"

urlpatterns = [
    path("accounts/login/", SignInView.as_view(next_page="dashboard:scenario-list"),
         name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(next_page="/"), name="logout"),
    path("clusters/", views.cluster_list, name="cluster-list"),
    path("clusters/<int:cluster_id>/", views.cluster_detail, name="cluster-detail"),
    path("clusters/<int:cluster_id>/live/", views.cluster_live, name="cluster-live"),
    path("scenarios/", views.scenario_list, name="scenario-list"),
    path("scenarios/new/", views.scenario_new, name="scenario-new"),
    path("scenarios/<int:scenario_id>/", views.scenario_detail, name="scenario-detail"),
    path("scenarios/<int:scenario_id>/launch/", views.scenario_launch_again,
         name="scenario-launch"),
    path("scenarios/<int:scenario_id>/delete/", views.scenario_delete_confirm,
         name="scenario-delete"),
    path("scenarios/<int:scenario_id>/sweeps/new/", views.sweep_new, name="sweep-new"),
    path("scenarios/<int:scenario_id>/compare/", views.scenario_compare,
         name="scenario-compare"),
    path("sweeps/", views.sweep_list, name="sweep-list"),
    path("sweeps/<int:sweep_id>/", views.sweep_detail, name="sweep-detail"),
    path("runs/", views.run_list, name="run-list"),
    path("runs/<int:run_id>/cancel/", views.run_cancel, name="run-cancel"),
    path("runs/<int:run_id>/rerun/", views.run_rerun, name="run-rerun"),
]
