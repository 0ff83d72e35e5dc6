"""Gandiva's time-slicing (OSDI'18 §4.1, §6.1): each job's share of its GPUs.

Mixed into `simulation.policies.gandiva.Gandiva`, which owns the state these methods read
(plans, packs, the per-server index). "quanta": a server whose units over-subscribe its GPUs
runs them round robin, re-planned once per change of its units (`_rotate`, the rotation
itself in `simulation.policies.time_slicing`), and each job gets its shares for the quanta
ahead as one `ShareCycle`. "fluid": each job runs at N / M of its GPUs at once. Packing and
locality slow a job's share in both (`_job_share`).
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Iterator, Mapping

from simulation.decisions import Decision, SetShare
from simulation.dlt_models import model_info
from simulation.policies.gandiva_index import packing_capacity
from simulation.policies.time_slicing import (
    HORIZON,
    MIN_HORIZON,
    SUSPENDED,
    RotationPlan,
    Unit,
    lowest_runs,
    plan_rotation,
    steady_share,
    turn,
    unit_cycles,
)
from simulation.share_cycle import ShareCycle
from simulation.view import ClusterView, JobView

MIN_SHARE = 1e-6  # a running job's share is at least this (a share of 0 suspends it)


class GandivaTimeSlicing:
    """Suspend/resume round robin per server and the shares it gives each job."""

    def _unit_of(self, job_id: str, sid: str) -> Unit:
        pid = self._pack_of.get(job_id)
        return ("pack", pid) if pid is not None and self._packs[pid].server == sid else job_id

    def _time_share(self, view: ClusterView, sid: str) -> float:
        n = view.servers[sid].gpus
        load = self._load(view, sid)
        if load <= n:
            return 1.0
        return n / load * max(0.0, 1.0 - self.switch_overhead / self.time_slice)

    def _locality(self, view: ClusterView, job: JobView) -> float:
        info = model_info(job.spec.model)
        if info.inter_server_locality == info.intra_server_locality == 1.0:
            return 1.0  # insensitive to where its GPUs are
        servers = {slot.server for slot in job.placement}
        if len(servers) > 1:
            return info.inter_server_locality
        if job.gpus > 1 and self._mixed_sizes(view, next(iter(servers))):
            return info.intra_server_locality
        return 1.0

    def _placid_model(self, model: str) -> bool:
        """Whether a model is insensitive to where its GPUs are (asked per model)."""
        free = self._placid.get(model)
        if free is None:
            info = model_info(model)
            free = self._placid[model] = (
                info.inter_server_locality == info.intra_server_locality == 1.0)
        return free

    def _mixed_sizes(self, view: ClusterView, sid: str) -> bool:
        """Whether server `sid` hosts jobs of more than one size; kept until its jobs
        change (`_mark`), since every multi-GPU job of a crowded server asks."""
        mixed = self._mixed.get(sid)
        if mixed is None:
            sizes = {view.job(j).spec.num_gpus for j in view.servers[sid].jobs}
            mixed = self._mixed[sid] = len(sizes) > 1
        return mixed

    def _pack_factor(self, job_id: str) -> float:
        pid = self._pack_of.get(job_id)
        if pid is None:
            return 1.0
        members = self._packs[pid].members
        models = [self._model_of[j] for j in members]
        return packing_capacity(models) / len(members)

    def _slice_share(self, view: ClusterView, sid: str, unit: Unit) -> float:
        """The time-slicing share of `unit` on server `sid` this quantum (1.0 if it does
        not slice)."""
        if not self._quanta:
            return self._time_share(view, sid)
        plan = self._plans.get(sid)
        if plan is None:
            return 1.0
        return plan.share(self._quantum_of(plan), unit)

    def _quantum_of(self, plan: RotationPlan) -> int:
        """The number, in `plan`, of the quantum the last boundary round started."""
        return plan.index(self._quantum_start, self.time_slice)

    def _unit_rank(self, unit: Unit) -> int:
        """Launch order of a unit (a pack: of its earliest member), to order newcomers.

        Distinct units have distinct ranks (a job is in at most one pack), so `_rotate`'s
        newcomers, taken from a set, come out in one order whatever the hash seed."""
        if isinstance(unit, tuple):
            return min(self._rank[j] for j in self._packs[unit[1]].members)
        return self._rank[str(unit)]

    def _rotate(self, view: ClusterView, sid: str, boundary: bool, owed: list[str]) -> None:
        """Re-plan suspend/resume round robin on a server whose units changed
        (time_slicing = "quanta", §4.1, §6.1; the rotation itself is in `time_slicing`).

        The units keep their place in the rotation of the plan in effect; newcomers join at
        the back (a pack takes the place of the member it was packed onto). At a quantum
        boundary the units that ran go to the back first; between boundaries the running
        units keep running and a GPU that frees up (a departure) goes to the next suspended
        unit at once. A unit resumed after a suspension pays `switch_overhead` (suspend +
        resume together, §4.1) out of the rest of its quantum, as a share 1 - overhead /
        (time left in the quantum): the engine has no pause decision, so its progress is
        exact at the quantum's end and early by at most the overhead within it. A job that
        starts, or keeps its GPUs, pays nothing. From the next boundary on, the rotation
        turns unchanged until the server's units change again: `plan_rotation` plays it
        forward once and the plan holds every quantum. At a boundary the spread jobs
        `owed` a turn (`_owed_turns`; in launch order) go to the front first."""
        units = self._units(view, sid)
        gpus = view.servers[sid].gpus
        plan = self._plans.pop(sid, None)
        members = self._rotation_units.pop(sid, None)
        suspects = self._suspects.pop(sid, ())
        rotation: list[Unit] = []
        shares: dict[Unit, float] = {}
        ran: tuple[Unit, ...] = ()
        horizon = MIN_HORIZON
        if plan is not None:  # the quantum in effect before this round (at a boundary: ended)
            before = self._quantum_of(plan) - boundary
            horizon = min(HORIZON, max(MIN_HORIZON, 2 * (before + 1)))  # it lasted before + 1
            self._counts["suspends"] += plan.suspends_through(before)
            current = plan.slice(before)
            rotation = list(current.rotation)
            shares = current.shares
            ran = current.ran  # the units with a share above 0 in `shares`, in rotation order
        if self._load(view, sid) <= gpus:
            return
        plain = not self._has_pack(view, sid)  # the units are the server's jobs
        old: Mapping[Unit, float] | None = None
        if plan is not None and members is not None and plain:
            rotation, ran, old = self._changed_rotation(rotation, ran, shares, members,
                                                        suspects, units)
        if old is None:
            rotation, ran, old = self._rebuilt_rotation(rotation, ran, shares, units)
            if plain:
                members = set(units)
        if plain:
            self._rotation_units[sid] = members
        if boundary:
            for unit in ran:
                rotation.remove(unit)
            rotation.extend(ran)
            front = [job_id for job_id in owed if job_id in units]  # in launch order
            if front:
                for unit in front:
                    rotation.remove(unit)
                rotation[:0] = front
        left = self._quantum_start + self.time_slice - view.now
        resumed = max(SUSPENDED, 1.0 - self.switch_overhead / left) if left > 0 else SUSPENDED
        sizes = self._tally[sid].size_range
        first = turn(rotation, old, units, gpus, set() if boundary else set(ran), resumed,
                     len(ran), sizes)
        self._counts["suspends"] += first.suspends
        full = max(SUSPENDED, 1.0 - self.switch_overhead / self.time_slice)
        # A job spread over servers runs at its slowest part's share: its servers' plans
        # expire rather than loop, so its sequence need not repeat with both periods.
        loops = view.servers[sid].jobs.keys().isdisjoint(self._spread)
        plan = plan_rotation(self._quantum_start, first, units, gpus, full, loops, horizon,
                             sizes)
        if plain:  # its rotation's units, which `_rotate` changes only as it replaces it
            plan.members = members
        self._plans[sid] = plan
        if plan.expires:
            heapq.heappush(self._expiring, (plan.expiry(self.time_slice), sid))

    def _changed_rotation(self, rotation: list[Unit], ran: tuple[Unit, ...],
                          shares: dict[Unit, float], members: set[Unit],
                          suspects: set[str], units: Mapping[Unit, int]
                          ) -> tuple[list[Unit], tuple[Unit, ...], Mapping[Unit, float] | None]:
        """`_rebuilt_rotation` from what changed: the jobs whose GPUs changed on the server
        since its last plan (`suspects`) against the units of that plan's rotation
        (`members`, updated in place), so a re-plan costs the change, not a pass over the
        hundreds of units of a crowded server (issue #22). Only for a server in no pack,
        before and now; the rotation's `old` shares are read through `_PreviousShares`.
        None for `old` if the counts do not add up (a change not seen): rebuild then."""
        gone = {u for u in suspects if u in members and u not in units}
        new = sorted([u for u in suspects if u not in members and u in units],
                     key=self._unit_rank)
        if len(members) - len(gone) + len(new) != len(units):
            return rotation, ran, None
        if gone:
            members -= gone
            rotation, ran = _without(rotation, ran, gone)
        rotation.extend(new)
        members.update(new)
        return rotation, ran, _PreviousShares(shares, members, set(new))

    def _rebuilt_rotation(self, rotation: list[Unit], ran: tuple[Unit, ...],
                          shares: dict[Unit, float], units: Mapping[Unit, int]
                          ) -> tuple[list[Unit], tuple[Unit, ...], dict[Unit, float]]:
        """The rotation in effect with the units gone taken out and newcomers at the back
        (a pack in the place of the member it was packed onto), `ran` likewise, and each
        unit's share in it (`old`: SUSPENDED for a unit listed but not run; newcomers are
        not in it, a pack takes its member's share)."""
        old = dict.fromkeys(rotation, SUSPENDED)
        old.update(shares)
        # Set operations rather than a pass per unit in Python: hundreds of units on a
        # crowded server, re-planned at every change (issue #22).
        listed = set(rotation)
        gone = listed - units.keys()
        if gone:
            listed -= gone
            rotation, ran = _without(rotation, ran, gone)
        packed = False
        for unit in sorted(units.keys() - listed, key=self._unit_rank):
            if isinstance(unit, tuple):
                members = self._packs[unit[1]].members
                at = next((i for i, u in enumerate(rotation) if u in members), len(rotation))
                share = next((old[m] for m in members if m in old), None)
                rotation.insert(at, unit)
                if share is not None:
                    old[unit] = share
                    packed = True
            else:
                rotation.append(unit)
        if packed:  # a pack runs in the place of its member: look for it in the rotation
            ran = tuple([u for u in rotation if u in old and old[u] > SUSPENDED])
        return rotation, ran, old

    def _set_shares(self, view: ClusterView) -> Iterator[Decision]:
        """Shares of the jobs on servers that changed (no other job's share can have), in
        the engine's running order. With quanta, a round a quantum after the last boundary
        is the next boundary; only servers whose units changed are re-planned, and each of
        their jobs gets its shares for every quantum ahead as one `ShareCycle`."""
        if self._quanta:
            boundary = self._at_boundary(view.now)
            owed: list[str] = []
            if boundary:
                self._quantum_start = view.now
                self._replan_expired(view.now)
                # the spread jobs owed a turn (`_owed_turns`) take it now, on all their servers
                owed = self._owed_turns(view)
                for job_id in owed:
                    self._touched_shares.update(self._where[job_id])
            for sid in sorted(self._touched_shares, key=self._order.__getitem__):
                self._rotate(view, sid, boundary, owed)
        touched, self._touched_shares = self._touched_shares, set()
        jobs: set[str] = set()
        fresh: dict[str, dict[Unit, tuple[float, ShareCycle | None]]] = {}
        for sid in touched:
            members = view.servers[sid].jobs
            plan = self._plans.get(sid) if self._quanta else None
            if plan is None:
                jobs.update(members)
                continue
            # Every plan of a touched server is fresh (quantum 0): its units' cycles are
            # built once, for the members that take them as they are (`_share_cycles`).
            fresh[sid] = unit_cycles(plan, self._quantum_start + self.time_slice,
                                     self.time_slice)
            # A job already suspended that stays suspended in the whole of its server's
            # fresh plan keeps its share: most members of a crowded server (issue #22).
            runners = self._runners(fresh[sid], members)
            awake = self._awake.get(sid, set())  # not a pass over the server's members
            jobs.update(awake)
            jobs.update([job_id for job_id in runners if job_id in members])  # not a pass
            self._let_rest(view.now, awake, runners, jobs)
        in_order = sorted(jobs, key=self._rank.__getitem__)
        if self._quanta:
            yield from self._share_cycles(view, in_order, fresh)
        else:
            for job_id in in_order:
                job = view.job(job_id)
                share = min(self._time_share(view, sid) for sid in self._where[job_id])
                share *= self._pack_factor(job_id) * self._locality(view, job)
                share = min(1.0, max(share, MIN_SHARE))
                if abs(share - job.share) > 1e-12:
                    yield SetShare(job_id, share)
        if self.log_utilisation:
            self.utilisation_log.append((view.now, self._busy_gpu_cores(view)))
        if self._quanta:
            return  # `_rotate` counts the suspensions it makes
        rate = 0.0
        index = self._index
        for sid in self._overloaded(view):
            n, load = view.servers[sid].gpus, index.load[sid]
            rate += index.units[sid] * min(n, load - n) / load
        self._suspend_rate = rate / self.time_slice

    def _at_boundary(self, now: float) -> bool:
        """Whether a round at `now` starts a quantum (the engine ticks a quantum apart)."""
        return now >= self._quantum_start + self.time_slice - 1e-9

    def _expiry_due(self, now: float) -> bool:
        """Whether a plan may end with the quantum that ends at `now`."""
        return bool(self._expiring) and self._expiring[0][0] <= now + 1e-3  # a quantum apart

    def _replan_expired(self, now: float) -> None:
        """Servers whose plan ends with the quantum that just ended are planned afresh."""
        expiring = self._expiring
        while self._expiry_due(now):
            at, sid = heapq.heappop(expiring)
            plan = self._plans.get(sid)
            if plan is not None and plan.expires and abs(plan.expiry(self.time_slice) - at) < 1e-6:
                self._touched_shares.add(sid)

    def _let_rest(self, now: float, awake: set[str], runners: set[str],
                  jobs: set[str]) -> None:
        """Take out of `jobs` the members whose cycle has suspended them for good by `now`
        and that stay suspended in the fresh plan: they are as if told a plain 0 (what
        `_share_cycles` would tell a job on one server in no pack), without a decision.
        `awake`: the server's members not suspended, among which are those on a cycle.

        The engine's arithmetic is the same to the bit: past its last run a cycle whose
        loop never runs adds exactly 0.0, so the settle that telling would make subtracts
        the same work a later settle does, and the job gets no completion either way."""
        cycle_of, cycled = self._cycle_of, self._cycled
        for job_id in [j for j in awake if j in cycled and j not in runners]:
            if (cycle_of[job_id].silent_from() <= now and len(self._where[job_id]) == 1
                    and job_id not in self._pack_of):
                cycled.discard(job_id)
                self._suspend(job_id)
                jobs.discard(job_id)

    def _runners(self, cycles: dict[Unit, tuple[float, ShareCycle | None]],
                 members: dict[str, int]) -> set[str]:
        """The jobs whose unit has a share above 0 in some quantum of a plan, from its
        units' cycles (`unit_cycles` lists exactly those units); a server's `members`
        in no pack are their own units, its units the jobs (most servers)."""
        if self._pack_of.keys().isdisjoint(members.keys()):  # two views: walks the shorter
            return set(cycles)  # type: ignore[arg-type]  # every unit is a job id
        runners: set[str] = set()
        for unit in cycles:
            if isinstance(unit, tuple):
                runners.update(self._packs[unit[1]].members)
            else:
                runners.add(str(unit))
        return runners

    def _job_share(self, view: ClusterView, job: JobView, slice_share: float) -> float:
        """A job's share from its time-slicing share: packing and locality slow it."""
        return slowed_share(slice_share, self._pack_factor(job.job_id), self._locality(view, job))

    def _share_cycles(self, view: ClusterView, jobs: list[str],
                      fresh: dict[str, dict[Unit, tuple[float, ShareCycle | None]]]
                      ) -> Iterator[SetShare]:
        """Each job's share for every quantum from this one on, in the order given: on each
        of its servers its unit's share in the server's plan, the lowest of them, slowed
        by packing and locality; a share that stays the same is a plain `SetShare`, and
        none if it is the share the job has.

        A job on one server, in no pack, runs at its unit's shares in the server's fresh
        plan (`fresh`: its units' cycles): a unit that never runs in it is suspended
        throughout, whatever slows it; one that runs takes its unit's cycle as it is
        unless locality slows it. That is most members of a re-planned server, so their
        path is written out here (millions of them on muri_trace2, issue #16)."""
        where_of, pack_of, plans, wide = self._where, self._pack_of, self._plans, self._wide
        cycled, suspended, cycle_of = self._cycled, self._suspended, self._cycle_of
        wake = self._wake
        for job_id in jobs:
            where = where_of[job_id]
            if len(where) == 1 and job_id not in pack_of:
                cycles = fresh.get(where[0])
                if cycles is not None:
                    entry = cycles.get(job_id)
                    if entry is None:
                        if plans[where[0]].holds(job_id):
                            decision = self._plain_share(view, job_id, SUSPENDED)
                            if decision is not None:
                                yield decision
                            continue
                    elif (plans[where[0]].least_share >= MIN_SHARE
                          and (job_id not in wide or self._locality(view, view.job(job_id))
                               == 1.0)):
                        first, cycle = entry
                        if cycle is None:
                            decision = self._plain_share(view, job_id, first)
                            if decision is not None:
                                yield decision
                            continue
                        cycled.add(job_id)
                        if job_id in suspended:
                            wake(job_id)
                        cycle_of[job_id] = cycle
                        yield SetShare(job_id, first, cycle)
                        continue
            decision = self._sequence_share(view, job_id)
            if decision is not None:
                yield decision

    def _sequence_share(self, view: ClusterView, job_id: str) -> SetShare | None:
        """`_share_cycles` for a job spread over servers, in a pack or slowed by locality:
        the lowest of its units' share sequences, slowed. Where each part's share stays, or
        one part never runs, so does the lowest: no sequence is built (`steady_share`)."""
        job = view.job(job_id)
        pack, locality = self._pack_factor(job_id), self._locality(view, job)
        plans = self._plans
        # each part: its server's plan, the plan's current quantum and the job's unit there
        # (None: a server that does not slice)
        parts = [None if plans.get(sid) is None else
                 (plans[sid], self._quantum_of(plans[sid]), self._unit_of(job_id, sid))
                 for sid in self._where[job_id]]
        steady = [1.0 if part is None else steady_share(*part) for part in parts]
        known = [share for share in steady if share is not None]
        if SUSPENDED in known or len(known) == len(steady):  # one lowest share throughout
            share = slowed_share(min(known), pack, locality)
            self._note_schedule(view.now, job_id, share, None)
            return self._plain_share(view, job_id, share)
        lowest_shares, length, loop = lowest_runs(parts)
        slowed = {t: slowed_share(share, pack, locality) for t, share in lowest_shares.items()}
        first = slowed.get(0, SUSPENDED)
        if not slowed or (len(slowed) == length
                          and all(share == first for share in slowed.values())):
            self._note_schedule(view.now, job_id, first, None)
            return self._plain_share(view, job_id, first)
        # from the next quantum on: each quantum one earlier; with no prefix (loop 0) the
        # first moves to the end of the loop
        rest_length, rest_loop = (length - 1, loop - 1) if loop >= 1 else (length, 0)
        rest = sorted(((t - 1) % rest_length, share) for t, share in slowed.items()
                      if t >= 1 or loop == 0)
        self._cycled.add(job_id)
        self._wake(job_id)
        cycle = ShareCycle.sparse(first, self._quantum_start + self.time_slice,
                                  self.time_slice, rest_length, [t for t, _ in rest],
                                  [share for _, share in rest], rest_loop)
        self._cycle_of[job_id] = cycle
        self._note_schedule(view.now, job_id, first, cycle)
        return SetShare(job_id, first, cycle)

    def _note_schedule(self, now: float, job_id: str, share: float,
                       cycle: ShareCycle | None) -> None:
        """Keep what a spread job is told from `now` on (a plain share, or a cycle with
        `share` first), first noting when the schedule it replaces last ran it."""
        if job_id not in self._together:
            return
        self._together[job_id] = self._last_together(job_id, now)
        self._schedule_of[job_id] = (share, cycle)

    def _last_together(self, job_id: str, now: float) -> float:
        """The last time up to `now` at which the spread job ran (on all its servers, as
        its share is the lowest of its parts'), or when it became spread if later."""
        last = self._together[job_id]
        schedule = self._schedule_of.get(job_id)
        if schedule is not None:
            share, cycle = schedule
            ran = (now if share > SUSPENDED else None) if cycle is None else \
                cycle.last_run_end(now)
            if ran is not None and ran > last:
                last = ran
        return last

    def _watch_spread(self, now: float, job_id: str, spread: bool) -> None:
        """Start (or stop) watching a job that became (or is no longer) spread over
        servers: its wait for a turn on all of them counts from `now`."""
        if not spread:
            self._together.pop(job_id, None)
            self._schedule_of.pop(job_id, None)
            self._turn_due_at.pop(job_id, None)
            return
        self._together[job_id] = now
        self._schedule_of.pop(job_id, None)
        self._turn_due_at[job_id] = now  # looked at from the next boundary on
        heapq.heappush(self._turn_due, (now, job_id))

    def _owed_turns(self, view: ClusterView) -> list[str]:
        """The spread jobs owed a turn at this boundary, in launch order: those that have
        not run on all their servers at once for a whole go-round, ceil(load / GPUs)
        quanta of their busiest server, what round robin promises every unit of a server.
        `_rotate` puts them at the front of each of their servers' rotations.

        The servers rotate independently and the paper does not say how suspend/resume
        keeps a job's servers in step; without this, jobs spread over the same servers in
        different orders never run (issue #22: on Philly's first 20,000 jobs at 60 × 8,
        fifteen 32-GPU jobs on the same four servers made no progress for 10^8 s). Owed
        jobs go first in launch order, so the earliest of them runs on all its servers at
        this boundary, and none waits for ever. The rule reads only what each job was told
        (`_last_together`), never how far ahead the plans look, so planning ahead further
        or less changes no answer; a job is looked at when its go-round, as of when it was
        last looked at, has passed since it last ran, and then against its go-round now."""
        return self._take_looks(view, self._due_looks(view))

    def _due_looks(self, view: ClusterView) -> dict[str, tuple[bool, float, float]]:
        """The spread jobs due a look now, each with its `_turn_look`; nothing changes
        until `_take_looks` (so that `quiet_tick` may look first and take them after)."""
        now, due_at = view.now, self._turn_due_at
        return {job_id: self._turn_look(view, job_id) for at, job_id in self._turn_due
                if at <= now + 1e-6 and due_at.get(job_id) == at}  # else: looked at since

    def _take_looks(self, view: ClusterView, looks: dict[str, tuple[bool, float, float]]
                    ) -> list[str]:
        """The jobs `looks` finds owed a turn, in launch order; each looked-at job is due
        again a go-round after its last run (or after now, its turn)."""
        now, due = view.now, self._turn_due
        while due and due[0][0] <= now + 1e-6:  # every look falls due after now + 1e-6
            heapq.heappop(due)
        owed = []
        for job_id, (owes, last, go_round) in looks.items():
            if owes:
                owed.append(job_id)
                last = now  # its turn starts now
            self._together[job_id] = last
            self._turn_due_at[job_id] = at = last + go_round
            heapq.heappush(due, (at, job_id))
        owed.sort(key=self._rank.__getitem__)
        self._counts["owed_turns"] += len(owed)
        return owed

    def _turn_look(self, view: ClusterView, job_id: str) -> tuple[bool, float, float]:
        """Whether spread job `job_id` is owed a turn now, when it last ran on all its
        servers, and the seconds of its busiest server's go-round (`_owed_turns`)."""
        now = view.now
        last = self._last_together(job_id, now)
        go_round = self.time_slice * max(math.ceil(self._load(view, sid) / view.servers[sid].gpus)
                                         for sid in self._where[job_id])
        return now - last >= go_round - 1e-6, last, go_round

    def _plain_share(self, view: ClusterView, job_id: str, share: float) -> SetShare | None:
        """A share that stays: a plain `SetShare`, or None if the job has it already."""
        if job_id in self._cycled or abs(share - view.job(job_id).share) > 1e-12:
            self._cycled.discard(job_id)
            if share == SUSPENDED:
                self._suspend(job_id)
            else:
                self._wake(job_id)
            return SetShare(job_id, share)
        return None

    def _suspend(self, job_id: str) -> None:
        """Note a running job as suspended (`_suspended`), on each of its servers too."""
        self._suspended.add(job_id)
        for sid in self._where[job_id]:
            self._awake.get(sid, set()).discard(job_id)

    def _wake(self, job_id: str) -> None:
        """Note a running job as no longer suspended, on each of its servers too."""
        if job_id in self._suspended:
            self._suspended.discard(job_id)
            for sid in self._where[job_id]:
                self._awake.setdefault(sid, set()).add(job_id)

    def _busy_gpu_cores(self, view: ClusterView) -> float:
        """Σ GPUs × share × the model's GPU utilisation over the running jobs (Table 1's
        utilisation), as this round leaves the shares."""
        parts = []
        for job_id, servers in self._where.items():
            job = view.job(job_id)
            if self._quanta:
                share = self._job_share(view, job, min(
                    self._slice_share(view, sid, self._unit_of(job_id, sid)) for sid in servers))
            else:
                share = job.share
            parts.append(job.gpus * share * self._gpu_util[job_id])
        return math.fsum(parts)


def slowed_share(slice_share: float, pack: float, locality: float) -> float:
    """A job's share from its time-slicing share, slowed by its packing and locality
    factors; a suspended job stays suspended."""
    if slice_share <= SUSPENDED:
        return SUSPENDED
    return min(1.0, max(slice_share * pack * locality, MIN_SHARE))


def _without(rotation: list[Unit], ran: tuple[Unit, ...], gone: set[Unit]
             ) -> tuple[list[Unit], tuple[Unit, ...]]:
    """`rotation` (changed in place when few go) and `ran` without the units `gone`."""
    if len(gone) < 8:
        for unit in gone:
            rotation.remove(unit)
    else:
        rotation = [u for u in rotation if u not in gone]
    return rotation, tuple([u for u in ran if u not in gone])


class _PreviousShares:
    """A rotation's shares in the quantum before a re-plan, as `turn` reads them, without a
    dict over every unit: a unit the slice walked has its share there, any other unit of
    the rotation that is not new was suspended (0), and a newcomer has none (None)."""

    __slots__ = ("shares", "members", "new")

    def __init__(self, shares: dict[Unit, float], members: set[Unit], new: set[Unit]) -> None:
        self.shares, self.members, self.new = shares, members, new

    def get(self, unit: Unit, default: float | None = None) -> float | None:
        share = self.shares.get(unit)
        if share is not None:
            return share
        return SUSPENDED if unit in self.members and unit not in self.new else default

    def __getitem__(self, unit: Unit) -> float:
        share = self.get(unit)
        if share is None:
            raise KeyError(unit)
        return share
