"""The "New capacity search" form: the question as a planner types it, parsed for the
service (which checks it completely)."""

from __future__ import annotations

from typing import Any

from django import forms

from planner.scenarios.models import Scenario
from simulation import capacity
from simulation.errors import InputError

AXIS_CHOICES = [(capacity.AXIS_SERVERS, "servers of pools"),
                (capacity.AXIS_LOAN, "inference servers lent to training"),
                (capacity.AXIS_PARAM, "an integer policy parameter")]
# The service's error fields under `axis` -> this form's inputs.
AXIS_FIELDS = {"axis.pools": "pools", "axis.kind": "axis", "axis.param": "param"}


class CapacitySearchForm(forms.Form):
    name = forms.CharField(max_length=200, required=False)
    policies = forms.MultipleChoiceField(widget=forms.CheckboxSelectMultiple,
                                         help_text="each gets its own answer")
    targets = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 3}), initial="queuing.p95<=1h",
        help_text="one a line, METRIC<=BOUND: " + ", ".join(capacity.TARGET_METRICS)
        + "; times in s, min, h or d, shares in %")
    costs = forms.CharField(help_text="price per GPU-hour of each GPU type, e.g. V100=2.5, T4=0.6")
    server_costs = forms.CharField(required=False, label="Fixed cost per server-hour",
                                   help_text="optional, e.g. V100=1.2")
    axis = forms.ChoiceField(choices=AXIS_CHOICES, widget=forms.RadioSelect,
                             initial=capacity.AXIS_SERVERS, label="Size")
    pools = forms.CharField(required=False, help_text="servers: pools sized together, "
                            "comma-separated; the first has the level's servers, the others "
                            "keep their ratio")
    param = forms.CharField(required=False, help_text="parameter: its name")
    min = forms.IntegerField(required=False, min_value=0,
                             help_text="least level (empty: where the widest job fits)")
    max = forms.IntegerField(required=False, min_value=0,
                             help_text="largest level (empty: twice the pool as given)")
    seeds = forms.CharField(required=False, help_text="comma-separated (empty: the scenario's)")
    points_per_round = forms.IntegerField(min_value=1, initial=1, label="Levels per round",
                                          help_text="per policy, run in parallel")

    def __init__(self, *args: Any, scenario: Scenario, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        names = list(dict.fromkeys(e["policy"] for e in scenario.policies))
        self.fields["policies"].choices = [(n, n) for n in names]
        self.fields["policies"].initial = names
        self.fields["seeds"].initial = ", ".join(str(s) for s in scenario.seeds)
        types = sorted(scenario.cluster.pools.values_list("gpu_type__name", flat=True)
                       .distinct())
        self.fields["costs"].help_text = ("price per GPU-hour of each GPU type the cluster "
                                          f"uses ({', '.join(types)}), e.g. {types[0]}=2.5"
                                          if types else self.fields["costs"].help_text)
        self.fields["costs"].initial = " ".join(f"{t}=" for t in types)

    def service_arguments(self) -> dict[str, Any]:
        """The cleaned form as `capacity_search_start`'s keywords; InputError names the
        input (its field is one of this form's)."""
        data = self.cleaned_data

        def pairs(field: str) -> dict[str, float]:
            items = [p for p in data[field].replace(",", " ").split() if p]
            return capacity.parse_pairs(items, field=field)

        seeds = None
        if data["seeds"].strip():
            try:
                seeds = [int(s) for s in data["seeds"].replace(",", " ").split()]
            except ValueError:
                raise InputError("expected whole numbers", field="seeds") from None
        return {
            "name": data["name"], "policies": data["policies"],
            "targets": [line.strip() for line in data["targets"].splitlines() if line.strip()],
            "costs": {"gpu_hour": pairs("costs"), "server_hour": pairs("server_costs")},
            "axis": {"kind": data["axis"], "param": data["param"].strip(),
                     "pools": [p.strip() for p in data["pools"].split(",") if p.strip()]},
            "low": data["min"], "high": data["max"], "seeds": seeds,
            "points_per_round": data["points_per_round"],
        }

    def add_input_error(self, error: InputError) -> None:
        """Show the service's error next to the input it names."""
        raw = (error.field or "").split("[")[0]
        if raw.startswith("costs.server_hour"):
            field = "server_costs"
        elif raw.startswith("axis."):
            field = AXIS_FIELDS.get(raw, "axis")
        else:
            field = raw.split(".")[0]
        message = error.message
        if field == "targets" and "[" in (error.field or ""):  # targets[1]: the second line
            message = f"line {int(error.field.split('[')[1].rstrip(']')) + 1}: {message}"
        self.add_error(field if field in self.fields else None, message)
