"""Freeing each API request's objects as soon as its response is gone.

Django REST framework leaves every request in reference cycles: the view holds the DRF
request and the response, which hold the view, and each holds itself
(`request.parser_context["request"]`, `response.renderer_context["response"]`).
So nothing a request parsed is freed by reference counting; it waits for the cyclic garbage
collector. For the decision API that is a 700 KB snapshot (4,000 containers) per request,
and the collections that swept them up cost 20-50 ms every few requests. Once the response
is rendered nothing needs those references any more, so this middleware drops them and the
request's objects go with the response.
"""

from __future__ import annotations

from collections.abc import Callable

from django.http import HttpRequest, HttpResponse


def drf_view_cycle_break(get_response: Callable[[HttpRequest], HttpResponse],
                         ) -> Callable[[HttpRequest], HttpResponse]:
    def middleware(request: HttpRequest) -> HttpResponse:
        response = get_response(request)
        context = getattr(response, "renderer_context", None)
        if isinstance(context, dict) and getattr(response, "is_rendered", False):
            view, drf_request = context.get("view"), context.get("request")
            if view is not None:
                view.request = view.response = None
            if drf_request is not None:
                drf_request.parser_context = {}
            response.renderer_context = {}
        return response
    return middleware
