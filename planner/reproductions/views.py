"""The "Paper reproductions" pages: thin views over the reproductions' selectors and services.

Any role reads; starting a reproduction (minutes of simulation on a worker) needs `planner`.
"""

from __future__ import annotations

from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from planner.core.roles import PLAN, READ, role_required
from planner.dashboard import figures
from planner.dashboard.views import chart_payloads
from planner.reproductions import selectors, services
from planner.reproductions.models import Reproduction
from planner.scenarios import services as scenario_services
from simulation.errors import InputError
from simulation.reproductions import PAPERS
from simulation.reproductions.report import (
    DEFAULT_TOLERANCE,
    DEVIATES,
    DIRECTION_ONLY,
    REPRODUCED,
    format_figure,
    paper_text,
)

REFRESH_SECONDS = 5
VERDICT_CLASSES = {REPRODUCED: "verdict-reproduced", DIRECTION_ONLY: "verdict-direction",
                   DEVIATES: "verdict-deviates"}
VERDICT_LABELS = {REPRODUCED: "reproduced", DIRECTION_ONLY: "direction only",
                  DEVIATES: "deviates"}


@role_required(READ)
def reproduction_list(request: HttpRequest) -> HttpResponse:
    papers = [{"state": state, "paper": PAPERS[state.paper],
               "verdicts": _verdict_counts(state.reported)}
              for state in selectors.reproduction_papers()]
    return render(request, "reproductions/list.html", {
        "papers": papers, "refresh_seconds": REFRESH_SECONDS if any(
            p["state"].latest and p["state"].latest.active for p in papers) else 0,
        "nav": "reproductions"})


@require_POST
@role_required(PLAN)
def reproduction_start(request: HttpRequest) -> HttpResponse:
    """Start the posted paper (or every paper with `all`); a second start joins the first."""
    paper = request.POST.get("paper", "")
    try:
        started = [services.reproduction_start(paper=name)
                   for name in (PAPERS if paper == "all" else [paper])]
    except InputError as error:
        return render(request, "reproductions/list.html", {
            "papers": [], "error": error.message, "nav": "reproductions"}, status=400)
    if len(started) == 1:
        return redirect("reproductions:detail", reproduction_id=started[0].pk)
    return redirect("reproductions:list")


@require_POST
@role_required(PLAN)
def named_scenario_run(request: HttpRequest, name: str) -> HttpResponse:
    """Open a paper's named scenario and launch its runs: one click from the paper's row."""
    try:
        scenario = scenario_services.named_scenario_launch(name=name)
    except InputError as error:
        raise Http404(error.message) from None
    return redirect(f"{reverse('dashboard:run-list')}?scenario={scenario.pk}")


@role_required(READ)
def reproduction_detail(request: HttpRequest, reproduction_id: int) -> HttpResponse:
    try:
        reproduction = selectors.reproduction_get(reproduction_id=reproduction_id)
    except Reproduction.DoesNotExist:
        raise Http404(f"There is no reproduction {reproduction_id}.") from None
    report = reproduction.report or {}
    rows = [{**row, "paper_text": paper_text(row),
             "ours_text": format_figure(row["ours"], row["unit"]),
             "verdict_class": VERDICT_CLASSES.get(row["verdict"], ""),
             "verdict_label": VERDICT_LABELS.get(row["verdict"], row["verdict"]),
             "ablations": [{**ab, "ours_text": format_figure(ab["ours"], row["unit"])}
                           for ab in row["ablations"]]}
            for row in report.get("rows", [])]
    charts = []
    if any(row.get("ratio") is not None for row in rows):
        charts.append(figures.Chart(
            "ratios", "Ours / paper, per claim",
            f"Inside the green band (1 ± {DEFAULT_TOLERANCE:.0%}) the size is reproduced; "
            "below 0 the direction is the opposite. A claim stated as a range is held to its "
            "nearest point (1.00 inside it); claims with a direction only are in the table.",
            figures.reproduction_ratio_figure(rows, tolerance=DEFAULT_TOLERANCE)))
    return render(request, "reproductions/detail.html", {
        "reproduction": reproduction, "paper": PAPERS.get(reproduction.paper),
        "rows": rows, "charts": chart_payloads(charts),
        "verdicts": _verdict_counts(reproduction),
        "progress": reproduction.progress_log.splitlines(),
        "refresh_seconds": REFRESH_SECONDS if reproduction.active else 0,
        "filename_prefix": f"reproduction-{reproduction.pk}", "nav": "reproductions"})


def _verdict_counts(reproduction: Reproduction | None) -> dict[str, int]:
    """Rows per verdict (short label), best first; verdicts no row has are left out."""
    rows = (reproduction.report or {}).get("rows", []) if reproduction else []
    counts = {label: sum(row["verdict"] == verdict for row in rows)
              for verdict, label in VERDICT_LABELS.items()}
    return {label: n for label, n in counts.items() if n}
