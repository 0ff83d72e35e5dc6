from django.apps import AppConfig


class ClustersConfig(AppConfig):
    name = "planner.clusters"
    label = "clusters"
    verbose_name = "Clusters, pools and servers"
