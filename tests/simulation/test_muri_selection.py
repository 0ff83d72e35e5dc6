"""Muri's kept selection (issue #16): a full regroup re-uses the last selection while nothing
it depends on changed and the priority order cannot have changed (`selection_horizon`); and
the selection's walk over merged bucket prefixes (`MuriSelection._reach`) claims what one
pass over every job sorted claims."""

from __future__ import annotations

import random

import pytest

from simulation.engine import EngineConfig, Simulation
from simulation.model import JobSpec, Workload
from simulation.policies.muri import MuriL, MuriS
from simulation.policies.muri_selection import _Stream
from tests.simulation.test_muri import _cluster
from tests.simulation.test_sharing_equivalence import outcome, random_muri_jobs


def _horizon_after_regroup_at_360(policy: MuriS | MuriL, gpus: int, *jobs: JobSpec) -> float:
    """The horizon of the selection the full regroup at t=360 computed (it decides nothing)."""
    sim = Simulation(_cluster(1, gpus), Workload(jobs), policy,
                     config=EngineConfig(max_time=360.0))
    sim.run()
    kept = policy._kept_selection
    running = sorted(entry for entries in kept.running.values() for entry in entries)
    return policy.selection_horizon(sim.view, running, kept.at)


def test_srsf_horizon_is_when_a_running_job_reaches_a_queued_one_ahead_of_it():
    # Two GPUs, no profiles. t=0: SRSF keys A 1000, D 2 × 1200 = 2400, B 4000: A takes a
    # GPU, D (2 GPUs) no longer fits, B takes the other; D waits ahead of B. At 360, B's
    # key is 3640 and falls at 1 per second: it reaches D's 2400 at 360 + 1240 = 1600.
    jobs = (JobSpec("A", 0.0, 1, 1000.0), JobSpec("B", 0.0, 1, 4000.0),
            JobSpec("D", 0.0, 2, 1200.0))
    assert _horizon_after_regroup_at_360(MuriS(), 2, *jobs) == pytest.approx(1600.0)


def test_srsf_horizon_counts_a_queued_job_ahead_of_every_preemptible_running_one():
    # Three GPUs. P (pinned once running) sorts first and holds one; Q (3 GPUs, key 3000)
    # then no longer fits, so R (key 3500) runs behind it. At 360 R's key is 3140, falling
    # at 1 per second: it reaches Q, which waits ahead of every preemptible running job,
    # at 360 + 140 = 500.
    jobs = (JobSpec("P", 0.0, 1, 1000.0, preemptible=False), JobSpec("Q", 0.0, 3, 1000.0),
            JobSpec("R", 0.0, 1, 3500.0))
    assert _horizon_after_regroup_at_360(MuriS(), 3, *jobs) == pytest.approx(500.0)


def test_srsf_horizon_is_when_a_steeper_running_job_reaches_the_running_one_ahead():
    # Three GPUs. At 360: F (1 GPU) has key 2000 - 360 = 1640, falling at 1 per second; E
    # (2 GPUs) 2 × (1500 - 360) = 2280, falling at 2. E reaches F after 640 / (2 - 1) s, at
    # 1000 (both keys 1000). G (key 9000) waits behind both, so only the queue forces the
    # regroup.
    jobs = (JobSpec("E", 0.0, 2, 1500.0), JobSpec("F", 0.0, 1, 2000.0),
            JobSpec("G", 0.0, 1, 9000.0))
    assert _horizon_after_regroup_at_360(MuriS(), 3, *jobs) == pytest.approx(1000.0)


def test_las_horizon_is_a_second_before_the_next_demotion():
    # One GPU, queues split at 500 and 10,000 GPU·s. X runs from 0 and Y, submitted with it,
    # waits behind it in queue 0; at 360 X has 360 GPU·s and reaches 500 at 500: horizon 499.
    jobs = (JobSpec("X", 0.0, 1, 20000.0), JobSpec("Y", 0.0, 1, 20000.0))
    assert _horizon_after_regroup_at_360(MuriL(), 1, *jobs) == pytest.approx(499.0)


class FreshSelection:
    """Muri computing every full selection afresh (mixed into Muri-S and Muri-L)."""

    def _kept_running_selection(self, capacity):
        return None


class CountsKeptSelections:
    """Muri as it is, counting the full regroups that re-used the last selection."""

    kept = 0

    def _kept_running_selection(self, capacity):
        found = super()._kept_running_selection(capacity)
        self.kept += found is not None
        return found


class MuriSFresh(FreshSelection, MuriS):
    pass


class MuriLFresh(FreshSelection, MuriL):
    pass


class MuriSCountsKept(CountsKeptSelections, MuriS):
    pass


class MuriLCountsKept(CountsKeptSelections, MuriL):
    pass


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("lending", [False, True])
@pytest.mark.parametrize(("kept", "fresh", "params"), [
    (MuriSCountsKept, MuriSFresh, {}),
    (MuriLCountsKept, MuriLFresh, {"thresholds": "300,3000"}),
])
def test_kept_selections_decide_as_fresh_ones(kept, fresh, params, seed, lending):
    jobs = random_muri_jobs(seed, count=90)
    keeping = kept(**params)
    assert outcome(keeping, jobs, lending) == outcome(fresh(**params), jobs, lending)
    assert keeping.kept > 0  # the shortcut was taken


class _WalkWithFlags(MuriS):
    """Muri-S whose jobs' profiles are given (the walk reads nothing else of a job): those
    in `known` as looked up already (a profile or None), the others through
    `_entry_groupable` (`profiled`, and not pinned)."""

    def __init__(self, profiled: dict[str, bool], known: set[str], **values: object) -> None:
        super().__init__(**values)
        self._flags = profiled
        self._profiles.update({job_id: ((1.0,), (1.0,), 1.0) if profiled[job_id] else None
                               for job_id in known})

    def _entry_groupable(self, view, entry) -> bool:
        assert entry[-1] not in self._profiles  # the walk reads a known profile itself
        return entry[0] and self._flags[entry[-1]]


def _walk_by_definition(buckets, groupable, capacity, k):
    """`select` over entries: every entry sorted; each one that fits leads and claims the
    next k - 1 unclaimed groupable entries of its bucket."""
    ordered = sorted(entry for entries in buckets.values() for entry in entries)
    bucket_of = {entry[-1]: key for key, entries in buckets.items() for entry in entries}
    per_bucket = {key: sorted(entries) for key, entries in buckets.items()}
    claimed: set[str] = set()
    budget = capacity
    for entry in ordered:
        key = bucket_of[entry[-1]]
        if entry[-1] in claimed or key[0] > budget:
            continue
        budget -= key[0]
        claimed.add(entry[-1])
        if groupable[entry[-1]]:
            room = k - 1
            for other in per_bucket[key][per_bucket[key].index(entry) + 1:]:
                if room and other[-1] not in claimed and groupable[other[-1]]:
                    claimed.add(other[-1])
                    room -= 1
        if budget <= 0:
            break
    return [entry for entry in ordered if entry[-1] in claimed]


@pytest.mark.parametrize("seed", range(200))
def test_the_walk_claims_what_one_pass_over_every_job_claims(seed):
    # Random buckets of running (some pinned) and queued entries, priorities on a coarse
    # grid (ties broken by the later fields), some jobs ungroupable (up to 70 %: the walk
    # then reads past the merged prefix; pinned ones may have a profile), every k and
    # capacity; half the profiles looked up before the walk.
    rng = random.Random(seed)
    k = rng.randint(1, 4)
    share = rng.choice((0.3, 0.8, 1.0))  # of jobs with a profile
    running: dict = {}
    waiting: dict = {}
    groupable: dict[str, bool] = {}
    profiled: dict[str, bool] = {}
    for gpus in rng.sample((1, 2, 4, 8), rng.choice((1, 1, 2, 4))):
        key = (gpus, 1, "", "")
        for i in range(rng.randint(0, 40)):
            job_id = f"r{gpus}-{i}"
            pinned = rng.random() < 0.1
            running.setdefault(key, []).append(
                (not pinned, (float(rng.randint(0, 30)), 0.0), 0, rng.randint(0, 99), job_id))
            profiled[job_id] = rng.random() < share
            groupable[job_id] = not pinned and profiled[job_id]
        for i in range(rng.randint(0, 300)):
            job_id = f"q{gpus}-{i}"
            waiting.setdefault(key, []).append(
                (True, (float(rng.randint(0, 30)), 0.0), 1, i, job_id))
            groupable[job_id] = profiled[job_id] = rng.random() < share
    for entries in (*running.values(), *waiting.values()):
        entries.sort()
    capacity = rng.choice((rng.randint(1, 8), rng.randint(1, 64)))
    known = {job_id for job_id in profiled if rng.random() < 0.5}
    policy = _WalkWithFlags(profiled, known, max_group_size=k)
    policy._waiting = waiting
    everything = {key: running.get(key, []) + waiting.get(key, [])
                  for key in {*running, *waiting}}
    assert (policy._reach(None, running, capacity)
            == _walk_by_definition(everything, groupable, capacity, k))


@pytest.mark.parametrize("seed", range(100))
def test_a_streams_entries_are_the_first_of_every_entry_sorted(seed):
    # A bucket's running entries merged with the prefix of its queue the walk can read:
    # the first `needed` entries of all of them sorted (all of them when the queue is no
    # longer), whether the running entries fall early, late or among the queued ones.
    rng = random.Random(seed)
    grid = rng.choice((5, 30, 1000))
    queued = sorted((True, (float(rng.randint(0, grid)), 0.0), 1, i, f"q{i}")
                    for i in range(rng.randint(0, 300)))
    low, high = sorted((rng.randint(0, grid), rng.randint(0, grid)))
    running = sorted((rng.random() > 0.1, (float(rng.randint(low, high)), 0.0), 0,
                      rng.randint(0, 99), f"r{i}") for i in range(rng.randint(0, 40)))
    needed = rng.randint(1, 300)
    stream = _Stream(1, running, queued, needed)
    every = sorted(running + queued)
    assert stream.entries == (every if stream.whole else every[:needed])
    assert stream.whole == (not running or len(queued) <= needed)
    assert stream.grow() == every
