"""Reads of clusters for pages and services."""

from django.db.models import Count, QuerySet

from planner.clusters.models import Cluster


def cluster_list(*, kind: str | None = None) -> QuerySet[Cluster]:
    """Clusters (of one kind, live or what-if, or all) with their pool and server counts."""
    clusters = Cluster.objects.all() if kind is None else Cluster.objects.filter(kind=kind)
    return clusters.annotate(
        pool_count=Count("pools", distinct=True), server_count=Count("pools__servers"),
    ).order_by("name")


def cluster_get(*, cluster_id: int) -> Cluster:
    return Cluster.objects.prefetch_related("pools__gpu_type").get(pk=cluster_id)


def cluster_gpu_total(*, cluster: Cluster) -> int:
    """All GPUs of the cluster: servers times GPUs per server, over its pools."""
    pools = cluster.pools.annotate(server_count=Count("servers"))
    return sum(pool.server_count * pool.gpus_per_server for pool in pools)
