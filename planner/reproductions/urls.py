"""The paper reproductions pages, mounted at /reproductions/."""

from django.urls import path

from planner.reproductions import views

app_name = "reproductions"

urlpatterns = [
    path("", views.reproduction_list, name="list"),
    path("start/", views.reproduction_start, name="start"),
    path("<int:reproduction_id>/", views.reproduction_detail, name="detail"),
    path("scenarios/<str:name>/run/", views.named_scenario_run, name="scenario-run"),
]
