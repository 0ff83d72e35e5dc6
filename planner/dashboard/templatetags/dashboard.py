"""Template helpers of the dashboard pages."""

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from django import template
from django.utils import timezone

from planner.dashboard.readable import duration_text, grid_point_text

register = template.Library()


@register.filter
def get_item(mapping: Mapping[str, Any] | None, key: str) -> Any:
    """``mapping|get_item:key``: a dict lookup with a variable key (None when absent)."""
    return mapping.get(key) if isinstance(mapping, Mapping) else None


@register.filter
def duration(seconds: float | None) -> str:
    """``seconds|duration``: "3.0 min", "1,130.8 h" (`readable.duration_text`); "—" if None."""
    return "—" if seconds is None else duration_text(seconds)


@register.filter
def epoch(moment: datetime | None) -> str:
    """``moment|epoch``: seconds since 1970 for the page's scripts; empty if None."""
    return "" if moment is None else f"{moment.timestamp():.3f}"


@register.filter
def grid_point(variant: Mapping[str, Any] | None) -> str:
    """``run.variant|grid_point``: "load_scale = 2 · cluster_scale = 0.5"; empty if none."""
    return grid_point_text(variant) if variant else ""


@register.filter
def clock(moment: datetime | None) -> str:
    """``moment|clock``: "19:16:42" today, "Nov 24, 19:16" before (local time); "—" if None."""
    if moment is None:
        return "—"
    local, today = timezone.localtime(moment), timezone.localdate()
    if local.date() == today:
        return f"{local:%H:%M:%S}"
    return f"{local:%b} {local.day}, {local:%H:%M}"
