from django.apps import AppConfig


class CapacityConfig(AppConfig):
    name = "planner.capacity"
    label = "capacity"
    verbose_name = "Capacity searches"

    def ready(self) -> None:
        from planner.capacity import receivers  # noqa: F401  (connects the run-ended hook)
