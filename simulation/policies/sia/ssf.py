"""ssf and gssf: shortest service first (SIA §4.1).

Service is GPUs × running time, and both get accurate durations, as in the paper. `ssf`
orders each queue's pending jobs by service and keeps each queue within its quota (no
sharing); `gssf` treats the whole cluster as one global pool and orders every pending job
by service. Both are non-preemptive and greedy: a job that does not fit is skipped so a
smaller one behind it can start (the paper does not say; blocking would let one wide job
idle the pool, which defeats the point of preferring short jobs).
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterable, Iterator, Mapping

from sortedcontainers import SortedList

from simulation.decisions import Decision, Launch
from simulation.policies.base import register
from simulation.policies.sia.common import (
    QueuePolicy,
    idle_gpus,
    place_shared,
    queue_of,
    queue_quotas,
)
from simulation.view import ClusterView, JobView


def service(job: JobView) -> tuple[float, float, int]:
    """Shortest service first key: GPU-seconds, then submit time, then trace order (a
    queue's own order, so the key orders as a stable sort of the queue by service)."""
    return (job.spec.num_gpus * job.spec.duration, job.submit_time, job.trace_index)


# Jobs that place alike: (queue, GPUs, GPU type, GPUs per worker). Within a round free GPUs
# only shrink (these policies only launch), so once one job of a run does not place, none of
# its run does until the next round.
RunKey = tuple[str, int, str | None, int]


class ServiceRuns:
    """The waiting jobs in shortest-service order, one sorted run per `RunKey`, kept across
    rounds from the engine's queue and allocation logs (issue #16: thousands wait on Muri's
    traces, and sorting them all every round made ssf's rounds cost the queue's length).

    `launches` merges the runs that can still fit and drops a run at its first job that does
    not place, so a round visits the jobs it launches and one more per run."""

    def __init__(self) -> None:
        self._view: ClusterView | None = None

    def _reset(self, view: ClusterView) -> None:
        self._view = view
        self._queued_mark = self._moved_mark = 0
        self._runs: dict[RunKey, SortedList] = {}
        self._entry: dict[str, tuple[RunKey, tuple]] = {}  # waiting job -> (run, its entry)

    def sync(self, view: ClusterView, quotas: Mapping[str, int]) -> None:
        """Bring the runs up to the engine's queue."""
        if view is not self._view:
            self._reset(view)
        queued, self._queued_mark = view.queued_since(self._queued_mark)
        moved, self._moved_mark = view.allocations_since(self._moved_mark)
        waiting, entries = view.queue, self._entry
        for job_id in moved:
            if job_id not in waiting and job_id in entries:
                run, entry = entries.pop(job_id)
                self._runs[run].remove(entry)
        for job_id in queued:
            job = waiting.get(job_id)
            if job is None or job_id in entries:
                continue  # launched since, or already listed
            spec = job.spec
            run = (queue_of(spec, quotas), spec.num_gpus, spec.gpu_type, spec.gpus_per_worker)
            entry = (*service(job), job_id)
            entries[job_id] = (run, entry)
            self._runs.setdefault(run, SortedList()).add(entry)

    def launches(self, view: ClusterView, quotas: Mapping[str, int], queues: Iterable[str],
                 budget: Callable[[], int]) -> Iterator[Launch]:
        """Launches of the waiting jobs of `queues` in shortest-service order, each the
        cheapest that is at most `budget()` GPUs wide and places (`place_shared`); the
        caller lowers the budget as launches apply."""
        wanted = set(queues)
        heap = []
        for run, jobs in self._runs.items():
            if run[0] in wanted and jobs:
                entries = iter(jobs)
                heap.append((next(entries), run[1], entries))
        heapq.heapify(heap)
        while heap:
            limit = budget()
            if limit <= 0:
                return
            entry, gpus, entries = heap[0]
            launch = None
            if gpus <= limit:
                launch = place_shared(view, view.queue[entry[-1]], quotas)
            if launch is None:
                heapq.heappop(heap)  # the rest of its run does not fit or place either
                continue
            yield launch
            following = next(entries, None)
            if following is None:
                heapq.heappop(heap)
            else:
                heapq.heapreplace(heap, (following, gpus, entries))


class _ServiceFirst(QueuePolicy):
    interval = None  # decides only at events: a round without one starts nothing

    def __init__(self, **values: object) -> None:
        super().__init__(**values)
        self._runs = ServiceRuns()


@register
class ShortestServiceFirst(_ServiceFirst):
    name = "ssf"
    description = "Shortest service (GPUs × duration) first inside each quota pool; no sharing."
    paper = "SIA §4.1 (SSF)"

    def schedule(self, view: ClusterView) -> Iterator[Decision]:
        quotas = queue_quotas(view.spec)
        self._runs.sync(view, quotas)
        allocation = self.queue_usage(view, quotas).allocation
        for queue, quota in quotas.items():
            def budget(queue: str = queue, quota: int = quota) -> int:
                # a job wider than the quota starts once its queue holds nothing (fcfs-pools)
                idle = idle_gpus(view, quotas)
                return idle if allocation[queue] == 0 else min(idle, quota - allocation[queue])

            for launch in self._runs.launches(view, quotas, (queue,), budget):
                allocation[queue] += view.job(launch.job_id).spec.num_gpus
                yield launch


@register
class GlobalShortestServiceFirst(_ServiceFirst):
    name = "gssf"
    description = "Shortest service first over all pools as one global pool (shares quota)."
    paper = "SIA §4.1 (gSSF)"

    def schedule(self, view: ClusterView) -> Iterator[Decision]:
        quotas = queue_quotas(view.spec)
        self._runs.sync(view, quotas)
        yield from self._runs.launches(view, quotas, quotas, lambda: idle_gpus(view, quotas))
