from django.contrib import admin

from planner.clusters.models import Cluster, GpuType, Pool, Server


@admin.register(GpuType)
class GpuTypeAdmin(admin.ModelAdmin):
    list_display = ["name", "speed", "memory_gb"]


class PoolInline(admin.TabularInline):
    model = Pool
    extra = 0


@admin.register(Cluster)
class ClusterAdmin(admin.ModelAdmin):
    list_display = ["name", "kind", "created_at", "updated_at"]
    list_filter = ["kind"]
    search_fields = ["name"]
    inlines = [PoolInline]


@admin.register(Pool)
class PoolAdmin(admin.ModelAdmin):
    list_display = ["name", "cluster", "kind", "gpu_type", "gpus_per_server", "nominal_quota",
                    "borrowing_limit", "lending_limit"]
    list_filter = ["kind", "cluster"]


@admin.register(Server)
class ServerAdmin(admin.ModelAdmin):
    list_display = ["name", "pool", "status", "updated_at"]
    list_filter = ["status", "pool__cluster", "pool"]
    search_fields = ["name"]
