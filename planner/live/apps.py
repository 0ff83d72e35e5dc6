from django.apps import AppConfig


class LiveConfig(AppConfig):
    name = "planner.live"
    label = "live"
    verbose_name = "Live jobs and decisions"

    def ready(self) -> None:
        from planner.live import signals  # noqa: F401 - connects the receivers
