"""Themis: finish-time fairness with leases (Mahajan et al., NSDI'20), as Muri §6 uses it.

Muri (SIGCOMM'22 §6.1, §6.3) runs Themis as a duration-unaware baseline on the same Philly
traces. Themis' paper is not in our papers folder; the rules below are its §3-§5 as we read
them (the lead may check them against the paper), with the simplifications named:

- **Finish-time fairness** (§3). A job's ρ = T_shared / T_independent. T_independent is its
  running time alone on its requested GPUs in a cluster cut into N equal shares (N = jobs
  running or waiting now, G = GPUs that can host training): ``duration × max(1, g·N / G)``.
  T_shared = time since submission + remaining time at the current allocation (its rate on
  the GPUs it holds). A waiting job's remaining time is taken at its requested GPUs (as if it
  started now), so its ρ grows with every second it waits. Durations are the scheduler's
  *predicted* ones (`JobView.predicted_duration`).
- **Leases** (§4-§5). A job that gets GPUs holds them for a lease of `lease` seconds (default
  10 minutes, the lease the paper evaluates with); only when a lease expires do its GPUs go
  back to the arbiter for auction. Jobs holding unexpired leases are never touched, so a job
  can lose its GPUs only at the end of one of its own leases: restarts per job are at most
  its running time / `lease`. A lease that expires while nobody waits is won back unopposed.
- **Rounds** (`leases=rounds`, not the default). Every lease ends on a global clock at
  t = k·`lease` and the whole cluster goes to one auction with the rules below (every
  running job is a holder whose lease ends). Muri's evaluation schedules its baselines so
  (six-minute rounds, Muri §5-§6.1; its authors' simulator re-decides Themis over every job),
  and `simulation/reproductions/muri.py` runs Themis this way. Per-job leases stay the
  default as the paper's rule. Restarts per job at 600 s (benchmarks/README.md): fewer on a
  light trace (muri_trace3 4.8 against 18.3 in rounds), more on an overloaded one (trace 4
  114 against 71); per-job leases cost more CPU there (one auction per lease end, against
  one per round for the whole cluster).
- **Auction** (§5). The GPUs of the leases that expire now and any free GPU are offered to
  the M jobs that could use them (the waiting jobs and the jobs whose leases expired). Only
  the ⌈(1-f)·M⌉ of them with the worst ρ bid (the fairness knob f, `fairness_fraction`,
  default 0.8: f = 0 lets every job bid, f → 1 only the least fair). Simplification: instead
  of bids and the partial-allocation mechanism, bidders win greedily in decreasing ρ.
- **Leftover allocation** (§5). What the bidders leave goes to the jobs that did not bid. A
  job whose lease expired first keeps what it holds (our choice where the paper leaves the
  leftover's order open: moving GPUs between jobs that did not bid buys no fairness and costs
  a restart); then waiting jobs that fit take the rest in a random order drawn from the
  policy's seeded RNG. An expired job that keeps its GPUs starts a new lease and is not
  restarted; one that loses them is preempted (a restart, 63 s).
- **Sources checked** (issue #16; the paper itself could not be read here). No public
  Themis we found lengthens the lease, charges a restart in the bid or keeps a loser's GPUs:
  each re-decides, at a lease end or event, the waiting jobs together with the jobs whose
  leases end, by ρ, and a running job that wins again keeps running without a restart.
  Muri's simulator (Rivendile/Muri 4e69a78 `simulator/run_sim.py`, `themis_sim_jobs`,
  L1823-2033) solves Gavel's min-max ρ at every arrival and completion (its
  `job_interval = 360`, L1831, is unused), preempts a running job it does not choose
  (L2002-2008) and takes a per-model 4-46 s overhead (`overhead_dict`, L29-35). Gavel
  (stanford-futuredata/gavel c4fa400 `scheduler/policies/finish_time_fairness.py` L81-100)
  estimates ρ as (time since start + remaining / allocated rate) / (isolated time so far +
  remaining / isolated rate) in 360 s rounds (`scheduler/scheduler.py` L60), a job on the
  same GPUs in the next round keeping its lease (L1464-1471). So the tens of restarts per job
  on loaded traces are Themis' time-slicing, not a departure from it; the lease length is the
  knob.
- **Placement sensitivity** (§3-§4: an app values a spread placement below a packed one).
  Our throughput model has no locality term (`view.throughput.rate` depends on the GPU count
  and speed only), so every placement of g GPUs is worth the same to a bidder: winners are
  placed best-fit (packed), and a job that keeps its lease keeps its placement.
- **Between auctions** (arrivals, completions) nothing is preempted: GPUs that free up go to
  waiting jobs in decreasing ρ (work-conserving, non-preemptive).
- Ties in ρ go to the earlier submission, then the job id. Non-preemptible jobs renew their
  leases whatever their ρ.

Speed (issues #16, #22): the parts of a waiting job's ρ that do not change while it waits are
kept per job (`Waiting`, fed by the engine's queue and allocation logs; T_independent only
until the share G/N changes) and a round computes ρ from them with the same float operations
as `finish_time_fairness`: in numpy, or in Python when few jobs wait. An auction ranks the
waiting rows in numpy and its few holders in Python beside them (a holder's rate and
prediction scale kept until its placement changes). Lease ends sit in a heap (`Leases`, fed by
the allocation log), so a round touches only the leases that end; an auction that no waiting
job fits ranks nobody, and one that provably ends as it began (`unopposed`: the best waiting
job that fits ranks below every holder, or is no bidder) bids nobody, most auctions on a
loaded trace. Otherwise it finds its bidders with one partition (`least_fair`) and the
bidders' winners one by one (`first_winners`), as the greedy walk (`walk`) usually ends after
a few. Between auctions only the waiting jobs that fit the free GPUs are ranked, and a round
whose auction changed nothing skips that pass while none fits. Equal ρ are ordered by
submission and job id exactly as the definition.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Iterator
from operator import itemgetter

import numpy as np

from simulation.decisions import Decision, Launch, Preempt
from simulation.policies.base import Param, Policy, register
from simulation.policies.ordering import launch_in_order, place_requested, training_capacity
from simulation.policies.srtf import prediction_scale, remaining_seconds
from simulation.policies.themis_leases import Leases, Rounds
from simulation.state import JobStatus
from simulation.view import ClusterView, JobView

_FEW_WAITING = 150  # up to this many waiting jobs, Python ranks them faster than numpy
_FEW_BIDDERS = 40  # up to this many bidders that fit, a Python sort finds the winners faster


def current_rate(view: ClusterView, job: JobView) -> float:
    """Work-seconds per second a job gets now; a waiting job is rated at its request."""
    spec = job.spec
    if job.status != JobStatus.RUNNING:
        return view.throughput.rate(spec.model, spec.num_gpus, spec.num_gpus, 1.0)
    speed = min(view.servers[slot.server].speed for slot in job.placement)
    return view.throughput.rate(spec.model, spec.num_gpus, job.gpus, speed) * job.share


def free_gpus(view: ClusterView) -> int:
    """Free GPUs in every pool."""
    pools = view.spec.pools
    if len(pools) == 1:
        return view.free_gpus(pools[0].name)
    return sum(view.free_gpus(pool.name) for pool in pools)


def share_gpus(view: ClusterView) -> float:
    """G/N: the GPUs of a job's equal share of the cluster (`finish_time_fairness`)."""
    return training_capacity(view) / max(1, len(view.running) + len(view.queue))


def independent_time(duration: float, gpus: float, share: float) -> float:
    """T_independent as `finish_time_fairness` computes it."""
    return duration * max(1.0, gpus / share)


def seconds_left(view: ClusterView, job: JobView) -> float:
    """Seconds a job still needs at its current rate (inf when it gets none)."""
    rate = current_rate(view, job)
    return remaining_seconds(job) / rate if rate > 0 else math.inf


def finish_time_fairness(view: ClusterView, job: JobView, contenders: int, capacity: int
                         ) -> float:
    """ρ = T_shared / T_independent (Themis §3.2) with the module's simplifications."""
    spec = job.spec
    independent = independent_time(job.predicted_duration, spec.num_gpus,
                                   capacity / max(1, contenders))
    shared = view.now - job.submit_time + seconds_left(view, job)
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


# Columns of `Waiting.rows`. LEFT: a waiting job's remaining seconds at its requested rate;
# INDEPENDENT: its T_independent at the current share of the cluster.
SUBMIT, DURATION, GPUS, LEFT, INDEPENDENT = range(5)


class Waiting:
    """The waiting jobs, each with what its ρ needs that changes only when it enters the
    queue, kept from the engine's queue and allocation logs: in numpy columns (`rows`), and as
    Python tuples (`jobs`), cheaper to rank than arrays when few jobs wait. T_independent
    changes only with the cluster's share (arrivals and completions, not the lease ends that
    make most rounds), so its column is recomputed only then."""

    def __init__(self) -> None:
        self._view: ClusterView | None = None

    def sync(self, view: ClusterView) -> None:
        if view is not self._view:  # a new run or snapshot: read the logs from the start
            self._view, self._queued, self._moved, self.share = view, 0, 0, math.nan
            self.rows = Rows(5)
            # job id -> (submit time, predicted duration, GPUs, LEFT, job)
            self.jobs: dict[str, tuple[float, float, int, float, JobView]] = {}
            self._durationless: set[str] = set()  # waiting jobs predicted to take no time
        share = share_gpus(view)
        if share != self.share:
            self.share = share  # G/N at the last sync (`share_gpus`)
            rows = self.rows
            rows.column(INDEPENDENT)[:] = rows.column(DURATION) * np.maximum(
                1.0, rows.column(GPUS) / share)
        queued, self._queued = view.queued_since(self._queued)
        moved, self._moved = view.allocations_since(self._moved)
        if not queued and not moved:
            return
        waiting = view.queue.keys()
        for job_id in dict.fromkeys(queued + moved):
            if job_id not in waiting:
                self.rows.drop(job_id)
                self.jobs.pop(job_id, None)
                self._durationless.discard(job_id)
                continue
            job = view.job(job_id)
            spec = job.spec
            predicted = job.predicted_duration
            if predicted <= 0:
                self._durationless.add(job_id)
            left = seconds_left(view, job)
            self.rows.put(job, (spec.submit_time, predicted, spec.num_gpus, left,
                                independent_time(predicted, spec.num_gpus, share)))
            self.jobs[job_id] = (spec.submit_time, predicted, spec.num_gpus, left, job)

    def fairness(self, now: float) -> np.ndarray:
        """ρ of every row (`fairness`), by a plain division while every T_independent is
        positive (no job predicted to take no time, a share of GPUs), as it nearly always
        is."""
        rows = self.rows
        return fairness(now, rows.column(SUBMIT), rows.column(LEFT), rows.column(INDEPENDENT),
                        positive=not self._durationless and self.share > 0)


def fairness(now: float, submit: np.ndarray, left: np.ndarray, independent: np.ndarray,
             positive: bool = False) -> np.ndarray:
    """`finish_time_fairness` of many jobs, with the same float operations in the same order;
    `left` is `remaining_seconds / current_rate` (inf when the rate is 0), `independent` is
    `independent_time`, known to be `positive` everywhere or not."""
    shared = now - submit
    shared += left
    if positive:
        shared /= independent
        return shared
    rho = np.full(len(shared), math.inf)
    np.divide(shared, independent, out=rho, where=independent > 0)
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


def bands(values: np.ndarray, index: np.ndarray, first: int) -> Iterator[np.ndarray]:
    """`index` (rows of `values`) cut into bands of decreasing value: about the `first` rows
    with the largest values (more when values tie at the cut: a band never splits a tie), then
    twice as many each time. A walk that needs only the front of an order pays a partition,
    not a sort, for the rest."""
    rest = index
    size = max(1, first)
    while len(rest) > size:
        part = values[rest]
        cut = np.partition(part, len(part) - size)[len(part) - size]  # the size-th largest
        front = part >= cut
        yield rest[front]
        rest = rest[~front]
        size *= 2
    if len(rest):
        yield rest


def worst_first_in_pieces(rho: np.ndarray, submit: np.ndarray, job_id: Callable[[int], str],
                          first: int) -> Iterator[np.ndarray]:
    """`worst_first` of all rows, in consecutive pieces (`bands` of ρ)."""
    for band in bands(rho, np.arange(len(rho)), first):
        yield worst_first(rho, submit, job_id, band)


def least_fair(rho: np.ndarray, count: int, tie_key: Callable[[int], tuple[float, str]]
               ) -> np.ndarray:
    """Which rows are the `count` first in Themis order (-ρ, submit time, job id): every row
    above the count-th largest ρ, and of the rows tied with it the first by `tie_key`
    ((submit time, job id) of a row). One partition; a Python sort only when ρ ties across
    the cut."""
    if count >= len(rho):
        return np.ones(len(rho), dtype=bool)
    cut = np.partition(rho, len(rho) - count)[len(rho) - count]
    chosen = rho >= cut
    surplus = int(np.count_nonzero(chosen)) - count
    if surplus:
        tied = sorted(np.flatnonzero(rho == cut).tolist(), key=tie_key)
        chosen[tied[len(tied) - surplus:]] = False
    return chosen


def walk(entries: Iterable[tuple[float, float, str, int, int]], budget: int
         ) -> tuple[list[int], int]:
    """The auction's greedy walk over entries (-ρ, submit time, job id, row, GPUs) in order:
    a job wins if it fits what the winners before it left, and the walk ends when nothing is
    left. Returns the winning rows and the budget left."""
    won = []
    for _, _, _, row, gpus in entries:
        if budget <= 0:
            break
        if gpus <= budget:
            won.append(row)
            budget -= gpus
    return won, budget


def take_in_order(rows: list[int], gpus: dict[int, int], budget: int) -> tuple[list[int], int]:
    """`walk` over `rows` in the order given, each asking `gpus[row]`."""
    won = []
    for row in rows:
        if budget <= 0:
            break
        if gpus[row] <= budget:
            won.append(row)
            budget -= gpus[row]
    return won, budget


def unopposed(rho: np.ndarray, need: np.ndarray, budget: int,
              holders: list[tuple[float, float, str, int, int]], bidders: int) -> bool:
    """Whether an auction provably ends as it began, every holder keeping its GPUs and no
    waiting job launched, when no waiting job fits the free GPUs alone. `rho` and `need` are
    the waiting rows', `holders` the offered jobs' walk entries (-ρ first), `budget` the
    GPUs offered. Take the waiting job of largest ρ that fits the budget. If every holder's
    ρ is above it, the holders that bid win first and leave only the free GPUs to the waiting
    jobs behind them, and behind a holder that does not bid nobody bids. If `bidders` rows
    rank strictly above it, no waiting job that fits bids. Either way only holders win, and
    all of them do (what they hold fits what the others leave). Otherwise (ties included)
    the auction must be run."""
    best = -float(np.maximum.reduce(rho[need <= budget], initial=-math.inf))  # -ρ, as entries
    above = 0  # holders ranked above it
    for entry in holders:
        above += entry[0] < best
    if above == len(holders):
        return True
    return above + int(np.count_nonzero(rho > -best)) >= bidders


def walk_entries(rho: np.ndarray, submit: np.ndarray, need: np.ndarray, ids: list[str],
                 index: np.ndarray) -> list[tuple[float, float, str, int, int]]:
    """Walk entries (-ρ, submit time, job id, row, GPUs) of the waiting rows `index`."""
    rows = index.tolist()
    return list(zip((-rho[index]).tolist(), submit[index].tolist(), [ids[i] for i in rows],
                    rows, need[index].astype(np.int64).tolist(), strict=True))


def first_winners(rho: np.ndarray, submit: np.ndarray, need: np.ndarray, ids: list[str],
                  bidding: np.ndarray, holders: list[tuple[float, float, str, int, int]],
                  budget: int) -> tuple[list[int], int]:
    """`walk` over the bidders in Themis order (-ρ, submit time, job id): the waiting rows
    `bidding` (of `rho`, `submit`, `need`, `ids`) and the bidding `holders` (walk entries).
    A job that does not fit what the winners before it left never fits later, so the walk's
    next winner is always the first remaining job in the order that fits what is left: the
    winners are found one by one (one masked maximum each; a Python sort only when ρ ties),
    without ordering the bidders, who are many on a long queue, while winners are few. A
    few bidders are sorted in Python, cheaper than numpy's calls."""
    if len(bidding) <= _FEW_BIDDERS:
        return walk(sorted(walk_entries(rho, submit, need, ids, bidding) + holders), budget)
    holders = sorted(holders)
    rho_of, need_of = rho[bidding], need[bidding]  # copies: a winner's need is set to inf
    won: list[int] = []
    while budget > 0:
        best = None
        fits = need_of <= budget
        ranked = np.where(fits, rho_of, -math.inf)
        at = int(ranked.argmax()) if len(ranked) else 0
        if len(ranked) and fits[at]:  # a waiting job fits; of those tied, the first submitted
            tied = np.flatnonzero(ranked == ranked[at]).tolist()
            at = min(tied, key=lambda i: (submit[bidding[i]], ids[bidding[i]]))
            row = int(bidding[at])
            best = (-float(rho_of[at]), float(submit[row]), ids[row], row, int(need_of[at]))
        holders = [entry for entry in holders if entry[4] <= budget]
        if holders and (best is None or holders[0] < best):
            best = holders.pop(0)
        elif best is not None:
            need_of[at] = math.inf
        else:
            break
        won.append(best[3])
        budget -= best[4]
    return won, budget


def auction_participants(contenders: int, fairness_knob: float) -> int:
    """How many of the worst-ρ jobs bid in an auction: the 1 - f fraction of the contenders
    (Themis §5.2's fairness knob f: f = 0 lets every job bid, the most efficient; f → 1 only
    the least fair one, the most fair), at least one."""
    return min(contenders, max(1, math.ceil((1.0 - fairness_knob) * contenders - 1e-9)))


@register
class Themis(Policy):
    name = "themis"
    layers = ("ordering", "placement")  # winners run at their requested size
    description = "Finish-time fairness (ρ) with leases; GPUs change hands only at lease ends."
    paper = "Themis NSDI'20 §3-§5 (simplified auction); Muri SIGCOMM'22 §6 baseline"
    params = (
        Param("lease", float, 600.0, "lease length in seconds: a job's GPUs are re-auctioned "
              "only when its lease ends (Themis §4-§5; 10 minutes as the paper evaluates)",
              bounds=(1.0, 86_400.0)),
        Param("fairness_fraction", float, 0.8, "f, Themis' fairness knob: only the 1 - f "
              "fraction of jobs with the worst ρ bid (0: all bid; 1: only the least fair)",
              bounds=(0.0, 1.0)),
        Param("leases", str, "per-job", "per-job: a lease runs `lease` s from when its job got "
              "GPUs and only ending leases are auctioned (Themis §4-§5); rounds: every lease "
              "ends at t = k·lease and the whole cluster is auctioned (Muri §6's rounds)",
              choices=("per-job", "rounds")),
    )
    interval = None  # woken at lease ends; arrivals and completions are events
    lease: float
    fairness_fraction: float
    leases: str

    def __init__(self, **values: object) -> None:
        super().__init__(**values)
        self._waiting = Waiting()
        # job id -> (placement, share, `current_rate`, `prediction_scale`, submit time,
        # GPUs asked, predicted duration, GPUs held) of a job when it last held GPUs
        self._rates: dict[str, tuple[object, float, float, float, float, int, float, int]] = {}
        self._leases: Leases | Rounds = (
            Rounds(self.lease) if self.leases == "rounds" else Leases(self.lease))

    def next_wakeup(self, view: ClusterView) -> float | None:
        if not view.queue:
            return None  # with nobody waiting every lease ending is won back unopposed
        return self._leases.next_end(view)

    def schedule(self, view: ClusterView) -> Iterator[Decision]:
        if not view.queue:
            return
        free, smallest = free_gpus(view), view.smallest_queued_gpus()
        ending = self._leases.ending(view)
        decided = False
        if ending:
            for decision in self._granting(view, self._auction(view, ending, free, smallest)):
                decided = True
                yield decision
        if decided or free >= smallest:  # else still no waiting job fits the free GPUs
            yield from self._granting(view, self._work_conserving(view))

    def _granting(self, view: ClusterView, decisions: Iterable[Decision]
                  ) -> Iterator[Decision]:
        """`decisions`, starting a lease for each job launched."""
        for decision in decisions:
            if isinstance(decision, Launch):
                self._leases.grant(decision.job_id, view.now)
            yield decision

    def _work_conserving(self, view: ClusterView) -> Iterator[Decision]:
        """Between auctions: waiting jobs take free GPUs in decreasing ρ, nobody is
        preempted."""
        if not view.queue:
            return
        free = free_gpus(view)
        smallest = view.smallest_queued_gpus()
        if free <= 0 or free < smallest:
            return  # no waiting job fits
        self._waiting.sync(view)  # an auction in this round may have started or stopped jobs
        # A job asking more than is free now cannot start this round, so it is not ranked.
        if len(view.queue) <= _FEW_WAITING:
            ordered: Iterable[JobView] = self._few_in_order(view, free)
        else:
            ordered = self._many_in_order(view, free, smallest)
        yield from launch_in_order(view, ordered, blocking=False)

    def _few_in_order(self, view: ClusterView, free: int) -> list[JobView]:
        """The waiting jobs that fit `free` GPUs, worst ρ first, ranked in Python (as
        `finish_time_fairness` computes ρ, from the kept tuples)."""
        now, share = view.now, share_gpus(view)
        scored = []
        for job_id, (submit, duration, gpus, left, job) in self._waiting.jobs.items():
            if gpus <= free:
                independent = independent_time(duration, gpus, share)
                shared = now - submit + left
                rho = shared / independent if independent > 0 else math.inf
                scored.append((-rho, submit, job_id, job))
        scored.sort(key=itemgetter(0, 1, 2))
        return [entry[3] for entry in scored]

    def _many_in_order(self, view: ClusterView, free: int, smallest: int) -> Iterator[JobView]:
        """`_few_in_order` in numpy, made piece by piece: the walk stops after a few
        launches."""
        rows = self._waiting.rows
        gpus = rows.column(GPUS)
        fits = np.flatnonzero(gpus <= free)
        submit = rows.column(SUBMIT)[fits]
        rho = fairness(view.now, submit, rows.column(LEFT)[fits],
                       rows.column(INDEPENDENT)[fits])
        pieces = worst_first_in_pieces(rho, submit, lambda i: rows.ids[fits[i]],
                                       2 * free // max(1, smallest) + 8)
        views = rows.views
        return (views[fits[i]] for piece in pieces for i in piece.tolist())

    def _holder_entries(self, view: ClusterView, offered: list[tuple[str, JobView]],
                        share: float, first: int, now: float
                        ) -> list[tuple[float, float, str, int, int]]:
        """The walk entries (-ρ, submit time, job id, row, GPUs held) of the jobs whose leases
        end (rows `first`..), ρ computed as `finish_time_fairness` does at the cluster's
        `share` (G/N). A job's rate changes only with its placement or share and its
        prediction scale never, so both are kept per job with what its ρ reads of its spec;
        an auction would otherwise rate every holder again at each lease end."""
        rates = self._rates
        entries = []
        row = first
        for job_id, job in offered:
            placement, job_share = job.placement, job.share
            kept = rates.get(job_id)
            if kept is None or kept[0] is not placement or kept[1] != job_share:
                spec = job.spec
                kept = rates[job_id] = (
                    placement, job_share, current_rate(view, job), prediction_scale(job),
                    spec.submit_time, spec.num_gpus, job.predicted_duration, job.gpus)
            _, _, rate, scale, submit, gpus, predicted, held = kept
            left = job.remaining_work * scale / rate if rate > 0 else math.inf  # seconds_left
            independent = predicted * max(1.0, gpus / share)
            shared = now - submit + left
            entries.append((-(shared / independent) if independent > 0 else -math.inf,
                            submit, job_id, row, held))
            row += 1
        return entries

    def _auction(self, view: ClusterView, ending: list[str], free: int, smallest: int
                 ) -> Iterator[Decision]:
        """The GPUs of the leases ending now and the free GPUs, auctioned among the M jobs
        that wait or whose leases end: the ⌈(1-f)·M⌉ worst-ρ bid and win greedily in
        decreasing ρ; the leftover goes first to the jobs whose leases end (each keeps what
        it holds), then to waiting jobs in seeded random order. A job whose lease ends keeps
        its GPUs with a new lease if it wins or keeps them, else it is preempted. `free` and
        `smallest` are the free GPUs and the fewest any waiting job asks for."""
        now, running, leases = view.now, view.running, self._leases
        offered: list[tuple[str, JobView]] = []
        budget = free
        for job_id in ending:
            job = running[job_id]
            if job.spec.preemptible:
                offered.append((job_id, job))
                budget += job.gpus
            else:
                leases.grant(job_id, now)  # a pinned job keeps its GPUs
        if not offered:
            return
        if smallest > budget:
            for job_id, _ in offered:  # no waiting job fits: every holder wins back unopposed
                leases.grant(job_id, now)
            return
        self._waiting.sync(view)
        rows = self._waiting.rows
        ids, first = rows.ids, len(rows)
        # The waiting jobs are rows 0..first-1, ranked in numpy; the few holders (offered
        # jobs) are rows first.., ranked in Python with the same float operations: entries
        # (-ρ, submit time, job id, row, GPUs held), as the walk's sort wants them.
        share = self._waiting.share
        holders = self._holder_entries(view, offered, share, first, now)
        need = rows.column(GPUS)
        rho = self._waiting.fairness(now)
        bidders = auction_participants(first + len(holders), self.fairness_fraction)
        if free < smallest and unopposed(rho, need, budget, holders, bidders):
            for job_id, _ in offered:
                leases.grant(job_id, now)
            return
        submit = rows.column(SUBMIT)

        def tie_key(i: int) -> tuple[float, str]:
            return (submit[i], ids[i]) if i < first else holders[i - first][1:3]

        bid = least_fair(np.concatenate((rho, [-entry[0] for entry in holders])), bidders,
                         tie_key)
        holder_bids = bid[first:].tolist()
        won, budget = first_winners(
            rho, submit, need, ids, np.flatnonzero(bid[:first] & (need <= budget)),
            [entry for entry, bids in zip(holders, holder_bids, strict=True) if bids], budget)
        if budget > 0:  # leftover: first the jobs whose leases end keep what they hold
            won_here, budget = walk(sorted(entry for entry, bids in zip(
                holders, holder_bids, strict=True) if not bids), budget)
            won += won_here
        if budget > 0:  # then waiting jobs that fit, in seeded random order
            fits = np.flatnonzero(~bid[:first] & (need <= budget))
            gpus = dict(zip(fits.tolist(), need[fits].astype(np.int64).tolist(), strict=True))
            fitting = sorted(gpus, key=ids.__getitem__)  # shuffled from job id order: rows
            self.rng.shuffle(fitting)  # move on drops
            won_here, budget = take_in_order(fitting, gpus, budget)
            won += won_here
        kept_offered = {i - first for i in won if i >= first}
        for index, (job_id, _) in enumerate(offered):
            if index in kept_offered:
                leases.grant(job_id, now)
            else:
                leases.revoke(job_id)
                yield Preempt(job_id)
        views = rows.views
        for i in won:
            if i < first:
                launch = place_requested(view, views[i])
                if launch is not None:
                    yield launch
