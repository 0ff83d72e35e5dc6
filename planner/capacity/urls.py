"""The capacity pages, mounted at /capacity/."""

from django.urls import path

from planner.capacity import views

app_name = "capacity"

urlpatterns = [
    path("", views.capacity_list, name="list"),
    path("new/<int:scenario_id>/", views.capacity_new, name="new"),
    path("<int:search_id>/", views.capacity_detail, name="detail"),
    path("<int:search_id>/export.json", views.capacity_export, {"fmt": "json"},
         name="export-json"),
    path("<int:search_id>/export.csv", views.capacity_export, {"fmt": "csv"},
         name="export-csv"),
]
