"""REST endpoints of the core app."""

from django.conf import settings
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.authentication import SessionAuthentication
from rest_framework.permissions import AllowAny
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from planner.core.roles import READ, RoleTokenAuthentication, user_can
from planner.core.services import health_public, health_report_cached


class HealthServiceSerializer(serializers.Serializer):
    ok = serializers.BooleanField()
    detail = serializers.CharField()


class HealthOutputSerializer(serializers.Serializer):
    status = serializers.ChoiceField(choices=["ok", "degraded"])
    database = HealthServiceSerializer(required=False)
    broker = HealthServiceSerializer(required=False)
    worker = HealthServiceSerializer(required=False)
    scheduler = HealthServiceSerializer(required=False)


class HealthApi(APIView):
    """Reachability of the database and the broker, and the workers' and scheduler's
    heartbeats; checked at most once per HEALTH_CACHE_SECONDS per web process."""

    authentication_classes = [RoleTokenAuthentication, SessionAuthentication]
    permission_classes = [AllowAny]

    @extend_schema(
        responses=HealthOutputSerializer,
        summary="Service health",
        description="HTTP 200 whenever the web process answers; `status` says if all is well. "
        "Anonymous callers get `status` only; a signed-in user with a role also gets each "
        "service's detail (database, broker, worker names, last maintenance).",
    )
    def get(self, request: Request) -> Response:
        report = health_report_cached(max_age=settings.HEALTH_CACHE_SECONDS)
        if not user_can(request.user, READ):
            report = health_public(report=report)
        return Response(HealthOutputSerializer(report).data)
