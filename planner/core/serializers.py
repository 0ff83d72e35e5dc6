"""Request bodies that name only known fields, and errors keyed by JSON path.

DRF ignores a key its serializer does not declare, so a client's typo (`sed` for `seed`,
`on_lone` for `on_loan`) silently became the default. `StrictSerializer` refuses such keys
before anything else is validated, each under its JSON path into the body, as the rest of the
API names fields: `{"state.servers[0].on_lone": ["unknown field"]}`. It walks nested
serializers, lists of them (`many=True`, `ListField`) and `DictField` values; free-form
`JSONField`/`DictField` values of plain fields are left as they are. Its other errors are
keyed the same way (`{"policies[1].policy": [...]}`) instead of DRF's nested dicts and lists.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from rest_framework import serializers
from rest_framework.exceptions import ValidationError
from rest_framework.fields import empty
from rest_framework.settings import api_settings

UNKNOWN_FIELD = "unknown field"


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def unknown_fields(field: serializers.Field, data: Any, path: str = "",
                   hints: Mapping[str, str] | None = None) -> dict[str, list[str]]:
    """JSON path -> message for every key of `data` that `field` (a serializer, or a list or
    dict of them) does not accept; read-only fields count as unknown, as DRF ignores them."""
    errors: dict[str, list[str]] = {}
    if isinstance(field, serializers.ListSerializer | serializers.ListField):
        if isinstance(data, list):
            for i, item in enumerate(data):
                errors.update(unknown_fields(field.child, item, f"{path}[{i}]"))
    elif isinstance(field, serializers.DictField):
        if isinstance(data, Mapping):
            for key, value in data.items():
                errors.update(unknown_fields(field.child, value, _join(path, str(key))))
    elif isinstance(field, serializers.Serializer) and isinstance(data, Mapping):
        fields = field.fields
        for key, value in data.items():
            known = fields.get(key)
            where = _join(path, str(key))
            if known is None or known.read_only:
                hint = (hints or {}).get(key)
                errors[where] = [f"{UNKNOWN_FIELD}; {hint}" if hint else UNKNOWN_FIELD]
            else:
                errors.update(unknown_fields(known, value, where))
    return errors


def _bind(field: serializers.Field) -> None:
    if isinstance(field, serializers.ListSerializer | serializers.ListField
                  | serializers.DictField):
        _bind(field.child)
    elif isinstance(field, serializers.Serializer):
        for child in field.fields.values():
            _bind(child)


def errors_by_path(detail: Any, path: str = "") -> dict[str, list[str]]:
    """DRF's nested error detail flattened to {JSON path: [messages]}; a nested
    serializer's `non_field_errors` belong to its own path."""
    if isinstance(detail, Mapping):
        flat: dict[str, list[str]] = {}
        for key, value in detail.items():
            inner = path if key == api_settings.NON_FIELD_ERRORS_KEY and path else (
                f"{path}[{key}]" if isinstance(key, int) else _join(path, str(key)))
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
    """A request serializer that refuses undeclared keys (see the module docstring).

    `unknown_field_hints` maps a key clients send by mistake to a sentence saying what to do
    instead, added to its "unknown field" message.
    """

    unknown_field_hints: ClassVar[Mapping[str, str]] = {}

    def run_validation(self, data: Any = empty) -> Any:
        if self.parent is not None:
            return super().run_validation(data)
        self.refuse_unknown(data)
        try:
            return super().run_validation(data)
        except ValidationError as exc:
            raise ValidationError(errors_by_path(exc.detail)) from None

    @classmethod
    def shape(cls) -> StrictSerializer:
        """An instance to share for `refuse_unknown` across requests and threads: its fields,
        nested ones too, are bound now (DRF binds them lazily, which is not thread-safe), and
        one instance saves building the field tree, with its reference cycles, per request."""
        instance = cls()
        _bind(instance)
        return instance

    def refuse_unknown(self, data: Any) -> None:
        """Raise a 400 naming every unknown key of `data`, if there is one.

        Also for views whose body another validator checks (the live decisions, checked by
        `simulation.decide`) and whose serializer only documents it.
        """
        errors = unknown_fields(self, data, hints=self.unknown_field_hints)
        if errors:
            raise ValidationError(errors)
