"""The collector's settings for one benchmark run (issue #16): a run allocates in bursts
(a crowded Gandiva server re-planned hands hundreds of jobs a new share cycle at once), and
with the default thresholds each burst walks the young objects again and again, ~8 % of
Gandiva's CPU on muri_trace2. After loading, the loaded objects are frozen out of the
collector's walks and it runs once 20,000 new containers are alive rather than 700.
Cycles are collected all the same (later): the answers do not depend on it.
"""

import gc

YOUNG = 20_000  # live new containers before a young collection (CPython's default: 700)


def settle_heap() -> None:
    """Freeze what is loaded so far and collect young objects in larger batches."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(YOUNG, 20, 20)
