"""The orjson request parser gives DRF's JSON parser's value or error for every body, and
refuses what breaks the input rules (nesting, NUL and lone surrogates) naming the field."""

from __future__ import annotations

import io
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rest_framework.exceptions import ParseError
from rest_framework.parsers import JSONParser

from planner.live.jsonio import nesting_exceeds
from planner.live.parsers import FastJSONParser
from simulation.limits import nesting_depth_exceeds

BODIES = [b'{"count": 1, "state": {"now": 0.30000000000000004, "servers": []}}',
          b'{"seed": 123456789012345678901234567890}', b'{"a": "\\\\u0000 is text"}',
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
    assert ours.value.detail == {"request": [theirs.value.detail]}  # the same, naming the body


@pytest.mark.parametrize(("body", "field"), [
    (b'{"a": "\\ud800"}', "a"),  # a lone surrogate: the standard library's path
    (b'{"a": ["x", "\\u0000"]}', "a[1]"),  # NUL: orjson's path
    (b'{"a": {"b\\u0000": 1}}', "a.b\\u0000"),
    (b'{"n": 12345678901234567890123, "a": "\\udfff"}', "a"),
    (b"[" * 33 + b"]" * 33, "request"),
    (b'{"a": ' + b"[" * 5_000 + b"]" * 5_000 + b"}", "request"),
])
def test_refused_naming_the_field(body: bytes, field: str) -> None:
    with pytest.raises(ParseError) as refused:
        _parse(FastJSONParser(), body)
    assert list(refused.value.detail) == [field]


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(alphabet='[]{}"\\\\ab,:'),
    lambda children: st.lists(children, max_size=3)
    | st.dictionaries(st.text(alphabet='[]{}"\\\\ab'), children, max_size=3),
    max_leaves=60)


@settings(max_examples=300, deadline=None, derandomize=True)
@given(value=json_values, limit=st.integers(1, 8))
def test_nesting_read_from_the_text_is_the_values_nesting(value, limit: int) -> None:
    """The parser reads nesting from the text (fast); strings full of brackets, quotes and
    backslashes must not fool it: it agrees with walking the parsed value."""
    text = json.dumps(value, indent=None if limit % 2 else 1).encode()
    assert nesting_exceeds(text, limit) == nesting_depth_exceeds(value, limit)
