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
from dataclasses import dataclass

from simulation.errors import InputError
from simulation.reproductions.report import PaperReport

Progress = Callable[[str], None]

@dataclass(frozen=True, slots=True)
class Paper:
    """Where a paper's reproduction lives, its title, and which experiments it runs."""

    module: str
    title: str
    experiments: str


PAPERS: dict[str, Paper] = {
    "aryl": Paper("simulation.reproductions.aryl",
                  "Aryl: capacity loaning and elastic scaling (EuroSys'22)",
                  "Table 5 rows 1-11, Figure 8, Figure 10, Table 6 on a calibrated trace"),
    "edl": Paper("simulation.reproductions.edl", "EDL: elasticity for deep learning (TPDS'22)",
                 "§2.3 example, §6.2 transient GPUs, Table 3 and Figure 16 on Philly jobs"),
    "gandiva": Paper("simulation.reproductions.gandiva",
                     "Gandiva: introspective cluster scheduling (OSDI'18)",
                     "§6.3 early feedback and utilisation, §6.4 trace-driven JCT and makespan"),
    "muri": Paper("simulation.reproductions.muri",
                  "Muri: multi-resource interleaving for DL training (SIGCOMM'22)",
                  "Figures 9-10 on the four Philly traces, Figure 11 on trace 3"),
    "sia": Paper("simulation.reproductions.sia",
                 "SIA: anticipatory resource allocation for ML training",
                 "Tables 10 and 12, the headline speedups and Figure 16 on closed-loop users"),
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
    report: PaperReport = importlib.import_module(PAPERS[name].module).reproduce(progress)
    report.wall_seconds = round(time.perf_counter() - started, 1)
    return report
