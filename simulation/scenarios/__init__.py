"""Named scenarios shipped as data (`*.yaml` here): each paper reproduction's experiments,
what a planner runs in one click.

A scenario names its policies (a name, or `{policy, params}`), settings shared by them
(`EngineConfig` fields, and parameters of the policies that declare them), the cluster, a
workload spec (a named generator of `generators.py`, or a `GeneratorSpec`) and an
inference-load generator spec (or none). The loader only reads and checks the files; the
planner turns them into fixtures.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import yaml

from simulation.errors import InputError

HERE = Path(__file__).parent
_REQUIRED = ("name", "description", "policies", "workload", "inference_load", "settings")


@dataclasses.dataclass(frozen=True, slots=True)
class NamedScenario:
    name: str
    description: str
    policies: list[dict[str, Any]]  # {"policy": name, "params": {...}}
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
                name=entry["name"], description=entry["description"],
                policies=_policy_entries(entry["policies"], str(file), entry["name"]),
                settings=dict(entry["settings"] or {}),
                cluster=entry.get("cluster", data.get("cluster")),
                workload=dict(entry["workload"]),
                inference_load=entry["inference_load"], source=file.name,
            )
    return scenarios


def _policy_entries(raw: Any, source: str, name: str) -> list[dict[str, Any]]:
    """`[name | {policy, params}]` as `{"policy", "params"}` entries."""
    if not isinstance(raw, list) or not raw:
        raise InputError("policies must be a non-empty list", source=source, field=name)
    entries = []
    for item in raw:
        if isinstance(item, str):
            item = {"policy": item}
        if not isinstance(item, dict) or not isinstance(item.get("policy"), str) or set(item) - {
                "policy", "params"}:
            raise InputError(f"a policy is a name or {{policy, params}}, got {item!r}",
                             source=source, field=name)
        entries.append({"policy": item["policy"], "params": dict(item.get("params") or {})})
    return entries
