from django.apps import AppConfig


class ReproductionsConfig(AppConfig):
    name = "planner.reproductions"
    label = "reproductions"
    verbose_name = "Paper reproductions"
