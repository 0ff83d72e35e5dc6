"""Every summary key is defined once (`SUMMARY_KEYS`) and documented in the README."""

from __future__ import annotations

from pathlib import Path

from simulation.metrics import SUMMARY_KEYS
from simulation.model import JobSpec
from simulation.runner import run_simulation
from tests.simulation.builders import training_cluster, workload

README = Path(__file__).resolve().parents[2] / "README.md"


def test_every_summary_key_has_one_definition() -> None:
    """A run's summary holds exactly the defined keys: a new number needs a definition."""
    result = run_simulation(training_cluster(1, 4), workload(JobSpec("a", 0.0, 2, 100.0)),
                            "fifo")
    assert set(result.summary) == set(SUMMARY_KEYS)


def test_readme_metrics_table_matches_the_definitions() -> None:
    """The README's table row of each key carries its unit, definition and source."""
    text = README.read_text()
    for key, definition in SUMMARY_KEYS.items():
        row = (f"| `{key}` | {definition.unit or '–'} | {definition.definition} | "
               f"{definition.source or '–'} |")
        assert row in text, f"README metrics row for {key!r} is missing or out of date"
