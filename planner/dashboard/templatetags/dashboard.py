"""Template helpers of the dashboard pages."""

from collections.abc import Mapping
from typing import Any

from django import template

register = template.Library()


@register.filter
def get_item(mapping: Mapping[str, Any] | None, key: str) -> Any:
    """``mapping|get_item:key``: a dict lookup with a variable key (None when absent)."""
    return mapping.get(key) if isinstance(mapping, Mapping) else None
