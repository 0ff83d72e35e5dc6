from django.apps import AppConfig


class LiveConfig(AppConfig):
    name = "planner.live"
    label = "live"
    verbose_name = "Live jobs and decisions"
