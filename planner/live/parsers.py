"""The JSON request parser of every API view: fast, bounded, and refusing unstorable text.

A stateless reclaim sends the whole snapshot (700 KB for 500 servers and 2,000 jobs); the
standard library parses that in about 15 ms, orjson in a few. A body orjson would read
differently or refuses (not UTF-8, integers past 64 bits, lone surrogates, bad JSON) goes
through DRF's own parser, so every body parses to the same value, or fails with the same
error, as before.

Before anything looks at the value, the body must keep the input rules (README, "Limits"):
at most `DATA_UPLOAD_MAX_MEMORY_SIZE` bytes (PLANNER_MAX_REQUEST_MB; 413), arrays and
objects nested at most `MAX_DEPTH` deep, and no NUL or lone surrogate in any string or key
(no PostgreSQL column holds them). Each refusal is JSON naming the field: `request` for the
body as a whole, else the JSON path of the bad string.
"""

from __future__ import annotations

import io
from typing import Any

import orjson
from django.conf import settings
from rest_framework import status
from rest_framework.exceptions import APIException, ParseError
from rest_framework.parsers import JSONParser

from planner.live.jsonio import has_long_number, json_body_problem


class RequestTooLarge(APIException):
    status_code = status.HTTP_413_REQUEST_ENTITY_TOO_LARGE
    default_code = "request_too_large"


def body_limit_message(size: int | None = None) -> str:
    limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
    size_text = f"the body is {size / 2**20:.1f} MB; " if size is not None else ""
    return (f"{size_text}request bodies are limited to {limit / 2**20:g} MB "
            "(PLANNER_MAX_REQUEST_MB)")


def _read_limited(stream: Any, parser_context: dict[str, Any] | None) -> bytes:
    limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
    request = (parser_context or {}).get("request")
    declared = request.META.get("CONTENT_LENGTH") if request is not None else None
    try:
        declared_size = int(declared) if declared else None
    except ValueError:
        declared_size = None
    if declared_size is not None and declared_size > limit:
        raise RequestTooLarge({"request": [body_limit_message(declared_size)]})
    data = stream.read(limit + 1)
    if len(data) > limit:
        raise RequestTooLarge({"request": [body_limit_message()]})
    return data


class FastJSONParser(JSONParser):
    def parse(self, stream: Any, media_type: str | None = None,
              parser_context: dict[str, Any] | None = None) -> Any:
        data = _read_limited(stream, parser_context)
        encoding = (parser_context or {}).get("encoding") or "utf-8"
        value, by_orjson = None, False
        if encoding.lower().replace("-", "") == "utf8" and not has_long_number(data):
            try:
                value, by_orjson = orjson.loads(data), True
            except orjson.JSONDecodeError:
                pass
        if not by_orjson:
            try:
                value = super().parse(io.BytesIO(data), media_type, parser_context)
            except RecursionError:
                raise ParseError({"request": ["JSON nested too deeply"]}) from None
            except ParseError as exc:
                raise ParseError({"request": [str(exc.detail)]}) from None
        problem = json_body_problem(data, value, by_orjson=by_orjson)
        if problem is not None:
            field, message = problem
            raise ParseError({field: [message]})
        return value
