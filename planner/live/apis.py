"""The live decision API under /api/v1/: thin views over `services` and `selectors`.

Reads need the viewer role, decisions and job writes the operator role (`permissions`).
State-changing POSTs honour an `Idempotency-Key` header: a replay gets the first answer
(header `Idempotent-Replayed: true`), the same key with another body gets 422. Bad input is
answered 400 with the offending field (a JSON path into the request) as the error's key.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.http import HttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import (
    OpenApiExample,
    OpenApiParameter,
    OpenApiResponse,
    extend_schema,
    extend_schema_view,
)
from rest_framework import generics, status
from rest_framework.authentication import SessionAuthentication
from rest_framework.exceptions import NotFound, ValidationError
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from planner.clusters.models import Cluster, ClusterKind, Pool, Server
from planner.clusters.selectors import cluster_list
from planner.live import selectors, services
from planner.live import serializers as s
from planner.live.collector import with_collector_paused
from planner.live.filters import DecisionFilter, JobFilter, PoolFilter, ServerFilter
from planner.live.models import Decision, DecisionKind, Job
from planner.live.parsers import FastJSONParser
from planner.live.permissions import CanDecide, CanRead, LiveThrottle, RoleTokenAuthentication
from simulation.errors import InputError

IDEMPOTENCY_HEADER = OpenApiParameter(
    "Idempotency-Key", OpenApiTypes.STR, OpenApiParameter.HEADER, required=False,
    description="repeat the request with the same key to get the first answer back",
)
ERRORS = {400: OpenApiResponse(description="bad input: {field: [message]}"),
          422: OpenApiResponse(description="Idempotency-Key reused with another request")}


JOB_SUBMIT_EXAMPLE = OpenApiExample(
    "elastic job", request_only=True,
    value={"cluster": 1, "name": "bert-42", "num_gpus": 8, "duration_seconds": 7200,
           "gpus_per_worker": 1, "min_workers": 4, "max_workers": 16, "model": "bert"},
)
# DESIGN.md's snapshot: two T4 servers on loan, one job across both.
_SNAPSHOT = {
    "servers": [
        {"id": "inf-1", "pool": "inference", "gpus": 8, "gpu_type": "T4", "on_loan": True},
        {"id": "inf-2", "pool": "inference", "gpus": 8, "gpu_type": "T4", "on_loan": True},
    ],
    "jobs": [
        {"id": "job-a", "status": "running", "gpus_per_worker": 1, "min_workers": 8,
         "max_workers": 8, "remaining_seconds": 3600,
         "placement": [{"server": "inf-1", "gpus": 4, "flexible": False},
                       {"server": "inf-2", "gpus": 4, "flexible": False}]},
    ],
}
# Per kind: the stateful request's example, then the stateless one's.
_EXAMPLES = {
    DecisionKind.LOAN: [
        OpenApiExample("lend two idle servers", request_only=True, value={"count": 2}),
        OpenApiExample("lend named servers", request_only=True, value={
            "servers": ["inf-2"], "state": {"servers": [
                {"id": "inf-1", "pool": "inference", "gpus": 8, "gpu_type": "T4"},
                {"id": "inf-2", "pool": "inference", "gpus": 8, "gpu_type": "T4"}]}}),
    ],
    DecisionKind.RECLAIM: [
        OpenApiExample("give back two servers", request_only=True,
                       value={"count": 2, "strategy": "aryl"}),
        OpenApiExample("DESIGN.md's reclaim", request_only=True,
                       value={"count": 2, "strategy": "aryl", "state": _SNAPSHOT}),
    ],
    DecisionKind.SCHEDULE: [
        OpenApiExample("one round of Aryl", request_only=True, value={"policy": "aryl"}),
        OpenApiExample("launch a queued job", request_only=True, value={
            "policy": "fifo", "state": {"servers": _SNAPSHOT["servers"], "jobs": []},
            "queue": [{"id": "job-b", "num_gpus": 4, "remaining_seconds": 600}]}),
    ],
}


def _bad_input(exc: InputError) -> ValidationError:
    return ValidationError({exc.field or "request": [exc.message]})


def _idempotent(request: Request, action: Callable[[], tuple[int, Any]]) -> Response:
    """Run a state-changing action once per Idempotency-Key (see module docstring)."""
    key = request.headers.get("Idempotency-Key", "").strip()[:200] or None
    fingerprint = services.request_fingerprint(method=request.method, path=request.path,
                                               body=request.data) if key else ""
    try:
        code, body, replayed = services.idempotent_call(
            user=request.user, key=key, fingerprint=fingerprint, action=action)
    except services.IdempotencyConflict:
        return Response({"Idempotency-Key": ["this key was used with a different request"]},
                        status=status.HTTP_422_UNPROCESSABLE_ENTITY)
    headers = {"Idempotent-Replayed": "true"} if replayed else {}
    if isinstance(body, dict) and set(body) == {"decision", "answer"}:
        headers["X-Decision-Id"] = str(body["decision"])
        body = body["answer"]
    return Response(body, status=code, headers=headers)


# Token first, so an anonymous client is told 401 with `WWW-Authenticate: Token`.
AUTHENTICATION = [RoleTokenAuthentication, SessionAuthentication]


class ReadApi(APIView):
    authentication_classes = AUTHENTICATION
    permission_classes = [CanRead]
    throttle_classes = [LiveThrottle]
    throttle_scope = "live-read"


class WriteApi(APIView):
    authentication_classes = AUTHENTICATION
    parser_classes = [FastJSONParser]
    permission_classes = [CanDecide]
    throttle_classes = [LiveThrottle]
    throttle_scope = "live-decide"


class _ReadList(generics.ListAPIView):
    authentication_classes = AUTHENTICATION
    permission_classes = [CanRead]
    throttle_classes = [LiveThrottle]
    throttle_scope = "live-read"


def _get(model, pk: int):
    try:
        return model.objects.get(pk=pk)
    except model.DoesNotExist:
        raise NotFound(f"{model._meta.verbose_name} {pk} does not exist") from None


# --- resources -------------------------------------------------------------------------------


@extend_schema_view(get=extend_schema(summary="List clusters"))
class ClusterListApi(_ReadList):
    serializer_class = s.ClusterSerializer
    filterset_fields = ["name"]

    def get_queryset(self):
        return cluster_list().filter(kind=ClusterKind.LIVE)


class ClusterDetailApi(ReadApi):
    @extend_schema(summary="One cluster", responses=s.ClusterSerializer)
    def get(self, request: Request, cluster_id: int) -> Response:
        cluster = Cluster.objects.filter(pk=cluster_id, kind=ClusterKind.LIVE).first()
        if cluster is None:
            raise NotFound(f"live cluster {cluster_id} does not exist")
        return Response(s.ClusterSerializer(cluster).data)


@extend_schema_view(get=extend_schema(summary="List pools"))
class PoolListApi(_ReadList):
    serializer_class = s.PoolSerializer
    filterset_class = PoolFilter
    queryset = Pool.objects.filter(cluster__kind=ClusterKind.LIVE).select_related(
        "gpu_type").order_by("cluster_id", "id")


@extend_schema_view(get=extend_schema(summary="List servers and their state"))
class ServerListApi(_ReadList):
    serializer_class = s.ServerSerializer
    filterset_class = ServerFilter
    queryset = Server.objects.filter(pool__cluster__kind=ClusterKind.LIVE).select_related(
        "pool").order_by("pool_id", "id")


@extend_schema_view(get=extend_schema(summary="List live jobs"))
class JobListApi(_ReadList):
    """Live jobs; POST submits one (operator)."""

    serializer_class = s.JobSerializer
    filterset_class = JobFilter

    def get_queryset(self):
        return selectors.job_list()

    def get_permissions(self):
        return [CanDecide()] if self.request.method == "POST" else [CanRead()]

    def get_throttles(self):
        self.throttle_scope = "live-decide" if self.request.method == "POST" else "live-read"
        return super().get_throttles()

    @extend_schema(summary="Submit a job", request=s.JobSubmitSerializer,
                   parameters=[IDEMPOTENCY_HEADER], responses={201: s.JobSerializer, **ERRORS},
                   examples=[JOB_SUBMIT_EXAMPLE])
    def post(self, request: Request) -> Response:
        def action() -> tuple[int, Any]:
            data = s.JobSubmitSerializer(data=request.data)
            data.is_valid(raise_exception=True)
            try:
                job = services.job_submit(**data.validated_data)
            except InputError as exc:
                raise _bad_input(exc) from None
            return status.HTTP_201_CREATED, s.JobSerializer(selectors.job_get(job_id=job.pk)).data
        return _idempotent(request, action)


class JobDetailApi(ReadApi):
    @extend_schema(summary="One live job with its placement", responses=s.JobSerializer)
    def get(self, request: Request, job_id: int) -> Response:
        try:
            return Response(s.JobSerializer(selectors.job_get(job_id=job_id)).data)
        except Job.DoesNotExist:
            raise NotFound(f"job {job_id} does not exist") from None


class JobCancelApi(WriteApi):
    @extend_schema(summary="Cancel a job and free its GPUs", request=None,
                   parameters=[IDEMPOTENCY_HEADER], responses={200: s.JobSerializer, **ERRORS})
    def post(self, request: Request, job_id: int) -> Response:
        job = _get(Job, job_id)

        def action() -> tuple[int, Any]:
            try:
                services.job_cancel(job=job)
            except InputError as exc:
                raise _bad_input(exc) from None
            return status.HTTP_200_OK, s.JobSerializer(selectors.job_get(job_id=job_id)).data
        return _idempotent(request, action)


class JobReportApi(WriteApi):
    """A job reports its progress (`remaining_seconds` or `progress`) or that it finished."""

    @extend_schema(summary="Report a job's progress, or that it finished",
                   request=s.JobReportSerializer, parameters=[IDEMPOTENCY_HEADER],
                   responses={200: s.JobSerializer, **ERRORS})
    def post(self, request: Request, job_id: int) -> Response:
        job = _get(Job, job_id)

        def action() -> tuple[int, Any]:
            data = s.JobReportSerializer(data=request.data)
            data.is_valid(raise_exception=True)
            try:
                services.job_report(job=job, **data.validated_data)
            except InputError as exc:
                raise _bad_input(exc) from None
            return status.HTTP_200_OK, s.JobSerializer(selectors.job_get(job_id=job_id)).data
        return _idempotent(request, action)


class JobHostsApi(ReadApi):
    """Horovod Elastic's host discovery: one `<hostname>:<slots>` line per host."""

    @extend_schema(summary="Horovod host discovery for a job",
                   responses={(200, "text/plain"): OpenApiTypes.STR})
    def get(self, request: Request, job_id: int) -> HttpResponse:
        try:
            job = selectors.job_get(job_id=job_id)
        except Job.DoesNotExist:
            raise NotFound(f"job {job_id} does not exist") from None
        lines = "".join(f"{host}:{slots}\n" for host, slots in selectors.job_hosts(job=job))
        return HttpResponse(lines, content_type="text/plain; charset=utf-8")


# --- decisions -------------------------------------------------------------------------------

_STATEFUL = {
    DecisionKind.LOAN: (s.LoanRequestSerializer, s.LoanAnswerSerializer),
    DecisionKind.RECLAIM: (s.ReclaimRequestSerializer, s.ReclaimAnswerSerializer),
    DecisionKind.SCHEDULE: (s.ScheduleRequestSerializer, s.ScheduleAnswerSerializer),
}
_STATELESS = {
    DecisionKind.LOAN: s.StatelessLoanRequestSerializer,
    DecisionKind.RECLAIM: s.StatelessReclaimRequestSerializer,
    DecisionKind.SCHEDULE: s.StatelessScheduleRequestSerializer,
}


def _stateful_api(kind: str) -> type[WriteApi]:
    request_serializer, answer = _STATEFUL[kind]

    class StatefulDecisionApi(WriteApi):
        @extend_schema(operation_id=f"cluster_decide_{kind}",
                       summary=f"Decide a {kind} on the cluster's live state and apply it",
                       examples=_EXAMPLES[kind][:1], request=request_serializer,
                       parameters=[IDEMPOTENCY_HEADER], responses={200: answer, **ERRORS},
                       description=f"A {kind} decision on the cluster's live state, applied "
                                   "atomically; the answer's decision id is in X-Decision-Id.")
        @with_collector_paused
        def post(self, request: Request, cluster_id: int) -> Response:
            def action() -> tuple[int, Any]:
                if not isinstance(request.data, dict):
                    raise ValidationError({"request": ["expected a JSON object"]})
                request_serializer.check_shape(request.data, types=False)
                try:
                    decision = services.decision_stateful(
                        cluster_id=cluster_id, kind=kind, body=dict(request.data),
                        actor=request.user)
                except InputError as exc:
                    raise _bad_input(exc) from None
                except Cluster.DoesNotExist:
                    raise NotFound(f"cluster {cluster_id} does not exist") from None
                return status.HTTP_200_OK, {"decision": decision.pk, "answer": decision.response}
            return _idempotent(request, action)

    StatefulDecisionApi.__name__ = f"Cluster{kind.title()}Api"
    return StatefulDecisionApi


def _stateless_api(kind: str) -> type[WriteApi]:
    answer = _STATEFUL[kind][1]

    class StatelessDecisionApi(WriteApi):
        @extend_schema(operation_id=f"decide_{kind}",
                       summary=f"Decide a {kind} on a snapshot (changes nothing)",
                       examples=_EXAMPLES[kind][1:], request=_STATELESS[kind],
                       responses={200: answer, 400: ERRORS[400]},
                       description=f"A {kind} decision on the snapshot in `state`; changes "
                                   "nothing but the decision log.")
        @with_collector_paused
        def post(self, request: Request) -> Response:
            _STATELESS[kind].check_shape(request.data, types=False)
            try:
                decision = services.decision_stateless(kind=kind, request=request.data,
                                                       actor=request.user)
            except InputError as exc:
                raise _bad_input(exc) from None
            return Response(decision.response, headers={"X-Decision-Id": str(decision.pk)})

    StatelessDecisionApi.__name__ = f"Decide{kind.title()}Api"
    return StatelessDecisionApi


ClusterLoanApi = _stateful_api(DecisionKind.LOAN)
ClusterReclaimApi = _stateful_api(DecisionKind.RECLAIM)
ClusterScheduleApi = _stateful_api(DecisionKind.SCHEDULE)
DecideLoanApi = _stateless_api(DecisionKind.LOAN)
DecideReclaimApi = _stateless_api(DecisionKind.RECLAIM)
DecideScheduleApi = _stateless_api(DecisionKind.SCHEDULE)


@extend_schema_view(get=extend_schema(summary="The decision log"))
class DecisionListApi(_ReadList):
    serializer_class = s.DecisionSerializer
    filterset_class = DecisionFilter

    def get_queryset(self):
        return selectors.decision_list()


class DecisionDetailApi(ReadApi):
    @extend_schema(summary="One logged decision with its request",
                   responses=s.DecisionDetailSerializer)
    def get(self, request: Request, decision_id: int) -> Response:
        return Response(s.DecisionDetailSerializer(_get(Decision, decision_id)).data)


class DecisionReplayApi(ReadApi):
    """Recompute a logged decision from its stored request; nothing is applied.

    POST is the documented method (the README always said so); GET, which clients used
    before POST worked, answers the same and is marked deprecated.
    """

    @extend_schema(summary="Replay a logged decision", request=None,
                   responses=s.ReplaySerializer)
    def post(self, request: Request, decision_id: int) -> Response:
        return self._replay(decision_id)

    @extend_schema(summary="Replay a logged decision (deprecated: use POST)",
                   responses=s.ReplaySerializer, deprecated=True)
    def get(self, request: Request, decision_id: int) -> Response:
        return self._replay(decision_id)

    @with_collector_paused
    def _replay(self, decision_id: int) -> Response:
        replay = services.decision_replay(decision=_get(Decision, decision_id))
        return Response({"decision": decision_id, "same": replay.same,
                         "response": replay.response})
