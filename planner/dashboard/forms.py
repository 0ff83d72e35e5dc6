"""The scenario builder and sweep forms: typed inputs, every field checked in one pass.

Policy parameters are generated from the policy registry: each declared `Param` becomes a
checkbox (bool), a select (choices) or a number input with its bounds, so new policies appear
in the builder without touching this file. A parameter left at its default is not stored,
so a scenario records only what the user changed.
"""

from __future__ import annotations

import dataclasses
import itertools
from typing import Any

from django import forms
from django.conf import settings

from planner.clusters import selectors as cluster_selectors
from planner.scenarios import selectors as scenario_selectors
from planner.scenarios.inputs import VARIANT_AXES
from planner.scenarios.models import Scenario
from simulation.composition import (
    compose,
    open_layers,
    resolve_policy,
    split_composition,
    stages,
)
from simulation.engine import EngineConfig
from simulation.errors import InputError
from simulation.limits import MAX_JOBS, MAX_SEED, MAX_SUBMIT_SECONDS
from simulation.policies import Param, registry
from simulation.runner import engine_config, split_settings
from simulation.workloads import FORMATS

WORKLOAD_SOURCES = [("generator", "Generate a workload"), ("upload", "Upload a trace"),
                    ("stored", "Use a stored workload")]
INFERENCE_SOURCES = [("none", "No inference load"), ("generated", "Diurnal generator"),
                     ("upload", "Upload a load CSV (time,busy_servers)"),
                     ("stored", "Use a stored load")]
# Where the builder lists each policy: the paper that proposes or evaluates it (the first
# word of `Policy.paper`), else with the general baselines.
PAPER_GROUPS = ("Baselines", "Aryl", "EDL", "Gandiva", "Muri", "SIA")
# Cluster specs the builder inserts with one click; tests parse both. They carry no `name`,
# so the cluster is named after the scenario (a second insert does not collide).
EXAMPLE_SPECS = {
    "small": ("Small: 4 x 8 V100 training servers", """\
gpu_types: {V100: {speed: 1.0, memory_gb: 32}}
pools:
  - {name: training, kind: training, gpu_type: V100, servers: 4, gpus_per_server: 8}
"""),
    "heterogeneous": ("Heterogeneous, with an inference pool that lends servers", """\
gpu_types:
  V100: {speed: 1.0, memory_gb: 32}
  T4: {speed: 0.25, memory_gb: 16}
pools:
  - {name: training, kind: training, gpu_type: V100, servers: 8, gpus_per_server: 8}
  - {name: inference, kind: inference, gpu_type: T4, servers: 8, gpus_per_server: 8,
     lending_limit: 6}
"""),
}
SPEC_HELP = ("YAML or JSON: optional name (else the scenario's name + \"cluster\"), gpu_types "
             "(type: {speed relative to the reference GPU, memory_gb}) and pools of identical "
             "servers (name, kind: training, inference or quota, gpu_type, servers, "
             "gpus_per_server; an inference pool may set lending_limit, a quota pool "
             "quota_gpus). The Tiresias/Muri spec CSV works too.")
_STORED_CHOICES = 200  # newest stored workloads and loads offered in a select


def param_field_name(policy: str, param: str) -> str:
    return f"param__{policy}__{param}"


def stage_field_name(policy: str, layer: str) -> str:
    return f"stage__{policy}__{layer}"


_STAGE_HELP = {layer: f"{what}; each combination of stages ticked is a run of this policy"
               for layer, what in (
                   ("capacity", "which on-loan servers go back when inference reclaims them"),
                   ("allocation", "how many GPUs an elastic job gets"),
                   ("placement", "which GPUs a job gets, and whether jobs share a GPU"))}


def policy_group(paper: str) -> str:
    first = paper.split(" ", 1)[0]
    return first if first in PAPER_GROUPS else "Baselines"


def parse_key_values(text: str, *, field: str) -> dict[str, str]:
    """``key=value`` lines (blank lines and ``#`` comments skipped) into a dict."""
    values: dict[str, str] = {}
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        key, sep, value = line.partition("=")
        if not sep or not key.strip():
            raise InputError(f"expected key=value, got {raw.strip()!r}", line=number,
                             field=field)
        values[key.strip()] = value.strip()
    return values


def _param_field(param: Param) -> forms.Field:
    """The input that fits the declared type: checkbox, select, or bounded number."""
    common = {"required": False, "label": param.name, "help_text": param.help,
              "initial": param.default}
    if param.type is bool:
        return forms.BooleanField(**common)
    if param.choices:
        return forms.TypedChoiceField(choices=[(c, c) for c in param.choices],
                                      coerce=param.type, **common)
    if param.type in (int, float):
        low, high = param.bounds or (None, None)
        field_class = forms.IntegerField if param.type is int else forms.FloatField
        attrs = {} if param.type is int else {"step": "any"}
        return field_class(min_value=low, max_value=high, widget=forms.NumberInput(attrs),
                           **common)
    return forms.CharField(**common)


class ScenarioBuilderForm(forms.Form):
    name = forms.CharField(max_length=200, label="Scenario name")
    cluster = forms.ChoiceField(required=False, label="Cluster",
                                help_text="An existing cluster, or describe a new one below.")
    cluster_spec = forms.CharField(
        required=False, label="New cluster spec (YAML or JSON)",
        widget=forms.Textarea(attrs={"rows": 7, "spellcheck": "false"}), help_text=SPEC_HELP)
    workload_source = forms.ChoiceField(choices=WORKLOAD_SOURCES, initial="generator",
                                        widget=forms.RadioSelect, label="Workload")
    trace = forms.FileField(required=False, label="Trace file",
                            help_text="Canonical CSV or any supported format (detected).")
    trace_kept = forms.CharField(required=False, widget=forms.HiddenInput)
    trace_format = forms.ChoiceField(required=False, label="Trace format",
                                     choices=[("", "detect from the header")]
                                     + [(f, f) for f in FORMATS])
    workload_stored = forms.ChoiceField(required=False, label="Stored workload")
    gen_num_jobs = forms.IntegerField(min_value=1, max_value=MAX_JOBS, initial=40,
                                      label="Jobs", required=False)
    gen_arrival_rate_per_hour = forms.FloatField(min_value=0.001, initial=30.0, required=False,
                                                 label="Arrivals per hour")
    gen_median_duration_minutes = forms.FloatField(min_value=0.01, initial=20.0, required=False,
                                                   label="Median duration (minutes)")
    gen_elastic_fraction = forms.FloatField(min_value=0, max_value=1, initial=0.0,
                                            required=False, label="Elastic share of jobs")
    gen_seed = forms.IntegerField(min_value=0, max_value=MAX_SEED, initial=0, required=False,
                                  label="Workload seed")
    inference_source = forms.ChoiceField(choices=INFERENCE_SOURCES, initial="none",
                                         widget=forms.RadioSelect, label="Inference load")
    inference_days = forms.FloatField(min_value=0.01, max_value=MAX_SUBMIT_SECONDS / 86400,
                                      initial=1.0, required=False,
                                      label="Days of load")
    inference_peak_utilization = forms.FloatField(min_value=0.01, max_value=1, initial=0.95,
                                                  required=False, label="Peak utilisation")
    inference_file = forms.FileField(required=False, label="Load CSV")
    inference_file_kept = forms.CharField(required=False, widget=forms.HiddenInput)
    inference_stored = forms.ChoiceField(required=False, label="Stored load")
    policies = forms.MultipleChoiceField(widget=forms.CheckboxSelectMultiple,
                                         label="Policies to compare")
    seeds = forms.CharField(initial="0", label="Seeds",
                            help_text="Whole numbers separated by commas, e.g. 0, 1, 2.")
    engine_settings = forms.CharField(
        required=False, label="Engine settings", widget=forms.Textarea(attrs={"rows": 3}),
        help_text="Optional key=value lines shared by every policy, e.g. scaling_mode=stop-free.")

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        policies = registry()
        self.catalog = scenario_selectors.policy_catalog()
        self.papers = {p["name"]: policies[p["name"]].paper for p in self.catalog}
        self.fields["cluster"].choices = [("", "— new cluster from the spec below —")] + [
            (str(c.pk), f"{c.name} ({c.server_count} servers)")
            for c in cluster_selectors.cluster_list()]
        self.fields["workload_stored"].choices = [("", "—")] + [
            (str(w.pk), f"{w.name} ({w.num_jobs:,} jobs, {w.get_kind_display()})")
            for w in scenario_selectors.workload_list()[:_STORED_CHOICES]]
        self.fields["inference_stored"].choices = [("", "—")] + [
            (str(p.pk), f"{p.name} ({p.get_kind_display()})")
            for p in scenario_selectors.inference_load_list()[:_STORED_CHOICES]]
        self.fields["policies"].choices = [(p["name"], p["name"]) for p in self.catalog]
        self.declared = {name: {p.name: p for p in cls.params} for name, cls in policies.items()}
        self.layers = {name: open_layers(cls) for name, cls in policies.items()}
        known = stages()
        # policy -> stage -> its parameters, for the stages a policy may take
        self.stage_params = {name: {stage: {p.name: p for p in known[stage].params}
                                    for offered in self.layers[name].values()
                                    for stage in offered if known[stage].params}
                             for name in policies}
        for policy, params in self.declared.items():
            for param in params.values():
                self.fields[param_field_name(policy, param.name)] = _param_field(param)
            for stage, stage_params in self.stage_params[policy].items():
                for param in stage_params.values():
                    field = _param_field(param)
                    field.label = f"{param.name} ({stage})"
                    self.fields[param_field_name(policy, param.name)] = field
            for layer, (own, *others) in self.layers[policy].items():
                self.fields[stage_field_name(policy, layer)] = forms.MultipleChoiceField(
                    required=False, label=f"{layer.capitalize()} stages", initial=[own],
                    widget=forms.CheckboxSelectMultiple,
                    choices=[(own, f"{own} (its own)")] + [(s, s) for s in others],
                    help_text=_STAGE_HELP[layer])

    def policy_groups(self) -> list[dict[str, Any]]:
        """Per paper, its policies: checkbox, one-line description, paper, parameter inputs."""
        boxes = {box.data["value"]: box for box in self["policies"]}
        groups: dict[str, list[dict[str, Any]]] = {}
        for p in self.catalog:
            stages = [self[stage_field_name(p["name"], layer)] for layer in self.layers[p["name"]]]
            groups.setdefault(policy_group(self.papers[p["name"]]), []).append({
                "name": p["name"], "description": p["description"],
                "paper": self.papers[p["name"]], "checkbox": boxes[p["name"]],
                "params": [self[param_field_name(p["name"], q["name"])] for q in p["params"]]
                + [self[param_field_name(p["name"], name)]
                   for stage_params in self.stage_params[p["name"]].values()
                   for name in stage_params],
                "stages": stages,
                # open when another stage than the policy's own is ticked, so it is seen
                "stages_changed": any((field.value() or []) != self.fields[field.name].initial
                                      for field in stages)})
        return [{"paper": paper, "policies": groups[paper]} for paper in PAPER_GROUPS
                if paper in groups]

    def example_specs(self) -> list[dict[str, str]]:
        return [{"key": key, "label": label} for key, (label, _) in EXAMPLE_SPECS.items()]

    def example_texts(self) -> dict[str, str]:
        """The examples' text by key, for the page's script to insert."""
        return {key: text for key, (_, text) in EXAMPLE_SPECS.items()}

    def clean_seeds(self) -> list[int]:
        seeds = []
        for part in self.cleaned_data["seeds"].replace(";", ",").split(","):
            if part.strip():
                if not (part.strip().isascii() and part.strip().isdigit()):
                    raise forms.ValidationError(
                        f"{part.strip()[:40]!r} is not a non-negative whole number")
                if int(part) > MAX_SEED:
                    raise forms.ValidationError(f"seed {part.strip()[:40]} is over the limit "
                                                f"of {MAX_SEED}")
                seeds.append(int(part))
        if not seeds:
            raise forms.ValidationError("give at least one seed")
        if len(seeds) > settings.PLANNER_MAX_SEEDS:
            raise forms.ValidationError(f"{len(seeds):,} seeds; a scenario is limited to "
                                        f"{settings.PLANNER_MAX_SEEDS} (PLANNER_MAX_SEEDS)")
        if len(set(seeds)) != len(seeds):
            raise forms.ValidationError("seeds repeat")
        return seeds

    def clean_engine_settings(self) -> dict[str, str]:
        try:
            values = parse_key_values(self.cleaned_data["engine_settings"],
                                      field="engine_settings")
            engine_config(values, seed=0)
        except InputError as exc:
            raise forms.ValidationError(str(exc)) from None
        return values

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        if not data.get("cluster") and not (data.get("cluster_spec") or "").strip():
            self.add_error("cluster_spec", "choose a cluster above or paste a spec here")
        source = data.get("workload_source")
        if source == "upload" and not data.get("trace") and not data.get("trace_kept"):
            self.add_error("trace", "choose a trace file to upload")
        if source == "stored" and not data.get("workload_stored"):
            self.add_error("workload_stored", "choose a stored workload")
        if source == "generator":
            for name in ("gen_num_jobs", "gen_arrival_rate_per_hour",
                         "gen_median_duration_minutes"):
                if data.get(name) is None and name not in self.errors:
                    self.add_error(name, "required for a generated workload")
        load = data.get("inference_source")
        if load == "upload" and not data.get("inference_file") \
                and not data.get("inference_file_kept"):
            self.add_error("inference_file", "choose a load CSV to upload")
        if load == "stored" and not data.get("inference_stored"):
            self.add_error("inference_stored", "choose a stored load")
        if load == "generated" and data.get("inference_days") is None \
                and "inference_days" not in self.errors:
            self.add_error("inference_days", "required for a generated load")
        data["policy_entries"] = self._policy_entries(data)
        return data

    def _policy_entries(self, data: dict[str, Any]) -> list[dict[str, Any]]:
        """The chosen policies with the parameters that differ from their defaults, each
        checked by the registry together with the shared engine settings."""
        entries = []
        engine = data.get("engine_settings") if isinstance(data.get("engine_settings"),
                                                           dict) else {}
        for base in data.get("policies") or []:
            params = self._changed(base, self.declared[base], data)
            ticked = [[(layer, stage) for stage in data.get(stage_field_name(base, layer)) or
                       [own]] for layer, (own, *_) in self.layers[base].items()]
            for chosen in itertools.product(*ticked):
                entry_params = dict(params)
                for _, stage in chosen:  # a stage's parameters go with the runs that take it
                    entry_params.update(self._changed(
                        base, self.stage_params[base].get(stage, {}), data))
                try:
                    policy = compose(base, dict(chosen))
                    split_settings(policy, {**engine, **entry_params})
                except InputError as exc:
                    target = param_field_name(base, exc.field or "")
                    self.add_error(target if target in self.fields else "policies",
                                   f"{base}: {exc.message}")
                    break
                entries.append({"policy": policy, "params": entry_params})
        return entries

    @staticmethod
    def _changed(base: str, declared: dict[str, Param], data: dict[str, Any]) -> dict[str, Any]:
        """The values of `declared` set in the form that differ from their defaults."""
        changed = {}
        for name, param in declared.items():
            value = data.get(param_field_name(base, name))
            if value is not None and value != "" and value != param.default:
                changed[name] = value
        return changed


def builder_initial(*, scenario: Scenario) -> dict[str, Any]:
    """The builder's initial values that recreate `scenario`'s inputs (its stored cluster,
    workload and load; its policies, parameters, seeds and settings): "Clone".

    The builder runs a policy with every combination of the stages ticked for it, one box
    set per layer, so entries of one policy that are not such a product (srtf and
    srtf+aryl-loan+edl-expand) come back as their product, and entries of one policy with
    different parameters share the last one's."""
    initial: dict[str, Any] = {
        "name": f"{scenario.name} (copy)"[:200], "cluster": str(scenario.cluster_id),
        "workload_source": "stored", "workload_stored": str(scenario.workload_id),
        "inference_source": "stored" if scenario.inference_load_id else "none",
        "inference_stored": str(scenario.inference_load_id or ""),
        "policies": [],
        "seeds": ", ".join(str(seed) for seed in scenario.seeds),
        "engine_settings": "\n".join(f"{k}={v}" for k, v in scenario.engine_settings.items()),
    }
    for entry in scenario.policies:
        base, added = split_composition(entry["policy"])
        if base not in initial["policies"]:
            initial["policies"].append(base)
        for layer, (own, *_) in open_layers(resolve_policy(base)).items():
            ticked = initial.setdefault(stage_field_name(base, layer), [])
            stage = added.get(layer, own)
            if stage not in ticked:
                ticked.append(stage)
        declared = {p.name: p for p in resolve_policy(entry["policy"]).params}
        for name, value in entry["params"].items():
            param = declared.get(name)
            if param is not None:
                initial[param_field_name(base, name)] = param.parse(value)
    return initial


# --- Sweeps ----------------------------------------------------------------------------------

SWEEP_AXES_MAX = 3
_AXIS_HELP = {"cluster_scale": "every pool's servers times this factor",
              "load_scale": "arrivals this many times faster",
              "elastic_share": "share of jobs made elastic (0 to 1)"}


def sweep_axis_choices(*, scenario: Scenario) -> list[tuple[str, list[tuple[str, str]]]]:
    """What a sweep can vary: the input axes, engine settings and the parameters of the
    scenario's policies, grouped for a select."""
    engine = sorted(f.name for f in dataclasses.fields(EngineConfig) if f.name != "seed")
    params = sorted({p.name for entry in scenario.policies
                     for p in resolve_policy(entry["policy"]).params})
    return [("Inputs", [(axis, f"{axis}: {_AXIS_HELP[axis]}") for axis in VARIANT_AXES]),
            ("Policy parameters", [(name, name) for name in params]),
            ("Engine settings", [(name, name) for name in engine])]


def _grid_value(text: str) -> int | float | str:
    """A number when it reads as one, else the text (the registry parses it per key)."""
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            continue
    return text


class SweepForm(forms.Form):
    """A name and up to three axes, each with comma-separated values; the grid is every
    combination (times the scenario's policies and seeds)."""

    name = forms.CharField(max_length=200, required=False, label="Sweep name")

    def __init__(self, *args: Any, scenario: Scenario, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.value_fields: dict[str, str] = {}
        choices = [("", "—")] + sweep_axis_choices(scenario=scenario)
        for i in range(SWEEP_AXES_MAX):
            self.fields[f"axis_{i}"] = forms.ChoiceField(choices=choices, required=i == 0,
                                                         label=f"Axis {i + 1}")
            self.fields[f"values_{i}"] = forms.CharField(
                required=False, max_length=2000, label=f"Values of axis {i + 1}",
                help_text="Comma-separated, e.g. 0.5, 1, 2" if i == 0 else "")

    def axes(self) -> list[tuple[forms.BoundField, forms.BoundField]]:
        return [(self[f"axis_{i}"], self[f"values_{i}"]) for i in range(SWEEP_AXES_MAX)]

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        grid: dict[str, list[Any]] = {}
        for i in range(SWEEP_AXES_MAX):
            axis, raw = data.get(f"axis_{i}"), (data.get(f"values_{i}") or "").strip()
            if not axis:
                if raw:
                    self.add_error(f"axis_{i}", "choose what these values are for")
                continue
            values = [_grid_value(part.strip()) for part in raw.split(",") if part.strip()]
            if not values:
                self.add_error(f"values_{i}", f"give at least one value of {axis}")
            elif axis in grid:
                self.add_error(f"axis_{i}", f"{axis} is already axis "
                                            f"{list(grid).index(axis) + 1}")
            else:
                grid[axis] = values
                self.value_fields[axis] = f"values_{i}"
        data["grid"] = grid
        return data

    def field_of(self, error_field: str | None) -> str | None:
        """The input an InputError's `grid.<axis>` field names (None: the whole form)."""
        axis = (error_field or "").removeprefix("grid.")
        return self.value_fields.get(axis)
