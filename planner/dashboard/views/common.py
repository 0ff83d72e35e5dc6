"""What every dashboard page shares: figures to the page as JSON, a scenario or 404."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import plotly.io as pio
from django.http import Http404

from planner.dashboard import figures
from planner.scenarios import selectors as scenario_selectors
from planner.scenarios.models import Scenario


def chart_payloads(charts: Sequence[figures.Chart]) -> list[dict]:
    """What `_charts.html` needs per chart: its text and the figure as plain JSON data."""
    return [
        {"slug": c.slug, "title": c.title, "description": c.description,
         "data_id": f"data-{c.slug}", "payload": json.loads(pio.to_json(c.figure, validate=False))}
        for c in charts
    ]


def scenario_or_404(raw: Any) -> Scenario:
    try:
        return scenario_selectors.scenario_get(scenario_id=int(raw))
    except (Scenario.DoesNotExist, ValueError):
        raise Http404(f"There is no scenario {raw}.") from None
