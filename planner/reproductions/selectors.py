"""Reads of paper reproductions for the page."""

from __future__ import annotations

from dataclasses import dataclass

from planner.reproductions.models import Reproduction, ReproductionStatus
from planner.scenarios.models import Scenario
from simulation.reproductions import PAPERS
from simulation.scenarios import NamedScenario, load_named_scenarios


@dataclass(frozen=True)
class NamedScenarioState:
    """A named scenario of a paper, and its scenario row once a planner opened it."""

    named: NamedScenario
    scenario: Scenario | None


@dataclass(frozen=True)
class PaperState:
    """One paper on the page: its latest reproduction, its latest finished report, and the
    named scenarios (`simulation/scenarios/<paper>.yaml`) that open its experiments."""

    paper: str
    latest: Reproduction | None
    reported: Reproduction | None
    scenarios: list[NamedScenarioState]


def reproduction_papers() -> list[PaperState]:
    """Every paper the command knows, with its latest run, latest succeeded run and named
    scenarios."""
    named = load_named_scenarios()
    opened = {s.slug: s for s in Scenario.objects.filter(slug__in=list(named))}
    states = []
    for paper in PAPERS:
        runs = Reproduction.objects.filter(paper=paper).defer("report")
        reported = (Reproduction.objects.filter(paper=paper, status=ReproductionStatus.SUCCEEDED)
                    .first())
        scenarios = [NamedScenarioState(n, opened.get(name)) for name, n in named.items()
                     if n.source == f"{paper}.yaml"]
        states.append(PaperState(paper, runs.first(), reported, scenarios))
    return states


def reproduction_get(*, reproduction_id: int) -> Reproduction:
    return Reproduction.objects.get(pk=reproduction_id)
