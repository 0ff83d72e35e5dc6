"""Gandiva's grow-shrink (OSDI'18 §3, §6.1 Fig. 11), for jobs that declare it (elastic).

Mixed into `simulation.policies.gandiva.Gandiva`. A job grows within its server only after
the server's free GPUs stayed idle `idle_timeout` seconds with nothing waiting, and shrinks
at once, just enough, when a new job needs the GPUs.
"""

from __future__ import annotations

import math
from collections.abc import Iterator

from simulation.decisions import Decision, Resize, Slot
from simulation.view import ClusterView, JobView


class GandivaGrowShrink:
    """Grow elastic jobs into GPUs idle long enough; shrink them for a newcomer."""

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
