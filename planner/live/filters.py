"""django-filter sets of the live API's list endpoints."""

import django_filters

from planner.clusters.models import Pool, Server
from planner.live.models import Decision, Job


class PoolFilter(django_filters.FilterSet):
    class Meta:
        model = Pool
        fields = ["cluster", "kind"]


class ServerFilter(django_filters.FilterSet):
    cluster = django_filters.NumberFilter(field_name="pool__cluster")

    class Meta:
        model = Server
        fields = ["cluster", "pool", "status"]


class JobFilter(django_filters.FilterSet):
    class Meta:
        model = Job
        fields = ["cluster", "status"]


class DecisionFilter(django_filters.FilterSet):
    created_after = django_filters.IsoDateTimeFilter(field_name="created_at", lookup_expr="gte")
    created_before = django_filters.IsoDateTimeFilter(field_name="created_at",
                                                      lookup_expr="lte")

    class Meta:
        model = Decision
        fields = ["cluster", "kind", "stateful"]
