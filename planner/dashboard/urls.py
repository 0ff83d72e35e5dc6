"""Dashboard pages, mounted at the site root."""

from django.urls import path

from planner.dashboard import views

app_name = "dashboard"

urlpatterns = [
    path("clusters/", views.cluster_list, name="cluster-list"),
    path("clusters/<int:cluster_id>/", views.cluster_detail, name="cluster-detail"),
    path("clusters/<int:cluster_id>/live/", views.cluster_live, name="cluster-live"),
]
