"""Themis: finish-time fairness with leases (Mahajan et al., NSDI'20 §3), as Muri §6 uses it.

Muri (SIGCOMM'22 §6.1, §6.3) runs Themis as a duration-unaware baseline on the same
Philly traces; its simulator (Rivendile/Muri ``run_sim.py``, ``themis_sim_jobs``) solves a
Gavel-style max-min program over ρ. Themis' own partial-allocation auction is not in our
papers folder, so this module implements the widely used simplification of it:

- **Finish-time fairness.** A job's ρ = T_shared / T_independent. T_independent is its
  running time alone on its requested GPUs in a cluster cut into N equal shares (N = jobs
  running or waiting now, G = GPUs that can host training): ``duration × max(1, g·N / G)``
  — a job asking for more than G/N GPUs runs proportionally slower on its share.
  T_shared = time since submission + remaining time at the current allocation (its rate on
  the GPUs it holds). A waiting job has no allocation; its remaining time is taken at its
  requested GPUs on the reference GPU (as if it started now), so its ρ grows with every
  second it waits instead of being infinite for every waiting job alike. Durations are the
  scheduler's *predicted* ones (`JobView.predicted_duration`).
- **Leases and auction**, `leases=per-job` (Themis §3: a job holds its GPUs for a lease, and
  only the resources of an expired lease go back to the arbiter for auction; not the default,
  see below). A lease runs `lease` seconds from when its job got its GPUs. When leases expire
  while jobs wait, their GPUs and any free GPU are auctioned among the M jobs that wait or
  whose leases expired: the ``ceil((1-f)·M)`` with the worst ρ (`fairness_fraction` f) win GPUs
  greedily in decreasing ρ (instead of the auction's bids and proportional-fair allocation);
  what they leave — Themis' *leftover allocation* — goes to the others in a random order
  drawn from the policy's seeded RNG. An expired job that wins keeps its GPUs with a new
  lease (no restart); one that loses is preempted (a restart, 63 s). A lease that expires
  while nobody waits is won back unopposed. Jobs holding unexpired leases are never touched.
  `leases=global` (default, the rule before issue #16): leases end together every `lease`
  seconds on a global clock (t = k·lease) and each lease end re-auctions the whole cluster
  over all N jobs, preempting every running job outside the winners. Measured on
  muri_trace3 (8 × 8, `benchmarks/bench_muri_traces.py`), per-job leases restart jobs more,
  not less (39.5 restarts per job against 21.5: an expiring job almost always loses its GPUs
  to a waiting job, whose ρ grows while it waits) and cost 5x the CPU (an auction at every
  expiry), so the default stays global until the auction weighs what a restart costs.
- **Between lease ends** (arrivals, completions) nothing is preempted: GPUs that free up go to
  waiting jobs in decreasing ρ (work-conserving, non-preemptive).
- Ties in ρ go to the earlier submission, then the job id. Non-preemptible running jobs keep
  their GPUs whatever their ρ.

Speed (issue #22): every round ranks the contending jobs, so the parts of ρ that do not change
while a job waits or keeps its GPUs are kept per job (`Contenders`, fed by the engine's queue
and allocation logs), and a round computes ρ from them with the same float operations as
`finish_time_fairness`: in numpy, or in Python when few jobs wait; only a running job's
remaining work is read per job, at lease ends. Between lease ends only the waiting jobs that
fit the free GPUs are ranked; at lease ends the order is made piece by piece, since the walk
(`greedy_keep`, `preemptive_schedule`'s in a few numpy steps) usually ends early; a
per-job auction ranks the waiting jobs the same way. Equal ρ are ordered by submission and
job id exactly as the definition.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Iterator
from operator import attrgetter, itemgetter

import numpy as np

from simulation.decisions import Decision, Launch, Preempt
from simulation.policies.base import Param, Policy, register
from simulation.policies.ordering import launch_in_order, place_requested, training_capacity
from simulation.policies.srtf import remaining_seconds
from simulation.state import JobStatus
from simulation.view import ClusterView, JobView

_LEASE_TOLERANCE = 1e-6
_REMAINING_WORK = attrgetter("remaining_work")
_FEW_WAITING = 150  # up to this many waiting jobs, Python ranks them faster than numpy


def current_rate(view: ClusterView, job: JobView) -> float:
    """Work-seconds per second a job gets now; a waiting job is rated at its request."""
    spec = job.spec
    if job.status != JobStatus.RUNNING:
        return view.throughput.rate(spec.model, spec.num_gpus, spec.num_gpus, 1.0)
    speed = min(view.servers[slot.server].speed for slot in job.placement)
    return view.throughput.rate(spec.model, spec.num_gpus, job.gpus, speed) * job.share


def finish_time_fairness(view: ClusterView, job: JobView, contenders: int, capacity: int
                         ) -> float:
    """ρ = T_shared / T_independent (Themis §3.2) with the module's simplifications."""
    spec = job.spec
    share_gpus = capacity / max(1, contenders)
    independent = job.predicted_duration * max(1.0, spec.num_gpus / share_gpus)
    rate = current_rate(view, job)
    remaining = remaining_seconds(job) / rate if rate > 0 else math.inf
    shared = view.now - job.submit_time + remaining
    return shared / independent if independent > 0 else math.inf


class Rows:
    """Jobs with float columns kept in one numpy array: `put` and `drop` cost O(1) (the last
    row takes a dropped row's place), and a round reads whole columns without building them."""

    def __init__(self, width: int) -> None:
        self.ids: list[str] = []
        self.views: list[JobView] = []
        self._at: dict[str, int] = {}
        self._data = np.empty((width, 256))

    def __len__(self) -> int:
        return len(self.ids)

    def put(self, job: JobView, values: tuple[float, ...]) -> None:
        at = self._at.get(job.job_id)
        if at is None:
            at = self._at[job.job_id] = len(self.ids)
            if at == self._data.shape[1]:
                self._data = np.concatenate([self._data, np.empty_like(self._data)], axis=1)
            self.ids.append(job.job_id)
            self.views.append(job)
        self._data[:, at] = values

    def drop(self, job_id: str) -> None:
        at = self._at.pop(job_id, None)
        if at is None:
            return
        last = len(self.ids) - 1
        if at != last:
            moved = self.ids[at] = self.ids[last]
            self.views[at] = self.views[last]
            self._data[:, at] = self._data[:, last]
            self._at[moved] = at
        self.ids.pop()
        self.views.pop()

    def column(self, index: int) -> np.ndarray:
        """The column's live values (a view: valid until the next `put` or `drop`)."""
        return self._data[index, : len(self.ids)]


# Columns of `Contenders.rows`. LEFT: a waiting job's remaining seconds at its requested rate;
# SCALE: a running job's predicted / true duration; RATE: its rate now; HELD: its GPUs.
SUBMIT, DURATION, GPUS, LEFT, SCALE, RATE, HELD, PINNED, RUNNING = range(9)


class Contenders:
    """The jobs that wait or run, each with what its ρ needs that changes only when it enters
    the queue or its GPUs change, kept from the engine's queue and allocation logs: in numpy
    columns (`rows`), and for the waiting jobs also as Python tuples (`waiting`), cheaper to
    rank than arrays when few jobs wait. (A job's share changes only by `SetShare`, which
    Themis never makes.)"""

    def __init__(self) -> None:
        self._view: ClusterView | None = None

    def sync(self, view: ClusterView) -> None:
        if view is not self._view:  # a new run or snapshot: read the logs from the start
            self._view, self._queued, self._moved = view, 0, 0
            self.rows = Rows(9)
            # job id -> (submit time, predicted duration, GPUs, LEFT, job)
            self.waiting: dict[str, tuple[float, float, int, float, JobView]] = {}
        queued, self._queued = view.queued_since(self._queued)
        moved, self._moved = view.allocations_since(self._moved)
        waiting, running = view.queue.keys(), view.running.keys()
        rows = self.rows
        for job_id in dict.fromkeys(queued + moved):
            job = view.job(job_id)
            spec = job.spec
            if job_id in waiting:
                rate = current_rate(view, job)
                left = remaining_seconds(job) / rate if rate > 0 else math.inf
                rows.put(job, (spec.submit_time, job.predicted_duration, spec.num_gpus, left,
                               1.0, 0.0, 0, False, False))
                self.waiting[job_id] = (spec.submit_time, job.predicted_duration,
                                        spec.num_gpus, left, job)
                continue
            self.waiting.pop(job_id, None)
            if job_id in running:
                scale = job.predicted_duration / spec.duration if spec.duration > 0 else 1.0
                rows.put(job, (spec.submit_time, job.predicted_duration, spec.num_gpus, 0.0,
                               scale, current_rate(view, job), job.gpus, not spec.preemptible,
                               True))
            else:
                rows.drop(job_id)


def fairness(now: float, submit: np.ndarray, left: np.ndarray, duration: np.ndarray,
             gpus: np.ndarray, share_gpus: float) -> np.ndarray:
    """`finish_time_fairness` of many jobs, with the same float operations in the same order;
    `left` is `remaining_seconds / current_rate` (inf when the rate is 0)."""
    shared = (now - submit) + left
    independent = duration * np.maximum(1.0, gpus / share_gpus)
    positive = independent > 0
    rho = np.full(len(shared), math.inf)
    np.divide(shared, independent, out=rho, where=positive)
    return rho


def worst_first(rho: np.ndarray, submit: np.ndarray, job_id: Callable[[int], str],
                index: np.ndarray) -> np.ndarray:
    """`index` (rows of `rho` and `submit`) in Themis order, as `sorted` orders (-ρ, submit
    time, job id): two stable numpy sorts, then each run of equal ρ and submit time sorted
    by job id in Python."""
    order = index[np.argsort(submit[index], kind="stable")]
    order = order[np.argsort(-rho[order], kind="stable")]
    ranked, submitted = rho[order], submit[order]
    tied = (ranked[1:] == ranked[:-1]) & (submitted[1:] == submitted[:-1])
    if tied.any():
        starts = np.flatnonzero(tied & ~np.concatenate(([False], tied[:-1]))).tolist()
        ends = np.flatnonzero(tied & ~np.concatenate((tied[1:], [False]))).tolist()
        for start, end in zip(starts, ends, strict=True):  # order[start:end + 2] tie
            order[start:end + 2] = sorted(order[start:end + 2].tolist(), key=job_id)
    return order


def worst_first_in_pieces(rho: np.ndarray, submit: np.ndarray, job_id: Callable[[int], str],
                          first: int) -> Iterator[np.ndarray]:
    """`worst_first` of all rows, in consecutive pieces: about `first` rows (more when ρ ties
    at the cut), then twice as many each time. A walk that needs only the front of the order
    pays a partition, not a sort, for the rest."""
    rest = np.arange(len(rho))
    size = max(1, first)
    while len(rest) > size:
        values = rho[rest]
        cut = -np.partition(-values, size - 1)[size - 1]
        front = values >= cut  # every row tied with the cut: the piece is a prefix
        yield worst_first(rho, submit, job_id, rest[front])
        rest = rest[~front]
        size *= 2
    if len(rest):
        yield worst_first(rho, submit, job_id, rest)


def greedy_keep(need: np.ndarray, budget: int) -> tuple[np.ndarray, int]:
    """Which jobs `preemptive_schedule`'s walk keeps, given each one's GPUs in walk order
    (0 for a non-preemptible running job, kept anyway), and the budget left: a job is kept if
    it fits what the jobs kept before it left, and the walk ends when nothing is left. Runs of
    jobs that fit together are taken in one step, then the next job that fits is found by one
    comparison."""
    kept = np.zeros(len(need), dtype=bool)
    pos = 0
    while pos < len(need) and budget > 0:
        together = np.cumsum(need[pos:])
        fit = int(np.searchsorted(together, budget, side="right"))
        if fit:
            kept[pos:pos + fit] = True
            budget -= int(together[fit - 1])
            pos += fit
        if pos >= len(need) or budget <= 0:
            break
        later = np.flatnonzero(need[pos + 1:] <= budget)  # need[pos] does not fit
        if not len(later):
            break
        pos += 1 + int(later[0])
    return kept, budget


def auction_participants(contenders: int, fairness_knob: float) -> int:
    """How many of the worst-ρ jobs bid in an auction: the 1 - f fraction of the contenders
    (Themis §5.2's fairness knob f: f = 0 lets every job bid, the most efficient; f → 1 only
    the least fair one, the most fair), at least one."""
    return min(contenders, max(1, math.ceil((1.0 - fairness_knob) * contenders - 1e-9)))


@register
class Themis(Policy):
    name = "themis"
    description = "Finish-time fairness (ρ) with leases; preemptive at lease ends."
    paper = "Themis NSDI'20 §3 (simplified auction); Muri SIGCOMM'22 §6 baseline"
    params = (
        Param("lease", float, 600.0, "lease length in seconds; reallocation at lease ends",
              bounds=(1.0, 86_400.0)),
        Param("fairness_fraction", float, 0.8, "f, Themis' fairness knob: only the 1 - f "
              "fraction of jobs with the worst ρ bid (0: all bid; 1: only the least fair)",
              bounds=(0.0, 1.0)),
        Param("leases", str, "global", "global: every lease ends at t = k·lease and the whole "
              "cluster is re-auctioned; per-job: a lease runs `lease` s from when its job got "
              "GPUs and only expired leases are re-auctioned (Themis §3)",
              choices=("per-job", "global")),
    )
    interval = None  # woken at lease ends; arrivals and completions are events
    lease: float
    fairness_fraction: float
    leases: str

    def __init__(self, **values: object) -> None:
        super().__init__(**values)
        self._contenders = Contenders()
        self._expiry: dict[str, float] = {}  # running job -> when its lease expires (per-job)
        self._lease_view: ClusterView | None = None

    def at_lease_end(self, now: float) -> bool:
        boundary = round(now / self.lease) * self.lease
        return abs(now - boundary) <= _LEASE_TOLERANCE * max(1.0, now)

    def next_wakeup(self, view: ClusterView) -> float | None:
        if not view.queue:
            return None  # with nobody waiting a lease end would keep every job as it is
        if self.leases == "per-job":
            self._sync_leases(view)
            return min(self._expiry.values(), default=None)
        return (math.floor(view.now / self.lease + _LEASE_TOLERANCE) + 1) * self.lease

    def _sync_leases(self, view: ClusterView) -> None:
        """Forget the leases of jobs no longer running; a running job the policy did not
        launch (a new run or snapshot) holds a lease from the moment it is first seen. A
        lease that expired while nobody waited was won back unopposed: it runs on from its
        last expiry, one lease at a time."""
        if view is not self._lease_view:
            self._lease_view, self._expiry = view, {}
        now, running = view.now, view.running
        if len(self._expiry) != len(running) or any(j not in running for j in self._expiry):
            self._expiry = {job_id: self._expiry.get(job_id, now + self.lease)
                            for job_id in running}
        past = now - _LEASE_TOLERANCE * max(1.0, now)
        for job_id, end in self._expiry.items():
            if end < past:
                self._expiry[job_id] = end + math.ceil((now - end) / self.lease) * self.lease

    def _granting(self, view: ClusterView, decisions: Iterable[Decision]
                  ) -> Iterator[Decision]:
        """`decisions`, starting a lease for each job launched."""
        for decision in decisions:
            if isinstance(decision, Launch):
                self._expiry[decision.job_id] = view.now + self.lease
            yield decision

    def schedule(self, view: ClusterView) -> Iterator[Decision]:
        if not view.queue:
            return
        self._contenders.sync(view)
        if self.leases == "per-job":
            self._sync_leases(view)
            horizon = view.now + _LEASE_TOLERANCE * max(1.0, view.now)
            expired = [job_id for job_id, end in self._expiry.items() if end <= horizon]
            if expired:
                yield from self._granting(view, self._expired_auction(view, expired))
            yield from self._granting(view, self._work_conserving(view))
            return
        if self.at_lease_end(view.now):
            yield from self._lease_end(view)
            return
        yield from self._work_conserving(view)

    def _work_conserving(self, view: ClusterView) -> Iterator[Decision]:
        """Between lease ends: waiting jobs take free GPUs in decreasing ρ, nobody is
        preempted."""
        if not view.queue:
            return
        self._contenders.sync(view)  # an auction in this round may have started or stopped jobs
        free = sum(view.free_gpus(pool.name) for pool in view.spec.pools)
        smallest = view.smallest_queued_gpus()
        if free <= 0 or free < smallest:
            return  # no waiting job fits
        # A job asking more than is free now cannot start this round, so it is not ranked.
        if len(view.queue) <= _FEW_WAITING:
            ordered: Iterable[JobView] = self._few_in_order(view, free)
        else:
            ordered = self._many_in_order(view, free, smallest)
        yield from launch_in_order(view, ordered, blocking=False)

    def _few_in_order(self, view: ClusterView, free: int) -> list[JobView]:
        """The waiting jobs that fit `free` GPUs, worst ρ first, ranked in Python (as
        `finish_time_fairness` computes ρ, from the kept tuples)."""
        now, share_gpus = view.now, self._share_gpus(view)
        scored = []
        for job_id, (submit, duration, gpus, left, job) in self._contenders.waiting.items():
            if gpus <= free:
                independent = duration * max(1.0, gpus / share_gpus)
                shared = now - submit + left
                rho = shared / independent if independent > 0 else math.inf
                scored.append((-rho, submit, job_id, job))
        scored.sort(key=itemgetter(0, 1, 2))
        return [entry[3] for entry in scored]

    def _many_in_order(self, view: ClusterView, free: int, smallest: int) -> Iterator[JobView]:
        """`_few_in_order` in numpy, made piece by piece: the walk stops after a few
        launches."""
        rows = self._contenders.rows
        gpus = rows.column(GPUS)
        fits = np.flatnonzero((gpus <= free) & (rows.column(RUNNING) == 0))
        submit = rows.column(SUBMIT)[fits]
        rho = fairness(view.now, submit, rows.column(LEFT)[fits], rows.column(DURATION)[fits],
                       gpus[fits], self._share_gpus(view))
        pieces = worst_first_in_pieces(rho, submit, lambda i: rows.ids[fits[i]],
                                       2 * free // max(1, smallest) + 8)
        views = rows.views
        return (views[fits[i]] for piece in pieces for i in piece.tolist())

    @staticmethod
    def _share_gpus(view: ClusterView) -> float:
        """G/N: the GPUs of a job's equal share of the cluster (`finish_time_fairness`)."""
        return training_capacity(view) / max(1, len(view.running) + len(view.queue))

    def _expired_auction(self, view: ClusterView, expired: list[str]) -> Iterator[Decision]:
        """Themis §3 with per-job leases: the GPUs of expired leases (and any free GPU) go to
        auction among the waiting jobs and the jobs whose leases expired. The ⌈(1-f)·M⌉ worst-ρ
        of these M jobs win greedily in decreasing ρ, the leftover goes to the others in
        seeded random order; an expired job that wins keeps its GPUs with a new lease (no
        restart), one that loses is preempted. Jobs holding unexpired leases are not touched.
        """
        now, running = view.now, view.running
        offered: list[JobView] = []
        for job_id in expired:
            job = running[job_id]
            if job.spec.preemptible:
                offered.append(job)
            else:
                self._expiry[job_id] = now + self.lease  # a pinned job keeps its GPUs
        if not offered:
            return
        rows = self._contenders.rows
        waiting = np.flatnonzero(rows.column(RUNNING) == 0)
        submit = rows.column(SUBMIT)[waiting]
        gpus = rows.column(GPUS)[waiting]
        capacity = training_capacity(view)
        rho = fairness(now, submit, rows.column(LEFT)[waiting], rows.column(DURATION)[waiting],
                       gpus, self._share_gpus(view))
        contenders = len(running) + len(view.queue)
        rho = np.concatenate([rho, [finish_time_fairness(view, job, contenders, capacity)
                                    for job in offered]])
        submit = np.concatenate([submit, [job.submit_time for job in offered]])
        need = np.concatenate([gpus, [job.gpus for job in offered]]).astype(np.int64)
        first = len(waiting)
        ids, views = rows.ids, rows.views

        def job_id(i: int) -> str:
            return ids[waiting[i]] if i < first else offered[i - first].job_id

        budget = (sum(view.free_gpus(pool.name) for pool in view.spec.pools)
                  + sum(job.gpus for job in offered))
        winners = auction_participants(len(rho), self.fairness_fraction)
        kept_parts: list[np.ndarray] = []
        walked = 0
        pieces = worst_first_in_pieces(rho, submit, job_id, budget + 16)
        for piece in pieces:
            shuffled = walked + len(piece) > winners
            if shuffled:  # the walk reaches the leftover: order it all, at random
                leftover = [*piece[winners - walked:].tolist(),
                            *(i for rest in pieces for i in rest.tolist())]
                self.rng.shuffle(leftover)
                piece = np.concatenate([piece[:winners - walked],
                                        np.array(leftover, dtype=np.intp)])
            kept, budget = greedy_keep(need[piece], budget)
            kept_parts.append(piece[kept])
            walked += len(piece)
            if budget <= 0 or shuffled:
                break
        won = np.concatenate(kept_parts).tolist()
        kept_offered = {i - first for i in won if i >= first}
        for index, job in enumerate(offered):
            if index in kept_offered:
                self._expiry[job.job_id] = now + self.lease
            else:
                del self._expiry[job.job_id]
                yield Preempt(job.job_id)
        for i in won:
            if i < first:
                launch = place_requested(view, views[waiting[i]])
                if launch is not None:
                    yield launch

    def _lease_end(self, view: ClusterView) -> Iterator[Decision]:
        """The auction: the ⌈(1-f)·N⌉ worst-ρ jobs first, the rest in seeded random order, and
        the highest of that order that fit keep or take GPUs (`preemptive_schedule`).

        The walk usually ends (no GPU left) inside the auctioned front, so the order is made
        piece by piece and the leftover is ordered only if the walk reaches it; its shuffle
        draws from the RNG all the same, so later lease ends draw as the definition's."""
        rows = self._contenders.rows
        running = rows.column(RUNNING) != 0
        on = np.flatnonzero(running)
        left = rows.column(LEFT).copy()
        views = rows.views
        remaining = np.fromiter(map(_REMAINING_WORK, map(views.__getitem__, on.tolist())),
                                float, len(on)) * rows.column(SCALE)[on]
        rate = rows.column(RATE)[on]
        np.divide(remaining, rate, out=remaining, where=rate > 0)
        remaining[rate <= 0] = math.inf
        left[on] = remaining
        submit = rows.column(SUBMIT)
        rho = fairness(view.now, submit, left, rows.column(DURATION), rows.column(GPUS),
                       self._share_gpus(view))
        pinned = rows.column(PINNED) != 0
        held = rows.column(HELD)
        need = np.where(running, np.where(pinned, 0, held), rows.column(GPUS)).astype(np.int64)
        budget = training_capacity(view) - int(held[pinned].sum())
        winners = auction_participants(len(rho), self.fairness_fraction)
        pieces = worst_first_in_pieces(rho, submit, rows.ids.__getitem__, budget + 16)
        kept_parts: list[np.ndarray] = []
        walked = 0
        shuffled = False
        for piece in pieces:
            if walked + len(piece) > winners:  # the walk reaches the leftover: order it all
                leftover = [*piece[winners - walked:].tolist(),
                            *(i for rest in pieces for i in rest.tolist())]
                self.rng.shuffle(leftover)
                piece = np.concatenate([piece[:winners - walked],
                                        np.array(leftover, dtype=np.intp)])
                shuffled = True
            kept, budget = greedy_keep(need[piece], budget)
            kept_parts.append(piece[kept])
            walked += len(piece)
            if budget <= 0 or shuffled:
                break
        if not shuffled:
            self.rng.shuffle([None] * (len(rho) - winners))
        kept = np.concatenate(kept_parts)
        starting = kept[~running[kept]]
        if not len(starting):
            return
        evict = running & ~pinned
        evict[kept] = False
        evicted = {rows.ids[i] for i in np.flatnonzero(evict).tolist()}
        for job_id in [job_id for job_id in view.running.keys() if job_id in evicted]:
            yield Preempt(job_id)
        for i in starting.tolist():
            launch = place_requested(view, views[i])
            if launch is not None:
                yield launch
