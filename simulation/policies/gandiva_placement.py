"""Gandiva's reactive placement (OSDI'18 §4.2.1, Algorithm 1 `getNode`).

Mixed into `simulation.policies.gandiva.Gandiva`, which owns the affinity and index state.
Queued jobs are kept in groups of equal demand (GPUs, pool, GPU type) in queue order, so a
round walks only groups that may place a job; each job then takes same-affinity servers,
else unallocated ones, else free GPUs anywhere, else over-subscribes the least-loaded
same-affinity servers, else waits.
"""

from __future__ import annotations

import math
from bisect import bisect_left, bisect_right
from collections.abc import Iterator

from simulation.decisions import Decision, Launch, Placement, Slot
from simulation.model import JobSpec
from simulation.policies.gandiva_index import Candidates
from simulation.policies.ordering import pool_preference
from simulation.view import ClusterView, JobView, ServerView

QueueGroup = tuple[int, str, str | None]  # (GPUs asked, own pool, GPU type): same candidates


class GandivaPlacement:
    """Algorithm 1 for each queued job, in queue order."""

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
        (re-judged after every decision: a launch can set an affinity, a shrink free GPUs).

        A walk that decided nothing decides nothing again until a server changes (`_mark`
        counts every change of free GPUs, loads, packs or affinities) or a job joins the
        queue: most rounds of a crowded trace are quantum boundaries that change neither
        (issue #16: a walk per boundary was ~7 % of Gandiva on muri_trace2)."""
        if not self._queued and not view.queue:
            return  # nothing waits, and nothing arrived since the last round
        if (self._place_idle_at == self._changes
                and view.queued_since(self._queue_mark)[1] == self._queue_mark):
            return
        self._sync_queue(view)
        decided = False
        after = -1
        while (seq := self._next_hopeful(view, after)) is not None:
            after = seq
            job = view.job(self._queued_at[seq])
            placement, oversubscribed = self._get_node(view, job)
            if (placement is None or oversubscribed) and self.introspective and self.grow_shrink:
                shrunk = False
                for decision in self._shrink_for(view, job):
                    shrunk = decided = True
                    yield decision
                if shrunk:
                    placement, oversubscribed = self._get_node(view, job)
            if placement is None:
                continue
            for slot in placement:
                self._set_affinity(view, slot.server, job.spec.num_gpus)
            self._counts["oversubscribed_launches"] += oversubscribed
            self._launched(job.job_id)
            decided = True
            yield Launch(job.job_id, placement)
        if not decided:
            self._place_idle_at = self._changes

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
