"""REST endpoints of capacity searches: start one, list them, read one's progress and answer.

Reads need any role, starting the planner role (`planner.core.roles`), like the other
what-if endpoints; the body is refused whole on an unknown field or a wrong JSON type.
"""

from __future__ import annotations

from django.urls import reverse
from drf_spectacular.utils import OpenApiExample, OpenApiParameter, extend_schema
from rest_framework import generics, serializers, status
from rest_framework.exceptions import NotFound, ValidationError
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from planner.capacity import selectors, services
from planner.capacity.models import CapacitySearch
from planner.core.fields import PolicyField
from planner.core.pagination import StrictPageNumberPagination
from planner.core.serializers import StrictSerializer
from planner.scenarios.apis import WhatIfListCreate, WhatIfRead
from planner.scenarios.models import Scenario
from simulation import capacity
from simulation.errors import InputError
from simulation.limits import MAX_INT, MAX_SEED
from simulation.limits import MAX_SERVERS_PER_POOL as MAX_LEVEL

START_EXAMPLE = OpenApiExample(
    "servers of the training pool", request_only=True,
    value={"scenario": 1, "policies": ["fifo", "tiresias", "muri-s"],
           "targets": [{"metric": "queuing.p95", "bound": 3600}],
           "costs": {"gpu_hour": {"V100": 2.5}},
           "axis": {"kind": "servers", "pools": ["training"]}, "max": 32, "seeds": [0, 1, 2]})


class CapacitySearchOutputSerializer(serializers.ModelSerializer):
    progress = serializers.SerializerMethodField()
    url = serializers.SerializerMethodField()

    class Meta:
        model = CapacitySearch
        fields = ["id", "scenario", "name", "status", "policies", "targets", "costs", "axis",
                  "low", "high", "seeds", "points_per_round", "baseline", "reference_level",
                  "progress", "error", "result", "url", "created_at", "finished_at"]

    def get_progress(self, search: CapacitySearch) -> dict[str, int]:
        return selectors.capacity_search_progress(search=search)

    def get_url(self, search: CapacitySearch) -> str:
        return reverse("capacity:detail", args=[search.pk])


def _search_get(search_id: int) -> CapacitySearch:
    try:
        return selectors.capacity_search_get(search_id=search_id)
    except CapacitySearch.DoesNotExist:
        raise NotFound(f"capacity search {search_id} does not exist") from None


class TargetSerializer(serializers.Serializer):
    metric = serializers.ChoiceField(choices=capacity.TARGET_METRICS)
    bound = serializers.FloatField(min_value=0, help_text="metric <= bound: seconds for "
                                                          "times, a fraction for shares")


class CostsSerializer(serializers.Serializer):
    gpu_hour = serializers.DictField(child=serializers.FloatField(min_value=0),
                                     help_text="GPU type -> price per GPU-hour (every type "
                                               "the cluster uses)")
    server_hour = serializers.DictField(child=serializers.FloatField(min_value=0),
                                        required=False, default=dict,
                                        help_text="GPU type -> fixed price per server-hour")


class AxisSerializer(serializers.Serializer):
    kind = serializers.ChoiceField(choices=[capacity.AXIS_SERVERS, capacity.AXIS_LOAN,
                                            capacity.AXIS_PARAM],
                                   help_text="servers of pools, inference servers lendable, "
                                             "or an integer policy parameter")
    pools = serializers.ListField(child=serializers.CharField(max_length=40), required=False,
                                  default=list, help_text="servers: the pools sized together; "
                                  "the first has the level's servers, the others keep their "
                                  "ratio to it")
    param = serializers.CharField(required=False, default="", allow_blank=True, max_length=64,
                                  help_text="param: the parameter's name")


class CapacitySearchStartSerializer(StrictSerializer):
    scenario = serializers.IntegerField(min_value=1, max_value=MAX_INT)
    name = serializers.CharField(max_length=200, required=False, default="", allow_blank=True)
    policies = serializers.ListField(child=PolicyField(),
                                     required=False, allow_empty=False,
                                     help_text="default: every policy of the scenario")
    targets = TargetSerializer(many=True, allow_empty=False,
                               help_text="every one must be met, on the mean over the seeds")
    costs = CostsSerializer()
    axis = AxisSerializer()
    min = serializers.IntegerField(required=False, min_value=0, max_value=MAX_LEVEL,
                                   help_text="least level (default: the axis' own)")
    max = serializers.IntegerField(required=False, min_value=0, max_value=MAX_LEVEL,
                                   help_text="largest level (default: the axis' own)")
    seeds = serializers.ListField(child=serializers.IntegerField(min_value=0,
                                                                 max_value=MAX_SEED),
                                  required=False, allow_empty=False,
                                  help_text="default: the scenario's seeds")
    points_per_round = serializers.IntegerField(
        required=False, default=1, min_value=1, max_value=services.MAX_POINTS_PER_ROUND,
        help_text="levels per policy per round, run in parallel")
    baseline = serializers.CharField(required=False, default="", allow_blank=True,
                                     max_length=64, help_text="the policy savings are "
                                     "measured against (default fifo, else the first)")


class CapacitySearchListApi(WhatIfListCreate, generics.ListAPIView):
    """Capacity searches, newest first (`?scenario=ID` keeps one scenario's); POST starts
    one: per policy, the cheapest level of the axis meeting every target."""

    serializer_class = CapacitySearchOutputSerializer
    pagination_class = StrictPageNumberPagination
    filter_backends: list[type] = []

    class FilterSerializer(serializers.Serializer):
        scenario = serializers.IntegerField(required=False, min_value=1, max_value=MAX_INT)

    @extend_schema(summary="List capacity searches", parameters=[FilterSerializer])
    def get(self, request: Request, *args, **kwargs) -> Response:
        return super().get(request, *args, **kwargs)

    def get_queryset(self):
        filters = self.FilterSerializer(data=self.request.query_params.dict())
        filters.is_valid(raise_exception=True)
        return selectors.capacity_search_list(
            scenario_id=filters.validated_data.get("scenario")).order_by("-created_at", "-id")

    @extend_schema(
        summary="Start a capacity search", request=CapacitySearchStartSerializer,
        responses={201: CapacitySearchOutputSerializer}, examples=[START_EXAMPLE],
        description="Checked completely and saved with its first round of runs in one "
                    "transaction; poll `GET capacity-searches/<id>/` for `progress` and "
                    "`result` (refreshed after every round).")
    def post(self, request: Request) -> Response:
        data = CapacitySearchStartSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        values = data.validated_data
        scenario = Scenario.objects.filter(pk=values["scenario"]).first()
        if scenario is None:
            raise ValidationError({"scenario": [f"scenario {values['scenario']} does not "
                                                "exist"]})
        try:
            search = services.capacity_search_start(
                scenario=scenario, name=values["name"], policies=values.get("policies"),
                targets=[dict(t) for t in values["targets"]],
                costs={k: dict(v) for k, v in values["costs"].items()},
                axis=dict(values["axis"]), low=values.get("min"), high=values.get("max"),
                seeds=values.get("seeds"), points_per_round=values["points_per_round"],
                baseline=values["baseline"])
        except InputError as exc:
            raise ValidationError({exc.field or "non_field_errors": [exc.message]}) from None
        return Response(CapacitySearchOutputSerializer(search).data,
                        status=status.HTTP_201_CREATED)


class CapacitySearchDetailApi(WhatIfRead, APIView):
    @extend_schema(summary="One capacity search: progress and its answer so far",
                   responses=CapacitySearchOutputSerializer,
                   parameters=[OpenApiParameter("search_id", int, OpenApiParameter.PATH)])
    def get(self, request: Request, search_id: int) -> Response:
        return Response(CapacitySearchOutputSerializer(_search_get(search_id)).data)
