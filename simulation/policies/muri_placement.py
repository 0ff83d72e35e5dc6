"""Muri's placement (step 4): which GPUs each kept group runs on, and what changes.

4. The groups that fit are kept in priority order; a group re-uses the GPUs its best-ranked
   running member already holds, the others are placed best-fit in descending GPU count (§5:
   "avoids fragmentation"); what no longer runs is preempted, a job that moves or joins a
   running group restarts (see `Muri`'s **Churn**: Muri's executor kills and restarts jobs),
   queued members launch, and each member's share is set.

Jobs that share GPUs hold the identical placement; a group is named by a token (two groups
may hold equal slot tuples on one server, as slots name no GPU indices), and its members
share it. The policy gives each group it places a new token; running jobs it did not start
(a snapshot's) get a negative one per placement, so jobs sharing a placement form one
group as before, and groups are keyed by the token alone (hashing placements cost ~9 % of
a full Philly run). The physically free GPUs are recounted only on servers whose jobs
changed (`PhysicalFree`).
"""

from __future__ import annotations

from collections.abc import Iterator

from simulation.decisions import Decision, Launch, Placement, SetShare
from simulation.policies.ordering import pool_preference
from simulation.shared_placement import fit_placement, share_changed
from simulation.state import JobStatus
from simulation.view import ClusterView, JobView

_RUNNING = JobStatus.RUNNING
Slot = tuple[Placement, int]  # a group: its placement and token


class MuriPlacement:
    """Groups' placements and the decisions that realise them, mixed into `Muri` (which
    provides `group_share`)."""

    def _reset_placement(self) -> None:
        self._group_key: dict[str, int] = {}  # running job -> its group's token
        self._members: dict[int, int] = {}  # group -> running members
        self._group_placement: dict[int, Placement] = {}  # group -> its placement
        self._riders: dict[str, int] = {}  # server -> GPUs of members beyond each group's first
        # Every job at a share below 1 (and maybe some back at 1): the running jobs found
        # so at a reset and each job given such a share; `_any_slowed` and `_sync` prune it.
        self._slowed: set[str] = set()
        self._dirty: set[str] = set()  # servers whose free GPUs need recounting
        self._retokened = 0  # changes to `_group_key` so far (`Muri._plan_epoch`)

    def _track(self, job_id: str, placement: Placement) -> None:
        """Count running `job_id` in its group: members beyond the first hold no GPUs of
        their own. A job without a token (running before the policy saw it) gets its
        placement's negative one."""
        token = self._group_of.get(job_id)
        if token is None:
            token = self._group_of[job_id] = self._untokened.setdefault(
                placement, -2 - len(self._untokened))
        if self._group_key.get(job_id) == token:
            return
        self._untrack(job_id)
        self._group_key[job_id] = token
        self._retokened += 1
        count = self._members[token] = self._members.get(token, 0) + 1
        self._group_placement[token] = placement
        for slot in placement:
            self._dirty.add(slot.server)
            if count > 1:
                self._riders[slot.server] = self._riders.get(slot.server, 0) + slot.gpus

    def _untrack(self, job_id: str) -> None:
        token = self._group_key.pop(job_id, None)
        if token is None:
            return
        self._retokened += 1
        placement = self._group_placement[token]
        count = self._members[token] = self._members[token] - 1
        if not count:
            del self._members[token]
            del self._group_placement[token]
        for slot in placement:
            self._dirty.add(slot.server)
            if count:
                self._riders[slot.server] -= slot.gpus

    def _any_slowed(self, view: ClusterView) -> bool:
        """Whether a running job runs at a share below 1."""
        running = view.running
        for job_id in list(self._slowed):
            if job_id in running and running[job_id].share < 1.0:
                return True
            self._slowed.discard(job_id)
        return False

    def _groups_in_use(self, view: ClusterView) -> dict[int, list[str]]:
        """Running jobs by group token, in `view.running`'s order."""
        in_use: dict[int, list[str]] = {}
        group_key = self._group_key
        for job_id in view.running.keys():
            in_use.setdefault(group_key[job_id], []).append(job_id)
        return in_use

    def _formed_groups(self, view: ClusterView, selected: list[JobView]) -> list[list[str]]:
        """The selected members of each running group of two or more: sticky regrouping
        keeps them together, as a long-running interleaved group keeps running in practice
        (Muri §5 regroups every six minutes to limit restarts)."""
        chosen = {job.job_id for job in selected}
        formed = []
        for job_ids in self._groups_in_use(view).values():
            members = [job_id for job_id in job_ids if job_id in chosen]
            if len(members) > 1:
                formed.append(members)
        return formed

    def _gaining_groups(self, target: dict[str, tuple[Slot, float]]) -> set[int]:
        """Tokens of running groups that a job not running in them joins: Muri's executor
        starts a changed group afresh, so every member restarts (the authors' simulator
        charges every member of a group its start-up time, `run_sim.py`)."""
        group_key, members = self._group_key, self._members
        return {token for job_id, ((_, token), _) in target.items()
                if group_key.get(job_id) != token and token in members}

    def _place(self, view: ClusterView, kept: list[list[JobView]],
               claimed: dict[int, Slot], free: dict[str, int]
               ) -> list[Placement]:
        """Place the groups not in `claimed` best-fit into `free`, largest first (§5), and
        add them to `claimed` with a new token; those that do not fit wait. Returns the
        placements taken from `free`."""
        placed: list[Placement] = []
        waiting = [index for index in range(len(kept)) if index not in claimed]
        for index in sorted(waiting, key=lambda i: -kept[i][0].spec.num_gpus):  # stable
            spec = kept[index][0].spec
            placement = fit_placement(
                view, free, spec.num_gpus, gpus_per_worker=spec.gpus_per_worker,
                pools=pool_preference(view, spec),
            )
            if placement is not None:
                self._next_token += 1
                claimed[index] = (placement, self._next_token)
                placed.append(placement)
        return placed

    def _targets(self, kept: list[list[JobView]], claimed: dict[int, Slot]
                 ) -> dict[str, tuple[Slot, float]]:
        """Each member of a placed group: its (placement, token) and share."""
        target: dict[str, tuple[Slot, float]] = {}
        for index, group in enumerate(kept):
            if index in claimed:
                if len(group) == 1:  # alone: full speed (`group_share`)
                    target[group[0].job_id] = (claimed[index], 1.0)
                    continue
                for job_id, share in self.group_share(group).items():
                    target[job_id] = (claimed[index], share)
        return target

    def _start(self, view: ClusterView, target: dict[str, tuple[Slot, float]]
               ) -> Iterator[Decision]:
        """Launch the queued members of `target` and set every member's share."""
        group_of, group_key, slowed = self._group_of, self._group_key, self._slowed
        for job_id, ((placement, token), share) in target.items():
            job = view.job(job_id)
            group_of[job_id] = token
            if job.status == _RUNNING:
                if group_key.get(job_id) != token:  # a new token: count it in its new group
                    self._track(job_id, job.placement)
            else:
                yield Launch(job_id, placement)
                self._track(job_id, placement)
            # A job outside `_slowed` runs (or waits) at share 1: only SetShare lowers it.
            if (share < 1.0 or job_id in slowed) and share_changed(job, share):
                yield SetShare(job_id, share)
            if share < 1.0:
                slowed.add(job_id)
