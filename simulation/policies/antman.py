"""AntMan: GPU sharing between resource-guaranteed and opportunistic jobs (Xiao et al.,
OSDI'20 §3–4), as Muri SIGCOMM'22 §6.3–6.4 uses it.

Muri compares against AntMan only in simulation ("AntMan does not open-source its scheduler
part"), describing it as FIFO, non-preemptive and sharing GPUs; its simulator
(Rivendile/Muri ``run_sim.py``, ``antman_sim_jobs``) packs at most two jobs per GPU, a
guaranteed job with an opportunistic one, and never slows the guaranteed job. The trace's
``priority`` says which is which (0 = resource-guaranteed, 1 = opportunistic).

Each round (on arrivals and completions; nothing changes between them):

1. Waiting jobs are taken in (priority, submit time, id) order, as Muri's simulator sorts
   them; every waiting job is tried, so a job that does not fit does not block later ones.
2. A **guaranteed** job is placed best-fit on physically free GPUs (no GPU another job holds)
   and runs at share ``1 - guaranteed_interference`` while it hosts an opportunistic job
   (default 0: AntMan's GPU-operator isolation keeps it at full speed), else 1.
3. An **opportunistic** job first looks for a running guaranteed job with the same GPU count
   that hosts nobody yet, and takes exactly its placement (the invariant of
   `simulation.shared_placement`: jobs sharing GPUs hold identical placements). It runs on
   the host's idle GPU time: share = 1 - the GPU stage's fraction of the host's iteration
   (its Muri profile, from the trace or `simulation.interleaving`'s model table), or
   `default_idle_share` when the host has no profile. Hosts are scanned in submit order and
   the one leaving the most idle capacity wins (ties: earlier submission). With no host, it
   takes physically free GPUs alone (share 1), as Muri's simulator tries every pending job.
4. When a host finishes, its guest keeps its GPUs and its share goes back to 1. Nothing is
   ever preempted, and a lone opportunistic job is not joined by a guaranteed one later.

The GPU stage is the third of four stages (storage, CPU, GPU, network — the model table)
and the second of three in Muri's traces (``resource_time_0..2``, read as data, GPU and
network by Muri's ``antman_calc_iter_time``); any other profile length counts as no profile.
"""

from __future__ import annotations

from bisect import bisect_left, insort
from collections.abc import Iterator
from heapq import heapify, heappop, heappush

from simulation.decisions import Decision, Launch, Placement, SetShare
from simulation.interleaving import job_profile
from simulation.model import JobSpec
from simulation.policies.base import Param, Policy, register
from simulation.policies.ordering import pool_preference
from simulation.shared_placement import PhysicalFree, fit_placement, share_changed
from simulation.view import ClusterView, JobView

GUARANTEED = 0
_GPU_STAGE = {3: 1, 4: 2}  # stages in a profile -> index of its GPU stage


def gpu_stage_fraction(spec: JobSpec) -> float | None:
    """The share of one iteration a job spends on the GPU, or None without a usable profile."""
    profile = job_profile(spec)
    if profile is None or len(profile.stage_seconds) not in _GPU_STAGE:
        return None
    total = profile.iteration_seconds
    if total <= 0:
        return None
    return profile.stage_seconds[_GPU_STAGE[len(profile.stage_seconds)]] / total


def is_guaranteed(job: JobView) -> bool:
    return job.spec.priority == GUARANTEED


ClassKey = tuple[bool, int, int, str | None, str | None]


def _class_key(spec: JobSpec) -> ClassKey:
    """Waiting jobs of one class succeed or fail alike: same kind, size and constraints."""
    return (spec.priority == GUARANTEED, spec.num_gpus, spec.gpus_per_worker, spec.pool,
            spec.gpu_type)


@register
class AntMan(Policy):
    """The round of the module docstring, with work that follows what changed.

    Arrivals, completions and launches change little between rounds, so the policy keeps, per
    view: the waiting jobs of each class (`_class_key`) in the round's order, the running
    guaranteed jobs free to host a guest by GPU count in the order `_best_host` picks them,
    and the physically free GPUs (`PhysicalFree`). A round then tries the head of each class
    in the global order: a job that fails (no host, no room) means every later job of its
    class fails too — free GPUs and hosts only shrink within a round, and a host launched
    later in the round would have left the failed job room — so the class is done for the
    round. Shares are re-set only for jobs whose partner changed.
    """

    name = "antman"
    description = ("FIFO, non-preemptive; opportunistic jobs share guaranteed jobs' GPUs "
                   "using only their idle capacity.")
    paper = "AntMan OSDI'20 §3–4; Muri SIGCOMM'22 §6.3 baseline"
    params = (
        Param("default_idle_share", float, 0.5,
              "opportunistic share on a host without a profile", bounds=(0.0, 1.0)),
        Param("guaranteed_interference", float, 0.0,
              "slowdown of a guaranteed job while it hosts an opportunistic one",
              bounds=(0.0, 1.0)),
    )
    shares_gpus = True
    interval = None  # decisions change only at arrivals and completions
    default_idle_share: float
    guaranteed_interference: float

    def __init__(self, **values: object) -> None:
        super().__init__(**values)
        if not 0 < self.default_idle_share <= 1:
            raise ValueError("default_idle_share must lie in (0, 1]")
        if not 0 <= self.guaranteed_interference < 1:
            raise ValueError("guaranteed_interference must lie in [0, 1)")
        self._host_of: dict[str, str] = {}  # opportunistic job -> guaranteed job it shares
        self._idle: dict[str, float] = {}
        self._view: ClusterView | None = None

    def idle_share(self, host: JobView) -> float:
        """What an opportunistic guest may use of `host`'s GPUs without slowing it."""
        share = self._idle.get(host.job_id)
        if share is None:
            fraction = gpu_stage_fraction(host.spec)
            share = self.default_idle_share if fraction is None else max(0.0, 1.0 - fraction)
            self._idle[host.job_id] = share
        return share

    # -- what the policy keeps between rounds ------------------------------------------------

    def _reset(self, view: ClusterView) -> None:
        """Index `view` from scratch (a new run or a snapshot)."""
        self._view = view
        _, self._alloc_mark = view.allocations_since(0)
        _, self._queue_mark = view.queued_since(0)
        self._waiting: dict[ClassKey, list[tuple[int, float, str]]] = {}
        self._pools: dict[tuple[str | None, str | None], list[str]] = {}
        self._hosts: dict[int, list[tuple[float, int, str]]] = {}  # gpus -> (-share, seq, id)
        self._host_entry: dict[str, tuple[int, tuple[float, int, str]]] = {}
        self._seq: dict[str, int] = {}  # running job -> its place in the running dict's order
        self._next_seq = 0
        self._placement: dict[str, Placement] = {}  # running job -> its last seen placement
        self._guest_of: dict[str, str] = {}
        self._riders: dict[str, int] = {}  # server -> GPUs its guests hold
        running = view.running
        self._host_of = {
            guest: host for guest, host in self._host_of.items()
            if guest in running and host in running
            and running[guest].placement == running[host].placement
        }
        for guest, host in self._host_of.items():
            self._pair(guest, host, running[guest].placement)
        for job in running.values():
            self._runs(job.job_id, job.placement)
            self._index_host(view, job)
        self._free = PhysicalFree(view, self._riders)
        self._touched: set[str] = set(running.keys())
        for job in view.queue.values():
            self._wait(job)

    def _wait(self, job: JobView) -> None:
        spec = job.spec
        insort(self._waiting.setdefault(_class_key(spec), []),
               (spec.priority, spec.submit_time, job.job_id))

    def _runs(self, job_id: str, placement: Placement) -> None:
        """`job_id` was launched on `placement`: it is last in the running order."""
        self._next_seq += 1
        self._seq[job_id] = self._next_seq
        self._placement[job_id] = placement

    def _index_host(self, view: ClusterView, job: JobView) -> None:
        if (is_guaranteed(job) and job.job_id not in self._guest_of
                and job.job_id not in self._host_entry):
            share = self.idle_share(job)
            if share > 0:
                entry = (-share, self._seq[job.job_id], job.job_id)
                insort(self._hosts.setdefault(job.gpus, []), entry)
                self._host_entry[job.job_id] = (job.gpus, entry)

    def _unindex_host(self, job_id: str) -> None:
        found = self._host_entry.pop(job_id, None)
        if found is not None:
            hosts = self._hosts[found[0]]
            del hosts[bisect_left(hosts, found[1])]

    def _pair(self, guest: str, host: str, placement: Placement) -> None:
        self._host_of[guest] = host
        self._guest_of[host] = guest
        self._unindex_host(host)
        for slot in placement:
            self._riders[slot.server] = self._riders.get(slot.server, 0) + slot.gpus

    def _unpair(self, view: ClusterView, guest: str, dirty: set[str]) -> None:
        """The pair of `guest` no longer runs together: each runs (if it does) on its own."""
        host = self._host_of.pop(guest)
        del self._guest_of[host]
        for slot in self._placement.get(guest, ()):
            self._riders[slot.server] -= slot.gpus
            dirty.add(slot.server)
        self._touched.update((guest, host))
        if host in view.running:
            self._index_host(view, view.running[host])

    def _sync(self, view: ClusterView) -> None:
        """Catch up with the jobs that arrived, ended or moved since the last round."""
        if view is not self._view:
            self._reset(view)
        dirty: set[str] = set()
        changed, self._alloc_mark = view.allocations_since(self._alloc_mark)
        running = view.running
        for job_id in dict.fromkeys(changed):
            job = running.get(job_id)
            placement = job.placement if job is not None else ()
            if job is not None and self._placement.get(job_id) == placement:
                continue  # launched by this policy, already counted
            guest = job_id if job_id in self._host_of else self._guest_of.get(job_id)
            if guest is not None:
                self._unpair(view, guest, dirty)
            self._unindex_host(job_id)
            for slot in self._placement.pop(job_id, ()):
                dirty.add(slot.server)
            if job is None:
                self._seq.pop(job_id, None)
                continue
            if job_id in self._seq:  # resized or moved: its place in the order stays
                self._placement[job_id] = placement
            else:
                self._runs(job_id, placement)
            self._touched.add(job_id)
            dirty.update(slot.server for slot in placement)
            self._index_host(view, job)
        self._free.refresh(view, dirty, self._riders)
        queued, self._queue_mark = view.queued_since(self._queue_mark)
        queue = view.queue
        for job_id in dict.fromkeys(queued):
            if job_id in queue:
                self._wait(queue[job_id])

    # -- the round ---------------------------------------------------------------------------

    def schedule(self, view: ClusterView) -> Iterator[Decision]:
        self._sync(view)
        queue, waiting = view.queue, self._waiting
        heads = [(jobs[0], key) for key, jobs in waiting.items() if jobs]
        heapify(heads)
        while heads:
            _, key = heappop(heads)
            jobs = waiting[key]
            job_id = jobs[0][2]
            if job_id in queue:
                launch = self._launch(view, queue[job_id])
                if launch is None:
                    continue  # the class is done for this round
                yield launch
                self._index_host(view, view.running[job_id])  # a host from now on
            del jobs[0]
            if jobs:
                heappush(heads, (jobs[0], key))
        yield from self._shares(view)

    def _launch(self, view: ClusterView, job: JobView) -> Launch | None:
        """`job` on a host's GPUs or on free ones, or None when it fits nowhere now."""
        spec = job.spec
        job_id = job.job_id
        pools = self._pools.get((spec.pool, spec.gpu_type))
        if pools is None:
            pools = self._pools[spec.pool, spec.gpu_type] = pool_preference(view, spec)
        placement = None
        if not is_guaranteed(job):
            host = self._best_host(view, job, pools)
            if host is not None:
                placement = host.placement
                self._pair(job_id, host.job_id, placement)
                self._touched.add(host.job_id)
        if placement is None and self._free.may_fit(pools, spec.num_gpus):
            placement = fit_placement(view, self._free.free, spec.num_gpus,
                                      gpus_per_worker=spec.gpus_per_worker, pools=pools)
            if placement is not None:
                self._free.taken(placement)
        if placement is None:
            return None
        self._touched.add(job_id)
        self._runs(job_id, placement)
        return Launch(job_id, placement)

    def _best_host(self, view: ClusterView, guest: JobView, pools: list[str]
                   ) -> JobView | None:
        """The running guaranteed job without a guest that leaves `guest` the most GPU time
        (ties: the earliest in the running order), with its GPU count and whole workers of
        `guest` on servers of its pools."""
        per_worker = guest.spec.gpus_per_worker
        servers = view.servers
        for _, _, host_id in self._hosts.get(guest.spec.num_gpus, ()):
            host = view.running[host_id]
            if all(s.gpus % per_worker == 0 and servers[s.server].pool in pools
                   for s in host.placement):
                return host
        return None

    def _shares(self, view: ClusterView) -> Iterator[Decision]:
        """Guests run on their host's idle time; everyone else at full speed. Only jobs whose
        partner changed can need a new share, taken in the running order."""
        running = view.running
        touched = sorted((self._seq[j], j) for j in self._touched if j in running)
        self._touched = set()
        for _, job_id in touched:
            job = running[job_id]
            if job_id in self._host_of:
                share = self.idle_share(running[self._host_of[job_id]])
            elif job_id in self._guest_of:
                share = 1.0 - self.guaranteed_interference
            else:
                share = 1.0
            if share_changed(job, share):
                yield SetShare(job_id, share)
