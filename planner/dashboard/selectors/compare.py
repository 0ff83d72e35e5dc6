"""The comparison page: each policy's run per seed, and the settings they ran with."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from planner.dashboard.selectors.runs import short_error
from planner.scenarios import selectors as scenario_selectors
from planner.scenarios.models import Run, RunStatus, Scenario


@dataclass(frozen=True, slots=True)
class ComparedRun:
    """One policy's run on a comparison page and the label it has on every chart and table.

    A succeeded run is plotted; a failed one is listed with its error, never left out.
    """

    run: Run
    label: str

    @property
    def failed(self) -> bool:
        return self.run.status == RunStatus.FAILED

    @property
    def error(self) -> str:
        return short_error(self.run.error)


def scenario_comparison_runs(*, scenario: Scenario, seed: int) -> list[ComparedRun]:
    """Per policy of the scenario for `seed` (sweeps aside): its latest succeeded run, or,
    when none succeeded, its latest failed run.

    Labelled by policy name; a policy listed twice with different parameters gets its
    parameters in the label so its runs stay apart.
    """
    runs = (scenario_selectors.run_list(scenario_id=scenario.pk)
            .filter(sweep__isnull=True, seed=seed,
                    status__in=[RunStatus.SUCCEEDED, RunStatus.FAILED]))
    latest: dict[tuple[str, str], Run] = {}
    for run in runs:
        key = (run.policy, json.dumps(run.params, sort_keys=True))
        kept = latest.get(key)
        if kept is None or kept.status == RunStatus.FAILED or run.status == RunStatus.SUCCEEDED:
            latest[key] = run
    names = [policy for policy, _ in latest]
    order = {entry["policy"]: i for i, entry in enumerate(scenario.policies)}
    compared = []
    for (policy, params), run in sorted(latest.items(),
                                        key=lambda item: (order.get(item[0][0], 1e9), item[0])):
        label = policy if names.count(policy) == 1 else f"{policy} {params}"
        compared.append(ComparedRun(run=run, label=label))
    return compared


def scenario_seeds_finished(*, scenario: Scenario) -> list[int]:
    """Seeds for which at least one run of the scenario (outside sweeps) succeeded or failed."""
    runs = scenario_selectors.run_list(scenario_id=scenario.pk).filter(
        sweep__isnull=True, status__in=[RunStatus.SUCCEEDED, RunStatus.FAILED])
    return sorted(set(runs.values_list("seed", flat=True)))


@dataclass(frozen=True, slots=True)
class SettingRow:
    """One setting across the compared runs: its value per run, and whether they differ."""

    group: str
    name: str
    values: list[str]
    differs: bool


def comparison_settings(summaries: Sequence[Mapping[str, Any]]) -> list[SettingRow]:
    """Policy parameters, then engine settings, as each run used them (its summary).

    A run without a setting (another policy's parameter, or a result older than the
    summary's `engine` key) shows "—"; a row differs when two runs that have the setting
    hold different values.
    """
    rows = []
    for group, key in (("policy parameter", "params"), ("engine setting", "engine")):
        tables = [summary.get(key) or {} for summary in summaries]
        for name in sorted(set().union(*tables)):
            present = [_setting_text(table[name]) for table in tables if name in table]
            rows.append(SettingRow(
                group=group, name=name,
                values=[_setting_text(table[name]) if name in table else "—" for table in tables],
                differs=len(set(present)) > 1))
    return rows


def _setting_text(value: Any) -> str:
    """A setting as the table shows it; None (unset, unbounded) reads "none"."""
    return "none" if value is None else str(value)
