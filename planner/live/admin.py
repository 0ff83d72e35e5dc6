from django.contrib import admin

from planner.live.models import Decision, Job, Placement


class PlacementInline(admin.TabularInline):
    model = Placement
    extra = 0


@admin.register(Job)
class JobAdmin(admin.ModelAdmin):
    list_display = ["name", "cluster", "status", "num_gpus", "min_workers", "max_workers",
                    "progress", "submitted_at"]
    list_filter = ["status", "cluster"]
    search_fields = ["name"]
    inlines = [PlacementInline]


@admin.register(Decision)
class DecisionAdmin(admin.ModelAdmin):
    list_display = ["id", "kind", "cluster", "stateful", "actor", "created_at"]
    list_filter = ["kind", "stateful", "cluster"]
