"""REST endpoints of the core app: health, and the API token for a user name and password."""

from django.conf import settings
from drf_spectacular.utils import OpenApiExample, OpenApiResponse, extend_schema
from rest_framework import serializers, status
from rest_framework.authentication import SessionAuthentication
from rest_framework.permissions import AllowAny
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from planner.core.roles import READ, RoleTokenAuthentication, user_can
from planner.core.serializers import StrictSerializer
from planner.core.services import health_public, health_report_cached
from planner.core.signin import SignInLocked, api_token_obtain, signin_locked_message


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


class TokenInputSerializer(StrictSerializer):
    username = serializers.CharField(max_length=150)
    password = serializers.CharField(max_length=4096, trim_whitespace=False,
                                     style={"input_type": "password"})


class TokenOutputSerializer(serializers.Serializer):
    token = serializers.CharField(help_text="send as `Authorization: Token <token>`")


class TokenObtainApi(APIView):
    """The user's API token (created on first use) for their user name and password.

    Failed attempts count against the same limit as the sign-in page and the admin
    (`planner.core.signin`), so this is no way around it.
    """

    authentication_classes: list[type] = []  # the credentials are the body
    permission_classes = [AllowAny]

    @extend_schema(
        summary="Get an API token for a user name and password",
        request=TokenInputSerializer,
        responses={200: TokenOutputSerializer,
                   429: OpenApiResponse(description="too many failed sign-ins for this user "
                                                    "from this address; wait and retry")},
        examples=[OpenApiExample("credentials", request_only=True,
                                 value={"username": "demo", "password": "demo"})],
        description="Answers the same token every time until it is deleted (admin, or "
                    "`manage.py drf_create_token -r USER`). After PLANNER_SIGNIN_MAX_FAILURES "
                    "failed attempts for one user name from one address, shared with the "
                    "sign-in page, it answers 429 for PLANNER_SIGNIN_WINDOW_SECONDS.",
    )
    def post(self, request: Request) -> Response:
        data = TokenInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        try:
            token = api_token_obtain(request=request, **data.validated_data)
        except SignInLocked:
            return Response({"detail": signin_locked_message()},
                            status=status.HTTP_429_TOO_MANY_REQUESTS)
        if token is None:
            return Response({"request": ["wrong user name or password"]},
                            status=status.HTTP_400_BAD_REQUEST)
        return Response({"token": token})
