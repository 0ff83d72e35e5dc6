"""Muri's grouping (Algorithm 1, lines 8–end) and the rates of grouped jobs.

3. The selected jobs are grouped with `simulation.interleaving_grouping.multi_round_grouping`
   (Blossom matching, ⌈log2 k⌉ rounds, buckets by GPU count and GPU-type/pool constraints).
   With `grouping=demand` (default, as Muri's simulator) matched pairs merge only while the
   selected jobs want more GPUs than the cluster has: grouping slows each member, so jobs
   that fit alone run alone. `grouping=always` merges every matched pair as Algorithm 1
   reads. The groups that fit the cluster are kept in priority order (`_fitting_groups`).

**Rates.** Members of a group share one placement and each completes one iteration per group
iteration, so a member runs at ``share = min(1, solo iteration time / (T_group × o_n))``
where T_group is the group's iteration time under the chosen ordering on the *true* profile
(Eq. 3, or for three-stage profiles over four resource types, as in Muri's traces, the
pipeline model of Muri's simulator; see `simulation.interleaving`) and o_n the
interleaving overhead of an n-job group. The ordering and the grouping use profiles with
`profiling_noise`. A job alone gets share 1.

**Interleaving overhead** (`group_overhead`, default 1.33, 1.5, 1.37 for groups of 2, 3, 4):
the factors Muri's simulator puts on a group's iteration time (Rivendile/Muri@4e69a78
`simulator/jobs.py:209`, applied in `simulator/matching.py:169-174`); Table 2 likewise
measured four interleaved jobs at 2×, not 4×, summed normalised throughput. That simulator
splits each factor x as 1.015 on every job's own iteration time and x / 1.015 on a group's;
here a group carries x and a job alone none, so a job alone runs at its trace speed as under
every other policy. `group_overhead=none` is the zero-overhead ablation.

Jobs with no profile (neither in the trace nor a model of the table in
`simulation.interleaving`) and non-preemptible running jobs are never grouped. Blossom
matchings are remembered (`MatchingMemo`) and merge periods by the pair of stage blocks
merged (`MergePeriods`), so a matching's γ matrix is look-ups once its profiles have met.
"""

from __future__ import annotations

import math
import random

import numpy as np

from simulation.errors import InputError
from simulation.interleaving import (
    group_iteration_time,
    iteration_time_for_ordering,
    job_profile,
    noisy_stages,
    pad_stages,
    solo_iteration_seconds,
)
from simulation.interleaving_grouping import (
    Bucket,
    GroupingConfig,
    MatchingMemo,
    multi_round_grouping,
)
from simulation.policies.muri_selection import BucketKey, bucket_key
from simulation.state import JobStatus
from simulation.view import ClusterView, JobView

_RUNNING = JobStatus.RUNNING
Profile = tuple[tuple[float, ...], tuple[float, ...], float]  # true, believed stages; solo s


def group_overhead_factors(setting: str) -> tuple[float, ...]:
    """`group_overhead` as iteration-time factors for groups of 2, 3, ... jobs; `none` = ()."""
    if setting.strip().lower() == "none":
        return ()
    try:
        factors = tuple(float(x) for x in setting.split(","))
        if all(0 < f < math.inf for f in factors):
            return factors
    except ValueError:
        pass
    raise InputError(f"expected 'none' or comma-separated positive factors, got {setting!r}",
                     source="settings", field="group_overhead")


class MuriGrouping:
    """Profiles, grouping and shares, mixed into `Muri` (which sets the parameters, `config`,
    `_groupable` and `_plan_epoch`)."""

    resource_types: int
    profiling_noise: float
    grouping: str
    ties: str
    config: GroupingConfig
    _group_of: dict[str, int]

    def _init_grouping(self, noise_seed: int) -> None:
        self._noise_seed = noise_seed
        self._profiles: dict[str, Profile | None] = {}
        self._plans: dict[object, list[list[list[int]]]] = {}
        self._shares: dict[tuple[str, ...], dict[str, float]] = {}
        self._periods: dict[tuple[tuple[tuple[float, ...], tuple[float, ...]], ...], float] = {}
        self._memo: MatchingMemo | None = MatchingMemo()
        self._buckets: dict[tuple, Bucket] = {}  # see `_bucket`
        # per job (one view each): its submit time, id and bucket; its padded
        # believed stages, solo iteration time, stage count, whether it has a profile and
        # whether it is preemptible (what matchings read of it that never changes)
        self._places: dict[JobView, tuple[float, str, BucketKey]] = {}
        self._matching_inputs: dict[JobView, tuple[tuple[float, ...], float, int, bool, bool]] = {}
        # the plans of the current `_plan_epoch`, by (capacity, selected jobs as a set)
        self._epoch: object = None
        self._epoch_plans: dict[tuple[int, frozenset[JobView]], list[list[JobView]]] = {}

    def _plan_epoch(self, view: ClusterView) -> object:
        """A value that changes whenever a job starts, stops or changes group."""
        raise NotImplementedError

    def profile(self, job: JobView) -> tuple[tuple[float, ...], tuple[float, ...], float] | None:
        """(true stages, believed stages, solo iteration time); None = ungroupable."""
        job_id = job.job_id
        found = self._profiles.get(job_id, False)
        if found is not False:
            return found
        profile = job_profile(job.spec)
        if profile is None or len(profile.stage_seconds) > self.resource_types:
            found = None
        else:
            true = tuple(profile.stage_seconds)
            rng = random.Random(f"{self._noise_seed}:{job_id}")
            believed = noisy_stages(true, self.profiling_noise, rng)
            found = (true, believed, solo_iteration_seconds(job.spec, profile))
        self._profiles[job_id] = found
        return found

    def group_share(self, members: list[JobView]) -> dict[str, float]:
        """Each member's rate factor: solo iteration time over the group's true period."""
        if len(members) == 1:
            return {members[0].job_id: 1.0}
        key = tuple(m.job_id for m in members)
        cached = self._shares.get(key)
        if cached is None:
            if len(self._shares) >= 4096:
                self._shares.clear()
            cached = self._shares[key] = self._compute_shares(members)
        return cached

    def _compute_shares(self, members: list[JobView]) -> dict[str, float]:
        profiles = [self.profile(m) for m in members]
        period = self._group_period(tuple((p[0], p[1]) for p in profiles if p is not None))
        period *= self.config.overhead_for(len(members))
        return {
            m.job_id: min(1.0, p[2] / period) if period > 0 else 1.0
            for m, p in zip(members, profiles, strict=True) if p is not None
        }

    def _group_period(self, stages: tuple[tuple[tuple[float, ...], tuple[float, ...]], ...]
                      ) -> float:
        """A group's true period (before overhead) under the ordering its believed stages
        pick, from each member's (true, believed) stages: remembered, since members of one
        model share their stages (a job's own solo time enters only its share)."""
        period = self._periods.get(stages)
        if period is None:
            _, ordering = group_iteration_time([believed for _, believed in stages],
                                               worst=self.config.worst_ordering,
                                               resource_types=self.resource_types)
            period = iteration_time_for_ordering([true for true, _ in stages], ordering,
                                                 resource_types=self.resource_types)
            if len(self._periods) >= 65_536:
                self._periods.clear()
            self._periods[stages] = period
        return period

    def plan_groups(self, view: ClusterView, selected: list[JobView], capacity: int,
                    formed: list[list[str]] | None = None) -> list[list[JobView]]:
        """Groups of selected jobs (best-ranked member first), in priority order.

        The grouping depends only on which jobs are selected (inside a bucket jobs are
        matched in submit order, so rank changes alone do not regroup them): a round with
        the same selection as an earlier one re-uses its plan, which keeps groups stable
        between rounds and spares the matching. `formed` lists groups of selected jobs that
        stay together (sticky regrouping): the matching starts from them, and each counts
        its GPUs once towards the demand. When no selected job can be grouped (no profiles,
        as on Philly), every job is a group of its own, in the selection's priority order.
        """
        if not any(self._groupable(job) for job in selected):
            return [[job] for job in selected]
        rank = {job: i for i, job in enumerate(selected)}
        groups = [members if len(members) == 1 else sorted(members, key=rank.__getitem__)
                  for members in self._planned(view, selected, capacity, formed)]
        groups.sort(key=lambda g: rank[g[0]])
        return groups

    def _planned(self, view: ClusterView, selected: list[JobView], capacity: int,
                 formed: list[list[str]] | None) -> list[list[JobView]]:
        """`plan_groups`' groups in no particular order, each member's order unspecified.

        Plans are remembered by everything they read (`_plans`). While no job starts,
        stops or changes group (`_plan_epoch`) they are also remembered by the selected
        jobs as a set and the capacity alone: a full regroup whose selection only
        reorders (most of those past the selection's horizon on muri_trace2) then finds
        its plan without sorting the jobs into buckets and building that key. (`formed`
        groups depend on the selection's order: such calls are not remembered so.)"""
        epoch_key = None
        if not formed:
            epoch = self._plan_epoch(view)
            if epoch != self._epoch:
                self._epoch = epoch
                self._epoch_plans.clear()
            epoch_key = (capacity, frozenset(selected))
            found = self._epoch_plans.get(epoch_key)
            if found is not None:
                return found
            if len(self._epoch_plans) >= 64:
                self._epoch_plans.clear()
        places = self._places
        by_bucket: dict[BucketKey, list[JobView]] = {}
        for job in selected:
            place = places.get(job)
            if place is None:
                place = places[job] = (job.submit_time, job.job_id, bucket_key(job))
            by_bucket.setdefault(place[2], []).append(job)
        for jobs in by_bucket.values():  # in submit order (ids unique: buckets never compared)
            jobs.sort(key=places.__getitem__)
        keys = sorted(by_bucket)
        demand = sum(key[0] * len(by_bucket[key]) for key in keys)  # key[0]: GPUs per job
        if formed and self.grouping == "demand":
            formed = self._still_needed(view, selected, formed, demand - capacity)
        initial = self._initial_groups(view, by_bucket, keys, formed) if formed else None
        if initial is not None:
            demand = sum(key[0] * len(groups) for key, groups in zip(keys, initial, strict=True))
        excess = math.inf if self.grouping == "always" else demand - capacity
        # Each job with whether it runs (its view is one per job: `_groupable` follows) and,
        # under ties=keep, its group's token (tokens are never 0, so False means queued).
        group_of = self._group_of if self.ties == "keep" else None
        read = tuple(
            (key, tuple((j, j.status == _RUNNING and (group_of is None
                                                       or group_of.get(j.job_id, -1)))
                        for j in by_bucket[key])) for key in keys)
        cache_key = (excess, read,
                     None if initial is None else tuple(tuple(map(tuple, g)) for g in initial))
        grouped = self._plans.get(cache_key)
        if grouped is None:
            grouped = multi_round_grouping(
                [self._bucket(bucket_read, by_bucket[bucket_read[0]]) for bucket_read in read],
                self.config, excess_gpus=excess, memo=self._memo, initial=initial,
            )
            if len(self._plans) >= 256:
                self._plans.clear()
            self._plans[cache_key] = grouped
        plan = [[jobs[i] for i in members]
                for jobs, bucket_groups in zip((by_bucket[key] for key in keys), grouped,
                                               strict=True)
                for members in bucket_groups]
        if epoch_key is not None:
            self._epoch_plans[epoch_key] = plan
        return plan

    @staticmethod
    def _still_needed(view: ClusterView, selected: list[JobView], formed: list[list[str]],
                      excess: int) -> list[list[str]]:
        """The formed groups worth keeping while the selected jobs, alone, want `excess` GPUs
        more than the cluster has: best-ranked first, until their merges cover the excess.
        The others split, so jobs run alone (unslowed) once there is room again."""
        rank = {job.job_id: i for i, job in enumerate(selected)}
        kept = []
        for group in sorted(formed, key=lambda g: min(rank[j] for j in g)):
            if excess <= 0:
                break
            kept.append(group)
            excess -= (len(group) - 1) * view.job(group[0]).spec.num_gpus
        return kept

    @staticmethod
    def _initial_groups(view: ClusterView, by_bucket: dict[BucketKey, list[JobView]],
                        keys: list[BucketKey], formed: list[list[str]]
                        ) -> list[list[list[int]]]:
        """Per bucket, the `formed` groups and every other job alone, as indices into
        `by_bucket` (a group's members share its bucket: only such jobs are ever grouped)."""
        index = {job.job_id: i for jobs in by_bucket.values() for i, job in enumerate(jobs)}
        together: dict[BucketKey, list[list[int]]] = {key: [] for key in keys}
        in_group: set[str] = set()
        for job_ids in formed:
            together[bucket_key(view.job(job_ids[0]))].append(sorted(index[j] for j in job_ids))
            in_group.update(job_ids)
        for key in keys:
            together[key].extend([i] for i, job in enumerate(by_bucket[key])
                                 if job.job_id not in in_group)
            together[key].sort()
        return [together[key] for key in keys]

    def _bucket(self, read: tuple[BucketKey, tuple[tuple[JobView, object], ...]],
                jobs: list[JobView]) -> Bucket:
        """`jobs` as a matching reads them, in one pass: what never changes of a job kept
        (`_matching_inputs`), whether it runs (and in which group) read afresh. `read` is
        the bucket's key and each job with what `_planned` keys plans by (whether it runs,
        its group): all a bucket depends on, so buckets are kept by it (`_buckets`, with
        the rows' ids and memo key they carry)."""
        found = self._buckets.get(read)
        if found is None:
            if len(self._buckets) >= 64:  # ~as many hits as 1,024 on Philly
                self._buckets.clear()
            found = self._buckets[read] = self._new_bucket(read[0], jobs)
        return found

    def _new_bucket(self, key: BucketKey, jobs: list[JobView]) -> Bucket:
        rows, solo, counts, groupable, running = [], [], [], [], []
        inputs = self._matching_inputs
        group_of = self._group_of
        for job in jobs:
            found = inputs.get(job)
            if found is None:
                profile = self.profile(job)
                believed = profile[1] if profile else ()
                found = inputs[job] = (pad_stages(believed, self.resource_types),
                                       profile[2] if profile else 0.0,
                                       len(believed) if profile else self.resource_types,
                                       profile is not None, job.spec.preemptible)
            rows.append(found[0])
            solo.append(found[1])
            counts.append(found[2])
            runs = job.status == _RUNNING
            groupable.append(found[3] and (found[4] or not runs))  # `_groupable`
            running.append(group_of.get(job.job_id, -1) if runs else -1)
        return Bucket(
            gpus=key[0],
            stages=np.array(rows, dtype=float),
            solo=np.array(solo, dtype=float),
            ranks=list(range(len(jobs))),
            groupable=groupable,
            stage_counts=counts,
            running_group=running if self.ties == "keep" else None,
        )

    def _fitting_groups(self, view: ClusterView, selected: list[JobView], capacity: int,
                        formed: list[list[str]] | None = None) -> list[list[JobView]]:
        """Step 3 over the selected jobs (starting from the `formed` groups) and the groups
        that fit `capacity` GPUs, in priority order."""
        groups = self.plan_groups(view, selected, capacity, formed)
        kept: list[list[JobView]] = []
        budget = capacity
        for group in groups:
            gpus = group[0].spec.num_gpus
            if gpus <= budget or any(not j.spec.preemptible and j.status == _RUNNING
                                     for j in group):  # pinned: kept whatever it costs
                budget -= gpus
                kept.append(group)
        return kept
