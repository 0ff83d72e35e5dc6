"""REST endpoints for workloads, scenarios, sweeps and runs (progress polling, cancel, re-run,
export): what a planner scripts a study with."""

from __future__ import annotations

from django.http import HttpResponse
from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_view
from rest_framework import generics, serializers, status
from rest_framework.exceptions import NotFound, ValidationError
from rest_framework.parsers import MultiPartParser
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from planner.core.pagination import StrictPageNumberPagination
from planner.core.roles import API_AUTHENTICATION, CanPlan, CanRead
from planner.core.serializers import StrictSerializer
from planner.core.throttling import SharedScopedThrottle
from planner.live.parsers import FastJSONParser
from planner.scenarios import selectors, services
from planner.scenarios.models import Run, RunResult, RunStatus, Scenario, Sweep, Workload
from planner.scenarios.serializers import (
    SCENARIO_CREATE_EXAMPLES,
    SWEEP_CREATE_EXAMPLE,
    WORKLOAD_GENERATE_EXAMPLE,
    ScenarioCreateSerializer,
    ScenarioOutputSerializer,
    WorkloadGenerateSerializer,
    WorkloadOutputSerializer,
    WorkloadUploadSerializer,
)
from simulation.errors import InputError
from simulation.limits import MAX_INT


def _bad_input(exc: InputError, default_field: str, *, prefix: str | None = None
               ) -> ValidationError:
    """HTTP 400 naming the field (and the file and line, inside the message); `prefix` is
    the request field the error's own field is inside of."""
    field = exc.field or default_field
    if prefix and exc.field:
        field = f"{prefix}.{exc.field}"
    return ValidationError({field: [str(exc)]})


def _get(model, pk: int):
    try:
        return model.objects.get(pk=pk)
    except model.DoesNotExist:
        raise NotFound(f"{model._meta.verbose_name} {pk} does not exist") from None


class WhatIfRead:
    """Reads of runs, results and sweeps: any role (planner.core.roles), throttled per user."""

    authentication_classes = API_AUTHENTICATION
    permission_classes = [CanRead]
    throttle_classes = [SharedScopedThrottle]
    throttle_scope = "whatif-read"


class WhatIfWrite(WhatIfRead):
    """Uploads, launches, sweeps, re-runs and cancels: the planner role (or admin)."""

    permission_classes = [CanPlan]
    throttle_scope = "whatif-write"


class WhatIfListCreate(WhatIfRead):
    """A list anyone with a role reads and a planner adds to with POST."""

    def get_permissions(self):
        return [CanPlan()] if self.request.method == "POST" else [CanRead()]

    def get_throttles(self):
        self.throttle_scope = "whatif-write" if self.request.method == "POST" else "whatif-read"
        return super().get_throttles()


UNSENT_NOTICE = ("saved and queued; the task broker is unreachable, so the run is sent to a "
                 "worker when the broker is back")


class RunOutputSerializer(serializers.ModelSerializer):
    summary = serializers.SerializerMethodField()
    notice = serializers.SerializerMethodField()
    wall_seconds = serializers.FloatField(allow_null=True)

    class Meta:
        model = Run
        fields = ["id", "scenario", "sweep", "policy", "params", "seed", "variant", "status",
                  "progress", "attempts", "error", "reused_from", "created_at", "started_at",
                  "finished_at", "heartbeat_at", "wall_seconds", "content_hash", "summary",
                  "dispatched_at", "notice"]

    def get_notice(self, run: Run) -> str:
        """Why a queued run has not reached a worker yet, or empty."""
        unsent = run.status == RunStatus.QUEUED and run.dispatched_at is None
        return UNSENT_NOTICE if unsent else ""

    def get_summary(self, run: Run) -> dict | None:
        try:
            return run.result.summary
        except RunResult.DoesNotExist:
            return None


class RunListApi(WhatIfRead, generics.ListAPIView):
    """Runs with their progress, for pages to poll; filter by scenario, sweep and status.

    A page of runs (`count`, `next`, `previous`, `results`), as the schema says: a generic
    list view, so drf-spectacular documents the pagination it answers with.
    """

    serializer_class = RunOutputSerializer
    pagination_class = StrictPageNumberPagination
    filter_backends: list[type] = []  # the filters are validated below

    class FilterSerializer(serializers.Serializer):
        scenario = serializers.IntegerField(required=False, min_value=1, max_value=MAX_INT)
        sweep = serializers.IntegerField(required=False, min_value=1, max_value=MAX_INT)
        status = serializers.ChoiceField(choices=RunStatus.choices, required=False)

    @extend_schema(summary="List runs with their progress", parameters=[FilterSerializer])
    def get(self, request: Request, *args, **kwargs) -> Response:
        return super().get(request, *args, **kwargs)

    def get_queryset(self):
        # A plain dict, not the QueryDict: DRF reads a QueryDict as an HTML form, where
        # `?status=` means "not given"; here it is a bad value, as the schema says.
        filters = self.FilterSerializer(data=self.request.query_params.dict())
        filters.is_valid(raise_exception=True)
        return selectors.run_list(scenario_id=filters.validated_data.get("scenario"),
                                  sweep_id=filters.validated_data.get("sweep"),
                                  status=filters.validated_data.get("status"))


class RunDetailApi(WhatIfRead, APIView):
    @extend_schema(summary="One run: status, progress, timings, summary",
                   responses=RunOutputSerializer)
    def get(self, request: Request, run_id: int) -> Response:
        try:
            run = selectors.run_get(run_id=run_id)
        except Run.DoesNotExist:
            raise NotFound(f"run {run_id} does not exist") from None
        return Response(RunOutputSerializer(run).data)


class RunCancelApi(WhatIfWrite, APIView):
    @extend_schema(summary="Cancel a queued or running run", request=None,
                   responses=RunOutputSerializer)
    def post(self, request: Request, run_id: int) -> Response:
        _get(Run, run_id)
        try:
            run = services.run_cancel(run_id=run_id)
        except InputError as exc:
            raise _bad_input(exc, "status") from None
        return Response(RunOutputSerializer(run).data)


class RunRerunApi(WhatIfWrite, APIView):
    @extend_schema(summary="Run again from the same inputs", request=None,
                   responses={201: RunOutputSerializer})
    def post(self, request: Request, run_id: int) -> Response:
        _get(Run, run_id)
        try:
            run = services.run_rerun(run_id=run_id)
        except InputError as exc:
            raise _bad_input(exc, "status") from None
        return Response(RunOutputSerializer(run).data, status=status.HTTP_201_CREATED)


def _run_with_result(run_id: int) -> Run:
    run = _get(Run, run_id)
    if not RunResult.objects.filter(run=run).exists():
        raise NotFound(f"run {run_id} has no result (status {run.status})")
    return run


class RunExportJsonApi(WhatIfRead, APIView):
    @extend_schema(summary="A run's whole result as JSON", responses={200: dict})
    def get(self, request: Request, run_id: int) -> Response:
        run = _run_with_result(run_id)
        response = Response(selectors.run_export_json(run=run))
        response["Content-Disposition"] = f'attachment; filename="run-{run_id}.json"'
        return response


class RunExportCsvApi(WhatIfRead, APIView):
    """One table of a result as CSV: `?table=jobs` (default), `timeseries` or `summary`."""

    class QuerySerializer(serializers.Serializer):
        table = serializers.ChoiceField(choices=selectors.EXPORT_TABLES, default="jobs")

    @extend_schema(summary="One table of a run's result as CSV", parameters=[QuerySerializer],
                   responses={(200, "text/csv"): str})
    def get(self, request: Request, run_id: int) -> HttpResponse:
        query = self.QuerySerializer(data=request.query_params.dict())
        query.is_valid(raise_exception=True)
        table = query.validated_data["table"]
        run = _run_with_result(run_id)
        response = HttpResponse(selectors.run_export_csv(run=run, table=table),
                                content_type="text/csv")
        response["Content-Disposition"] = f'attachment; filename="run-{run_id}-{table}.csv"'
        return response


@extend_schema_view(get=extend_schema(summary="List workloads"))
class WorkloadListApi(WhatIfListCreate, generics.ListAPIView):
    """Workloads, newest first; POST adds one: a trace upload (multipart) or a generated
    workload (JSON), as the request's content type says."""

    serializer_class = WorkloadOutputSerializer
    parser_classes = [FastJSONParser, MultiPartParser]
    pagination_class = StrictPageNumberPagination
    filter_backends: list[type] = []

    def get_queryset(self):
        return selectors.workload_list()

    @extend_schema(
        summary="Add a workload: upload a trace or generate one",
        request={"multipart/form-data": WorkloadUploadSerializer,
                 "application/json": WorkloadGenerateSerializer},
        responses={201: WorkloadOutputSerializer},
        examples=[WORKLOAD_GENERATE_EXAMPLE],
        description="multipart/form-data: `file` (a trace in any supported format, parsed "
                    "completely before anything is saved), optional `name` and `format`. "
                    "application/json: `name`, `generator` settings and `seed`.",
    )
    def post(self, request: Request) -> Response:
        if request.content_type.startswith("multipart/"):
            data = WorkloadUploadSerializer(data=request.data)
            data.is_valid(raise_exception=True)
            try:
                workload = services.workload_create_from_upload(**data.validated_data)
            except InputError as exc:
                raise ValidationError({"file": [str(exc)]}) from None
        else:
            data = WorkloadGenerateSerializer(data=request.data)
            data.is_valid(raise_exception=True)
            fields = data.validated_data
            try:
                workload = services.workload_create_from_generator(
                    name=fields["name"], spec=fields["generator"], seed=fields["seed"])
            except InputError as exc:
                prefix = "generator" if exc.source == "generator" else None
                raise _bad_input(exc, "generator", prefix=prefix) from None
        return Response(WorkloadOutputSerializer(workload).data, status=status.HTTP_201_CREATED)


class WorkloadDetailApi(WhatIfRead, APIView):
    @extend_schema(summary="One workload", responses=WorkloadOutputSerializer)
    def get(self, request: Request, workload_id: int) -> Response:
        return Response(WorkloadOutputSerializer(_get(Workload, workload_id)).data)


@extend_schema_view(get=extend_schema(summary="List scenarios with their runs"))
class ScenarioListApi(WhatIfListCreate, generics.ListAPIView):
    """Scenarios, newest first, each with its runs; POST creates one (and launches it with
    `"launch": true`)."""

    serializer_class = ScenarioOutputSerializer
    pagination_class = StrictPageNumberPagination
    filter_backends: list[type] = []

    def get_queryset(self):
        return selectors.scenario_list().prefetch_related("runs").order_by("-created_at", "-id")

    @extend_schema(
        summary="Create a scenario",
        request=ScenarioCreateSerializer, responses={201: ScenarioOutputSerializer},
        examples=SCENARIO_CREATE_EXAMPLES,
        description="A cluster (`cluster` id, or `cluster_spec` text for a new one), a "
                    "`workload` id, an optional inference load (`inference_load` id or "
                    "`inference_load_generator`), policies with their parameters, seeds and "
                    "engine settings, checked completely and saved in one transaction. It "
                    "creates no runs unless `launch` is true; otherwise POST its "
                    "`links.launch`.",
    )
    def post(self, request: Request) -> Response:
        data = ScenarioCreateSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        fields = data.validated_data
        try:
            scenario, _ = services.scenario_create_from_inputs(
                name=fields["name"], description=fields["description"],
                cluster_id=fields.get("cluster"), cluster_spec_text=fields.get("cluster_spec", ""),
                workload_id=fields["workload"], inference_load_id=fields.get("inference_load"),
                inference_load_params=fields.get("inference_load_generator"),
                policies=fields["policies"], seeds=fields["seeds"],
                engine_settings=fields["engine_settings"], launch=fields["launch"])
        except InputError as exc:
            raise _bad_input(exc, "policies") from None
        scenario = selectors.scenario_list().prefetch_related("runs").get(pk=scenario.pk)
        return Response(ScenarioOutputSerializer(scenario).data, status=status.HTTP_201_CREATED)


class ScenarioDetailApi(WhatIfRead, APIView):
    @extend_schema(summary="One scenario with its runs", responses=ScenarioOutputSerializer)
    def get(self, request: Request, scenario_id: int) -> Response:
        try:
            scenario = selectors.scenario_list().prefetch_related("runs").get(pk=scenario_id)
        except Scenario.DoesNotExist:
            raise NotFound(f"scenario {scenario_id} does not exist") from None
        return Response(ScenarioOutputSerializer(scenario).data)


class ScenarioLaunchApi(WhatIfWrite, APIView):
    """Create one run per policy x seed of the scenario (identical earlier runs are reused).

    A scenario with a policy that cannot run on its inputs is refused (400, naming the
    policy's entry and the reason) and no run is created.
    """

    @extend_schema(summary="Launch: a run per policy and seed", request=None,
                   responses={201: RunOutputSerializer(many=True)})
    def post(self, request: Request, scenario_id: int) -> Response:
        scenario = _get(Scenario, scenario_id)
        try:
            runs = services.scenario_launch(scenario=scenario)
        except InputError as exc:
            raise _bad_input(exc, "policies") from None
        return Response(RunOutputSerializer(runs, many=True).data,
                        status=status.HTTP_201_CREATED)


class SweepOutputSerializer(serializers.ModelSerializer):
    progress = serializers.SerializerMethodField()
    runs_unsent = serializers.SerializerMethodField()
    notice = serializers.SerializerMethodField()

    class Meta:
        model = Sweep
        fields = ["id", "scenario", "name", "grid", "status", "created_at", "finished_at",
                  "progress", "aggregate", "runs_unsent", "notice"]

    def get_progress(self, sweep: Sweep) -> dict[str, int]:
        return selectors.sweep_progress(sweep=sweep)

    def get_runs_unsent(self, sweep: Sweep) -> int:
        """Queued runs not yet sent to the broker (it was unreachable)."""
        return sweep.runs.filter(status=RunStatus.QUEUED, dispatched_at__isnull=True).count()

    def get_notice(self, sweep: Sweep) -> str:
        return UNSENT_NOTICE if self.get_runs_unsent(sweep) else ""


class SweepCreateApi(WhatIfWrite, APIView):
    """A parameter grid over a scenario, e.g. ``{"grid": {"load_scale": [1, 2]}}``."""

    class InputSerializer(StrictSerializer):
        name = serializers.CharField(max_length=200, required=False, default="")
        grid = serializers.JSONField(
            help_text="axis -> values: engine settings, policy parameters, `cluster_scale`, "
                      "`load_scale`, `elastic_share`")

    @extend_schema(summary="Create a sweep over a scenario and start its runs",
                   request=InputSerializer, responses={201: SweepOutputSerializer},
                   examples=[SWEEP_CREATE_EXAMPLE])
    def post(self, request: Request, scenario_id: int) -> Response:
        scenario = _get(Scenario, scenario_id)
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        try:
            sweep = services.sweep_create(scenario=scenario, **data.validated_data)
        except InputError as exc:
            raise _bad_input(exc, "grid") from None
        return Response(SweepOutputSerializer(sweep).data, status=status.HTTP_201_CREATED)


class SweepListApi(WhatIfRead, generics.ListAPIView):
    """Sweeps, newest first; `?scenario=ID` keeps one scenario's."""

    serializer_class = SweepOutputSerializer
    pagination_class = StrictPageNumberPagination
    filter_backends: list[type] = []

    class FilterSerializer(serializers.Serializer):
        scenario = serializers.IntegerField(required=False, min_value=1, max_value=MAX_INT)

    @extend_schema(summary="List sweeps", parameters=[FilterSerializer])
    def get(self, request: Request, *args, **kwargs) -> Response:
        return super().get(request, *args, **kwargs)

    def get_queryset(self):
        filters = self.FilterSerializer(data=self.request.query_params.dict())
        filters.is_valid(raise_exception=True)
        return selectors.sweep_list(scenario_id=filters.validated_data.get("scenario")).order_by(
            "-created_at", "-id")


class SweepDetailApi(WhatIfRead, APIView):
    @extend_schema(summary="One sweep: progress and, once done, its aggregate",
                   responses=SweepOutputSerializer,
                   parameters=[OpenApiParameter("sweep_id", int, OpenApiParameter.PATH)])
    def get(self, request: Request, sweep_id: int) -> Response:
        return Response(SweepOutputSerializer(_get(Sweep, sweep_id)).data)
