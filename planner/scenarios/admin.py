from django.contrib import admin, messages

from planner.scenarios import services
from planner.scenarios.models import (
    InferenceLoadProfile,
    Run,
    RunResult,
    Scenario,
    Sweep,
    Workload,
)
from simulation.errors import InputError


@admin.register(Workload)
class WorkloadAdmin(admin.ModelAdmin):
    list_display = ["name", "kind", "format", "num_jobs", "created_at"]
    list_filter = ["kind", "format"]
    readonly_fields = ["content_sha256", "summary", "created_at"]


@admin.register(InferenceLoadProfile)
class InferenceLoadProfileAdmin(admin.ModelAdmin):
    list_display = ["name", "kind", "created_at"]
    readonly_fields = ["content_sha256", "created_at"]


@admin.register(Scenario)
class ScenarioAdmin(admin.ModelAdmin):
    list_display = ["name", "slug", "cluster", "workload", "inference_load", "created_at"]
    search_fields = ["name", "slug"]
    actions = ["launch"]

    @admin.action(description="Launch runs for the selected scenarios")
    def launch(self, request, queryset) -> None:
        count = sum(len(services.scenario_launch(scenario=s)) for s in queryset)
        self.message_user(request, f"{count} run(s) created")


@admin.register(Sweep)
class SweepAdmin(admin.ModelAdmin):
    list_display = ["__str__", "scenario", "status", "created_at", "finished_at"]
    list_filter = ["status"]
    readonly_fields = ["aggregate", "finished_at"]


@admin.register(Run)
class RunAdmin(admin.ModelAdmin):
    list_display = ["id", "scenario", "sweep", "policy", "seed", "status", "progress",
                    "attempts", "started_at", "finished_at"]
    list_filter = ["status", "policy"]
    readonly_fields = ["content_hash", "task_id", "reused_from", "heartbeat_at", "attempts"]
    actions = ["cancel", "rerun"]

    @admin.action(description="Cancel the selected runs")
    def cancel(self, request, queryset) -> None:
        self._each(request, queryset, services.run_cancel)

    @admin.action(description="Re-run the selected runs")
    def rerun(self, request, queryset) -> None:
        self._each(request, queryset, services.run_rerun)

    def _each(self, request, queryset, action) -> None:
        for run in queryset:
            try:
                action(run_id=run.pk)
            except InputError as exc:
                self.message_user(request, exc.message, level=messages.WARNING)


@admin.register(RunResult)
class RunResultAdmin(admin.ModelAdmin):
    list_display = ["run", "directory", "created_at"]
    readonly_fields = ["summary", "directory", "created_at"]
