"""A share that steps at known times: time-slicing in quanta, integrated in closed form.

Round-robin time-slicing (Gandiva §4.1: suspend/resume in quanta of `time_slice`) changes
a job's share at every quantum boundary. Deciding a new share per job per quantum costs a
decision and a completion re-timing each time: ~2.5 M of them for 10k Philly jobs on a
contended cluster (issue #22). Between changes of a server's jobs the rotation is
periodic, so the policy states the whole sequence once as a `ShareCycle` and the engine
integrates the job's progress over it: the work done in any interval and the time at which
a given amount is done are sums over whole quanta plus the partial ends, whatever the
number of quanta in between.
"""

from __future__ import annotations

import math
from bisect import bisect_left
from dataclasses import dataclass, field
from itertools import accumulate


@dataclass(frozen=True, slots=True)
class ShareCycle:
    """`first` until `start`; then `shares[k]` during [start + k·quantum, start + (k+1)·quantum);
    past the end of `shares` the entries from `loop` on repeat. A share is in [0, 1]."""

    first: float
    start: float
    quantum: float
    shares: tuple[float, ...]
    loop: int = 0
    # quantum × the running sums of `shares` (prefix[k] = the first k quanta's integral)
    prefix: tuple[float, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        q = self.quantum
        object.__setattr__(self, "prefix", tuple(accumulate(map(q.__mul__, self.shares),
                                                            initial=0.0)))

    def problem(self, now: float) -> str | None:
        """What makes this cycle invalid at time `now`, or None."""
        if not self.shares or not 0 <= self.loop < len(self.shares):
            return "needs shares and a loop index inside them"
        if not self.quantum > 0 or not math.isfinite(self.quantum):
            return f"quantum {self.quantum} is not positive"
        if self.start < now:
            return f"starts at {self.start}, before now ({now})"
        if not (0.0 <= self.first <= 1.0 and 0.0 <= min(self.shares)
                and max(self.shares) <= 1.0):
            return "has a share outside [0, 1]"
        return None

    def share_at(self, t: float) -> float:
        """The share in effect at time `t`."""
        if t < self.start:
            return self.first
        return self.shares[self._index(int((t - self.start) // self.quantum))]

    def _index(self, k: int) -> int:
        n = len(self.shares)
        if k < n:
            return k
        return self.loop + (k - self.loop) % (n - self.loop)

    def _whole(self, k: int) -> float:
        """The integral over the first `k` whole quanta after `start`."""
        prefix, n, loop = self.prefix, len(self.shares), self.loop
        if k <= n:
            return prefix[k]
        cycles, rest = divmod(k - loop, n - loop)
        return prefix[loop] + cycles * (prefix[n] - prefix[loop]) + (
            prefix[loop + rest] - prefix[loop])

    def _cumulative(self, t: float) -> float:
        """The integral of the share from `start` to `t` (negative before `start`)."""
        if t <= self.start:
            return (t - self.start) * self.first
        k = int((t - self.start) // self.quantum)
        return self._whole(k) + (t - self.start - k * self.quantum) * self.shares[self._index(k)]

    def integral(self, t0: float, t1: float) -> float:
        """The share integrated over [t0, t1] (share-seconds)."""
        if t1 <= t0:
            return 0.0
        return max(0.0, self._cumulative(t1) - self._cumulative(t0))

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
            if amount <= before or (amount <= before + slack and self.shares[0] <= 0):
                return t0 if self.first <= 0 else min(self.start, t0 + amount / self.first)
            amount -= before
            t0 = self.start
        target = self._cumulative(t0) + amount
        k = self._quantum_reaching(target)
        if slack > 0 and (k is None or (k > 0 and self.shares[self._index(k - 1)] <= 0)):
            early = self._quantum_reaching(target - slack)
            if early is not None and (k is None or early < k):
                end = self.start + (early + 1) * self.quantum
                return max(t0, end - self.quantum + min(
                    self.quantum, (target - self._whole(early)) / self.shares[self._index(early)]))
        if k is None:
            return math.inf
        rest = max(0.0, target - self._whole(k))
        return max(self.start + k * self.quantum + rest / self.shares[self._index(k)], t0)

    def _quantum_reaching(self, target: float) -> int | None:
        """The quantum (counted from `start`, with a share above 0) in which the integral
        from `start` reaches `target` > 0; None if it never does."""
        prefix, n, loop = self.prefix, len(self.shares), self.loop
        if target <= prefix[n]:
            k = bisect_left(prefix, target) - 1  # prefix[k] < target <= prefix[k + 1]
        else:
            per_cycle = prefix[n] - prefix[loop]
            if per_cycle <= 0:
                return None
            cycles = int((target - prefix[n]) // per_cycle)
            base = prefix[n] + cycles * per_cycle - prefix[loop]  # integral at the cycle's start
            k = bisect_left(prefix, target - base, loop, n + 1) - 1
            if k >= n:  # rounding put the target past this cycle's end: take the next
                cycles += 1
                base += per_cycle
                k = bisect_left(prefix, target - base, loop, n + 1) - 1
            k = n + cycles * (n - loop) + (k - loop)
        k = max(k, 0)
        while self.shares[self._index(k)] <= 0:  # rounding landed on a suspended quantum
            k += 1
        return k
