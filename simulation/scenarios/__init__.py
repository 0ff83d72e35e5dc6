"""Named scenarios shipped as data (`aryl.yaml`): what a planner runs in one click.

A scenario names a policy, its settings (policy parameters and `EngineConfig` fields), the
cluster, a workload generator spec and an inference-load generator spec (or none). The
loader only reads and checks the files; the planner turns them into fixtures.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import yaml

from simulation.errors import InputError

HERE = Path(__file__).parent
_REQUIRED = ("name", "description", "policy", "workload", "inference_load", "settings")


@dataclasses.dataclass(frozen=True, slots=True)
class NamedScenario:
    name: str
    description: str
    policy: str
    settings: dict[str, Any]
    cluster: dict[str, Any]
    workload: dict[str, Any]
    inference_load: dict[str, Any] | None
    source: str


def load_named_scenarios(path: Path | None = None) -> dict[str, NamedScenario]:
    """Every scenario of every `*.yaml` here (or of `path`), by name."""
    files = [path] if path is not None else sorted(HERE.glob("*.yaml"))
    scenarios: dict[str, NamedScenario] = {}
    for file in files:
        data = yaml.safe_load(file.read_text())
        for entry in data.get("scenarios", []):
            missing = [key for key in _REQUIRED if key not in entry]
            if missing:
                raise InputError(f"scenario lacks {', '.join(missing)}", source=str(file),
                                 field=entry.get("name", "scenarios"))
            if entry["name"] in scenarios:
                raise InputError("scenario defined twice", source=str(file),
                                 field=entry["name"])
            scenarios[entry["name"]] = NamedScenario(
                name=entry["name"], description=entry["description"], policy=entry["policy"],
                settings=dict(entry["settings"] or {}),
                cluster=entry.get("cluster", data.get("cluster")),
                workload=dict(entry["workload"]),
                inference_load=entry["inference_load"], source=file.name,
            )
    return scenarios
