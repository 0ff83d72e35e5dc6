from django.contrib import admin

from planner.capacity.models import CapacityPoint, CapacitySearch


class CapacityPointInline(admin.TabularInline):
    model = CapacityPoint
    extra = 0
    readonly_fields = ["run", "policy", "level", "seed", "round", "measurement"]
    can_delete = False


@admin.register(CapacitySearch)
class CapacitySearchAdmin(admin.ModelAdmin):
    list_display = ["__str__", "scenario", "status", "rounds", "created_at", "finished_at"]
    list_filter = ["status"]
    readonly_fields = ["rounds", "failures", "result", "error", "reference_level", "created_at",
                       "updated_at", "finished_at"]
    inlines = [CapacityPointInline]
