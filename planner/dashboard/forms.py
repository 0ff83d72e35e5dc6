"""The scenario builder form: every input checked field by field, errors shown inline.

Policy parameters are generated from the policy registry (one optional input per declared
parameter), so new policies appear in the builder without touching this file.
"""

from __future__ import annotations

from typing import Any

from django import forms
from django.conf import settings

from planner.clusters import selectors as cluster_selectors
from planner.scenarios import selectors as scenario_selectors
from simulation.errors import InputError
from simulation.limits import MAX_JOBS, MAX_SEED, MAX_SUBMIT_SECONDS
from simulation.runner import engine_config, split_settings
from simulation.workloads import FORMATS

WORKLOAD_SOURCES = [("generator", "Generate a workload"), ("upload", "Upload a trace")]
INFERENCE_SOURCES = [("none", "No inference load"), ("generated", "Diurnal generator"),
                     ("upload", "Upload a load CSV (time,busy_servers)")]


def param_field_name(policy: str, param: str) -> str:
    return f"param__{policy}__{param}"


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


class ScenarioBuilderForm(forms.Form):
    name = forms.CharField(max_length=200, label="Scenario name")
    cluster = forms.ChoiceField(required=False, label="Cluster",
                                help_text="An existing cluster, or describe a new one below.")
    cluster_spec = forms.CharField(
        required=False, label="New cluster spec (YAML or JSON)",
        widget=forms.Textarea(attrs={"rows": 7, "spellcheck": "false"}),
        help_text="Pools of identical servers, as in DESIGN.md's cluster spec.")
    workload_source = forms.ChoiceField(choices=WORKLOAD_SOURCES, initial="generator",
                                        widget=forms.RadioSelect, label="Workload")
    trace = forms.FileField(required=False, label="Trace file",
                            help_text="Canonical CSV or any supported format (detected).")
    trace_format = forms.ChoiceField(required=False, label="Trace format",
                                     choices=[("", "detect from the header")]
                                     + [(f, f) for f in FORMATS])
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
    policies = forms.MultipleChoiceField(widget=forms.CheckboxSelectMultiple,
                                         label="Policies to compare")
    seeds = forms.CharField(initial="0", label="Seeds",
                            help_text="Whole numbers separated by commas, e.g. 0, 1, 2.")
    engine_settings = forms.CharField(
        required=False, label="Engine settings", widget=forms.Textarea(attrs={"rows": 3}),
        help_text="Optional key=value lines shared by every policy, e.g. scaling_mode=stop-free.")

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.catalog = scenario_selectors.policy_catalog()
        self.fields["cluster"].choices = [("", "— new cluster from the spec below —")] + [
            (str(c.pk), f"{c.name} ({c.server_count} servers)")
            for c in cluster_selectors.cluster_list()]
        self.fields["policies"].choices = [(p["name"], p["name"]) for p in self.catalog]
        for policy in self.catalog:
            for param in policy["params"]:
                self.fields[param_field_name(policy["name"], param["name"])] = forms.CharField(
                    required=False, label=param["name"], help_text=param["help"],
                    widget=forms.TextInput(attrs={"placeholder": str(param["default"])}))

    def policy_groups(self) -> list[dict[str, Any]]:
        """Per policy: its checkbox, description and parameter inputs, for the template."""
        boxes = {box.data["value"]: box for box in self["policies"]}
        return [{"name": p["name"], "description": p["description"], "checkbox": boxes[p["name"]],
                 "params": [self[param_field_name(p["name"], q["name"])] for q in p["params"]]}
                for p in self.catalog]

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
        if data.get("workload_source") == "upload" and not data.get("trace"):
            self.add_error("trace", "choose a trace file to upload")
        if data.get("workload_source") == "generator":
            for name in ("gen_num_jobs", "gen_arrival_rate_per_hour",
                         "gen_median_duration_minutes"):
                if data.get(name) is None and name not in self.errors:
                    self.add_error(name, "required for a generated workload")
        if data.get("inference_source") == "upload" and not data.get("inference_file"):
            self.add_error("inference_file", "choose a load CSV to upload")
        if data.get("inference_source") == "generated" and data.get("inference_days") is None \
                and "inference_days" not in self.errors:
            self.add_error("inference_days", "required for a generated load")
        data["policy_entries"] = self._policy_entries(data)
        return data

    def _policy_entries(self, data: dict[str, Any]) -> list[dict[str, Any]]:
        """The chosen policies with the parameters typed in, each checked by the registry."""
        entries = []
        engine = data.get("engine_settings") if isinstance(data.get("engine_settings"),
                                                           dict) else {}
        for policy in data.get("policies") or []:
            prefix = param_field_name(policy, "")
            params = {name.removeprefix(prefix): value.strip()
                      for name, value in data.items()
                      if name.startswith(prefix) and isinstance(value, str) and value.strip()}
            try:
                split_settings(policy, {**engine, **params})
            except InputError as exc:
                target = param_field_name(policy, exc.field or "")
                self.add_error(target if target in self.fields else "policies",
                               f"{policy}: {exc.message}")
                continue
            entries.append({"policy": policy, "params": params})
        return entries
