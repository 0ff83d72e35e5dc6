"""Gandiva's migration (OSDI'18 §3 Migration, §4.2.2).

Mixed into `simulation.policies.gandiva.Gandiva`. On departures, jobs move from
over-subscribed servers to vacated GPUs (lower the cluster's height) and jobs spread over
servers move to one server that now fits them (locality); in the background the non-idle
server with the most free GPUs is emptied into fuller ones while any non-idle server has
`defrag_threshold` or more free GPUs. A migration pauses the job for
`EngineConfig.migration_pause`.
"""

from __future__ import annotations

from collections.abc import Iterator

from simulation.decisions import Decision, Migrate, Placement, Slot
from simulation.view import ClusterView, JobView, ServerView


class GandivaMigration:
    """Height reduction, locality and defragmentation moves."""

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
        return self._move(view, job, (Slot(sid, job.gpus),))

    def _move(self, view: ClusterView, job: JobView, placement: Placement) -> Migrate:
        """Count the migration and give its servers the job's affinity."""
        self._counts["migrations"] += 1
        for slot in placement:
            self._set_affinity(view, slot.server, job.spec.num_gpus)
        return Migrate(job.job_id, placement)

    def _reduce_height(self, view: ClusterView) -> Iterator[Decision]:
        """Move jobs off over-subscribed servers (no other server is over-subscribed by a
        move: a destination has room) while any server has a free GPU.

        A job spread over servers moves as a new job would be placed (Algorithm 1 without
        its over-subscribing fallback): §4.2.2 does not limit migration to jobs on one
        server, and left in place such jobs kept time-slicing on a few servers while the
        rest of the cluster stood idle (full Philly, issue #22)."""
        for sid in self._overloaded(view):
            if not self._may_move_off(view, sid):
                continue
            gpus = view.servers[sid].gpus
            moved = True  # the server's load and the free GPUs change only with a move
            for job_id in sorted(view.servers[sid].jobs):
                if moved:
                    if self._load(view, sid) <= gpus:
                        break
                    if self._index.max_free() == 0:
                        return  # no job fits anywhere, and nothing moves to change that
                    moved = False
                job = view.job(job_id)
                move: Migrate | None = None
                if len(job.placement) > 1:
                    if self._may_spread_move(job):
                        move = self._spread_move(view, job)
                elif self._movable(view, job):
                    dest = self._destination(view, job, {sid})
                    if dest is not None:
                        move = self._migrate(view, job, dest)
                if move is not None:
                    yield move
                    moved = True

    def _may_move_off(self, view: ClusterView, sid: str) -> bool:
        """False if no job of over-subscribed server `sid` can move: its smallest unit needs
        more GPUs than any one server has free, and no job on it is spread (a spread job
        may gather free GPUs from several). Skips the pass over a crowded server's jobs
        (thousands on full Philly, issue #22) at a departure that frees too little."""
        if self._stale:
            self._refresh(view)
        return (self._tally[sid].size_range[0] <= self._index.max_free()
                or not view.servers[sid].jobs.keys().isdisjoint(self._spread))

    def _may_spread_move(self, job: JobView) -> bool:
        """False if fewer GPUs than a spread job holds are free in all: it cannot move."""
        return job.gpus <= self._index.total_free()

    def _spread_move(self, view: ClusterView, job: JobView) -> Migrate | None:
        """A job spread over servers, moved where Algorithm 1 would place it anew without
        over-subscribing, or None (in a pack, grown, or nowhere to go)."""
        if job.job_id in self._pack_of or job.gpus != job.spec.num_gpus:
            return None
        placement, oversubscribed = self._get_node(view, job)
        if placement is None or oversubscribed:
            return None
        return self._move(view, job, placement)

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
