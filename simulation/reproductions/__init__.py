"""Paper reproductions (issue #15): each seed paper's headline results, paper beside ours.

One module per paper exposes `reproduce(progress) -> PaperReport`; `PAPERS` maps the name
used on the command line (`python -m simulation reproduce NAME|all`) to it. To add a paper,
write its module and add one line here. Modules are imported when run, so listing the
papers costs nothing.
"""

from __future__ import annotations

import importlib
import time
from collections.abc import Callable

from simulation.errors import InputError
from simulation.reproductions.report import PaperReport

Progress = Callable[[str], None]

PAPERS: dict[str, str] = {
    "edl": "simulation.reproductions.edl",
    "gandiva": "simulation.reproductions.gandiva",
}


def paper_names(selection: str) -> list[str]:
    """The papers `selection` names (`all`, or one name); an unknown name is a user error."""
    if selection == "all":
        return list(PAPERS)
    if selection not in PAPERS:
        raise InputError(f"unknown paper {selection!r} (known: {', '.join(PAPERS)}, all)",
                         source="reproduce", field="paper")
    return [selection]


def reproduce(name: str, progress: Progress) -> PaperReport:
    """Run every experiment of paper `name`, timing the whole reproduction."""
    started = time.perf_counter()
    report: PaperReport = importlib.import_module(PAPERS[name]).reproduce(progress)
    report.wall_seconds = round(time.perf_counter() - started, 1)
    return report
