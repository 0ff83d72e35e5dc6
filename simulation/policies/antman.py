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

from collections.abc import Iterator

from simulation.decisions import Decision, Launch, Placement, SetShare
from simulation.interleaving import job_profile
from simulation.model import JobSpec
from simulation.policies.base import Param, Policy, register
from simulation.policies.ordering import pool_preference
from simulation.shared_placement import fit_placement, physical_free, share_changed
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


@register
class AntMan(Policy):
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

    def idle_share(self, host: JobView) -> float:
        """What an opportunistic guest may use of `host`'s GPUs without slowing it."""
        fraction = gpu_stage_fraction(host.spec)
        if fraction is None:
            return self.default_idle_share
        return max(0.0, 1.0 - fraction)

    def _current_hosts(self, view: ClusterView) -> dict[str, str]:
        """Guest -> host for pairs still running together on the same placement."""
        hosts: dict[str, str] = {}
        for guest_id, host_id in self._host_of.items():
            if guest_id in view.running and host_id in view.running:
                if view.running[guest_id].placement == view.running[host_id].placement:
                    hosts[guest_id] = host_id
        return hosts

    def schedule(self, view: ClusterView) -> Iterator[Decision]:
        self._host_of = self._current_hosts(view)
        hosted = set(self._host_of.values())
        occupied: list[Placement] = [
            job.placement for job in view.running.values() if job.job_id not in self._host_of
        ]
        free = physical_free(view, occupied)
        waiting = sorted(view.queue.values(),
                         key=lambda j: (j.spec.priority, j.submit_time, j.job_id))
        for job in waiting:
            if not is_guaranteed(job):
                host = self._best_host(view, job, hosted)
                if host is not None:
                    self._host_of[job.job_id] = host.job_id
                    hosted.add(host.job_id)
                    yield Launch(job.job_id, host.placement)
                    continue
            spec = job.spec
            placement = fit_placement(view, free, spec.num_gpus,
                                      gpus_per_worker=spec.gpus_per_worker,
                                      pools=pool_preference(view, spec))
            if placement is not None:
                yield Launch(job.job_id, placement)
        yield from self._shares(view)

    def _best_host(self, view: ClusterView, guest: JobView, hosted: set[str]) -> JobView | None:
        """The running guaranteed job without a guest that leaves `guest` the most GPU time."""
        best: JobView | None = None
        best_share = 0.0
        allowed = set(pool_preference(view, guest.spec))
        for host in view.running.values():
            if (not is_guaranteed(host) or host.job_id in hosted
                    or host.gpus != guest.spec.num_gpus
                    or any(s.gpus % guest.spec.gpus_per_worker
                           or view.servers[s.server].pool not in allowed
                           for s in host.placement)):
                continue
            share = self.idle_share(host)
            if share > best_share:
                best, best_share = host, share
        return best

    def _shares(self, view: ClusterView) -> Iterator[Decision]:
        """Guests run on their host's idle time; everyone else at full speed."""
        hosted = {host: guest for guest, host in self._host_of.items()}
        for job in list(view.running.values()):
            if job.job_id in self._host_of:
                share = self.idle_share(view.job(self._host_of[job.job_id]))
            elif job.job_id in hosted:
                share = 1.0 - self.guaranteed_interference
            else:
                share = 1.0
            if share_changed(job, share):
                yield SetShare(job.job_id, share)
