"""REST endpoints of the core app."""

from django.conf import settings
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.permissions import AllowAny
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from planner.core.services import health_report


class HealthServiceSerializer(serializers.Serializer):
    ok = serializers.BooleanField()
    detail = serializers.CharField()


class HealthOutputSerializer(serializers.Serializer):
    status = serializers.ChoiceField(choices=["ok", "degraded"])
    database = HealthServiceSerializer()
    broker = HealthServiceSerializer()
    worker = HealthServiceSerializer()


class HealthApi(APIView):
    """Reachability of the database, the Celery broker and the Celery workers."""

    authentication_classes: list = []
    permission_classes = [AllowAny]

    @extend_schema(
        responses=HealthOutputSerializer,
        summary="Service health",
        description="HTTP 200 whenever the web process answers; `status` says if all is well.",
    )
    def get(self, request: Request) -> Response:
        report = health_report(
            connect_timeout=settings.HEALTH_CONNECT_TIMEOUT,
            worker_timeout=settings.HEALTH_WORKER_TIMEOUT,
        )
        return Response(HealthOutputSerializer(report).data)
