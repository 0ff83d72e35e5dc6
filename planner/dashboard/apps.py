from django.apps import AppConfig


class DashboardConfig(AppConfig):
    name = "planner.dashboard"
    label = "dashboard"
    verbose_name = "Dashboard pages"
