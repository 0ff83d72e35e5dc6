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

    def get_readonly_fields(self, request, obj=None):
        # A job stays in the cluster it was submitted to: its placements are on that
        # cluster's servers, and only that cluster's state version would move on.
        return ("cluster",) if obj is not None else ()


@admin.register(Decision)
class DecisionAdmin(admin.ModelAdmin):
    list_display = ["id", "kind", "cluster", "stateful", "actor", "created_at"]
    list_filter = ["kind", "stateful", "cluster"]
