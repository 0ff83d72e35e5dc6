"""Gandiva: introspective cluster scheduling for deep learning (Xiao et al., OSDI'18 §3-§6).

Reactive mode (§4.2.1, Algorithm 1 `getNode`): a job goes to the least-loaded server whose
*affinity* (the GPU count of the jobs it hosts) equals its own GPU count and that still has
free GPUs; else to an unallocated server; else anywhere with free GPUs (relaxing affinity,
possibly fragmented); else it over-subscribes the least-loaded same-affinity server; only
if none exists does it wait. A job larger than a server takes whole servers the same way.

Time-slicing: an over-subscribed server runs weighted round robin with quantum `time_slice`
(60 s in §6); each job's share of its GPUs is N / M (N GPUs, M GPUs allocated, a packed GPU
counting once) minus the suspend/resume cost `switch_overhead` per quantum (< 1 s, §4.1), so
six 1-GPU jobs on four GPUs each get 4/6 of a GPU (§6.1, Fig. 9). Suspensions are counted
as the jobs swapped out per quantum, u·min(N, M-N)/M for u jobs on the server.

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
migrations, grows, shrinks, oversubscribed_launches; `utilisation_log` holds (time, busy
GPU-cores) steps, busy = Σ GPUs × share × the model's GPU utilisation (Table 1's metric).
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass, field

from simulation.decisions import Decision, Launch, Migrate, Placement, Resize, SetShare, Slot
from simulation.dlt_models import model_info
from simulation.policies.base import Param, Policy, register
from simulation.policies.ordering import pool_preference
from simulation.view import ClusterView, JobView, ServerView


@dataclass(slots=True)
class Pack:
    """Jobs packed on one GPU of `server`, on trial since `since` unless `kept`."""

    server: str
    members: list[str]
    since: float
    snapshot: dict[str, float] = field(default_factory=dict)  # remaining work at `since`
    shares: dict[str, float] = field(default_factory=dict)  # unit time share at `since`
    kept: bool = False


def packing_capacity(models: list[str]) -> float:
    """Aggregate throughput of jobs packed on one GPU, in solo-GPUs (Table 1)."""
    gains = [1.0 + model_info(m).packing_gain for m in models]
    return min(float(len(models)), sum(gains) / len(gains))


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
    )
    introspective: bool
    time_slice: float
    switch_overhead: float
    packing: bool
    migration: bool
    grow_shrink: bool
    idle_timeout: float
    pack_max_util: float
    defrag_threshold: int

    def __init__(self, **values: object) -> None:
        super().__init__(**values)
        self.interval = self.time_slice  # one scheduling round per quantum
        self.counters: dict[str, float] = dict.fromkeys(
            ("packings", "packings_kept", "packings_undone", "suspends", "migrations",
             "grows", "shrinks", "oversubscribed_launches"), 0)
        self.utilisation_log: list[tuple[float, float]] = []
        self._affinity: dict[str, int] = {}
        self._packs: dict[int, Pack] = {}
        self._pack_of: dict[str, int] = {}
        self._next_pack = 0
        self._failed_combos: set[tuple[str, ...]] = set()
        self._idle_since: dict[str, tuple[int, float]] = {}
        self._last_round = 0.0
        self._suspend_rate = 0.0  # suspensions per second at the last round's shares
        self._running_before: set[str] = set()
        self._model_of: dict[str, str] = {}

    # -- round ----------------------------------------------------------------------------

    def schedule(self, view: ClusterView) -> Iterator[Decision]:
        now = view.now
        self.counters["suspends"] += self._suspend_rate * (now - self._last_round)
        self._last_round = now
        self._model_of = {j: v.spec.model for j, v in view.running.items()}
        self._forget_departed(view)
        departed = bool(self._running_before - set(view.running))
        yield from self._place_queue(view)
        if self.introspective:
            if self.migration:
                if departed:
                    yield from self._reduce_height(view)
                    yield from self._improve_locality(view)
                yield from self._defragment(view)
            if self.packing:
                self._model_of = {j: v.spec.model for j, v in view.running.items()}
                self._review_packs(view)
                if any(self._load(view, s) > view.servers[s].gpus for s in self._servers(view)):
                    self._pack(view)
            if self.grow_shrink and not view.queue:
                yield from self._grow(view)
        yield from self._set_shares(view)
        self._track_idle(view)
        self._running_before = set(view.running)

    def _servers(self, view: ClusterView) -> list[str]:
        return [sid for sid, s in view.servers.items() if s.available]

    def _forget_departed(self, view: ClusterView) -> None:
        for pid in sorted(self._packs):
            pack = self._packs[pid]
            stay = [
                j for j in pack.members
                if j in view.running and any(s.server == pack.server
                                             for s in view.running[j].placement)
            ]
            for job_id in set(pack.members) - set(stay):
                self._pack_of.pop(job_id, None)
            pack.members = stay
            if len(pack.members) < 2:
                self._dissolve(pid)
        for sid, server in view.servers.items():
            if not server.jobs:
                self._affinity.pop(sid, None)

    def _dissolve(self, pid: int) -> None:
        for job_id in self._packs.pop(pid).members:
            self._pack_of.pop(job_id, None)

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

    def _load(self, view: ClusterView, sid: str) -> int:
        return sum(self._units(view, sid).values())

    def _free(self, view: ClusterView, sid: str) -> int:
        return max(0, view.servers[sid].gpus - self._load(view, sid))

    def _time_share(self, view: ClusterView, sid: str) -> float:
        n = view.servers[sid].gpus
        load = self._load(view, sid)
        if load <= n:
            return 1.0
        return n / load * max(0.0, 1.0 - self.switch_overhead / self.time_slice)

    def _locality(self, view: ClusterView, job: JobView) -> float:
        info = model_info(job.spec.model)
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

    def _set_shares(self, view: ClusterView) -> Iterator[Decision]:
        self._model_of = {j: v.spec.model for j, v in view.running.items()}
        time_share = {sid: self._time_share(view, sid) for sid in self._servers(view)}
        busy = 0.0
        for job in list(view.running.values()):
            share = min(time_share[s.server] for s in job.placement)
            share *= self._pack_factor(job.job_id) * self._locality(view, job)
            share = min(1.0, max(share, 1e-6))
            busy += job.gpus * share * model_info(job.spec.model).gpu_util
            if abs(share - job.share) > 1e-12:
                yield SetShare(job.job_id, share)
        self.utilisation_log.append((view.now, busy))
        rate = 0.0
        for sid in self._servers(view):
            units = self._units(view, sid)
            n, load = view.servers[sid].gpus, sum(units.values())
            if load > n:
                rate += len(units) * min(n, load - n) / load
        self._suspend_rate = rate / self.time_slice

    # -- reactive placement (Algorithm 1) -------------------------------------------------

    def _place_queue(self, view: ClusterView) -> Iterator[Decision]:
        for job in list(view.queue.values()):
            placement, oversubscribed = self._get_node(view, job)
            if (placement is None or oversubscribed) and self.introspective and self.grow_shrink:
                yield from self._shrink_for(view, job)
                placement, oversubscribed = self._get_node(view, job)
            if placement is None:
                continue
            for slot in placement:
                self._affinity.setdefault(slot.server, job.spec.num_gpus)
            self.counters["oversubscribed_launches"] += oversubscribed
            yield Launch(job.job_id, placement)

    def _candidates(self, view: ClusterView, job: JobView) -> list[ServerView]:
        pools = pool_preference(view, job.spec)
        rank = {p: i for i, p in enumerate(pools)}
        servers = [s for s in view.servers.values() if s.available and s.pool in rank]
        return sorted(servers, key=lambda s: (rank[s.pool], s.id))

    def _get_node(self, view: ClusterView, job: JobView) -> tuple[Placement | None, bool]:
        """Algorithm 1: (placement, over-subscribed?) or (None, False) to keep it queued."""
        g = job.spec.num_gpus
        servers = self._candidates(view, job)
        if not servers:
            return None, False
        size = max(s.gpus for s in servers)  # the fewest servers that can hold the job
        k = max(1, math.ceil(g / size))
        per = min(g, size)
        same = [s for s in servers if self._affinity.get(s.id) == g]
        same.sort(key=lambda s: (self._load(view, s.id), s.id))
        fits = [s for s in same if self._free(view, s.id) >= per]  # nodes1, height < 1
        if len(fits) >= k:
            return self._slots(fits[:k], g, per), False
        empty = [s for s in servers if not s.jobs and s.gpus >= per]  # nodes2
        if len(empty) >= k:
            return self._slots(empty[:k], g, per), False
        gathered = self._gather(view, servers, g)  # nodes3: relax affinity
        if gathered is not None:
            return gathered, False
        if len(same) >= k:  # over-subscribe the least-loaded same-affinity servers
            return self._slots(same[:k], g, per), True
        return None, False

    @staticmethod
    def _slots(servers: list[ServerView], g: int, per: int) -> Placement:
        slots = []
        left = g
        for server in servers:
            take = min(per, left)
            slots.append(Slot(server.id, take))
            left -= take
        return tuple(slots)

    def _gather(self, view: ClusterView, servers: list[ServerView], g: int) -> Placement | None:
        """Free GPUs anywhere: the fullest server that fits, else the emptiest first."""
        free = {s.id: self._free(view, s.id) for s in servers}
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
                self.counters["shrinks"] += 1
                yield Resize(victim.job_id, (Slot(server.id, victim.gpus - give),))
                if need <= 0:
                    return
            return

    def _grow(self, view: ClusterView) -> Iterator[Decision]:
        for sid in self._servers(view):
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
                self.counters["grows"] += 1
                base = Slot(sid, job.gpus - max(0, job.gpus - spec.num_gpus))
                extra = job.gpus + room - base.gpus
                yield Resize(job_id, (base, Slot(sid, extra, True)) if extra else (base,))

    def _track_idle(self, view: ClusterView) -> None:
        for sid in self._servers(view):
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
        best: tuple[int, str] | None = None
        own = {slot.server: slot.gpus for slot in job.placement}
        for server in self._candidates(view, job):
            free = self._free(view, server.id)
            room = free + own.get(server.id, 0)
            if server.id in exclude or room < job.gpus or not server.jobs and fewer_than:
                continue
            if fewer_than is not None and free >= fewer_than:
                continue
            if best is None or (free, server.id) < best:
                best = (free, server.id)
        return best[1] if best else None

    def _migrate(self, job: JobView, sid: str) -> Migrate:
        self.counters["migrations"] += 1
        self._affinity.setdefault(sid, job.spec.num_gpus)
        return Migrate(job.job_id, (Slot(sid, job.gpus),))

    def _reduce_height(self, view: ClusterView) -> Iterator[Decision]:
        for sid in self._servers(view):
            for job_id in sorted(view.servers[sid].jobs):
                if self._load(view, sid) <= view.servers[sid].gpus:
                    break
                job = view.job(job_id)
                if len(job.placement) != 1 or not self._movable(view, job):
                    continue
                dest = self._destination(view, job, {sid})
                if dest is not None:
                    yield self._migrate(job, dest)

    def _improve_locality(self, view: ClusterView) -> Iterator[Decision]:
        for job in list(view.running.values()):
            if len(job.placement) > 1 and self._movable(view, job):
                dest = self._destination(view, job, set())
                if dest is not None:
                    yield self._migrate(job, dest)

    def _defragment(self, view: ClusterView) -> Iterator[Decision]:
        tried: set[str] = set()
        for _ in range(len(view.servers)):
            busy = [sid for sid in self._servers(view)
                    if view.servers[sid].jobs and sid not in tried
                    and self._free(view, sid) >= self.defrag_threshold]
            if not busy:
                return
            source = max(busy, key=lambda s: (self._free(view, s), s))
            tried.add(source)
            free = self._free(view, source)
            for job_id in sorted(view.servers[source].jobs):
                job = view.job(job_id)
                if len(job.placement) != 1 or not self._movable(view, job):
                    continue
                dest = self._destination(view, job, {source}, fewer_than=free)
                if dest is not None:
                    yield self._migrate(job, dest)

    # -- packing --------------------------------------------------------------------------

    def _review_packs(self, view: ClusterView) -> None:
        """Keep a trial packing that beats time-slicing (one GPU's worth), else undo it."""
        for pid in sorted(self._packs):
            pack = self._packs[pid]
            if pack.kept:
                continue
            shares = {j: self._time_share(view, pack.server) for j in pack.members}
            if shares != pack.shares or set(pack.snapshot) != set(pack.members):
                self._start_trial(view, pack)  # the server's load changed: measure afresh
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
                self.counters["packings_kept"] += 1
            else:
                self._failed_combos.add(self._combo(pack.members))
                self.counters["packings_undone"] += 1
                self._dissolve(pid)

    def _solo_rate(self, view: ClusterView, job: JobView) -> float:
        speed = min(view.servers[s.server].speed for s in job.placement)
        rate = view.throughput.rate(job.spec.model, job.spec.num_gpus, job.gpus, speed)
        return rate * self._locality(view, job)

    def _combo(self, members: list[str]) -> tuple[str, ...]:
        return tuple(sorted(self._model_of[j] for j in members))

    def _start_trial(self, view: ClusterView, pack: Pack) -> None:
        pack.since = view.now
        pack.snapshot = {j: view.job(j).remaining_work for j in pack.members}
        pack.shares = {j: self._time_share(view, pack.server) for j in pack.members}

    def _pack(self, view: ClusterView) -> None:
        """Greedy packing, lowest GPU utilisation first; each packing starts a trial."""
        util = {j: model_info(m).gpu_util for j, m in self._model_of.items()}
        candidates = sorted(
            (j for j, v in view.running.items()
             if v.gpus == 1 and len(v.placement) == 1 and j not in self._pack_of
             and util[j] < self.pack_max_util),
            key=lambda j: (util[j], j),
        )
        for job_id in candidates:
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
                key = (sum(util[m] for m in members), str(unit), unit)
                if best is None or key[:2] < best[:2]:
                    best = key
            if best is None:
                continue
            unit = best[2]
            if isinstance(unit, tuple):
                pid = unit[1]
                self._packs[pid].members.append(job_id)
                self._packs[pid].kept = False
            else:
                pid = self._next_pack
                self._next_pack += 1
                self._packs[pid] = Pack(sid, [str(unit), job_id], view.now)
                self._pack_of[str(unit)] = pid
            self._pack_of[job_id] = pid
            self.counters["packings"] += 1
            self._start_trial(view, self._packs[pid])
