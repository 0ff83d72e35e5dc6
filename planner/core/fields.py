"""The serializer field for a policy: a registered policy or a composition of one with stages.

Every request that names a policy (a scenario's entries, a live decision, a capacity search)
takes `policy+stage` compositions too (`simulation.composition`, issue #20), checked by the
simulator's own parser, so the API, the CLI and the builder refuse the same names with the
same message. The schema gives the registered names as an enum and compositions as a
pattern over the registered policies and stages.
"""

from __future__ import annotations

import re
from typing import Any

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from simulation.composition import SEPARATOR, resolve_policy, stages
from simulation.errors import InputError
from simulation.policies import registry

POLICY_NAME_MAX_LENGTH = 64  # the models' CharField(max_length=64)


def _alternatives(names: Any) -> str:
    return "|".join(re.escape(name) for name in names)


COMPOSITION_PATTERN = (f"^({_alternatives(registry())})"
                       f"({re.escape(SEPARATOR)}({_alternatives(stages())}))+$")


@extend_schema_field({
    "anyOf": [
        {"type": "string", "enum": sorted(registry()), "description": "a registered policy"},
        {"type": "string", "pattern": COMPOSITION_PATTERN, "maxLength": POLICY_NAME_MAX_LENGTH,
         "description": "a composition: a registered policy, then stages that replace its "
                        "own (`python -m simulation policies` lists both); the policy may "
                        "also come after its stages",
         "example": "elastic-tiresias+aryl-loan"},
    ],
})
class PolicyField(serializers.CharField):
    """A policy name the simulator can build (`simulation.composition.resolve_policy`)."""

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("max_length", POLICY_NAME_MAX_LENGTH)
        super().__init__(**kwargs)

    def to_internal_value(self, data: Any) -> str:
        name = super().to_internal_value(data)
        try:
            resolve_policy(name)
        except InputError as exc:
            raise serializers.ValidationError(exc.message) from None
        return name
