from django.apps import AppConfig


class ScenariosConfig(AppConfig):
    name = "planner.scenarios"
    label = "scenarios"
    verbose_name = "What-if scenarios, sweeps and runs"

    def ready(self) -> None:
        from planner.scenarios import receivers, signals  # noqa: F401  (connect the file
        # cleanup and the sweep aggregation on a run's end)
