from django.apps import AppConfig


class CoreConfig(AppConfig):
    name = "planner.core"
    label = "core"
    verbose_name = "Planner core"
