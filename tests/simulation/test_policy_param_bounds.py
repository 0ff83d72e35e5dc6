"""Policy parameters are bounded numbers (issue #17: every number a user sends has a limit).

Rule: a numeric parameter outside its declared `bounds` (or, without bounds, outside ±1e9),
NaN or infinite is an input error naming the parameter; every default lies within bounds.
"""

from __future__ import annotations

import math

import pytest

from simulation.composition import create_policy
from simulation.errors import InputError
from simulation.policies.base import registry


def test_every_default_lies_within_its_bounds():
    for policy in registry().values():
        for param in policy.params:
            if param.bounds is not None:
                low, high = param.bounds
                assert low <= param.default <= high, (policy.name, param.name)
                assert param.parse(param.default) == param.default


@pytest.mark.parametrize(("policy", "name", "value"), [
    ("gandiva", "time_slice", 0.001),  # a quantum of 1 ms: millions of rounds
    ("gandiva", "time_slice", math.nan),
    ("themis", "lease", math.inf),
    ("muri-s", "max_group_size", 9),
    ("elastic-tiresias", "qos_ratio", 0.0),
    ("tiresias", "promote_knob", -1.0),
])
def test_a_value_outside_the_bounds_names_the_parameter(policy, name, value):
    with pytest.raises(InputError) as error:
        create_policy(policy, {name: value})
    assert error.value.field == name


def test_the_bounds_are_inclusive():
    assert create_policy("gandiva", {"time_slice": 1.0}).time_slice == 1.0
    assert create_policy("muri-s", {"max_group_size": 8, "resource_types": 8}).max_group_size == 8


def test_muri_group_size_above_its_resource_types_is_an_input_error():
    with pytest.raises(InputError) as error:
        create_policy("muri-s", {"max_group_size": 5})  # resource_types defaults to 4
    assert error.value.field == "max_group_size"
