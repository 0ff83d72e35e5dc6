"""Request bodies that name only known fields, of the JSON types the schema says, and errors
keyed by JSON path.

DRF ignores a key its serializer does not declare, so a client's typo (`sed` for `seed`,
`on_lone` for `on_loan`) silently became the default. `StrictSerializer` refuses such keys
before anything else is validated, each under its JSON path into the body, as the rest of the
API names fields: `{"state.servers[0].on_lone": ["unknown field"]}`. It walks nested
serializers, lists of them (`many=True`, `ListField`) and `DictField` values; free-form
`JSONField`/`DictField` values of plain fields are left as they are.

In a JSON body it also refuses what DRF would coerce although the schema says otherwise: a
number for a string (`"name": 0`), a number for a boolean (`"launch": 0`), a fraction for a
whole number (`"count": 1.0`). Form fields (multipart) are all text, so they are left to DRF.
Its other errors are keyed by path too (`{"policies[1].policy": [...]}`) instead of DRF's
nested dicts and lists.

The check runs on a plain tree compiled once per serializer class (`Shape`), not on DRF's
fields: a stateless decision's 2,000-job snapshot (keys only; `simulation.decide` checks its
types) takes about 1.5 ms on this machine.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cache
from typing import Any, ClassVar

from django.http import QueryDict
from rest_framework import serializers
from rest_framework.exceptions import ValidationError
from rest_framework.fields import empty
from rest_framework.settings import api_settings

UNKNOWN_FIELD = "unknown field"

# JSON types of scalar fields, by exact type (so `true` is no number): first match wins.
# Related ids are left to DRF, which takes `3` and `"3"` alike: clients send ids both ways.
_JSON_TYPES: tuple[tuple[type, frozenset[type], str], ...] = (
    (serializers.BooleanField, frozenset({bool}), "expected true or false"),
    (serializers.IntegerField, frozenset({int}), "expected a whole number"),
    (serializers.FloatField, frozenset({int, float}), "expected a number"),
    (serializers.CharField, frozenset({str}), "expected a string"),
)


@dataclass(frozen=True, slots=True)
class Shape:
    """What a serializer field accepts, as plain data: an object's keys and the shapes of
    its structured and typed values, a list's or map's item, or a scalar's JSON types."""

    keys: frozenset[str] = frozenset()
    structured: tuple[tuple[str, Shape], ...] = ()  # object values that hold objects/lists
    typed: tuple[tuple[str, Shape], ...] = ()  # object values that are typed scalars
    item: Shape | None = None  # list or map
    is_map: bool = False
    types: frozenset[type] = field(default_factory=frozenset)
    message: str = ""


def _compile(source: serializers.Field) -> Shape | None:
    """The field's Shape, or None when anything goes (free JSON, choices, files)."""
    if isinstance(source, serializers.ListSerializer | serializers.ListField
                  | serializers.DictField):
        item = _compile(source.child)
        return None if item is None else Shape(
            item=item, is_map=isinstance(source, serializers.DictField))
    if isinstance(source, serializers.Serializer):
        fields = {name: f for name, f in source.fields.items() if not f.read_only}
        compiled = {name: _compile(f) for name, f in fields.items()}
        return Shape(
            keys=frozenset(fields),
            structured=tuple((n, s) for n, s in compiled.items() if s is not None and not s.types),
            typed=tuple((n, s) for n, s in compiled.items() if s is not None and s.types))
    if isinstance(source, serializers.ChoiceField):
        return None  # DRF compares the text of the value with the choices
    for kind, types, message in _JSON_TYPES:
        if isinstance(source, kind):
            return Shape(types=types, message=message)
    return None


# A JSON path as a linked pair (parent, key or index), flattened only for an error message.
Path = tuple[Any, str | int] | None


def _path(path: Path) -> str:
    parts: list[str | int] = []
    while path is not None:
        path, part = path
        parts.append(part)
    text = ""
    for part in reversed(parts):
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else part)
    return text


def _walk(shape: Shape, data: Any, path: Path, types: bool, hints: Mapping[str, str],
          errors: dict[str, list[str]]) -> None:
    """Add the errors of `data` against `shape`. Written for speed: an object's keys are one
    set comparison, and only the values that hold objects or lists are walked into."""
    item = shape.item
    if item is not None:
        if shape.is_map:
            if isinstance(data, dict):
                for key, value in data.items():
                    _walk(item, value, (path, str(key)), types, {}, errors)
        elif isinstance(data, list):
            if item.item is None and not item.types and not item.structured and not types:
                for i, value in enumerate(data):  # flat objects: keys only, inline
                    if isinstance(value, dict) and not value.keys() <= item.keys:
                        _walk(item, value, (path, i), types, {}, errors)
            else:
                for i, value in enumerate(data):
                    _walk(item, value, (path, i), types, {}, errors)
        return
    if shape.types:
        if types and data is not None and type(data) not in shape.types:
            errors[_path(path)] = [shape.message]
        return
    if not isinstance(data, dict):
        return  # DRF (or simulation.decide) refuses a non-object itself
    if not data.keys() <= shape.keys:
        for key in sorted(map(str, data.keys() - shape.keys)):
            hint = hints.get(key)
            errors[_path((path, key))] = [f"{UNKNOWN_FIELD}; {hint}" if hint else UNKNOWN_FIELD]
    for key, child in shape.structured:
        value = data.get(key)
        if value is not None:
            _walk(child, value, (path, key), types, {}, errors)
    if types:
        for key, child in shape.typed:
            value = data.get(key)
            if value is not None and type(value) not in child.types:
                errors[_path((path, key))] = [child.message]


def errors_by_path(detail: Any, path: str = "") -> dict[str, list[str]]:
    """DRF's nested error detail flattened to {JSON path: [messages]}; a nested
    serializer's `non_field_errors` belong to its own path."""
    if isinstance(detail, Mapping):
        flat: dict[str, list[str]] = {}
        for key, value in detail.items():
            inner = path if key == api_settings.NON_FIELD_ERRORS_KEY and path else (
                f"{path}[{key}]" if isinstance(key, int) else
                (f"{path}.{key}" if path else str(key)))
            flat.update(errors_by_path(value, inner))
        return flat
    if isinstance(detail, list) and any(isinstance(item, Mapping | list) for item in detail):
        flat = {}
        for i, item in enumerate(detail):
            flat.update(errors_by_path(item, f"{path}[{i}]"))
        return flat
    messages = detail if isinstance(detail, list) else [detail]
    return {path or api_settings.NON_FIELD_ERRORS_KEY: [str(m) for m in messages]} \
        if messages else {}


class StrictSerializer(serializers.Serializer):
    """A request serializer that refuses undeclared keys and, in JSON, values of the wrong
    JSON type (see the module docstring); its errors are keyed by JSON path.

    `unknown_field_hints` maps a key clients send by mistake to a sentence saying what to do
    instead, added to its "unknown field" message.
    """

    unknown_field_hints: ClassVar[Mapping[str, str]] = {}

    def run_validation(self, data: Any = empty) -> Any:
        if self.parent is not None:
            return super().run_validation(data)
        shape = type(self).shape_errors(data, types=not isinstance(data, QueryDict))
        try:
            value = super().run_validation(data)
        except ValidationError as exc:  # all the body's errors in one answer
            raise ValidationError({**errors_by_path(exc.detail), **shape}) from None
        if shape:
            raise ValidationError(shape)
        return value

    @classmethod
    def shape_errors(cls, data: Any, *, types: bool = True) -> dict[str, list[str]]:
        """Every unknown key of `data` and, with `types`, every value of the wrong JSON
        type, by JSON path."""
        errors: dict[str, list[str]] = {}
        _walk(_shape_of(cls), data, None, types, cls.unknown_field_hints, errors)
        return errors

    @classmethod
    def check_shape(cls, data: Any, *, types: bool = True) -> None:
        """Raise a 400 with `shape_errors`, if there are any: for views whose body another
        validator checks (the live decisions: their serializers only document the body, and
        `simulation.decide` checks its types itself)."""
        errors = cls.shape_errors(data, types=types)
        if errors:
            raise ValidationError(errors)


@cache
def _shape_of(serializer_class: type[serializers.Serializer]) -> Shape:
    """Compiled once per class (request serializers do not change their fields per call)."""
    return _compile(serializer_class()) or Shape()
