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

from simulation.limits import MAX_DEPTH, nesting_depth_exceeds, printable

# Digits become NUL (and NUL, never raw in JSON text, becomes 1): a 19-digit run is then a
# plain substring search, several times faster than a regular expression over 700 KB.
_DIGITS = bytes(0 if 48 <= i <= 57 else 1 if i == 0 else i for i in range(256))
_RUN = b"\0" * 19


def has_long_number(data: bytes) -> bool:
    """Whether `data` has a run of 19 or more digits (a number orjson may read differently)."""
    return _RUN in data.translate(_DIGITS)


def json_bytes(value: Any) -> bytes:
    """`value` as compact JSON text."""
    try:
        return orjson.dumps(value)
    except TypeError:  # an integer past 64 bits, a non-string key
        return json.dumps(value, separators=(",", ":")).encode()


def json_loads(data: bytes) -> Any:
    """The value of JSON text; raises `ValueError` on bad JSON, as `json.loads` does."""
    if not has_long_number(data):
        try:
            return orjson.loads(data)
        except orjson.JSONDecodeError:
            pass  # lone surrogates and the like: let json decide
    return json.loads(data)


# --- What every API body must be -------------------------------------------------------------
# Nesting and characters are checked on the text where that is cheap and exact, and on the
# parsed value only when the text says it may be needed, so a 700 KB snapshot pays about a
# millisecond for the checks.

_STRUCTURE = bytes(i for i in range(256) if i not in b'[]{}"')
_STRING = re.compile(rb'"[^"]*"')
_INNERMOST = re.compile(rb"\[\]|\{\}")


def nesting_exceeds(data: bytes, limit: int) -> bool:
    """Whether the (valid) JSON text `data` nests arrays and objects deeper than `limit`.

    Escaped backslashes and quotes go first, so the quotes left delimit strings; the text is
    cut down to brackets and quotes, strings (whose brackets are not structure) removed, and
    innermost pairs removed once per level: what is left after `limit` rounds nests deeper.
    """
    if b"\\" in data:
        data = data.replace(b"\\\\", b"").replace(b'\\"', b"")
    # Adjacent quotes close one string and open the next with no structure in between:
    # removing them merges two strings into one, which the pattern then removes.
    shape = _STRING.sub(b"", data.translate(None, _STRUCTURE).replace(b'""', b""))
    for _ in range(limit):
        if not shape:
            return False
        before = len(shape)
        shape = _INNERMOST.sub(b"", shape)  # one pass: `{[]}` loses one level, not two
        if len(shape) == before:  # not balanced: not valid JSON in the first place
            return True
    return bool(shape)


def _unstorable_char(text: str) -> str | None:
    """The first NUL or lone surrogate of `text`, described, else None."""
    if text.isprintable():  # in C; neither NUL nor a surrogate is printable
        return None
    for char in text:
        if char == "\0" or "\ud800" <= char <= "\udfff":
            return f"the character U+{ord(char):04X}"
    return None


def unstorable_string(value: Any) -> tuple[str, str] | None:
    """(JSON path, reason) of the first string or key in `value` holding a NUL or a lone
    surrogate, which no PostgreSQL text or jsonb column (nor UTF-8) can store; else None."""
    stack: list[tuple[Any, str]] = [(value, "")]
    while stack:
        item, path = stack.pop()
        if isinstance(item, str):
            bad = _unstorable_char(item)
            if bad is not None:
                return path or "request", f"contains {bad}, which is not allowed in text"
        elif isinstance(item, dict):
            for key, child in item.items():
                where = f"{path}.{printable(str(key))}" if path else printable(str(key))
                bad = _unstorable_char(key) if isinstance(key, str) else None
                if bad is not None:
                    return where, f"the key contains {bad}, which is not allowed in text"
                stack.append((child, where))
        elif isinstance(item, list):
            stack.extend((child, f"{path}[{i}]") for i, child in enumerate(item))
    return None


def json_body_problem(data: bytes, value: Any, *, by_orjson: bool) -> tuple[str, str] | None:
    """(field, reason) when a parsed request body breaks the input rules, else None: nested
    deeper than MAX_DEPTH, or a NUL or lone surrogate anywhere in it.

    `by_orjson`: `data` is UTF-8 that orjson parsed, so the text tells the nesting, orjson
    has refused lone surrogates, and the value is walked only when the text has an escaped
    NUL. Otherwise (the standard library's rare fallback) the value is walked.
    """
    if nesting_exceeds(data, MAX_DEPTH) if by_orjson else nesting_depth_exceeds(value):
        return "request", f"nested deeper than {MAX_DEPTH} levels of arrays and objects"
    if by_orjson and b"\\u0000" not in data:
        return None
    return unstorable_string(value)
