"""A share that steps at known times: time-slicing in quanta, integrated in closed form.

Round-robin time-slicing (Gandiva §4.1: suspend/resume in quanta of `time_slice`) changes
a job's share at every quantum boundary. Deciding a new share per job per quantum costs a
decision and a completion re-timing each time: ~2.5 M of them for 10k Philly jobs on a
contended cluster (issue #22). Between changes of a server's jobs the rotation is
periodic, so the policy states the whole sequence once as a `ShareCycle` and the engine
integrates the job's progress over it: the work done in any interval and the time at which
a given amount is done are sums over whole quanta plus the partial ends, whatever the
number of quanta in between.

A cycle keeps only its quanta with a share above 0 (`runs`): on a crowded server a job runs
in one or two of the ~55 quanta a plan holds (muri_trace2), and a cycle costs its runs, not
its length. A quantum of share 0 adds exactly 0.0 to a running sum, so the sums over the runs
are the same floats as over every quantum.
"""

from __future__ import annotations

import math
from bisect import bisect_left, bisect_right
from collections.abc import Sequence
from itertools import accumulate, compress, repeat
from operator import mul


class ShareCycle:
    """`first` until `start`; then `shares[k]` during [start + k·quantum, start + (k+1)·quantum);
    past the end of `shares` the entries from `loop` on repeat. A share is in [0, 1].
    Immutable; `ShareCycle.sparse` builds one from the quanta with a share other than 0."""

    __slots__ = ("first", "start", "quantum", "length", "runs", "values", "loop", "sums")

    first: float
    start: float
    quantum: float
    length: int  # quanta before the loop repeats (the length of `shares`)
    runs: tuple[int, ...]  # the quanta with a share other than 0, ascending
    values: tuple[float, ...]  # their shares
    loop: int
    sums: tuple[float, ...]  # quantum × the running sums of `values`

    def __init__(self, first: float, start: float, quantum: float, shares: Sequence[float],
                 loop: int = 0) -> None:
        runs = list(compress(range(len(shares)), shares))  # the shares other than 0
        self._fill(first, start, quantum, len(shares), runs, [shares[k] for k in runs], loop)

    @classmethod
    def sparse(cls, first: float, start: float, quantum: float, length: int,
               runs: Sequence[int], values: Sequence[float], loop: int = 0) -> ShareCycle:
        """The cycle whose `shares` are 0 but for `values` at the quanta `runs` (ascending)."""
        cycle = cls.__new__(cls)
        cycle._fill(first, start, quantum, length, runs, values, loop)
        return cycle

    def with_runs(self, runs: tuple[int, ...]) -> ShareCycle:
        """This cycle with its values in the quanta `runs` (as many, ascending) instead: the
        same sums, so a crowded server's units that each run as often share them."""
        cycle = ShareCycle.__new__(ShareCycle)
        cycle.first, cycle.start, cycle.quantum = self.first, self.start, self.quantum
        cycle.length, cycle.loop = self.length, self.loop
        cycle.runs, cycle.values, cycle.sums = runs, self.values, self.sums
        return cycle

    def _fill(self, first: float, start: float, quantum: float, length: int,
              runs: Sequence[int], values: Sequence[float], loop: int) -> None:
        self.first = first
        self.start = start
        self.quantum = quantum
        self.length = length
        self.runs = tuple(runs)
        self.values = tuple(values)
        self.loop = loop
        # quantum × each value, summed left to right (the first sum is its own product:
        # 0.0 + x is x for the shares above 0 that runs hold)
        values = self.values
        self.sums = ((quantum * values[0],) if len(values) == 1  # most cycles: one run
                     else tuple(accumulate(map(mul, repeat(quantum), values))))

    @property
    def shares(self) -> tuple[float, ...]:
        """Every quantum's share up to the loop's end."""
        shares = [0.0] * self.length
        for k, value in zip(self.runs, self.values, strict=True):
            shares[k] = value
        return tuple(shares)

    def _key(self) -> tuple:
        return (self.first, self.start, self.quantum, self.length, self.runs, self.values,
                self.loop)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ShareCycle) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        return (f"ShareCycle(first={self.first!r}, start={self.start!r}, "
                f"quantum={self.quantum!r}, shares={self.shares!r}, loop={self.loop!r})")

    def problem(self, now: float) -> str | None:
        """What makes this cycle invalid at time `now`, or None. Every condition at once
        first: the engine asks for each cycle a policy hands it (millions on muri_trace2,
        issue #16), and a sound one answers there."""
        runs, values = self.runs, self.values
        if (self.start >= now and 0 <= self.loop < self.length and 0.0 <= self.first <= 1.0
                and 0.0 < self.quantum < math.inf
                and (not runs or (0 <= runs[0] and runs[-1] < self.length
                                  and 0.0 <= min(values) and max(values) <= 1.0
                                  and (len(runs) == 1 or all(map(int.__lt__, runs, runs[1:])))))):
            return None
        return self._diagnosis(now)

    def _diagnosis(self, now: float) -> str | None:
        """`problem` one condition at a time, to name the one that fails."""
        n, runs = self.length, self.runs
        if not n or not 0 <= self.loop < n or (runs and not 0 <= runs[0] <= runs[-1] < n):
            return "needs shares and a loop index inside them"
        if not self.quantum > 0 or not math.isfinite(self.quantum):
            return f"quantum {self.quantum} is not positive"
        if self.start < now:
            return f"starts at {self.start}, before now ({now})"
        values = self.values
        if not (0.0 <= self.first <= 1.0
                and (not values or (0.0 <= min(values) and max(values) <= 1.0))):
            return "has a share outside [0, 1]"
        if not all(map(int.__lt__, runs, runs[1:])):
            return "lists a quantum twice or out of order"
        return None

    def share_at(self, t: float) -> float:
        """The share in effect at time `t`."""
        if t < self.start:
            return self.first
        return self._share(self._index(int((t - self.start) // self.quantum)))

    def _share(self, k: int) -> float:
        """`shares[k]` for 0 <= k < length."""
        runs = self.runs
        j = bisect_left(runs, k)
        return self.values[j] if j < len(runs) and runs[j] == k else 0.0

    def _prefix(self, k: int) -> float:
        """The integral over quanta 0 .. k - 1 (0 <= k <= length)."""
        j = bisect_left(self.runs, k)
        return self.sums[j - 1] if j else 0.0

    def _index(self, k: int) -> int:
        n = self.length
        if k < n:
            return k
        return self.loop + (k - self.loop) % (n - self.loop)

    def _whole(self, k: int) -> float:
        """The integral over the first `k` whole quanta after `start`."""
        n, loop, prefix = self.length, self.loop, self._prefix
        if k <= n:
            return prefix(k)
        cycles, rest = divmod(k - loop, n - loop)
        at_loop = prefix(loop)
        return at_loop + cycles * (prefix(n) - at_loop) + (prefix(loop + rest) - at_loop)

    def _cumulative(self, t: float) -> float:
        """The integral of the share from `start` to `t` (negative before `start`). Within
        the first pass over `shares`, `_whole(k)` and `_share(k)` written out with one
        bisection: the engine settles millions of cycled jobs (muri_trace2, issue #16)."""
        start = self.start
        if t <= start:
            return (t - start) * self.first
        k = int((t - start) // self.quantum)
        if k < self.length:
            runs = self.runs
            j = bisect_left(runs, k)
            whole = self.sums[j - 1] if j else 0.0
            share = self.values[j] if j < len(runs) and runs[j] == k else 0.0
            return whole + (t - start - k * self.quantum) * share
        return self._whole(k) + (t - start - k * self.quantum) * self._share(self._index(k))

    def integral(self, t0: float, t1: float) -> float:
        """The share integrated over [t0, t1] (share-seconds)."""
        if t1 <= t0:
            return 0.0
        done = self._cumulative(t1) - self._cumulative(t0)
        return done if done > 0.0 else 0.0

    def time_to(self, t0: float, amount: float, slack: float = 0.0) -> float:
        """The earliest time at which the integral from `t0` reaches `amount` (inf: never).

        A job whose work is done but for `slack` when its quantum ends, and which is then
        suspended, is done at that quantum's end: the engine counts work within its
        tolerance as done, and otherwise the last rounding error of a sum would wait a
        whole rotation for its turn."""
        if amount <= 0:
            return t0
        if t0 < self.start:
            before = (self.start - t0) * self.first
            if amount <= before or (amount <= before + slack and self._share(0) <= 0):
                return t0 if self.first <= 0 else min(self.start, t0 + amount / self.first)
            amount -= before
            t0 = self.start
        target = self._cumulative(t0) + amount
        k = self._quantum_reaching(target)
        if slack > 0 and (k is None or (k > 0 and self._share(self._index(k - 1)) <= 0)):
            early = self._quantum_reaching(target - slack)
            if early is not None and (k is None or early < k):
                end = self.start + (early + 1) * self.quantum
                return max(t0, end - self.quantum + min(
                    self.quantum,
                    (target - self._whole(early)) / self._share(self._index(early))))
        if k is None:
            return math.inf
        rest = max(0.0, target - self._whole(k))
        return max(self.start + k * self.quantum + rest / self._share(self._index(k)), t0)

    def silent_until(self) -> float:
        """A time before which the share is 0 throughout, so `integral` up to it is exactly
        0.0 (the running sums before the first run are all 0.0): the engine settles a job
        suspended since its last settle without integrating. A margin of a millionth of a
        quantum keeps a time rounding into the first run out."""
        if self.first > 0:
            return -math.inf
        if not self.runs:
            return math.inf
        return self.start + (self.runs[0] - 1e-6) * self.quantum

    def silent_from(self) -> float:
        """A time from which the share is 0 for good (inf if the loop runs), so `integral`
        from any earlier time to any later one is the same float: after the last run the
        running sums stop and the loop adds exactly 0.0. A margin of a millionth of a
        quantum keeps a time rounding back into the last run out."""
        runs = self.runs
        if runs and runs[-1] >= self.loop:
            return math.inf
        if runs:
            return self.start + (runs[-1] + 1 + 1e-6) * self.quantum
        return self.start if self.first > 0 else -math.inf

    def last_run_end(self, t: float) -> float | None:
        """The latest time up to `t` at which the share is above 0 (`t` itself inside a
        run), counting `first` as in effect since before `start`; None if it never is."""
        if t <= self.start:
            return t if self.first > 0 else None
        k = self._last_run_through(math.ceil((t - self.start) / self.quantum) - 1)
        if k is None:
            return self.start if self.first > 0 else None
        return min(t, self.start + (k + 1) * self.quantum)

    def _last_run_through(self, k: int) -> int | None:
        """The last quantum up to quantum `k` (from `start`) with a share above 0."""
        runs, loop, length = self.runs, self.loop, self.length
        if k < length:
            i = bisect_right(runs, k) - 1
            return runs[i] if i >= 0 else None
        if not runs or runs[-1] < loop:  # the loop never runs: the prefix's last run
            return runs[-1] if runs else None
        period = length - loop
        place = loop + (k - loop) % period  # quantum k's place in the loop
        i = bisect_right(runs, place) - 1
        if i >= 0 and runs[i] >= loop:
            return k - (place - runs[i])
        return k - (place - runs[-1]) - period  # the loop's last run, a lap before

    def reach_bound(self, t0: float, amount: float, slack: float = 0.0) -> float:
        """A time no later than `time_to(t0, amount, slack)`, and inf only when that is inf,
        from the cycle's first run and total alone: the engine times a completion exactly
        only once this bound comes up, so a job re-told its shares before then costs no
        search over its quanta.

        The share is at most 1 and 0 before the first run, so the amount takes at least
        `amount - slack` seconds from the first run on (less a margin far above rounding);
        with no run in the loop the cycle ends after the runs' total. Never before `t0`."""
        if amount <= slack:
            return t0
        runs, start, first = self.runs, self.start, self.first
        if not runs or runs[-1] < self.loop:  # nothing repeats: a finite total
            sums = self.sums
            total = (start - t0 if start > t0 else 0.0) * first + (sums[-1] if sums else 0.0)
            if amount - slack > total * (1.0 + 1e-6) + 1e-6:  # (`ahead` before `start`)
                return math.inf
        begin = t0
        if first <= 0 and t0 < start and runs:
            begin = start + runs[0] * self.quantum
        bound = begin + (amount - slack) * (1.0 - 1e-6) - 1e-3
        return bound if bound > t0 else t0

    def _first_reaching(self, x: float, lo: int, hi: int) -> int:
        """The least k in [lo, hi) whose prefix (`_prefix(k)`) is at least `x`, else hi:
        `bisect_left` over the prefixes of every quantum, of which only the runs change."""
        if self._prefix(lo) >= x:
            return lo
        j = bisect_left(self.sums, x)  # prefix(k) >= x exactly when k > runs[j]
        return min(self.runs[j] + 1, hi) if j < len(self.sums) else hi

    def _quantum_reaching(self, target: float) -> int | None:
        """The quantum (counted from `start`, with a share above 0) in which the integral
        from `start` reaches `target` > 0; None if it never does."""
        n, loop, prefix = self.length, self.loop, self._prefix
        at_end = prefix(n)
        if target <= at_end:
            k = self._first_reaching(target, 0, n + 1) - 1  # prefix[k] < target <= prefix[k+1]
        else:
            at_loop = prefix(loop)
            per_cycle = at_end - at_loop
            if per_cycle <= 0:
                return None
            cycles = int((target - at_end) // per_cycle)
            base = at_end + cycles * per_cycle - at_loop  # integral at the cycle's start
            k = self._first_reaching(target - base, loop, n + 1) - 1
            if k < loop:  # reached exactly as the last cycle ended: in its last run
                cycles -= 1
                base -= per_cycle
                k = self._first_reaching(target - base, loop, n + 1) - 1
            if k >= n:  # rounding put the target past this cycle's end: take the next
                cycles += 1
                base += per_cycle
                k = self._first_reaching(target - base, loop, n + 1) - 1
            k = n + cycles * (n - loop) + (k - loop)
        k = max(k, 0)
        while self._share(self._index(k)) <= 0:  # rounding landed on a suspended quantum
            k += 1
        return k
