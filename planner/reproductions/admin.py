from django.contrib import admin

from planner.reproductions.models import Reproduction


@admin.register(Reproduction)
class ReproductionAdmin(admin.ModelAdmin):
    list_display = ["paper", "status", "created_at", "started_at", "finished_at"]
    list_filter = ["paper", "status"]
    readonly_fields = ["task_id", "progress_log", "report", "created_at", "started_at",
                       "finished_at", "updated_at"]
