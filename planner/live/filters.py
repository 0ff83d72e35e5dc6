"""django-filter sets of the live API's list endpoints.

Ids filter as whole numbers: an id no row has (or one past 64 bits) finds nothing, an
answer of 200 with an empty page, instead of 400 ("not a valid choice", which is what
django-filter says for a foreign key by default) or a database error; "1.0" or "1e3" is not
an id (400).
"""

import re
from datetime import UTC, timedelta

import django_filters
from django import forms
from django_filters.fields import IsoDateTimeField
from drf_spectacular.utils import extend_schema_field

from planner.clusters.models import Pool, Server
from planner.live.models import Decision, Job

# Real UTC offsets run from -12:00 to +14:00; PostgreSQL refuses a timestamp whose offset is
# 16 hours or more, which ISO 8601 (and Python) would accept.
MAX_UTC_OFFSET = timedelta(hours=14)


# RFC 3339's date-time (what the schema's `format: date-time` means), offsets within ±14:00.
DATE_TIME_PATTERN = (r"^[0-9]{4}-[0-9]{2}-[0-9]{2}[Tt ][0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]+)?"
                     r"([Zz]|[+-](0[0-9]|1[0-3]):[0-5][0-9]|[+-]14:00)$")
_DATE_TIME = re.compile(DATE_TIME_PATTERN)


class UtcIsoDateTimeField(IsoDateTimeField):
    """An RFC 3339 date-time (seconds and a UTC offset included) with a real UTC offset,
    converted to UTC before any query."""

    def to_python(self, value):
        if value in self.empty_values:
            return None
        if not isinstance(value, str) or not _DATE_TIME.fullmatch(value.strip()):
            raise forms.ValidationError(
                "expected a date-time like 2026-01-31T12:00:00Z or 2026-01-31T12:00:00+02:00 "
                "(a UTC offset within -14:00 and +14:00)", code="invalid")
        parsed = super().to_python(value)
        if parsed is None or parsed.tzinfo is None:
            return parsed
        if abs(parsed.utcoffset()) > MAX_UTC_OFFSET:
            raise forms.ValidationError("the UTC offset must be within -14:00 and +14:00",
                                        code="invalid")
        try:
            return parsed.astimezone(UTC)
        except OverflowError:  # 0001-01-01T00:00+01:00 is before year 1 in UTC
            raise forms.ValidationError("the date-time is out of range in UTC",
                                        code="invalid") from None


@extend_schema_field({"type": "string", "format": "date-time", "pattern": DATE_TIME_PATTERN})
class UtcIsoDateTimeFilter(django_filters.IsoDateTimeFilter):
    field_class = UtcIsoDateTimeField


_WHOLE_NUMBER = re.compile(r"-?[0-9]+")
_BIGINT = range(-(2**63), 2**63)


class StrictFilterSet(django_filters.FilterSet):
    """A parameter sent with no value (`?cluster=`) is refused, not read as "no filter" as
    in an HTML form: the schema says what a value must be, and blank is none of them."""

    def is_valid(self) -> bool:
        valid = super().is_valid()
        blank = [name for name in self.filters if self.data.get(name) == ""]
        for name in blank:
            self.form.add_error(name, "must not be blank; leave the parameter out instead")
        return valid and not blank


class WholeNumberField(forms.IntegerField):
    def to_python(self, value):
        if value in self.empty_values:
            return None
        text = str(value).strip()
        if not _WHOLE_NUMBER.fullmatch(text):
            raise forms.ValidationError("Enter a whole number.", code="invalid")
        return int(text)


class IdFilter(django_filters.NumberFilter):
    field_class = WholeNumberField

    def filter(self, qs, value):
        if value is not None and value not in _BIGINT:
            return qs.none()
        return super().filter(qs, value)


class TrueFalseField(forms.Field):
    """`true` or `false`, as the schema's boolean is written in a query; django-filter's own
    also reads `null`, `unknown` and `2` (as "no filter")."""

    def to_python(self, value):
        if value in self.empty_values:
            return None
        text = str(value).strip().lower()
        if text not in ("true", "false"):
            raise forms.ValidationError("expected true or false", code="invalid")
        return text == "true"


class TrueFalseFilter(django_filters.BooleanFilter):
    field_class = TrueFalseField


class PoolFilter(StrictFilterSet):
    cluster = IdFilter(field_name="cluster")

    class Meta:
        model = Pool
        fields = ["cluster", "kind"]


class ServerFilter(StrictFilterSet):
    cluster = IdFilter(field_name="pool__cluster")
    pool = IdFilter(field_name="pool")

    class Meta:
        model = Server
        fields = ["cluster", "pool", "status"]


class JobFilter(StrictFilterSet):
    cluster = IdFilter(field_name="cluster")

    class Meta:
        model = Job
        fields = ["cluster", "status"]


class DecisionFilter(StrictFilterSet):
    cluster = IdFilter(field_name="cluster")
    stateful = TrueFalseFilter(field_name="stateful")
    created_after = UtcIsoDateTimeFilter(field_name="created_at", lookup_expr="gte")
    created_before = UtcIsoDateTimeFilter(field_name="created_at", lookup_expr="lte")

    class Meta:
        model = Decision
        fields = ["cluster", "kind", "stateful"]
