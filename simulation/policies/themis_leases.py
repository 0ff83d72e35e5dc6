"""When Themis' leases end (Themis §4-§5): per job, or all together in rounds.

`Leases` (`leases=per-job`, the default) keeps each running job's lease end from the engine's
allocation log in a heap, so a round looks only at the leases that end; `Rounds`
(`leases=rounds`, Muri §6.1's six-minute interval) ends every lease on a global clock. The
policy asks both the same two things: when the next lease ends, and whose end now.
"""

from __future__ import annotations

import heapq
import math

from simulation.view import ClusterView

# Two floats within this share of the time are the same instant (lease ends are sums of
# lengths and may drift in the last bits from the clock).
_LEASE_TOLERANCE = 1e-6


class Leases:
    """When each running job's lease ends (Themis §4-§5), kept from the engine's allocation
    log: a job that gets GPUs holds a lease from then, one that stops holds none. Ends sit in
    a heap (stale entries skipped), so a round looks only at the leases that end."""

    def __init__(self, length: float) -> None:
        self.length = length
        self._view: ClusterView | None = None

    def sync(self, view: ClusterView) -> None:
        if view is not self._view:  # a new run or snapshot: leases run from first sight
            self._view = view
            self._end: dict[str, float] = {}
            self._heap: list[tuple[float, str]] = []
            moved, self._moved = list(view.running.keys()), view.allocations_since(0)[1]
        else:
            moved, self._moved = view.allocations_since(self._moved)
        running = view.running
        for job_id in moved:
            if job_id not in running:
                self._end.pop(job_id, None)
            elif job_id not in self._end:
                self.grant(job_id, view.now)

    def grant(self, job_id: str, now: float) -> None:
        """A new lease for `job_id` from `now`."""
        end = self._end[job_id] = now + self.length
        heapq.heappush(self._heap, (end, job_id))

    def revoke(self, job_id: str) -> None:
        self._end.pop(job_id, None)

    def _front(self, now: float) -> tuple[float, str] | None:
        """The earliest live lease end; one that passed while nobody waited was won back
        unopposed, lease after lease, so it runs on to its next end at or after `now`."""
        heap, ends = self._heap, self._end
        past = now - _LEASE_TOLERANCE * max(1.0, now)
        while heap:
            end, job_id = heap[0]
            if ends.get(job_id) != end:
                heapq.heappop(heap)
            elif end < past:
                end += math.ceil((now - end) / self.length) * self.length
                ends[job_id] = end
                heapq.heapreplace(heap, (end, job_id))
            else:
                return heap[0]
        return None

    def next_end(self, view: ClusterView) -> float | None:
        self.sync(view)
        front = self._front(view.now)
        return front[0] if front is not None else None

    def ending(self, view: ClusterView) -> list[str]:
        """The jobs whose leases end now, in (end, job id) order; each must be granted a new
        lease or revoked."""
        self.sync(view)
        now = view.now
        horizon = now + _LEASE_TOLERANCE * max(1.0, now)
        ended = []
        while (front := self._front(now)) is not None and front[0] <= horizon:
            heapq.heappop(self._heap)
            ended.append(front[1])
        return ended


class Rounds:
    """Leases that all end together on a global clock, at t = k·`length` (`leases=rounds`):
    at each round end every running job's lease ends and the whole cluster goes to the same
    auction. A job launched between rounds holds its GPUs to the next round end."""

    def __init__(self, length: float) -> None:
        self.length = length

    def next_end(self, view: ClusterView) -> float:
        return (math.floor(view.now / self.length + _LEASE_TOLERANCE) + 1) * self.length

    def ending(self, view: ClusterView) -> list[str]:
        """Every running job, in job id order, at a round end; nobody between rounds."""
        now = view.now
        boundary = round(now / self.length) * self.length
        if abs(now - boundary) > _LEASE_TOLERANCE * max(1.0, now):
            return []
        return sorted(view.running)

    def grant(self, job_id: str, now: float) -> None:
        """Every lease runs to the round's end: nothing to record."""

    def revoke(self, job_id: str) -> None:
        """Every lease runs to the round's end: nothing to record."""
