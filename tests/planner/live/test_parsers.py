"""The orjson request parser gives DRF's JSON parser's value or error for every body."""

from __future__ import annotations

import io

import pytest
from rest_framework.exceptions import ParseError
from rest_framework.parsers import JSONParser

from planner.live.parsers import FastJSONParser

BODIES = [b'{"count": 1, "state": {"now": 0.30000000000000004, "servers": []}}',
          b'{"seed": 123456789012345678901234567890}', b'{"a": "\\ud800"}',
          '{"note": "gr\u00f6\u00dfe"}'.encode(), b"[1, 2.5e3, true, null]"]
BAD = [b'{"count": NaN}', b"{", b"", b'{"a": 1,}']


def _parse(parser, body: bytes):
    return parser.parse(io.BytesIO(body), "application/json", {"encoding": "utf-8"})


@pytest.mark.parametrize("body", BODIES)
def test_same_value_as_drf(body: bytes) -> None:
    ours, theirs = _parse(FastJSONParser(), body), _parse(JSONParser(), body)
    assert repr(ours) == repr(theirs)  # repr: 1e29 == 10**29 would hide a float


@pytest.mark.parametrize("body", BAD)
def test_same_error_as_drf(body: bytes) -> None:
    with pytest.raises(ParseError) as ours:
        _parse(FastJSONParser(), body)
    with pytest.raises(ParseError) as theirs:
        _parse(JSONParser(), body)
    assert str(ours.value.detail) == str(theirs.value.detail)
