from django.urls import path

from planner.core import views

urlpatterns = [
    path("", views.home, name="home"),
    path("metrics", views.metrics, name="metrics"),
]
