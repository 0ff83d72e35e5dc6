from django.apps import AppConfig


class ScenariosConfig(AppConfig):
    name = "planner.scenarios"
    label = "scenarios"
    verbose_name = "What-if scenarios, sweeps and runs"

    def ready(self) -> None:
        from planner.scenarios import signals  # noqa: F401  (connects the file cleanup)
