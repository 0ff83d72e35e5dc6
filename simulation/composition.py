"""Policies as compositions of stages, one per layer of a scheduler (issue #20).

The papers attack different layers of the same scheduler, so a policy is named by the stage
it takes in each, in the spirit of the Kubernetes scheduler framework's extension points:

- **capacity**: where GPUs come from. The engine lends idle inference servers to training
  every `loan_interval` s and, when inference needs them back, asks the capacity stage which
  on-loan servers to return (Aryl §4-§5.3). A capacity stage is a reclaim strategy of
  `simulation/reclaim/` under the name `<strategy>-loan`: `aryl-loan` is Aryl's Algorithm 1,
  `scf-loan` the engine's default (smallest count of jobs first, Aryl §7.2's baseline);
  `no-loan` lends nothing, so a comparison with it shows what loaning gives.
- **ordering**: which jobs run and which are preempted (SRTF, 2D-LAS, finish-time fairness).
- **allocation**: how many GPUs an elastic job gets (Aryl's knapsack, EDL's compaction).
  `requested` runs every job at its requested size (the baselines' own); `edl-expand` gives
  free GPUs to running elastic jobs while nothing waits (`simulation/policies/
  edl_expansion.py`), so `srtf+edl-expand` is SRTF with EDL's expansion; `aryl-expand`
  splits them by Aryl's knapsack instead (`aryl_expansion.py`); `edl-compact` is EDL's
  whole Algorithm 1, compaction under load as well, which reads Tiresias' queues:
  `elastic-tiresias` is registered as `tiresias+edl-compact` (a stage that reads more of its
  policy than `priority_key` names it in `Stage.requires`, and other policies are refused).
- **placement**: which GPUs, and whether jobs share them (packing, time-slicing,
  interleaving). `best-fit` puts every job on GPUs of its own; `gandiva-pack` adds Gandiva's
  packing to a preemptive priority ordering (`simulation/policies/gandiva_pack_stage.py`), so
  `tiresias+gandiva-pack` is Tiresias' 2D-LAS with Gandiva's packing.

Every registered policy is a composition: its capacity stage is its paper's reclaim strategy
(`Policy.engine_defaults`, else the engine's), and it decides the layers in `Policy.layers`
itself, as one stage named after it, unless it names its stages (`Policy.composition`, as
Elastic-Tiresias does): ordering, allocation and placement for the other papers' policies;
ordering and placement for FIFO, SJF, Themis and SIA's queue policies, whose allocation
stage is `requested`; ordering only for the preemptive priority policies (Tiresias, SRTF,
SRSF), whose placement stage is `best-fit`: a placement stage reads their `priority_key`.
A composition names a policy and the stages that replace its own, joined by `+`:
``elastic-tiresias+aryl-loan`` is EDL's Elastic-Tiresias whose loaned servers are returned
by Aryl's reclaim; the policy may come anywhere (``aryl-loan+muri-s`` is
``muri-s+aryl-loan``). Each layer takes at most one stage; an unknown name or a second stage for
a layer, or a stage for a layer the policy decides itself, is refused with a message naming
them. A stage that decides in rounds is a class mixed in before the policy (`Stage.mixin`).
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from simulation.engine_config import EngineConfig
from simulation.errors import InputError
from simulation.policies.aryl_expansion import ArylExpansion
from simulation.policies.base import Param, Policy, parse_params, registry
from simulation.policies.edl_expansion import EdlExpansion
from simulation.policies.elastic_tiresias import EDL_COMPACTION_PARAMS, EdlCompaction
from simulation.policies.gandiva_pack_stage import PACK_STAGE_PARAMS, GandivaPackStage
from simulation.reclaim import reclaim_strategies

LAYERS = ("capacity", "ordering", "allocation", "placement")
CAPACITY_SUFFIX = "-loan"
SEPARATOR = "+"
DEFAULT_RECLAIM = EngineConfig().reclaim_strategy  # a policy without a paper reclaim


@dataclass(frozen=True, slots=True)
class Stage:
    """One named stage of one layer: what it sets on the engine (`engine_settings`), the
    class mixed in before the policy it extends when it decides in rounds (`mixin`), and the
    parameters it adds to the policy's (`params`)."""

    layer: str
    name: str
    description: str
    engine_settings: Mapping[str, Any]
    mixin: type | None = None
    params: tuple[Param, ...] = ()
    # (attribute, what it is): a stage that reads more of its policy than `priority_key`
    requires: tuple[str, str] | None = None

    def fits(self, cls: type[Policy]) -> bool:
        return self.requires is None or hasattr(cls, self.requires[0])


def capacity_stage_name(reclaim_strategy: str) -> str:
    return f"{reclaim_strategy}{CAPACITY_SUFFIX}"


NO_LOAN = Stage("capacity", "no-loan", "Inference servers are never lent: training runs on "
                "its own pools only (what loaning gives is the difference).", {"lending": False})


def capacity_stages() -> dict[str, Stage]:
    """`no-loan`, then one stage per registered reclaim strategy, described by its docstring."""
    stages = {NO_LOAN.name: NO_LOAN}
    for strategy, select in reclaim_strategies().items():
        name = capacity_stage_name(strategy)
        description = " ".join((select.__doc__ or strategy).split())
        stages[name] = Stage("capacity", name, f"{description} Idle inference servers are "
                             "lent to training in between.", {"reclaim_strategy": strategy})
    return stages


REQUESTED = Stage("allocation", "requested", "Every job runs at its requested size.", {})
EDL_EXPAND = Stage("allocation", "edl-expand", "EDL's expansion (TPDS'22 §5.1, Algorithm 1 "
                   "lines 7-13): free GPUs go to running elastic jobs while nothing waits, "
                   "and come back when a job waits; stop-free scaling (§4.2).",
                   {"scaling_mode": "stop-free"}, EdlExpansion)


ARYL_EXPAND = Stage("allocation", "aryl-expand", "Aryl's multiple-choice knapsack (§5.2, "
                    "Algorithm 2) splits the free GPUs among running elastic jobs while nothing "
                    "waits, on-loan servers first (§5.3); they come back when a job waits; "
                    "stop-free scaling.", {"scaling_mode": "stop-free"}, ArylExpansion)


BEST_FIT = Stage("placement", "best-fit", "Every job on free GPUs by best fit: one server, "
                 "the fullest that fits, else spread over the emptiest; GPUs are never "
                 "shared.", {})
GANDIVA_PACK = Stage("placement", "gandiva-pack", "Gandiva's packing (OSDI'18 §4.2.2, Table 1) "
                     "under the policy's priority order: during overload a waiting 1-GPU job "
                     "of low GPU utilisation shares the GPU of a running one, kept after a "
                     "trial only if the pair beats one GPU's worth; a pack holds one GPU in the "
                     "ordering's count.", {}, GandivaPackStage, PACK_STAGE_PARAMS)
EDL_COMPACT = Stage("allocation", "edl-compact", "EDL's Algorithm 1 (TPDS'22 §5.1): when more "
                    "than N jobs wait, elastic jobs of Tiresias' lower queues are scaled in "
                    "(not below r of their request) to start waiting jobs; expansion when "
                    "nothing waits; stop-free scaling. Elastic-Tiresias is tiresias+edl-compact.",
                    {"scaling_mode": "stop-free"}, EdlCompaction, EDL_COMPACTION_PARAMS,
                    ("queue_index", "Tiresias' priority queues"))
# The stage a policy takes in a layer it does not decide itself, unless a composition says.
OWN_DEFAULTS = {"allocation": REQUESTED, "placement": BEST_FIT}


def stages() -> dict[str, Stage]:
    """Every stage a composition may name after its policy."""
    return {**capacity_stages(), REQUESTED.name: REQUESTED, EDL_EXPAND.name: EDL_EXPAND,
            ARYL_EXPAND.name: ARYL_EXPAND, EDL_COMPACT.name: EDL_COMPACT, BEST_FIT.name: BEST_FIT,
            GANDIVA_PACK.name: GANDIVA_PACK}


def policy_stages(cls: type[Policy]) -> dict[str, str]:
    """Layer -> stage name of a policy class, composed or registered."""
    reclaim = cls.engine_defaults.get("reclaim_strategy", DEFAULT_RECLAIM)
    if cls.composition is not None:
        named = {"capacity": capacity_stage_name(reclaim), **cls.composition}
        return {layer: named[layer] for layer in LAYERS if layer in named}
    chosen = {"capacity": capacity_stage_name(reclaim)}
    for layer in LAYERS[1:]:
        chosen[layer] = cls.name if layer in cls.layers else OWN_DEFAULTS[layer].name
    return chosen


def resolve_policy(name: str) -> type[Policy]:
    """The policy class `name` stands for: a registered policy or a composition of one with
    stages (``elastic-tiresias+aryl-loan``). Raises `InputError` on field ``policy``."""
    if not isinstance(name, str):
        raise InputError(f"expected a policy name, got {name!r}", field="policy")
    policies = registry()
    if name in policies:
        return policies[name]
    return _compose(_policy_first(name.strip(), policies))


def _policy_first(name: str, policies: Mapping[str, type[Policy]]) -> str:
    """`name` with its one policy first: ``aryl-loan+muri-s`` is ``muri-s+aryl-loan``."""
    tokens = [token.strip() for token in name.split(SEPARATOR)]
    named = [token for token in tokens if token in policies]
    if len(named) > 1:
        raise InputError(f"{name!r} names the policies {' and '.join(map(repr, named))}; a "
                         f"composition is one policy and its stages", field="policy")
    if named and tokens[0] != named[0]:
        tokens.remove(named[0])
        tokens.insert(0, named[0])
    return SEPARATOR.join(tokens)


@lru_cache(maxsize=256)
def _compose(name: str) -> type[Policy]:
    """The class of composition `name`, built once so that every run of it shares one class."""
    base_name, *stage_names = [token.strip() for token in name.split(SEPARATOR)]
    policies = registry()
    if base_name not in policies:
        raise InputError(f"unknown policy {base_name!r} (known: {', '.join(policies)}; "
                         f"a composition is POLICY{SEPARATOR}STAGE, e.g. "
                         f"elastic-tiresias{SEPARATOR}aryl-loan)", field="policy")
    if not stage_names:
        raise InputError(f"{name!r}: a composition names at least one stage after its policy",
                         field="policy")
    base = policies[base_name]
    known = stages()
    layers = policy_stages(base)
    replaced: dict[str, str] = {}
    engine_defaults = dict(base.engine_defaults)
    chosen: list[Stage] = []
    for stage_name in stage_names:
        stage = known.get(stage_name)
        if stage is None:
            raise InputError(f"{name!r}: unknown stage {stage_name!r} (stages: "
                             f"{', '.join(known)})", field="policy")
        if stage.layer in replaced:
            raise InputError(f"{name!r}: stages {replaced[stage.layer]!r} and {stage_name!r} "
                             f"both take the {stage.layer} layer", field="policy")
        if stage.layer in base.layers and base.composition is not None:
            ordering = policy_stages(base)["ordering"]
            raise InputError(f"{name!r}: policy {base_name!r} is {ordering} with the "
                             f"{stage.layer} stage {layers[stage.layer]!r}; name {ordering!r} "
                             f"with the stages wanted instead", field="policy")
        if stage.layer in base.layers:
            raise InputError(f"{name!r}: policy {base_name!r} decides {stage.layer} itself; "
                             f"it cannot take the {stage.layer} stage {stage_name!r}",
                             field="policy")
        if not stage.fits(base):
            raise InputError(f"{name!r}: stage {stage_name!r} needs "
                             f"{stage.requires[1]}, which policy {base_name!r} has not",
                             field="policy")
        replaced[stage.layer] = stage_name
        engine_defaults.update(stage.engine_settings)
        chosen.append(stage)
    layers.update(replaced)
    # Outer layers wrap inner ones: an allocation stage's round calls the placement stage's.
    chosen.sort(key=lambda stage: LAYERS.index(stage.layer))
    params = [*base.params, *(p for stage in chosen for p in stage.params)]
    return type(base.__name__ + "Composed", tuple(
        [*(stage.mixin for stage in chosen if stage.mixin is not None), base]), {
        "name": name,
        "description": f"{base.description} With " + ", ".join(
            f"{layer} stage {stage!r}" for layer, stage in replaced.items()) + ".",
        "engine_defaults": engine_defaults,
        "params": tuple(params),
        "composition": {layer: layers[layer] for layer in LAYERS if layer in layers},
        "base_policy": base_name,
        "__module__": base.__module__,
    })


def create_policy(
    name: str, params: Mapping[str, Any] | None = None, *, seed: int = 0
) -> Policy:
    """A policy by name, registered or composed, with `params` checked against its own.

    A composition's random stream is its base policy's, so stages that change nothing (no
    server is ever reclaimed) leave every decision as the base policy makes it."""
    cls = resolve_policy(name)
    values = parse_params(cls, params or {})
    return cls(rng=random.Random(f"{cls.base_policy or cls.name}:{seed}"), **values)


def describe_stages(cls: type[Policy]) -> str:
    """`capacity: aryl-loan, ordering+allocation+placement: elastic-tiresias`, for listings."""
    by_stage: dict[str, list[str]] = {}
    for layer, stage in policy_stages(cls).items():
        by_stage.setdefault(stage, []).append(layer)
    return ", ".join(f"{'+'.join(layers)}: {stage}" for stage, layers in by_stage.items())


def stage_label(cls: type[Policy], layer: str) -> str:
    """Who decided in `layer`, for an engine error: the stage, every layer it decides, and
    the policy, e.g. ``stage 'aryl-loan' (capacity) of policy 'elastic-tiresias+aryl-loan'``."""
    chosen = policy_stages(cls)
    stage = chosen.get(layer, cls.name)
    layers = [name for name, value in chosen.items() if value == stage] or [layer]
    return f"stage {stage!r} ({', '.join(layers)}) of policy {cls.name!r}"


def split_composition(name: str) -> tuple[str, dict[str, str]]:
    """(registered policy, {layer: stage it adds}) of a valid policy name."""
    cls = resolve_policy(name)
    base = cls.base_policy or cls.name
    own = policy_stages(registry()[base])
    return base, {layer: stage for layer, stage in policy_stages(cls).items()
                  if own.get(layer) != stage}


def compose(base: str, added: Mapping[str, str]) -> str:
    """The name of `base` with the stages of `added` (layer -> stage) that differ from its
    own, checked: ``compose("srtf", {"capacity": "aryl-loan"}) == "srtf+aryl-loan"``."""
    own = policy_stages(resolve_policy(base))
    extra = [stage for layer, stage in sorted(added.items(), key=lambda i: LAYERS.index(i[0]))
             if stage and own.get(layer) != stage]
    name = SEPARATOR.join([base, *extra])
    resolve_policy(name)
    return name


def open_layers(cls: type[Policy]) -> dict[str, list[str]]:
    """Per layer the policy does not decide itself, the stages it may take there, its own
    first: what a builder offers beside the policy."""
    own = policy_stages(cls)
    offered: dict[str, list[str]] = {}
    for stage in stages().values():
        if stage.layer not in cls.layers and stage.fits(cls):
            offered.setdefault(stage.layer, [own[stage.layer]])
            if stage.name != own[stage.layer]:
                offered[stage.layer].append(stage.name)
    return offered
