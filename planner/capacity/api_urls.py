"""Capacity search routes under /api/v1/."""

from django.urls import path

from planner.capacity import apis

urlpatterns = [
    path("capacity-searches/", apis.CapacitySearchListApi.as_view(),
         name="capacity-search-list"),
    path("capacity-searches/<int:search_id>/", apis.CapacitySearchDetailApi.as_view(),
         name="capacity-search-detail"),
]
