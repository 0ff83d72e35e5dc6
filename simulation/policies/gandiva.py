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
  A job spread over servers runs only in the quanta in which all its servers run it; one
  that has not run on all of them for a whole go-round is owed a turn and goes to the front
  of all of them at that boundary (`_owed_turns`: the paper does not say how a job's
  servers keep in step, and without it such jobs can wait for ever).
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
migrations, grows, shrinks, oversubscribed_launches, owed_turns; with `log_utilisation`,
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

Modules, one mechanism each: this one holds the parameters, the round and the bookkeeping of
what changed; `gandiva_placement` (Algorithm 1), `gandiva_time_slicing` (shares; the rotation
itself in `time_slicing`), `gandiva_packing`, `gandiva_migration` and `gandiva_grow_shrink`
are mixins of `Gandiva`, and `gandiva_index` keeps the per-server tallies.
"""

import math
from bisect import bisect_left, insort
from collections import Counter
from collections.abc import Iterator, Mapping

from simulation.decisions import Decision
from simulation.dlt_models import model_info
from simulation.model import PoolKind
from simulation.policies.base import Param, Policy, register
from simulation.policies.gandiva_grow_shrink import GandivaGrowShrink
from simulation.policies.gandiva_index import (
    Candidates,
    Pack,
    ServerIndex,
    ServerTally,
    TallyPart,
)
from simulation.policies.gandiva_migration import GandivaMigration
from simulation.policies.gandiva_packing import GandivaPacking
from simulation.policies.gandiva_placement import GandivaPlacement, QueueGroup
from simulation.policies.gandiva_time_slicing import GandivaTimeSlicing
from simulation.policies.time_slicing import RotationPlan
from simulation.share_cycle import ShareCycle
from simulation.view import ClusterView


@register
class Gandiva(GandivaPlacement, GandivaTimeSlicing, GandivaPacking, GandivaMigration,
              GandivaGrowShrink, Policy):
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
             "grows", "shrinks", "oversubscribed_launches", "owed_turns"), 0)
        self.utilisation_log: list[tuple[float, float]] = []
        self._affinity: dict[str, int] = {}
        self._affinity_count: Counter[tuple[str, int]] = Counter()  # (pool, GPUs) -> servers
        self._affinity_servers: dict[int, set[str]] = {}  # GPUs -> servers of that affinity
        self._packs: dict[int, Pack] = {}
        self._trials: set[int] = set()  # packs on trial (not kept): all a review looks at
        self._pack_of: dict[str, int] = {}  # job -> its pack (a job is in at most one)
        self._next_pack = 0
        self._failed_combos: set[tuple[str, ...]] = set()
        self._idle_since: dict[str, tuple[int, float]] = {}
        self._last_round = 0.0
        self._suspend_rate = 0.0  # suspensions per second at the last round's shares
        self._quanta = self.time_slicing == "quanta"
        self._quantum_start = -math.inf
        self._plans: dict[str, RotationPlan] = {}  # time-slicing server -> its quanta ahead
        self._cycled: set[str] = set()  # jobs whose share follows a `ShareCycle`
        self._suspended: set[str] = set()  # jobs told a plain share of 0 (no cycle), or
        # whose cycle suspended them for good (`_let_rest`)
        self._cycle_of: dict[str, ShareCycle] = {}  # cycled job -> its cycle
        self._mixed: dict[str, bool] = {}  # server -> hosts jobs of several sizes
        self._placid: dict[str, bool] = {}  # model -> insensitive to locality
        self._expiring: list[tuple[float, str]] = []  # (expiry, server) of expiring plans
        # Spread jobs, for `_owed_turns`: when each last ran on all its servers, what it
        # was last told, and when to look at it next (a heap, and each job's entry)
        self._together: dict[str, float] = {}
        self._schedule_of: dict[str, tuple[float, ShareCycle | None]] = {}
        self._turn_due: list[tuple[float, str]] = []
        self._turn_due_at: dict[str, float] = {}
        # Per time-slicing server in no pack: the units of its plan's rotation, and the jobs
        # whose GPUs changed on it since (`_rotate` re-plans from the change).
        self._rotation_units: dict[str, set[object]] = {}
        self._suspects: dict[str, set[str]] = {}
        # Per server: its jobs not in `_suspended` (`_set_shares` tells them, not every job)
        self._awake: dict[str, set[str]] = {}
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
        self._wide: set[str] = set()  # more than one GPU, of a model sensitive to locality
        self._grown: set[str] = set()  # more GPUs than asked for
        self._pack_candidates: list[tuple[float, str]] = []  # (GPU utilisation, job), sorted
        self._pack_key: dict[str, tuple[float, str]] = {}
        self._pack_idle_at = -1  # `_changes` when packing last found nothing to do
        self._place_idle_at = -1  # `_changes` when the queue walk last placed nothing
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

    def quiet_tick(self, view: ClusterView) -> bool:
        """A quantum boundary at which nothing changed since the last round and nothing
        falls due decides nothing (issue #16: 876,611 of muri_trace2's 908,568 events, on
        time-slicing servers whose plans already told every job its quanta ahead).

        Every change the policy acts on marks a server (`_mark`: free GPUs, loads, packs,
        affinities), and a round takes its marks at its start (`_forget_departed`); the
        engine's logs are read after each decision (`schedule`), and arrivals, completions
        and loans are events, whose rounds run. So a tick with no server marked since the
        last round began finds the queue walk, packing and defragmentation idle since
        their last pass and nothing to re-plan. What else a round does depends on the time:
        a pack on trial is reviewed at every quantum, an idle server grows an elastic job
        after `idle_timeout`, a plan expires and a spread job falls due for a look; the
        first two make a tick not quiet, the looks are taken here (as the round would) when
        no turn is owed. Then only the quantum's start moves on."""
        if not self._quanta or self.log_utilisation:  # fluid shares and the log count rounds
            return False
        if self._touched_round or self._trials or (
                self.introspective and self.grow_shrink and not view.queue
                and self._index.elastic):
            return False
        now = view.now
        if self._at_boundary(now):
            if self._expiry_due(now):
                return False
            if self._turn_due and self._turn_due[0][0] <= now + 1e-6:
                looks = self._due_looks(view)
                if any(owes for owes, _, _ in looks.values()):
                    return False
                self._take_looks(view, looks)  # none owed: they set their next times
            self._quantum_start = now
        self._last_round = now
        return True

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
        self._mixed.pop(sid, None)
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
                self._suspended.discard(job_id)
                self._cycle_of.pop(job_id, None)
                del self._rank[job_id], self._model_of[job_id], self._gpu_util[job_id]
            self._spread.discard(job_id)
            self._wide.discard(job_id)
            self._grown.discard(job_id)
            self._set_pack_candidate(job_id, None)
            if self._quanta:
                self._watch_spread(view.now, job_id, False)
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
        if self._quanta and (len(placement) > 1) != (old is not None and len(old) > 1):
            # a spread job that moves (to idle GPUs) stays watched: it runs there at once
            self._watch_spread(view.now, job_id, len(placement) > 1)
        if job.gpus > 1 and not self._placid_model(job.spec.model):
            self._wide.add(job_id)
        else:
            self._wide.discard(job_id)
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

        Only jobs whose GPUs changed can have left a pack; only servers whose jobs changed
        can have emptied (a server gets its affinity with its first job)."""
        if not self._moved and not self._touched_round:
            return
        moved, self._moved = self._moved, set()
        pack_of = self._pack_of
        for pid in sorted({pack_of[j] for j in moved if j in pack_of}):
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
        quanta = self._quanta
        for part in self._parts.pop(job_id, ()):
            self._tally[part[0]].count(part, -1)
            self._mark(part[0])
            if quanta:
                self._suspects.setdefault(part[0], set()).add(job_id)
                self._awake.get(part[0], set()).discard(job_id)
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
            if quanta:
                self._suspects.setdefault(sid, set()).add(job_id)
                if job_id not in self._suspended:
                    self._awake.setdefault(sid, set()).add(job_id)
            parts.append(part)
        self._parts[job_id] = tuple(parts)

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

    # -- per-server load ------------------------------------------------------------------

    def _units(self, view: ClusterView, sid: str) -> Mapping[object, int]:
        """Time-sliced units on a server -> GPUs: a job, or a pack counted as one GPU, in
        the server's order of its jobs (the callers' choices do not depend on it). Read
        before the engine applies another decision: on a server in no pack it is the
        server's own view of its jobs, not a copy (thousands of them on full Philly)."""
        jobs = view.servers[sid].jobs
        if not self._has_pack(view, sid):
            return jobs  # type: ignore[return-value]  # job ids are units
        units: dict[object, int] = {}
        for job_id, gpus in jobs.items():
            pid = self._pack_of.get(job_id)
            if pid is not None and self._packs[pid].server == sid:
                units[("pack", pid)] = 1
            else:
                units[job_id] = gpus
        return units

    def _has_pack(self, view: ClusterView, sid: str) -> bool:
        """Whether a job on server `sid` is in a pack (its units are not its jobs)."""
        # two key views: `isdisjoint` walks the shorter, the few packed jobs
        return not self._pack_of.keys().isdisjoint(view.servers[sid].jobs.keys())

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
