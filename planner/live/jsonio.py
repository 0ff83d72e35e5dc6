"""JSON in and out with orjson where it gives exactly the standard library's value.

orjson is several times faster on the decision API's 700 KB snapshots, but it reads an
integer past 64 bits as a float (and refuses to write one), so text with a run of 19 or more
digits goes through `json` instead.
"""

from __future__ import annotations

import json
import re
from typing import Any

import orjson

LONG_NUMBER = re.compile(rb"\d{19}")


def json_bytes(value: Any) -> bytes:
    """`value` as compact JSON text."""
    try:
        return orjson.dumps(value)
    except TypeError:  # an integer past 64 bits, a non-string key
        return json.dumps(value, separators=(",", ":")).encode()


def json_loads(data: bytes) -> Any:
    """The value of JSON text; raises `ValueError` on bad JSON, as `json.loads` does."""
    if LONG_NUMBER.search(data) is None:
        try:
            return orjson.loads(data)
        except orjson.JSONDecodeError:
            pass  # lone surrogates and the like: let json decide
    return json.loads(data)
