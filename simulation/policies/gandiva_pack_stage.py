"""Gandiva's packing as a placement stage, `gandiva-pack` (OSDI'18 §4.2.2 Packing, Table 1).

Issue #20 asks for Tiresias' ordering with Gandiva's packing. The stage takes the place of a
preemptive priority policy's placement (Tiresias, SRTF, SRSF: the policies with a
`priority_key`) and keeps its ordering:

- **Ordering, with packs.** Running and queued jobs are walked in the policy's priority
  order, as `preemptive_schedule` walks them: each job is kept while its GPUs fit the
  training capacity, and a queued job kept is launched; jobs not kept are preempted, but only
  when a queued job is to be launched. A pack holds one GPU: the first of its members the walk
  meets pays for it, and the others ride on it at no cost. So the ordering never preempts a
  job to make room that only a packed member's GPU would give, and a packed guest never
  blocks a queued job of any priority.
- **Placement.** A launch takes the GPUs physically free, by the policy's best fit (the
  fewest servers, the fullest that fits); a packed GPU is one physical GPU whatever the count
  of its members. While nothing is packed, the walk and the best fit are exactly the
  policy's own, so its own (faster) round decides: a run in which nothing packs gives the
  policy's own results.
- **Packing, only during overload (§4.2.2).** Jobs still waiting after the launches that ask
  for one GPU, are not elastic and are preemptible, with a GPU utilisation below
  `pack_max_util` (Table 1), are taken lowest utilisation first; each goes onto the GPU of a
  running one-GPU job, or a pack, of the lowest summed utilisation whose memory fits the GPU
  and whose model combination has not failed. Packed jobs run at C/n each, C = min(n, mean
  of 1 + packing gain) (Table 1; `packing_capacity`, the Gandiva policy's own).
- **Trial.** After `pack_trial` seconds (Gandiva's quantum, 60 s) of the newest member's
  progress, the pack's measured progress, summed over members in solo GPUs, is compared
  with one GPU's worth: kept if it beats it, else undone and its model combination never
  tried again. Gandiva compares with time-slicing, which also gives one GPU's worth; here the
  alternative is that the newcomer waits. Undoing preempts the newest member back to the
  queue (it has not been running before the pack, unlike Gandiva's time-sliced jobs).
- **Unpacking.** When its server has a GPU free after the launches (a job finished or was
  preempted there and nothing waiting took it), a pack gives it to its newest member, which
  then runs alone at full speed; no migration across servers (Gandiva's migration is its
  own mechanism, not part of packing).

A live decision starts from a snapshot, without the packs earlier decisions made: jobs that
over-commit a server's GPUs there are taken as kept packs (`_adopt`).

Counters (summary `policy_counters`): packings, packings_kept, packings_undone, unpacks.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from simulation.decisions import Decision, Launch, Placement, Preempt, SetShare, Slot
from simulation.dlt_models import model_info
from simulation.model import JobSpec
from simulation.policies.base import Param
from simulation.policies.gandiva_index import packing_capacity
from simulation.policies.ordering import pool_preference, training_capacity
from simulation.view import ClusterView, JobView

PACK_STAGE_PARAMS = (
    Param("pack_trial", float, 60.0, "seconds of a packing's progress measured before it is "
          "kept or undone (Gandiva's quantum)", bounds=(1.0, 86_400.0)),
    Param("pack_max_util", float, 0.9, "only jobs below this GPU utilisation pack (Table 1)",
          bounds=(0.0, 1.0)),
)
_BEATS_ONE_GPU = 1.0 + 1e-9  # measured progress must exceed one GPU's worth by more than rounding


@dataclass(slots=True)
class _Pack:
    """Jobs on one GPU of `server`: the host first, then guests in the order they joined."""

    server: str
    members: list[str]
    start: float = 0.0  # the trial measures from here: the newest member's first progress
    snapshot: dict[str, float] = field(default_factory=dict)  # remaining work at `start`
    kept: bool = False


def _remaining_at(job: JobView, at: float) -> float | None:
    """Remaining work of running `job` at time `at` on its current progress line."""
    line = job.progress_line
    if line is None:
        return None
    left, since, rate = line
    return max(0.0, left - rate * max(0.0, at - since))


def _first(entry: tuple) -> object:
    return entry[0]


def _packable(spec: JobSpec) -> bool:
    return (spec.num_gpus == 1 and spec.gpus_per_worker == 1 and not spec.elastic
            and spec.preemptible)


class GandivaPackStage:
    """The placement stage `gandiva-pack`, mixed in before a policy with a `priority_key`
    (see the module docstring): while a pack exists its walk replaces the policy's round,
    which otherwise runs as it is, followed by packing."""

    shares_gpus = True
    deciding_layer = "ordering"
    pack_trial: float
    pack_max_util: float
    priority_key: Callable[[ClusterView, JobView], Any]  # the ordering's, from the policy

    def __init__(self, **values: object) -> None:
        super().__init__(**values)  # type: ignore[call-arg]  # the policy it extends
        self._packs: dict[int, _Pack] = {}
        self._pack_of: dict[str, int] = {}
        self._failed: set[tuple[str, ...]] = set()
        self._next_pack = 0
        self._adopted = False
        self._counts: Counter[str] = Counter(packings=0, packings_kept=0, packings_undone=0,
                                             unpacks=0)

    @property
    def counters(self) -> dict[str, float]:
        return dict(self._counts)

    # -- the round ------------------------------------------------------------------------

    def schedule(self, view: ClusterView) -> Iterator[Decision]:
        self.deciding_layer = "placement"
        if not self._adopted:
            self._adopted = True
            yield from self._adopt(view)
        yield from self._drop_stopped(view)
        yield from self._review(view)
        if not self._packs:  # the policy's own round: `_walk` would decide the same
            self.deciding_layer = "ordering"
            decisions = super().schedule(view)  # type: ignore[misc]  # the policy's
            if decisions is not None:
                yield from decisions
            self.deciding_layer = "placement"
            if view.queue:
                yield from self._pack(view)
            return
        kept, launches = self._walk(view) if view.queue else (set(), [])
        if launches:
            self.deciding_layer = "ordering"
            for job in list(view.running.values()):
                if job.job_id not in kept:
                    yield Preempt(job.job_id)
            self.deciding_layer = "placement"
            yield from self._drop_stopped(view)
            for job in launches:
                placement = self._place(view, job.spec)
                if placement is not None:
                    yield Launch(job.job_id, placement)
        yield from self._unpack(view)
        if view.queue:
            yield from self._pack(view)

    def next_wakeup(self, view: ClusterView) -> float | None:
        """The ordering's next wakeup, or the end of the earliest trial."""
        times = [p.start + self.pack_trial for p in self._packs.values() if not p.kept]
        own = super().next_wakeup(view)  # type: ignore[misc]
        if own is not None:
            times.append(own)
        return min(times) if times else None

    def _walk(self, view: ClusterView) -> tuple[set[str], list[JobView]]:
        """(running jobs kept, queued jobs to launch) by the ordering, a pack paying one GPU
        (the module docstring): `preemptive_schedule`'s walk, which the policy's own round
        follows when nothing is packed."""
        budget = training_capacity(view)
        pack_of = self._pack_of
        counted: set[int] = set()
        kept: set[str] = set()
        key = self.priority_key
        entries = []
        for job in view.running.values():
            job_id = job.job_id
            if job.spec.preemptible:
                entries.append(((key(view, job), job.trace_index), job_id, job))
                continue
            kept.add(job_id)
            pid = pack_of.get(job_id)
            if pid is None:
                budget -= job.gpus
            elif pid not in counted:
                counted.add(pid)
                budget -= 1
        entries += [((key(view, job), job.trace_index), job.job_id, job)
                    for job in view.queue.values()]
        launches: list[JobView] = []
        running = view.running
        for _, job_id, job in sorted(entries, key=_first):
            if job_id in running:
                pid = pack_of.get(job_id)
                need = job.gpus if pid is None else 0 if pid in counted else 1
                if need <= budget:
                    budget -= need
                    kept.add(job_id)
                    if pid is not None:
                        counted.add(pid)
            elif job.spec.num_gpus <= budget:
                budget -= job.spec.num_gpus
                launches.append(job)
        return kept, launches

    # -- placement on physical GPUs ---------------------------------------------------------

    def _physical_free(self, view: ClusterView, *, packed_only: bool = False) -> dict[str, int]:
        """Free GPUs per available server (or per server holding a pack), a packed GPU
        counted once."""
        guests: Counter[str] = Counter()
        for pack in self._packs.values():
            guests[pack.server] += len(pack.members) - 1
        servers = view.servers
        return {sid: servers[sid].gpus - servers[sid].used + guests[sid]
                for sid in (guests if packed_only else servers) if servers[sid].available}

    def _place(self, view: ClusterView, spec: JobSpec) -> Placement | None:
        """The policy's best fit (`best_fit`'s rule) on the GPUs physically free."""
        free = self._physical_free(view)
        pools = pool_preference(view, spec)
        for pool in pools:  # one server is best: no cross-server traffic
            fits = [(free[s], i) for i, s in enumerate(view.pool_servers(pool))
                    if free.get(s, 0) >= spec.num_gpus]
            if fits:
                _, i = min(fits)
                return (Slot(view.pool_servers(pool)[i], spec.num_gpus),)
        slots: list[Slot] = []
        remaining = spec.num_gpus
        for pool in pools:
            servers = view.pool_servers(pool)
            for _, i in sorted((-free.get(s, 0), i) for i, s in enumerate(servers)):
                usable = free.get(servers[i], 0)
                usable -= usable % spec.gpus_per_worker
                if usable <= 0:
                    break
                take = min(usable, remaining)
                slots.append(Slot(servers[i], take))
                remaining -= take
                if remaining == 0:
                    return tuple(slots)
        return None

    # -- packs ----------------------------------------------------------------------------

    def _shares(self, view: ClusterView, pack: _Pack) -> Iterator[SetShare]:
        """Each member's share: C/n by Table 1, 1 for a job alone."""
        models = [view.job(j).spec.model for j in pack.members]
        share = packing_capacity(models) / len(models) if len(models) > 1 else 1.0
        for job_id in pack.members:
            if view.job(job_id).share != share:
                yield SetShare(job_id, share)

    def _shrink(self, view: ClusterView, pid: int, gone: list[str]) -> Iterator[Decision]:
        """`gone` left the pack: the rest share anew, with a fresh trial, or one runs alone."""
        pack = self._packs[pid]
        for job_id in gone:
            pack.members.remove(job_id)
            del self._pack_of[job_id]
        if len(pack.members) <= 1:
            for job_id in pack.members:
                del self._pack_of[job_id]
            del self._packs[pid]
        yield from self._shares(view, pack)
        if pid in self._packs:
            self._start_trial(view, pack)

    def _adopt(self, view: ClusterView) -> Iterator[Decision]:
        """Packs found in the state at the first round: a live snapshot's jobs that an
        earlier decision packed. On a server holding more GPUs than it has, its one-GPU
        jobs share the GPUs the others leave, as evenly as they divide (in job id order);
        such packs are kept, their trial long past."""
        for sid, server in view.servers.items():
            if server.used <= server.gpus:
                continue
            ones = sorted(job_id for job_id, gpus in server.jobs.items()
                          if gpus == 1 and view.job(job_id).gpus == 1
                          and not view.job(job_id).spec.elastic)
            gpus = server.gpus - (server.used - len(ones))
            if gpus <= 0 or len(ones) <= gpus:
                continue
            for members in (ones[i::gpus] for i in range(gpus)):
                if len(members) < 2:
                    continue
                pid = self._next_pack
                self._next_pack += 1
                self._packs[pid] = _Pack(sid, list(members), view.now, kept=True)
                for job_id in members:
                    self._pack_of[job_id] = pid
                yield from self._shares(view, self._packs[pid])

    def _drop_stopped(self, view: ClusterView) -> Iterator[Decision]:
        """Members that finished or were preempted (by the ordering or a reclaim) leave."""
        running = view.running
        for pid in sorted(self._packs):
            gone = [j for j in self._packs[pid].members if j not in running]
            if gone:
                yield from self._shrink(view, pid, gone)

    def _start_trial(self, view: ClusterView, pack: _Pack) -> None:
        """Measure from the newest member's first progress (after its restart cost)."""
        newest = view.job(pack.members[-1])
        line = newest.progress_line
        pack.start = max(view.now, line[1]) if line is not None else view.now
        pack.kept = False
        pack.snapshot = {}
        for job_id in pack.members:
            left = _remaining_at(view.job(job_id), pack.start)
            if left is not None:
                pack.snapshot[job_id] = left

    def _review(self, view: ClusterView) -> Iterator[Decision]:
        """Keep a packing whose members progressed more than one GPU's worth; else undo it."""
        now = view.now
        for pid in sorted(self._packs):
            pack = self._packs[pid]
            if pack.kept or now < pack.start + self.pack_trial:
                continue
            elapsed = now - pack.start
            measured = 0.0
            for job_id in pack.members:
                job = view.job(job_id)
                line = job.progress_line
                if line is None or job_id not in pack.snapshot or job.share <= 0:
                    continue
                solo = line[2] / job.share
                if solo > 0:
                    measured += (pack.snapshot[job_id] - job.remaining_work) / (elapsed * solo)
            if measured > _BEATS_ONE_GPU:
                pack.kept = True
                self._counts["packings_kept"] += 1
                continue
            self._failed.add(self._combo(view, pack.members))
            self._counts["packings_undone"] += 1
            newest = pack.members[-1]
            self.deciding_layer = "ordering"
            yield Preempt(newest)
            self.deciding_layer = "placement"
            yield from self._shrink(view, pid, [newest])

    def _unpack(self, view: ClusterView) -> Iterator[Decision]:
        """A GPU free on a pack's server goes to the pack's newest member."""
        if not self._packs:
            return
        free = self._physical_free(view, packed_only=True)
        for pid in sorted(self._packs):
            pack = self._packs.get(pid)
            while pack is not None and pid in self._packs and free.get(pack.server, 0) > 0:
                free[pack.server] -= 1
                self._counts["unpacks"] += 1
                newest = pack.members[-1]
                yield from self._shrink(view, pid, [newest])
                yield SetShare(newest, 1.0)

    @staticmethod
    def _combo(view: ClusterView, members: list[str]) -> tuple[str, ...]:
        return tuple(sorted(view.job(j).spec.model for j in members))

    def _pack(self, view: ClusterView) -> Iterator[Decision]:
        """Greedy packing of the jobs still waiting, lowest GPU utilisation first."""
        util = lambda job: model_info(job.spec.model).gpu_util  # noqa: E731
        waiting = sorted(
            (util(job), self.priority_key(view, job), job.trace_index, job.job_id)
            for job in view.queue.values()
            if _packable(job.spec) and util(job) < self.pack_max_util)
        for *_, job_id in waiting:
            guest = view.job(job_id)
            unit = self._best_unit(view, guest)
            if unit is None:
                continue
            server, members = unit
            pid = self._pack_of.get(members[0])
            if pid is None:
                pid = self._next_pack
                self._next_pack += 1
                self._packs[pid] = _Pack(server, list(members))
                self._pack_of[members[0]] = pid
            pack = self._packs[pid]
            yield Launch(job_id, (Slot(server, 1),))
            pack.members.append(job_id)
            self._pack_of[job_id] = pid
            self._counts["packings"] += 1
            yield from self._shares(view, pack)
            self._start_trial(view, pack)

    def _best_unit(self, view: ClusterView, guest: JobView) -> tuple[str, tuple[str, ...]] | None:
        """(server, members) of the GPU `guest` packs best onto: a running one-GPU job alone
        or a pack, the lowest summed utilisation whose memory fits and whose combination has
        not failed; ties by the members' ids."""
        memory_of = lambda job_id: model_info(view.job(job_id).spec.model).memory_gb  # noqa: E731
        best: tuple[float, tuple[str, ...], str] | None = None
        units: list[tuple[str, tuple[str, ...]]] = [
            (p.server, tuple(p.members)) for p in self._packs.values()]
        units += [(job.placement[0].server, (job.job_id,)) for job in view.running.values()
                  if job.job_id not in self._pack_of and job.gpus == 1 and not job.spec.elastic
                  and job.progress_line is not None]
        for server, members in units:
            sv = view.servers[server]
            if not sv.available:
                continue
            capacity = view.spec.gpu_types[sv.gpu_type].memory_gb
            if sum(map(memory_of, members)) + memory_of(guest.job_id) > capacity:
                continue
            if self._combo(view, [*members, guest.job_id]) in self._failed:
                continue
            key = (sum(model_info(view.job(j).spec.model).gpu_util for j in members), members,
                   server)
            if best is None or key[:2] < best[:2]:
                best = key
        return None if best is None else (best[2], best[1])
