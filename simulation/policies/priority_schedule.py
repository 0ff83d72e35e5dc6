"""`preemptive_schedule`'s decisions with work that follows what changed (issue #22).

`schedule_by_priority` takes the queued jobs from a `QueueOrder` (or sorts them) and the
running ones from a `RunningOrder` or `RemainingTimeOrder` (or sorts them), and walks both
in priority order; tests/simulation/test_priority_order_equivalence.py holds every
shortcut to the definition.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable, Iterator, Sequence
from functools import partial
from itertools import accumulate
from typing import Any

from simulation.decisions import Decision, Launch, Preempt
from simulation.policies.ordering import place_requested, training_capacity
from simulation.policies.queue_order import FittingWalk, QueueOrder, SortKey
from simulation.policies.remaining_time_order import RemainingTimeOrder, TailKeys
from simulation.policies.running_order import RunningOrder
from simulation.state import JobStatus
from simulation.view import ClusterView, JobView


def schedule_by_priority(
    view: ClusterView,
    key: Callable[[JobView], Any],
    order: QueueOrder | None = None,
    running: RunningOrder | RemainingTimeOrder | None = None,
) -> Iterator[Decision]:
    """A preemptive priority policy: `key` orders jobs, lowest first (ties: trace order).

    `order`, when the policy's key of a waiting job is frozen, keeps the queue sorted across
    rounds; `running` keeps the running jobs sorted when their keys change only at known
    times (`RunningOrder`), or evaluates them all at once when they are remaining time
    (`RemainingTimeOrder`); either hands over only the running jobs ranked after the best
    queued job (the walk keeps all those before it while their GPUs fit, which they do
    unless capacity shrank). When the whole queue fits in the free GPUs, the global order
    would keep every running job and start every queued one, so the queued jobs are simply
    launched (the common, uncontended case). Otherwise, or when fragmentation defeats a
    placement, the decisions of `preemptive_schedule` over the running jobs merged with the
    queue in priority order are made by `_preempt_in_priority_order`.
    """
    if not view.queue:
        return
    free = view.total_free_gpus()
    walk: FittingWalk
    if view.queued_gpus() <= free:  # the whole queue fits
        queued = _queue_in_order(view, key, order)
        placed_all = True
        for _, job in queued:
            launch = place_requested(view, job)
            if launch is None:
                placed_all = False
                continue
            if order is not None:
                order.forget(job.job_id)
            yield launch
        if placed_all:
            return
        walk = FittingWalk.of((k, job) for k, job in queued if job.status == JobStatus.QUEUED)
    elif order is None:
        walk = FittingWalk.of(_queue_in_order(view, key, order))
    else:
        walk = order.fitting(view)
    capacity = training_capacity(view)
    if running is not None:
        first = walk.first_key()
        if first is None:
            return
        keys, ids, behind, below, pinned = running.tail(view, first)
        if below <= capacity - pinned:
            pinned += below  # the walk keeps them all before it meets the first queued job
        else:  # capacity shrank under the running jobs: the walk stops among them
            keys, ids, behind, pinned = _running_in_order(view, key)
    else:
        keys, ids, behind, pinned = _running_in_order(view, key)
    decisions = _preempt_in_priority_order(view, keys, ids, behind, capacity - pinned, walk)
    for decision in decisions:
        if order is not None and isinstance(decision, Launch):
            order.forget(decision.job_id)
        yield decision


def _queue_in_order(
    view: ClusterView, key: Callable[[JobView], Any], order: QueueOrder | None
) -> list[tuple[SortKey, JobView]]:
    """(sort key, job) of every queued job, best first."""
    if order is not None:
        return order.in_order(view)
    return sorted(((key(j), j.trace_index), j) for j in view.queue.values())


def _running_in_order(
    view: ClusterView, key: Callable[[JobView], Any]
) -> tuple[list[SortKey], list[str], list[int], int]:
    """(sort keys, ids, GPUs behind) of every preemptible running job, and the pinned GPUs,
    sorted afresh."""
    keys: list[SortKey] = []
    ids: list[str] = []
    gpus: list[int] = []
    pinned = 0
    for sort_key, job in sorted(((key(j), j.trace_index), j) for j in view.running.values()):
        if job.spec.preemptible:
            keys.append(sort_key)
            ids.append(job.job_id)
            gpus.append(job.gpus)
        else:
            pinned += job.gpus
    return keys, ids, [0, *accumulate(reversed(gpus))], pinned


def _preempt_in_priority_order(
    view: ClusterView,
    keys: Sequence[SortKey],
    ids: list[str],
    behind: list[int],
    budget: int,
    walk: FittingWalk,
) -> Iterator[Decision]:
    """`preemptive_schedule` over the running jobs (`ids`, sorted by `keys`; `behind[k]`
    the GPUs of the last k) merged with the queued jobs of `walk`, from `budget` GPUs (the
    capacity less what the jobs not handed over keep): the same decisions in the same
    order, without a Python step per running job kept.

    A queued job asking for more than the budget left is passed over without a step: the
    budget only shrinks along the walk, so it could not be kept further on either; and once
    the budget is below every queued job's size, only the running jobs remain to be passed.

    Until the greedy walk keeps a queued job, every running job it passes is kept (they all
    fit together), and a run of running jobs between two queued ones is kept whole whenever
    its GPUs fit the budget, so the walk finds such runs by bisection over their keys, and
    inside a run the longest stretch that fits by bisection over their GPUs
    (`_keep_running`): it steps only at the running jobs it evicts.
    """
    # the first running job ranked after a queued one: by bisection, in C
    locate = keys.bisect_left if isinstance(keys, TailKeys) else partial(bisect_left, keys)
    evicted: list[str] = []
    waiting: list[JobView] = []
    pos, stopped = 0, budget <= 0
    smallest = view.smallest_queued_gpus()  # the walk launches nothing, so this holds
    while not stopped:
        candidate = walk.next_within(budget)
        if candidate is None:
            break
        sort_key, job = candidate
        end = locate(sort_key, pos)
        pos, budget, stopped = _keep_running(ids, behind, pos, end, budget, evicted)
        if stopped or budget <= 0:
            stopped = True
            break
        need = job.spec.num_gpus
        if need <= budget:
            budget -= need
            waiting.append(job)
        if budget < smallest:
            break  # no queued job fits what is left; the running jobs are passed below
    if not waiting:
        return
    if not stopped:
        pos, budget, stopped = _keep_running(ids, behind, pos, len(ids), budget, evicted)
    if stopped:
        evicted.extend(ids[pos:])
    running = view.running
    for job_id in sorted(evicted, key=lambda job_id: running[job_id].running_order):
        yield Preempt(job_id)  # in the order of `view.running`, as `preemptive_schedule`
    for job in waiting:
        launch = place_requested(view, job)
        if launch is not None:
            yield launch


def _keep_running(
    ids: list[str], behind: list[int], lo: int, hi: int, budget: int, evicted: list[str]
) -> tuple[int, int, bool]:
    """The greedy walk over running `ids[lo:hi]`: (where it stopped, budget left, whether
    the budget ran out before `hi`); jobs that do not fit go to `evicted`.

    The greedy keeps jobs one after another while each fits, that is the longest run whose
    GPUs fit the budget, found by bisection over the sums `behind` (they grow by at least
    one GPU per job); then the job after the run does not fit and is evicted."""
    count = len(ids)
    i = lo
    while i < hi:
        if budget <= 0:
            return i, budget, True
        # the smallest k with behind[k] >= behind[count - i] - budget ends the longest run
        k = bisect_left(behind, behind[count - i] - budget, count - hi, count - i)
        budget -= behind[count - i] - behind[k]
        i = count - k
        if i < hi:  # ids[i] does not fit what is left
            if budget <= 0:
                return i, budget, True
            evicted.append(ids[i])
            i += 1
    return hi, budget, False
