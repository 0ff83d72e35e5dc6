from django.apps import AppConfig


class CoreConfig(AppConfig):
    name = "planner.core"
    label = "core"
    verbose_name = "Planner core"

    def ready(self) -> None:
        from django.contrib import admin

        from planner.core.signin import RateLimitedAdminAuthenticationForm

        admin.site.login_form = RateLimitedAdminAuthenticationForm
