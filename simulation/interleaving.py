"""Multi-resource interleaving (Muri, SIGCOMM'22 §4): profiles, group iteration time and γ.

A DL job iterates over stages that each load one resource (storage IO, CPU, GPU, network).
Jobs interleaved on the same GPUs shift their stages so that, in every phase of a group
iteration, each job uses a different resource; a barrier ends each phase (§4.1, Figure 4).

**Group iteration time** (Eq. 3; for three-stage profiles over four resource types, the
pipeline model below): with job i shifted by s_i phases,
``T = Σ_j max_i t_i[(j + s_i) mod k]`` over k resource types. Eq. 3 writes s_i = i for the
jobs in some order; we enumerate every assignment of *distinct* shifts (job 0 pinned at 0:
rotating all shifts only relabels the phases), which contains each permutation Eq. 3 names
and, for fewer jobs than resource types, the gapped orderings too (two jobs can sit two
phases apart, as in Muri's simulator for two jobs over four types). Figure 6's best ordering
is the minimum over that enumeration. **Efficiency** (Eq. 4):
``γ = 1 − (1/k) Σ_j (T − Σ_i t_i[j]) / T``, i.e. busy resource-time over k·T.

**Profiles.** A trace's own per-stage times (``JobSpec.profile``; Muri's traces give three:
data loading and preprocessing, GPU, network) win. Otherwise the model table below gives
four stages, derived from Table 1 (stage percentages measured on 16 V100s) times the model's
iteration time at 16 GPUs from Muri's traces (the ``iteration_time`` column of
``muri_trace*.csv`` rows with ``num_gpu = 16``):

- ShuffleNet, VGG19, GPT-2, A2C: Table 1's own percentages.
- ResNet18 uses ShuffleNet's (both storage-bound CNNs at batch 128, Table 3), VGG16 uses
  VGG19's (network-bound, batch 16), Bert uses GPT-2's (GPU-bound, batch 4) and DQN uses
  A2C's (CPU-bound RL): Table 3 pairs each with the same bottleneck, Table 1 omits them.
- A single-GPU job has no gradient synchronisation, so its network stage is 0.

Jobs with neither a profile nor a known model are not grouped: they run alone.

Profiles with fewer stages than the policy's resource types are padded with idle stages
(below), and the padded phases still cost a barrier each: two jobs profiled on two
resources, Figure 4's A (2, 1) and B (1, 2), swap perfectly over two types (T = 3, each at
full speed) but take T = 4 over four (each at 3/4). A workload profiled on two resources
sets `resource_types=2` (issue #16's two-pair case, tested in `test_muri.py`).

**Three-stage profiles over four resource types** (data d, GPU g, network n; the pipeline
model). Muri's simulator does not pad these: when ``multi_resource == 4`` and the first job
has three stages it times every ordering with a recursion over phase boundaries
(Rivendile/Muri@4e69a78 ``simulator/matching.py:67-83``; the same loop for the worst ordering
at :104-120), in which a job's data stage spans two consecutive phases (storage IO, then
CPU) and its GPU and network stages one phase each. We render it as follows. The jobs sit in
slots 0-3 (slot indices mod 4, empty slots contribute nothing); phase m runs from boundary
f_{m-1} to f_m, f_0 = 0, and in it the job in slot m syncs, the job in slot m+1 computes and
the job in slot m+2 finishes loading the data it began at f_{m-2}::

    f_m = max(f_{m-1} + n[slot m], f_{m-1} + g[slot m+1], f_{m-2} + d[slot m+2])   m = 1..8

(no data term at m = 1). The period T is f_m - f_{m-4} at the first m in 5..8 where it equals
f_{m-1} - f_{m-5} within 0.1 % (``math.isclose``, rel_tol 1e-3: the steady state), else
f_8 - f_4. Two data stages overlap in every phase (one job's first half, another's second),
so data-bound jobs gain from grouping as they cannot with zero-padded stages under Eq. 3.
What it computes:

- up to three jobs (slot 3 empty): no stage crosses f_4, so the check holds at m = 5 and
  T = f_4, one cycle from a common start. Jobs a, b in slots 0, 1:
  ``T = max(d_a + g_a, n_b + d_b) + max(n_a, g_b)`` (a loads and computes while b syncs and
  loads, then a syncs while b computes). Jobs a, b, c in slots 0, 1, 2: f_1 = max(n_b, g_c),
  f_2 = max(f_1 + n_c, d_a), f_3 = max(f_2 + g_a, f_1 + d_b),
  ``T = f_4 = max(f_3 + max(n_a, g_b), f_2 + d_c)``;
- two jobs two slots apart (matching.py:94-98, written out there; the recursion with slots
  0 and 2 gives the same up to rounding in the last bit):
  ``T = max(d_a, g_b + n_b) + max(d_b, g_a + n_a)``, each job loads while the other computes
  and syncs;
- four jobs: slot 3's data stage crosses f_4 and the recursion runs until the span repeats;
  four alike (d, g, n) with d >= 2 max(g, n) give T = 2d, where Eq. 3 over zero-padded stages
  gives 4d.

The best ordering is the first minimum over every permutation of the jobs over slots
0..n-1 (in ``itertools.permutations`` order) and, for two jobs, then the gapped one; the worst
the first maximum over the same (matching.py:63-135). An ordering is the tuple of each job's
slot. γ is busy resource-time over 4T as with Eq. 3 (matching.py:177-183). Other profiles
(as many stages as resource types, e.g. the model table's four) keep Eq. 3, and those with
fewer are padded with idle (zero) stages for it. Choices of ours: a group mixing three-stage
with other profiles is padded and timed by Eq. 3 (the simulator looks at its first job only
and never mixes); three jobs are not tried in gapped slots (0, 1, 3), as it does not; an
all-zero group has period 0 (the simulator asserts a positive one).

**Profiling noise** (§6.4, Fig. 14): the scheduler sees each stage multiplied by a factor
drawn uniformly from [1 − n, 1 + n]; the rates it sets use the true profile with the
ordering chosen from the noisy one (the executor runs the plan it was given).

Grouping jobs by this model (Algorithm 1, Blossom) is `simulation.interleaving_grouping`.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from itertools import permutations

import numpy as np

from simulation.model import JobSpec, ResourceProfile

RESOURCE_TYPES = ("storage", "cpu", "gpu", "network")


@dataclass(frozen=True, slots=True)
class ModelProfile:
    """Share of one iteration per resource type (Table 1) and the iteration time (s)."""

    iteration_seconds: float
    shares: tuple[float, float, float, float]
    derivation: str

    def stages(self, num_gpus: int) -> tuple[float, ...]:
        storage, cpu, gpu, network = (s * self.iteration_seconds for s in self.shares)
        return (storage, cpu, gpu, network if num_gpus > 1 else 0.0)


_SHUFFLENET = (0.60, 0.18, 0.06, 0.02)
_VGG19 = (0.24, 0.04, 0.26, 0.41)
_GPT2 = (0.0006, 0.0003, 0.85, 0.28)
_A2C = (0.0, 0.91, 0.03, 0.002)

MODEL_PROFILES: dict[str, ModelProfile] = {
    "shufflenet": ModelProfile(1.006, _SHUFFLENET, "Table 1"),
    "vgg19": ModelProfile(0.302, _VGG19, "Table 1"),
    "gpt2": ModelProfile(0.491, _GPT2, "Table 1"),
    "a2c": ModelProfile(0.567, _A2C, "Table 1"),
    "resnet18": ModelProfile(1.055, _SHUFFLENET, "ShuffleNet's shares (storage-bound CNN)"),
    "vgg16": ModelProfile(0.332, _VGG19, "VGG19's shares (network-bound CNN)"),
    "bert": ModelProfile(0.244, _GPT2, "GPT-2's shares (GPU-bound NLP)"),
    "dqn": ModelProfile(0.525, _A2C, "A2C's shares (CPU-bound RL)"),
}
_ALIASES = {"shufflenet_v2_x1_0": "shufflenet", "gpt-2": "gpt2", "resnet-18": "resnet18"}


def model_profile(model: str, num_gpus: int) -> ResourceProfile | None:
    """The table profile of `model` at `num_gpus` GPUs, or None for an unknown model."""
    name = model.strip().lower()
    entry = MODEL_PROFILES.get(_ALIASES.get(name, name))
    return ResourceProfile(entry.stages(num_gpus)) if entry is not None else None


def job_profile(spec: JobSpec) -> ResourceProfile | None:
    """The trace's profile when it has one, else the model table's."""
    return spec.profile if spec.profile is not None else model_profile(spec.model, spec.num_gpus)


def solo_iteration_seconds(spec: JobSpec, profile: ResourceProfile) -> float:
    """A job's own iteration time: duration / iterations when the trace says, else the profile's."""
    if spec.iterations:
        return spec.duration / spec.iterations
    return profile.iteration_seconds


def noisy_stages(stages: Sequence[float], noise: float, rng: random.Random) -> tuple[float, ...]:
    """Stages as a profiler with relative error up to `noise` reports them (Fig. 14)."""
    if noise <= 0:
        return tuple(stages)
    return tuple(t * rng.uniform(1 - noise, 1 + noise) for t in stages)


def pad_stages(stages: Sequence[float], k: int) -> tuple[float, ...]:
    """`stages` padded with idle (zero) stages to `k` resource types."""
    if len(stages) > k:
        raise ValueError(f"profile has {len(stages)} stages, more than {k} resource types")
    return (*stages, *(0.0,) * (k - len(stages)))


PIPELINE_STAGES = 3  # data, GPU, network: the stages of Muri's traces
PIPELINE_SLOTS = 4  # the resource types the pipeline model interleaves them over


def is_pipeline_group(stage_counts: Iterable[int], resource_types: int) -> bool:
    """Whether jobs with these stage counts are timed by the pipeline model (module docstring)
    rather than by Eq. 3: every one has three stages and there are four resource types."""
    return resource_types == PIPELINE_SLOTS and all(n == PIPELINE_STAGES for n in stage_counts)


def pipeline_recursion(occupants: Sequence[np.ndarray | None]) -> np.ndarray:
    """The pipeline model's period (matching.py:67-83), elementwise over broadcast groups.

    `occupants[s]` holds the (d, g, n) rows, shape (..., 3), of the job in slot s, or None
    for an empty slot; a row of -inf is empty too. Every boundary f_1..f_8 is computed (the
    simulator stops at the steady state, which changes nothing before it).
    """
    shape = np.broadcast_shapes(*(o.shape[:-1] for o in occupants if o is not None))
    f = [np.zeros(shape)]
    for m in range(1, 2 * PIPELINE_SLOTS + 1):
        end = np.zeros(shape)
        network, gpu, data = (occupants[(m + offset) % PIPELINE_SLOTS] for offset in range(3))
        if network is not None:
            end = np.maximum(end, f[m - 1] + network[..., 2])
        if gpu is not None:
            end = np.maximum(end, f[m - 1] + gpu[..., 1])
        if data is not None and m >= 2:
            end = np.maximum(end, f[m - 2] + data[..., 0])
        f.append(end)
    period = f[8] - f[4]
    for m in range(8, 4, -1):  # so that the first steady m wins
        span, previous = f[m] - f[m - 4], f[m - 1] - f[m - 5]
        steady = np.abs(span - previous) <= 1e-3 * np.maximum(np.abs(span), np.abs(previous))
        period = np.where(steady, span, period)
    return period


@lru_cache(maxsize=8)
def pipeline_orderings(jobs: int) -> tuple[tuple[int, ...], ...]:
    """Each job's slot, for every ordering Muri's simulator tries, in its order."""
    orderings = []
    for in_slot in permutations(range(jobs)):  # in_slot[s]: the job in slot s
        slots = [0] * jobs
        for slot, job in enumerate(in_slot):
            slots[job] = slot
        orderings.append(tuple(slots))
    if jobs == 2:
        orderings.append((0, 2))  # matching.py:94-98
    return tuple(orderings)


def _slot_table(stages: Sequence[Sequence[float]], orderings: Sequence[Sequence[int]]
                ) -> list[np.ndarray]:
    """Per slot, the (orderings, 3) rows of its job under each ordering (-inf: empty)."""
    table = np.full((len(orderings), PIPELINE_SLOTS, PIPELINE_STAGES), -np.inf)
    for index, slots in enumerate(orderings):
        for job, slot in zip(stages, slots, strict=True):
            table[index, slot] = job
    return [table[:, slot] for slot in range(PIPELINE_SLOTS)]


def pipeline_period(stages: Sequence[Sequence[float]], slots: Sequence[int]) -> float:
    """The pipeline model's iteration time of three-stage jobs, job i in slot `slots[i]`."""
    return _known_pipeline_period(tuple(tuple(map(float, job)) for job in stages), tuple(slots))


@lru_cache(maxsize=4096)
def _known_pipeline_period(stages: tuple[tuple[float, ...], ...], slots: tuple[int, ...]
                           ) -> float:
    """`pipeline_period`, cached by profile: a group's true period is asked for again each
    time its shares are set, and jobs of one model share a profile (issue #16)."""
    return float(pipeline_recursion(_slot_table(stages, [slots]))[0])


@lru_cache(maxsize=4096)
def _pipeline_extreme(stages: tuple[tuple[float, ...], ...], worst: bool
                      ) -> tuple[float, tuple[int, ...]]:
    """`group_iteration_time` under the pipeline model, cached by profile."""
    orderings = pipeline_orderings(len(stages))
    periods = pipeline_recursion(_slot_table(stages, orderings))
    index = int(np.argmax(periods) if worst else np.argmin(periods))  # the first extreme
    return float(periods[index]), orderings[index]


def iteration_time_for_shifts(stages: Sequence[Sequence[float]], shifts: Sequence[int]) -> float:
    """Eq. 3 for a given ordering: job i runs stage (j + shifts[i]) mod k in phase j."""
    k = len(stages[0])
    return float(sum(
        max(job[(j + s) % k] for job, s in zip(stages, shifts, strict=True)) for j in range(k)
    ))


def iteration_time_for_ordering(
    stages: Sequence[Sequence[float]], ordering: Sequence[int], *,
    resource_types: int | None = None,
) -> float:
    """A group's iteration time under `ordering` as `group_iteration_time` returned it.

    `resource_types` (default: the longest profile's stage count) picks the model: the
    pipeline for three-stage profiles over four types, else Eq. 3 over zero-padded stages.
    """
    k = resource_types or max(len(job) for job in stages)
    if len(stages) > 1 and is_pipeline_group((len(job) for job in stages), k):
        return pipeline_period(stages, ordering)
    return iteration_time_for_shifts([pad_stages(job, k) for job in stages], ordering)


@lru_cache(maxsize=64)
def shift_assignments(jobs: int, k: int) -> tuple[tuple[int, ...], ...]:
    """Every assignment of distinct phase shifts to `jobs` jobs, job 0 pinned at shift 0."""
    return tuple((0, *rest) for rest in permutations(range(1, k), jobs - 1))


def group_iteration_time(
    stages: Sequence[Sequence[float]], *, worst: bool = False, resource_types: int | None = None
) -> tuple[float, tuple[int, ...]]:
    """The best (or worst) ordering's iteration time and the ordering.

    `stages` holds one stage tuple per job; `resource_types` (default: the longest profile's
    stage count) picks the model as in `iteration_time_for_ordering`. Under Eq. 3 the ordering
    is each job's phase shift, under the pipeline model its slot. A group cannot hold more
    jobs than resource types (two jobs would share a resource in some phase).
    """
    if len(stages) == 1:
        return float(sum(stages[0])), (0,)
    k = resource_types or max(len(job) for job in stages)
    if len(stages) > k:
        raise ValueError(f"{len(stages)} jobs cannot interleave over {k} resource types")
    if is_pipeline_group((len(job) for job in stages), k):
        return _pipeline_extreme(tuple(tuple(map(float, job)) for job in stages), worst)
    padded = [pad_stages(job, k) for job in stages]
    pick = max if worst else min
    return pick(
        ((iteration_time_for_shifts(padded, shifts), shifts)
         for shifts in shift_assignments(len(stages), k)),
        key=lambda pair: pair[0],
    )


def interleaving_efficiency(
    stages: Sequence[Sequence[float]], *, worst: bool = False, resource_types: int | None = None
) -> float:
    """γ of a group under its best (or worst) ordering (Eqs. 2 and 4)."""
    period, _ = group_iteration_time(stages, worst=worst, resource_types=resource_types)
    k = resource_types or max(len(job) for job in stages)
    busy = sum(sum(job) for job in stages)
    return busy / (k * period) if period > 0 else 0.0
