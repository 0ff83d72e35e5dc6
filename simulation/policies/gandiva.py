"""Gandiva: introspective cluster scheduling for deep learning (Xiao et al., OSDI'18 §3-§6).

Reactive mode (§4.2.1, Algorithm 1 `getNode`): a job goes to the least-loaded server whose
*affinity* (the GPU count of the jobs it hosts) equals its own GPU count and that still has
free GPUs; else to an unallocated server; else anywhere with free GPUs (relaxing affinity,
possibly fragmented); else it over-subscribes the least-loaded same-affinity server; only
if none exists does it wait. A job larger than a server takes whole servers the same way.

Time-slicing (`time_slicing`): an over-subscribed server runs round robin with quantum
`time_slice` (60 s in §6), paying the suspend/resume cost `switch_overhead` (< 1 s, §4.1).
- "quanta" (default, the paper's mechanism, §4.1, §6.1): the jobs at the front of the server's
  rotation run, the others are suspended; each quantum the ones that ran go to the back, and
  a resumed job pays the switch out of its quantum (`Gandiva._rotate`). A newcomer to a
  full server waits for its turn, which is what §6.3's time to the first 100 mini-batches
  measures. Suspends count the jobs actually swapped out. The rotation is planned ahead
  once per change of a server's units (`simulation.policies.time_slicing`) and each job
  gets its shares for the quanta ahead as one `ShareCycle`, which the engine integrates.
- "fluid": each job's share of its GPUs is N / M at once (N GPUs, M GPUs allocated, a packed
  GPU counting once) times 1 - switch_overhead / time_slice, so six 1-GPU jobs on four GPUs
  each get 4/6 of a GPU (§6.1, Fig. 9): the quanta's long-run average, without the wait.
  Suspensions are counted as the jobs swapped out per quantum, u·min(N, M-N)/M for u jobs.

Introspective mode (§4.2.2), each on/off by a parameter:
- Packing, only during overload: candidate 1-GPU jobs with utilisation below `pack_max_util`
  are taken in ascending GPU utilisation and packed onto the GPU (a 1-GPU job or pack) of
  the same server with the lowest utilisation whose combined memory fits the GPU. After one
  quantum the packed jobs' measured progress (from the view) is compared with time-slicing
  (one GPU's worth): the packing is kept if it beats it, otherwise undone, and that model
  combination is not tried again. The packing effect itself comes from Table 1: n jobs on a
  GPU run at C/n each, C = min(n, mean over the jobs of 1 + packing gain).
- Migration: on departures, jobs move from over-subscribed servers to vacated GPUs (lower
  cluster height) and jobs spread over servers move to one server that now fits them
  (locality); as a background task the non-idle server with the most free GPUs is emptied
  into servers with fewer free GPUs while any non-idle server has `defrag_threshold` or more
  free GPUs. A migration pauses the job for EngineConfig.migration_pause (≈1-2 s, §6.1).
- Grow-shrink, for jobs that declare it (elastic specs): a job grows within its server only
  after the server's free GPUs stayed idle `idle_timeout` seconds with nothing waiting, and
  shrinks at once, just enough, when a new job needs the GPUs (§6.1, Fig. 11).

Locality sensitivity (§3.1) is a rate factor per model from `simulation.dlt_models`: the
inter-server factor when a job spans servers, and the intra-server factor when a multi-GPU
job shares its server with jobs of another size (its GPUs are then assumed to straddle PCIe
switches/sockets; affinity placement avoids exactly that). Not modelled: priorities
(all jobs are one priority level) and machine failures.

Counters (summary `policy_counters`): packings, packings_kept, packings_undone, suspends,
migrations, grows, shrinks, oversubscribed_launches; with `log_utilisation`,
`utilisation_log` holds (time, busy GPU-cores) steps, busy = Σ GPUs × share × the model's
GPU utilisation (Table 1's metric).

Scale (issue #22): a round reads each server's time-sliced load many times over, and a long
contended trace has ~10^5 rounds that each change a few servers or none. So the per-server
figures (load, units, free GPUs) are kept in `ServerIndex` and recomputed only for servers
whose jobs or packs changed: the engine's allocation log names the jobs whose GPUs changed
(read after every decision, since the engine applies each as it is yielded), and the
policy's own packing marks its server. Small indexes over them let a round skip what cannot
act: queued jobs grouped by what they ask for (a group that surely waits is not walked),
over-subscribed servers, jobs spread over servers, jobs that could pack, servers with a
growable job. Every rule above still decides as written, in the same order and with the same
floating-point sums (tests/simulation/test_gandiva_indexes.py).
"""

from __future__ import annotations

import heapq
import math
from bisect import bisect_left, bisect_right, insort
from collections import Counter
from collections.abc import Iterator

from simulation.decisions import Decision, Launch, Migrate, Placement, Resize, SetShare, Slot
from simulation.dlt_models import model_info
from simulation.model import JobSpec, PoolKind
from simulation.policies.base import Param, Policy, register
from simulation.policies.gandiva_index import (
    Candidates,
    Pack,
    ServerIndex,
    ServerTally,
    TallyPart,
    packing_capacity,
)
from simulation.policies.ordering import pool_preference
from simulation.policies.time_slicing import (
    HORIZON,
    MIN_HORIZON,
    SUSPENDED,
    RotationPlan,
    ShareSequence,
    Unit,
    lowest,
    plan_rotation,
    shifted,
    turn,
    unit_sequence,
)
from simulation.share_cycle import ShareCycle
from simulation.view import ClusterView, JobView, ServerView

QueueGroup = tuple[int, str, str | None]  # (GPUs asked, own pool, GPU type): same candidates




@register
class Gandiva(Policy):
    name = "gandiva"
    description = "Affinity placement, over-subscription with time-slicing, packing, " \
                  "migration and grow-shrink."
    paper = "Gandiva OSDI'18 §4.2 Algorithm 1, §4.1, §6"
    shares_gpus = True
    interval = 60.0
    # Grow-shrink and migration both checkpoint at a mini-batch boundary and resume on the new
    # GPUs, "as little as a second or two" (§3 Migration, §6.1): 2 s of every worker.
    engine_defaults = {"scale_out_pause": 2.0, "scale_in_pause": 2.0, "migration_pause": 2.0}
    params = (
        Param("introspective", bool, True, "run the introspective mode at all"),
        Param("time_slice", float, 60.0, "round-robin quantum (s)", bounds=(1.0, 86_400.0)),
        Param("time_slicing", str, "quanta",
              "quanta: suspend/resume in round-robin quanta (§4.1); fluid: N/M share at once",
              choices=("quanta", "fluid")),
        Param("switch_overhead", float, 1.0, "suspend + resume cost per quantum (s)",
              bounds=(0.0, 3_600.0)),
        Param("packing", bool, True, "pack low-utilisation jobs during overload"),
        Param("migration", bool, True, "migrate on departures and defragment"),
        Param("grow_shrink", bool, True, "grow elastic jobs into idle GPUs"),
        Param("idle_timeout", float, 300.0, "seconds GPUs stay idle before a job grows",
              bounds=(0.0, 86_400.0)),
        Param("pack_max_util", float, 0.9, "only jobs below this GPU utilisation pack",
              bounds=(0.0, 1.0)),
        Param("defrag_threshold", int, 3, "defragment while a server has this many free",
              bounds=(0, 64)),
        Param("log_utilisation", bool, False,
              "log busy GPU-cores every round (§6.3's utilisation; a pass over running jobs)"),
    )
    introspective: bool
    time_slice: float
    time_slicing: str
    switch_overhead: float
    packing: bool
    migration: bool
    grow_shrink: bool
    idle_timeout: float
    pack_max_util: float
    defrag_threshold: int
    log_utilisation: bool

    def __init__(self, **values: object) -> None:
        super().__init__(**values)
        self.interval = self.time_slice  # one scheduling round per quantum
        self._counts: dict[str, float] = dict.fromkeys(
            ("packings", "packings_kept", "packings_undone", "suspends", "migrations",
             "grows", "shrinks", "oversubscribed_launches"), 0)
        self.utilisation_log: list[tuple[float, float]] = []
        self._affinity: dict[str, int] = {}
        self._affinity_count: Counter[tuple[str, int]] = Counter()  # (pool, GPUs) -> servers
        self._affinity_servers: dict[int, set[str]] = {}  # GPUs -> servers of that affinity
        self._packs: dict[int, Pack] = {}
        self._trials: set[int] = set()  # packs on trial (not kept): all a review looks at
        self._pack_of: dict[str, int] = {}  # job -> the pack it counts in (one of them)
        self._packs_with: dict[str, set[int]] = {}  # job -> every pack listing it
        self._next_pack = 0
        self._failed_combos: set[tuple[str, ...]] = set()
        self._idle_since: dict[str, tuple[int, float]] = {}
        self._last_round = 0.0
        self._suspend_rate = 0.0  # suspensions per second at the last round's shares
        self._quanta = self.time_slicing == "quanta"
        self._quantum_start = -math.inf
        self._plans: dict[str, RotationPlan] = {}  # time-slicing server -> its quanta ahead
        self._cycled: set[str] = set()  # jobs whose share follows a `ShareCycle`
        self._expiring: list[tuple[float, str]] = []  # (expiry, server) of expiring plans
        # What changed since when: the engine's allocation and queue logs are read up to
        # these marks; every job or pack change marks its servers in the sets below.
        self._alloc_mark = 0
        self._queue_mark = 0
        self._changes = 0  # server changes so far (a packing pass that found nothing waits)
        self._stale: set[str] = set()  # servers whose figures to recompute
        self._touched_round: set[str] = set()  # since the last round began
        self._touched_shares: set[str] = set()  # since the last `_set_shares`
        self._touched_idle: set[str] = set()  # since the last `_track_idle`
        self._moved: set[str] = set()  # jobs whose GPUs changed since `_forget_departed`
        self._departed = False  # a running job stopped since the last sync
        self._index = ServerIndex()
        self._tally: dict[str, ServerTally] = {}
        self._parts: dict[str, tuple[TallyPart, ...]] = {}  # running job -> its tally parts
        self._available: tuple[str, ...] | None = None
        self._loanable = False  # servers can become (un)available: recheck every round
        self._order: dict[str, int] = {}  # server id -> position in the cluster's order
        self._candidates_of: dict[tuple[str, str | None], Candidates] = {}
        # Running jobs, as of the last sync.
        self._where: dict[str, tuple[str, ...]] = {}  # job -> its servers
        self._rank: dict[str, int] = {}  # job -> launch count: the engine's running order
        self._launches = 0
        self._model_of: dict[str, str] = {}
        self._gpu_util: dict[str, float] = {}
        self._spread: set[str] = set()  # more than one slot
        self._grown: set[str] = set()  # more GPUs than asked for
        self._pack_candidates: list[tuple[float, str]] = []  # (GPU utilisation, job), sorted
        self._pack_key: dict[str, tuple[float, str]] = {}
        self._pack_idle_at = -1  # `_changes` when packing last found nothing to do
        self._defrag_idle_at = -1  # `_changes` when defragmentation last could move nothing
        # Queued jobs by group, in queue order (a sequence number per entry).
        self._queued: dict[str, tuple[QueueGroup, int]] = {}
        self._queued_at: dict[int, str] = {}
        self._groups: dict[QueueGroup, list[int]] = {}
        self._queue_seq = 0

    @property
    def counters(self) -> dict[str, float]:
        """The counters, with the suspensions of the quanta played out so far."""
        for plan in self._plans.values():
            self._counts["suspends"] += plan.suspends_through(self._quantum_of(plan))
        return self._counts

    # -- round ----------------------------------------------------------------------------

    def schedule(self, view: ClusterView) -> Iterator[Decision]:
        for decision in self._place_and_move(view):
            yield decision
            self._sync(view)  # the engine has applied it: mark the servers it changed
        yield from self._set_shares(view)  # a share moves no GPUs: nothing to sync
        self._track_idle(view)

    def _place_and_move(self, view: ClusterView) -> Iterator[Decision]:
        now = view.now
        self._counts["suspends"] += self._suspend_rate * (now - self._last_round)
        self._last_round = now
        self._check_availability(view)
        self._departed = False
        self._sync(view)
        departed = self._departed
        self._forget_departed(view)
        yield from self._place_queue(view)
        if self.introspective:
            if self.migration:
                if departed:
                    yield from self._reduce_height(view)
                    yield from self._improve_locality(view)
                yield from self._defragment(view)
            if self.packing:
                self._review_packs(view)
                if self._stale:
                    self._refresh(view)
                if self._index.overloaded:
                    self._pack(view)
            if self.grow_shrink and not view.queue:
                yield from self._grow(view)

    def _check_availability(self, view: ClusterView) -> None:
        """Servers change availability only when inference servers are lent or reclaimed,
        between rounds; then every figure and cached candidate list is rebuilt."""
        if self._available is not None and not self._loanable:
            return
        available = tuple(sid for sid, s in view.servers.items() if s.available)
        if available == self._available:
            return
        if self._available is None:
            self._order = {sid: i for i, sid in enumerate(view.servers)}
            self._loanable = any(s.kind == PoolKind.INFERENCE for s in view.servers.values())
        self._available = available
        self._candidates_of.clear()
        for sid in view.servers:
            self._mark(sid)

    def _mark(self, sid: str) -> None:
        self._stale.add(sid)
        self._touched_round.add(sid)
        self._touched_shares.add(sid)
        self._touched_idle.add(sid)
        self._changes += 1

    def _sync(self, view: ClusterView) -> None:
        changed, self._alloc_mark = view.allocations_since(self._alloc_mark)
        for job_id in changed:
            self._job_changed(view, job_id)

    def _job_changed(self, view: ClusterView, job_id: str) -> None:
        """Bring the running-job indexes up to date for a job whose GPUs changed."""
        job = view.job(job_id)
        placement = job.placement
        old = self._where.pop(job_id, None)
        self._account(view, job_id)
        self._moved.add(job_id)
        if not placement:  # finished or preempted
            if old is not None:
                self._departed = True
                self._cycled.discard(job_id)
                del self._rank[job_id], self._model_of[job_id], self._gpu_util[job_id]
            self._spread.discard(job_id)
            self._grown.discard(job_id)
            self._set_pack_candidate(job_id, None)
            return
        self._where[job_id] = tuple(slot.server for slot in placement)
        if old is None:  # launched: the engine adds it last to its running jobs
            self._rank[job_id] = self._launches
            self._launches += 1
            self._model_of[job_id] = job.spec.model
            self._gpu_util[job_id] = model_info(job.spec.model).gpu_util
        if len(placement) > 1:
            self._spread.add(job_id)
        else:
            self._spread.discard(job_id)
        if job.gpus > job.spec.num_gpus:
            self._grown.add(job_id)
        else:
            self._grown.discard(job_id)
        util = model_info(job.spec.model).gpu_util
        packable = job.gpus == 1 and len(placement) == 1 and util < self.pack_max_util
        self._set_pack_candidate(job_id, (util, job_id) if packable else None)

    def _set_pack_candidate(self, job_id: str, key: tuple[float, str] | None) -> None:
        old = self._pack_key.pop(job_id, None)
        if old is not None:
            del self._pack_candidates[bisect_left(self._pack_candidates, old)]
        if key is not None:
            self._pack_key[job_id] = key
            insort(self._pack_candidates, key)

    def _forget_departed(self, view: ClusterView) -> None:
        """Drop pack members that left their server and the affinity of emptied servers.

        Only jobs whose GPUs changed can have left a pack (a job may be listed by several:
        a job spread over servers can be packed on each); only servers whose jobs changed
        can have emptied (a server gets its affinity with its first job)."""
        if not self._moved and not self._touched_round:
            return
        moved, self._moved = self._moved, set()
        for pid in sorted({pid for j in moved for pid in self._packs_with.get(j, ())}):
            pack = self._packs[pid]
            stay = [
                j for j in pack.members
                if j in view.running and any(s.server == pack.server
                                             for s in view.running[j].placement)
            ]
            if stay == pack.members:
                continue
            for job_id in set(pack.members) - set(stay):
                self._point(job_id, None, view)
                self._unlist(job_id, pid)
            pack.members = stay
            self._mark(pack.server)
            if len(pack.members) < 2:
                self._dissolve(view, pid)
        touched, self._touched_round = self._touched_round, set()
        for sid in touched:
            if not view.servers[sid].jobs:
                self._drop_affinity(view, sid)

    def _dissolve(self, view: ClusterView, pid: int) -> None:
        pack = self._packs.pop(pid)
        self._trials.discard(pid)
        for job_id in pack.members:
            self._point(job_id, None, view)
            self._unlist(job_id, pid)
        self._mark(pack.server)

    def _point(self, job_id: str, pid: int | None, view: ClusterView) -> None:
        """Set (or with None clear) the pack `job_id` counts in: its servers' units change."""
        if pid is not None:
            self._pack_of[job_id] = pid
        elif self._pack_of.pop(job_id, None) is None:
            return
        self._account(view, job_id)

    def _account(self, view: ClusterView, job_id: str) -> None:
        """Take `job_id` out of the tallies of the servers it was on, and count it on the
        servers it is on now, as `_units` and `_movable` see it."""
        for part in self._parts.pop(job_id, ()):
            self._tally[part[0]].count(part, -1)
            self._mark(part[0])
        job = view.job(job_id)
        placement = job.placement
        if not placement:
            return
        pid = self._pack_of.get(job_id)
        parts = []
        for sid in dict.fromkeys(slot.server for slot in placement):
            server = view.servers[sid]
            part = (sid, server.jobs[job_id],
                    pid if pid is not None and self._packs[pid].server == sid else None,
                    job.gpus if len(placement) == 1 and pid is None
                    and job.gpus <= server.gpus else 0,
                    job.spec.elastic)
            tally = self._tally.get(sid)
            if tally is None:
                tally = self._tally[sid] = ServerTally()
            tally.count(part, 1)
            self._mark(sid)
            parts.append(part)
        self._parts[job_id] = tuple(parts)

    def _list(self, job_id: str, pid: int) -> None:
        self._packs_with.setdefault(job_id, set()).add(pid)

    def _unlist(self, job_id: str, pid: int) -> None:
        packs = self._packs_with.get(job_id, set())  # a job may be listed twice in one pack
        packs.discard(pid)
        if not packs:
            self._packs_with.pop(job_id, None)

    def _set_affinity(self, view: ClusterView, sid: str, gpus: int) -> None:
        if sid not in self._affinity:
            self._affinity[sid] = gpus
            self._affinity_count[(view.servers[sid].pool, gpus)] += 1
            self._affinity_servers.setdefault(gpus, set()).add(sid)

    def _drop_affinity(self, view: ClusterView, sid: str) -> None:
        gpus = self._affinity.pop(sid, None)
        if gpus is not None:
            self._affinity_count[(view.servers[sid].pool, gpus)] -= 1
            self._affinity_servers[gpus].discard(sid)

    # -- load and shares ------------------------------------------------------------------

    def _units(self, view: ClusterView, sid: str) -> dict[object, int]:
        """Time-sliced units on a server -> GPUs: a job, or a pack counted as one GPU."""
        units: dict[object, int] = {}
        for job_id, gpus in sorted(view.servers[sid].jobs.items()):
            pid = self._pack_of.get(job_id)
            if pid is not None and self._packs[pid].server == sid:
                units[("pack", pid)] = 1
            else:
                units[job_id] = gpus
        return units

    def _refresh(self, view: ClusterView) -> None:
        """Re-index the servers whose jobs or packs changed, from their tallies."""
        for sid in self._stale:
            tally = self._tally.get(sid) or ServerTally()
            self._index.put(view.servers[sid], tally.load, tally.units, tally.need,
                            tally.elastic > 0)
        self._stale.clear()

    def _load(self, view: ClusterView, sid: str) -> int:
        if self._stale:
            self._refresh(view)
        return self._index.load[sid]

    def _free(self, view: ClusterView, sid: str) -> int:
        if self._stale:
            self._refresh(view)
        return self._index.free[sid]

    def _overloaded(self, view: ClusterView) -> list[str]:
        """Available servers time-slicing, in the cluster's order."""
        if self._stale:
            self._refresh(view)
        return sorted(self._index.overloaded, key=self._order.__getitem__)

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
        if job.gpus > 1:
            sid = next(iter(servers))
            sizes = {view.job(j).spec.num_gpus for j in view.servers[sid].jobs}
            if len(sizes) > 1:
                return info.intra_server_locality
        return 1.0

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
        return plan.slice(self._quantum_of(plan)).shares.get(unit, 1.0)  # a pack not yet turned

    def _quantum_of(self, plan: RotationPlan) -> int:
        """The number, in `plan`, of the quantum the last boundary round started."""
        return plan.index(self._quantum_start, self.time_slice)

    def _unit_rank(self, unit: Unit) -> int:
        """Launch order of a unit (a pack: of its earliest member), to order newcomers."""
        if isinstance(unit, tuple):
            return min(self._rank[j] for j in self._packs[unit[1]].members)
        return self._rank[str(unit)]

    def _rotate(self, view: ClusterView, sid: str, boundary: bool) -> None:
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
        forward once and the plan holds every quantum."""
        units = self._units(view, sid)
        gpus = view.servers[sid].gpus
        plan = self._plans.pop(sid, None)
        rotation: list[Unit] = []
        old: dict[Unit, float] = {}
        horizon = MIN_HORIZON
        if plan is not None:  # the quantum in effect before this round (at a boundary: ended)
            before = self._quantum_of(plan) - boundary
            horizon = min(HORIZON, max(MIN_HORIZON, 2 * (before + 1)))  # it lasted before + 1
            self._counts["suspends"] += plan.suspends_through(before)
            current = plan.slice(before)
            rotation = [u for u in current.rotation if u in units]
            old = dict(current.shares)
        if sum(units.values()) <= gpus:
            return
        listed = set(rotation)
        for unit in sorted((u for u in units if u not in listed), key=self._unit_rank):
            if isinstance(unit, tuple):
                members = self._packs[unit[1]].members
                at = next((i for i, u in enumerate(rotation) if u in members), len(rotation))
                share = next((old[m] for m in members if m in old), None)
                rotation.insert(at, unit)
                if share is not None:
                    old[unit] = share
            else:
                rotation.append(unit)
        ran = [u for u in rotation if u in old and old[u] > SUSPENDED]
        if boundary:
            turned = set(ran)
            rotation = [u for u in rotation if u not in turned] + ran
        left = self._quantum_start + self.time_slice - view.now
        resumed = max(SUSPENDED, 1.0 - self.switch_overhead / left) if left > 0 else SUSPENDED
        first = turn(rotation, old, units, gpus, set() if boundary else set(ran), resumed)
        self._counts["suspends"] += first.suspends
        full = max(SUSPENDED, 1.0 - self.switch_overhead / self.time_slice)
        # A job spread over servers runs at its slowest part's share: its servers' plans
        # expire rather than loop, so its sequence need not repeat with both periods.
        loops = not any(j in self._spread for j in view.servers[sid].jobs)
        plan = plan_rotation(self._quantum_start, first, units, gpus, full, loops, horizon)
        self._plans[sid] = plan
        if plan.expires:
            heapq.heappush(self._expiring, (plan.expiry(self.time_slice), sid))

    def _set_shares(self, view: ClusterView) -> Iterator[Decision]:
        """Shares of the jobs on servers that changed (no other job's share can have), in
        the engine's running order. With quanta, a round a quantum after the last boundary
        is the next boundary; only servers whose units changed are re-planned, and each of
        their jobs gets its shares for every quantum ahead as one `ShareCycle`."""
        if self._quanta:
            boundary = view.now >= self._quantum_start + self.time_slice - 1e-9
            if boundary:
                self._quantum_start = view.now
                self._replan_expired(view.now)
            for sid in sorted(self._touched_shares, key=self._order.__getitem__):
                self._rotate(view, sid, boundary)
        touched, self._touched_shares = self._touched_shares, set()
        jobs: set[str] = set()
        for sid in touched:
            jobs.update(view.servers[sid].jobs)
        for job_id in sorted(jobs, key=self._rank.__getitem__):
            job = view.job(job_id)
            if self._quanta:
                yield from self._share_cycle(view, job)
                continue
            share = min(self._time_share(view, sid) for sid in self._where[job_id])
            share *= self._pack_factor(job_id) * self._locality(view, job)
            share = min(1.0, max(share, 1e-6))
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

    def _replan_expired(self, now: float) -> None:
        """Servers whose plan ends with the quantum that just ended are planned afresh."""
        expiring = self._expiring
        while expiring and expiring[0][0] <= now + 1e-3:  # boundaries are a quantum apart
            at, sid = heapq.heappop(expiring)
            plan = self._plans.get(sid)
            if plan is not None and plan.expires and abs(plan.expiry(self.time_slice) - at) < 1e-6:
                self._touched_shares.add(sid)

    def _job_share(self, view: ClusterView, job: JobView, slice_share: float) -> float:
        """A job's share from its time-slicing share: packing and locality slow it."""
        if slice_share <= SUSPENDED:
            return SUSPENDED
        share = slice_share * self._pack_factor(job.job_id) * self._locality(view, job)
        return min(1.0, max(share, 1e-6))

    def _share_cycle(self, view: ClusterView, job: JobView) -> Iterator[SetShare]:
        """`job`'s share for every quantum from this one on: on each of its servers its
        unit's share in the server's plan, the lowest of them, slowed by packing and
        locality; a share that stays the same is a plain `SetShare`."""
        job_id = job.job_id
        sequence: ShareSequence | None = None
        for sid in self._where[job_id]:
            plan = self._plans.get(sid)
            part = ([1.0], 0) if plan is None else unit_sequence(
                plan, self._quantum_of(plan), self._unit_of(job_id, sid))
            sequence = part if sequence is None else lowest(sequence, part)
        assert sequence is not None
        values, loop = sequence
        slowed = {value: self._job_share(view, job, value) for value in set(values)}
        values = [slowed[value] for value in values]
        first = values[0]
        if len(slowed) == 1 or values.count(first) == len(values):
            if job_id in self._cycled or abs(first - job.share) > 1e-12:
                self._cycled.discard(job_id)
                yield SetShare(job_id, first)
            return
        rest, rest_loop = shifted((values, loop), 1)
        self._cycled.add(job_id)
        yield SetShare(job_id, first, ShareCycle(
            first, self._quantum_start + self.time_slice, self.time_slice, tuple(rest),
            rest_loop))

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

    # -- reactive placement (Algorithm 1) -------------------------------------------------

    def _sync_queue(self, view: ClusterView) -> None:
        """Follow the engine's queue: arrivals join its end; a requeued job (inference
        reclaim) may not, so then the groups are rebuilt in the queue's order."""
        entered, self._queue_mark = view.queued_since(self._queue_mark)
        if (len(self._queued) + len(entered) != len(view.queue)
                or any(view.job(j).first_start is not None for j in entered)):
            self._queued.clear()
            self._queued_at.clear()
            self._groups.clear()
            entered = list(view.queue)
        for job_id in entered:
            spec = view.job(job_id).spec
            group = (spec.num_gpus, spec.pool, spec.gpu_type)
            seq = self._queue_seq
            self._queue_seq += 1
            self._queued[job_id] = (group, seq)
            self._queued_at[seq] = job_id
            self._groups.setdefault(group, []).append(seq)

    def _launched(self, job_id: str) -> None:
        group, seq = self._queued.pop(job_id)
        del self._queued_at[seq]
        seqs = self._groups[group]
        del seqs[bisect_left(seqs, seq)]
        if not seqs:
            del self._groups[group]

    def _next_hopeful(self, view: ClusterView, after: int) -> int | None:
        """The first queued entry past `after` whose group does not surely wait."""
        best = None
        for group, seqs in self._groups.items():
            i = bisect_right(seqs, after)
            if i < len(seqs) and (best is None or seqs[i] < best) \
                    and not self._surely_waits(view, group, self._queued_at[seqs[i]]):
                best = seqs[i]
        return best

    def _surely_waits(self, view: ClusterView, group: QueueGroup, job_id: str) -> bool:
        """True if `_place_queue` would leave any job of `group` (such as `job_id`) queued,
        deciding nothing.

        Without grown jobs nothing shrinks; `_get_node` then finds nothing iff fewer GPUs
        are free on the candidates than the job asks for (every other choice implies as
        many free) and fewer than k candidates have its affinity."""
        gpus = group[0]
        candidates = self._candidate_info(view, view.job(job_id).spec)
        if not candidates.servers:
            return True
        if self._grown and self.introspective and self.grow_shrink:
            return False
        if self._stale:
            self._refresh(view)
        free = sum(self._index.pool_free[p] for p in candidates.pools)
        same = sum(self._affinity_count[(p, gpus)] for p in candidates.pools)
        return free < gpus and same < max(1, math.ceil(gpus / candidates.size))

    def _place_queue(self, view: ClusterView) -> Iterator[Decision]:
        """Algorithm 1 for each queued job in queue order, skipping groups that surely wait
        (re-judged after every decision: a launch can set an affinity, a shrink free GPUs)."""
        if not self._queued and not view.queue:
            return  # nothing waits, and nothing arrived since the last round
        self._sync_queue(view)
        after = -1
        while (seq := self._next_hopeful(view, after)) is not None:
            after = seq
            job = view.job(self._queued_at[seq])
            placement, oversubscribed = self._get_node(view, job)
            if (placement is None or oversubscribed) and self.introspective and self.grow_shrink:
                shrunk = False
                for decision in self._shrink_for(view, job):
                    shrunk = True
                    yield decision
                if shrunk:
                    placement, oversubscribed = self._get_node(view, job)
            if placement is None:
                continue
            for slot in placement:
                self._set_affinity(view, slot.server, job.spec.num_gpus)
            self._counts["oversubscribed_launches"] += oversubscribed
            self._launched(job.job_id)
            yield Launch(job.job_id, placement)

    def _candidate_info(self, view: ClusterView, spec: JobSpec) -> Candidates:
        """The job's candidate servers, the same for every job of its pool and GPU type
        until servers are lent or reclaimed."""
        key = (spec.pool, spec.gpu_type)
        cached = self._candidates_of.get(key)
        if cached is None:
            pools = pool_preference(view, spec)
            rank = {p: i for i, p in enumerate(pools)}
            servers = sorted((s for s in view.servers.values() if s.available and s.pool in rank),
                             key=lambda s: (rank[s.pool], s.id))
            cached = self._candidates_of[key] = Candidates(
                servers, tuple(pools), max((s.gpus for s in servers), default=0),
                set(pools) >= {p.name for p in view.spec.pools})
        return cached

    def _candidates(self, view: ClusterView, job: JobView) -> list[ServerView]:
        return self._candidate_info(view, job.spec).servers

    def _get_node(self, view: ClusterView, job: JobView) -> tuple[Placement | None, bool]:
        """Algorithm 1: (placement, over-subscribed?) or (None, False) to keep it queued.

        When the job may use every server, the affinity sets and the free-GPU index give
        the lists the scans over its candidates would build (they are sorted by keys that
        ignore the pools' order); with one pool, so do the idle servers."""
        g = job.spec.num_gpus
        candidates = self._candidate_info(view, job.spec)
        servers = candidates.servers
        if not servers:
            return None, False
        size = candidates.size  # the fewest servers that can hold the job
        k = max(1, math.ceil(g / size))
        per = min(g, size)
        one_pool = candidates.every_pool and len(view.spec.pools) == 1
        if one_pool:
            # Every server has `size` GPUs, so a server with free GPUs has load size - free:
            # by (load, id) is by (most free, id).
            if self._stale:
                self._refresh(view)
            fits = []
            for free, sid in self._index.emptiest_first():
                if free < per or len(fits) == k:
                    break
                if self._affinity.get(sid) == g:
                    fits.append(view.servers[sid])
        else:
            fits = [s for s in self._same_affinity(view, candidates, g)
                    if self._free(view, s.id) >= per]  # nodes1, height < 1
        if len(fits) >= k:
            return self._slots(fits[:k], g, per), False
        if one_pool:
            empty = [view.servers[sid] for sid in self._index.idle(size)[:k]]
        else:
            empty = [s for s in servers if not s.jobs and s.gpus >= per]  # nodes2
        if len(empty) >= k:
            return self._slots(empty[:k], g, per), False
        gathered = self._gather(view, candidates, g)  # nodes3: relax affinity
        if gathered is not None:
            return gathered, False
        same = self._same_affinity(view, candidates, g)
        if len(same) >= k:  # over-subscribe the least-loaded same-affinity servers
            return self._slots(same[:k], g, per), True
        return None, False

    def _same_affinity(self, view: ClusterView, candidates: Candidates, g: int
                       ) -> list[ServerView]:
        """The candidates whose affinity is `g`, least loaded first, then by id."""
        if candidates.every_pool:
            same = [view.servers[sid] for sid in self._affinity_servers.get(g, ())
                    if view.servers[sid].available]
        else:
            same = [s for s in candidates.servers if self._affinity.get(s.id) == g]
        same.sort(key=lambda s: (self._load(view, s.id), s.id))
        return same

    @staticmethod
    def _slots(servers: list[ServerView], g: int, per: int) -> Placement:
        slots = []
        left = g
        for server in servers:
            take = min(per, left)
            slots.append(Slot(server.id, take))
            left -= take
        return tuple(slots)

    def _gather(self, view: ClusterView, candidates: Candidates, g: int) -> Placement | None:
        """Free GPUs anywhere: the fullest server that fits, else the emptiest first."""
        if candidates.every_pool:
            if self._stale:
                self._refresh(view)
            fullest = self._index.fullest_with_room(g, set())
            if fullest is not None:
                return (Slot(fullest, g),)
            slots = []
            left = g
            for free, sid in self._index.emptiest_first():
                if left == 0:
                    break
                take = min(free, left)
                slots.append(Slot(sid, take))
                left -= take
            return tuple(slots) if left == 0 else None
        free = {s.id: self._free(view, s.id) for s in candidates.servers}
        single = sorted((f, sid) for sid, f in free.items() if f >= g)
        if single:
            return (Slot(single[0][1], g),)
        slots = []
        left = g
        for sid in sorted(free, key=lambda s: (-free[s], s)):
            if free[sid] <= 0 or left == 0:
                break
            take = min(free[sid], left)
            slots.append(Slot(sid, take))
            left -= take
        return tuple(slots) if left == 0 else None

    # -- grow-shrink ----------------------------------------------------------------------

    def _shrink_for(self, view: ClusterView, job: JobView) -> Iterator[Decision]:
        """Shrink grown jobs on one server just enough for `job` (it needs one server)."""
        if not self._grown:
            return  # nothing to shrink anywhere
        g = job.spec.num_gpus
        for server in self._candidates(view, job):
            if g > server.gpus:
                return
            grown = [view.job(j) for j in sorted(server.jobs)
                     if view.job(j).gpus > view.job(j).spec.num_gpus]
            extra = sum(j.gpus - j.spec.num_gpus for j in grown)
            need = g - self._free(view, server.id)
            if not grown or need <= 0 or extra < need:
                continue
            for victim in grown:
                w = victim.spec.gpus_per_worker
                give = min(victim.gpus - victim.spec.num_gpus, math.ceil(need / w) * w)
                if give <= 0:
                    continue
                need -= give
                self._counts["shrinks"] += 1
                yield Resize(victim.job_id, (Slot(server.id, victim.gpus - give),))
                if need <= 0:
                    return
            return

    def _grow(self, view: ClusterView) -> Iterator[Decision]:
        if self._stale:
            self._refresh(view)
        if not self._index.elastic:
            return
        # Only a server hosting an elastic job can grow one (and a resize stays on it).
        for sid in sorted(self._index.elastic, key=self._order.__getitem__):
            free = self._free(view, sid)
            since = self._idle_since.get(sid)
            if free <= 0 or since is None or view.now - since[1] < self.idle_timeout:
                continue
            for job_id in sorted(view.servers[sid].jobs, key=lambda j: view.job(j).submit_time):
                job = view.job(job_id)
                spec = job.spec
                w = spec.gpus_per_worker
                room = min(free, spec.max_gpus - job.gpus)
                room -= room % w
                if (not spec.elastic or room <= 0 or len(job.placement) != 1
                        or job_id in self._pack_of):
                    continue
                free -= room
                self._counts["grows"] += 1
                base = Slot(sid, job.gpus - max(0, job.gpus - spec.num_gpus))
                extra = job.gpus + room - base.gpus
                yield Resize(job_id, (base, Slot(sid, extra, True)) if extra else (base,))

    def _track_idle(self, view: ClusterView) -> None:
        """Note when each server's free GPUs last changed; only changed servers can have."""
        touched, self._touched_idle = self._touched_idle, set()
        for sid in touched:
            if not view.servers[sid].available:
                continue
            free = self._free(view, sid)
            if free <= 0:
                self._idle_since.pop(sid, None)
            elif self._idle_since.get(sid, (None,))[0] != free:
                self._idle_since[sid] = (free, view.now)

    # -- migration ------------------------------------------------------------------------

    def _movable(self, view: ClusterView, job: JobView) -> bool:
        return job.job_id not in self._pack_of and job.gpus <= max(
            view.servers[s.server].gpus for s in job.placement)

    def _destination(
        self, view: ClusterView, job: JobView, exclude: set[str], fewer_than: int | None = None
    ) -> str | None:
        """The fullest server (best fit) with room for `job` without over-subscribing."""
        candidates = self._candidate_info(view, job.spec)
        own = {slot.server: slot.gpus for slot in job.placement}
        if not candidates.every_pool:
            return self._scan_destination(view, job, candidates.servers, own, exclude,
                                          fewer_than)
        if self._stale:
            self._refresh(view)
        best = self._index.fullest_with_room(job.gpus, exclude, fewer_than)
        # On its own servers the job's GPUs count as room too.
        mine = [view.servers[sid] for sid in own if sid not in exclude]
        found = self._scan_destination(view, job, mine, own, exclude, fewer_than)
        if found is None or best is None:
            return found or best
        return min((self._free(view, sid), sid) for sid in (best, found))[1]

    def _scan_destination(
        self, view: ClusterView, job: JobView, servers: list[ServerView], own: dict[str, int],
        exclude: set[str], fewer_than: int | None
    ) -> str | None:
        best: tuple[int, str] | None = None
        for server in servers:
            free = self._free(view, server.id)
            room = free + own.get(server.id, 0)
            if server.id in exclude or room < job.gpus or not server.jobs and fewer_than:
                continue
            if fewer_than is not None and free >= fewer_than:
                continue
            if best is None or (free, server.id) < best:
                best = (free, server.id)
        return best[1] if best else None

    def _migrate(self, view: ClusterView, job: JobView, sid: str) -> Migrate:
        self._counts["migrations"] += 1
        self._set_affinity(view, sid, job.spec.num_gpus)
        return Migrate(job.job_id, (Slot(sid, job.gpus),))

    def _reduce_height(self, view: ClusterView) -> Iterator[Decision]:
        """Move jobs off over-subscribed servers (no other server is over-subscribed by a
        move: a destination has room) while any server has a free GPU."""
        for sid in self._overloaded(view):
            for job_id in sorted(view.servers[sid].jobs):
                if self._load(view, sid) <= view.servers[sid].gpus:
                    break
                if self._index.max_free() == 0:
                    return  # no job fits anywhere, and nothing moves to change that
                job = view.job(job_id)
                if len(job.placement) != 1 or not self._movable(view, job):
                    continue
                dest = self._destination(view, job, {sid})
                if dest is not None:
                    yield self._migrate(view, job, dest)

    def _improve_locality(self, view: ClusterView) -> Iterator[Decision]:
        for job_id in sorted(self._spread, key=self._rank.__getitem__):
            job = view.job(job_id)
            if len(job.placement) > 1 and self._movable(view, job):
                dest = self._destination(view, job, set())
                if dest is not None:
                    yield self._migrate(view, job, dest)

    def _defragment(self, view: ClusterView) -> Iterator[Decision]:
        """Empty the non-idle server with the most free GPUs into fuller ones, then the next.

        Sources are taken in (free, id) order, re-sorted after a move; a pass in which no
        source could move any job (`ServerIndex.may_defragment`) is skipped."""
        if self._stale:
            self._refresh(view)
        if self._defrag_idle_at == self._changes:
            return  # no server changed since a pass that could move nothing
        if not self._index.may_defragment(self.defrag_threshold):
            self._defrag_idle_at = self._changes
            return
        tried: set[str] = set()
        sources = self._defrag_sources(view, tried)
        while sources:
            source = sources.pop()
            tried.add(source)
            free = self._free(view, source)
            moved = False
            for job_id in sorted(view.servers[source].jobs):
                job = view.job(job_id)
                if len(job.placement) != 1 or not self._movable(view, job):
                    continue
                dest = self._destination(view, job, {source}, fewer_than=free)
                if dest is not None:
                    moved = True
                    yield self._migrate(view, job, dest)
            if moved:
                sources = self._defrag_sources(view, tried)

    def _defrag_sources(self, view: ClusterView, tried: set[str]) -> list[str]:
        """Untried non-idle servers with `defrag_threshold` or more free GPUs, most free last."""
        if self._stale:
            self._refresh(view)
        return [sid for sid in self._index.busy_by_free(self.defrag_threshold)
                if sid not in tried]

    # -- packing --------------------------------------------------------------------------

    def _review_packs(self, view: ClusterView) -> None:
        """Keep a trial packing that beats time-slicing (one GPU's worth), else undo it."""
        for pid in sorted(self._trials):
            pack = self._packs[pid]
            shares = {j: self._slice_share(view, pack.server, ("pack", pid))
                      for j in pack.members}
            if shares != pack.shares or set(pack.snapshot) != set(pack.members):
                self._start_trial(view, pid)  # the server's load changed: measure afresh
                continue
            elapsed = view.now - pack.since
            if elapsed < self.time_slice:
                continue
            measured = 0.0
            for job_id in pack.members:
                job = view.job(job_id)
                solo = self._solo_rate(view, job) * shares[job_id]
                done = pack.snapshot[job_id] - job.remaining_work
                measured += done / (elapsed * solo) if solo > 0 else 0.0
            if measured > 1.0 + 1e-9:
                pack.kept = True
                self._trials.discard(pid)
                self._counts["packings_kept"] += 1
            else:
                self._failed_combos.add(self._combo(pack.members))
                self._changes += 1  # a combination packing may no longer try
                self._counts["packings_undone"] += 1
                self._dissolve(view, pid)

    def _solo_rate(self, view: ClusterView, job: JobView) -> float:
        speed = min(view.servers[s.server].speed for s in job.placement)
        rate = view.throughput.rate(job.spec.model, job.spec.num_gpus, job.gpus, speed)
        return rate * self._locality(view, job)

    def _combo(self, members: list[str]) -> tuple[str, ...]:
        return tuple(sorted(self._model_of[j] for j in members))

    def _start_trial(self, view: ClusterView, pid: int) -> None:
        pack = self._packs[pid]
        pack.since = view.now
        pack.snapshot = {j: view.job(j).remaining_work for j in pack.members}
        pack.shares = {j: self._slice_share(view, pack.server, ("pack", pid))
                       for j in pack.members}

    def _pack(self, view: ClusterView) -> None:
        """Greedy packing, lowest GPU utilisation first; each packing starts a trial.

        Packing reads only servers, packs and the combinations that failed, so a pass that
        packed nothing is not repeated until one of them changes."""
        if self._changes == self._pack_idle_at:
            return
        packed = False
        for _, job_id in list(self._pack_candidates):
            if job_id in self._pack_of:
                continue
            sid = view.job(job_id).placement[0].server
            server = view.servers[sid]
            if self._load(view, sid) <= server.gpus:
                continue  # no time-slicing here: nothing to gain
            memory = view.spec.gpu_types[server.gpu_type].memory_gb
            best: tuple[float, str, object] | None = None
            for unit, gpus in self._units(view, sid).items():
                if gpus != 1 or unit == job_id:
                    continue
                members = (self._packs[unit[1]].members if isinstance(unit, tuple)
                           else [unit])
                if (sum(model_info(self._model_of[m]).memory_gb for m in members)
                        + model_info(self._model_of[job_id]).memory_gb > memory):
                    continue
                if self._combo([*members, job_id]) in self._failed_combos:
                    continue
                key = (sum(self._util(m) for m in members), str(unit), unit)
                if best is None or key[:2] < best[:2]:
                    best = key
            if best is None:
                continue
            unit = best[2]
            if isinstance(unit, tuple):
                pid = unit[1]
                self._packs[pid].members.append(job_id)
                self._packs[pid].kept = False
                self._trials.add(pid)
            else:
                pid = self._next_pack
                self._next_pack += 1
                self._packs[pid] = Pack(sid, [str(unit), job_id], view.now)
                self._trials.add(pid)
                self._point(str(unit), pid, view)
                self._list(str(unit), pid)
            self._point(job_id, pid, view)
            self._list(job_id, pid)
            self._mark(sid)
            packed = True
            self._counts["packings"] += 1
            self._start_trial(view, pid)
        if not packed:
            self._pack_idle_at = self._changes

    def _util(self, job_id: str) -> float:
        return model_info(self._model_of[job_id]).gpu_util
