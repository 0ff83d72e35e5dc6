"""Error pages that an API client can read: JSON under /api/, Django's HTML pages elsewhere.

Django answers what happens outside a view's own error handling with its handlers: a bad
Host header (`DisallowedHost`) or an oversized form body (`RequestDataTooBig`) with 400, an
unknown URL with 404, and an unexpected exception, with DEBUG off, with 500. A REST client
must not get an HTML page for those, so under /api/ the answer is JSON in the API's error
shape, `{"request": [message]}` (the request as a whole is at fault) or `{"detail": ...}`.
"""

from __future__ import annotations

from django.core.exceptions import RequestDataTooBig
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views import defaults

API_PREFIX = "/api/"


def _is_api(request: HttpRequest) -> bool:
    return request.path.startswith(API_PREFIX)


def bad_request(request: HttpRequest, exception: Exception) -> HttpResponse:
    if not _is_api(request):
        return defaults.bad_request(request, exception)
    if isinstance(exception, RequestDataTooBig):
        from planner.live.parsers import body_limit_message

        return JsonResponse({"request": [body_limit_message()]}, status=413)
    # Never echo the exception: for DisallowedHost it quotes the header an attacker sent.
    return JsonResponse({"request": [f"bad request ({type(exception).__name__})"]}, status=400)


def permission_denied(request: HttpRequest, exception: Exception) -> HttpResponse:
    if not _is_api(request):
        return defaults.permission_denied(request, exception)
    return JsonResponse({"detail": "You do not have permission to perform this action."},
                        status=403)


def page_not_found(request: HttpRequest, exception: Exception) -> HttpResponse:
    if not _is_api(request):
        return defaults.page_not_found(request, exception)
    return JsonResponse({"detail": f"no API endpoint at {request.path}"}, status=404)


def server_error(request: HttpRequest) -> HttpResponse:
    if not _is_api(request):
        return defaults.server_error(request)
    return JsonResponse({"detail": "internal server error; it has been logged"}, status=500)
