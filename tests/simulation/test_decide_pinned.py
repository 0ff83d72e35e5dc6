"""Live answers pinned byte for byte on a generated mid-size snapshot (52 servers, 200 jobs),
so speed work on snapshot parsing, state building and the strategies cannot change one.

Each value is the start of the SHA-256 of `json.dumps(answer)` (key order included); the
state is `decide_states.generated_state()`.
"""

from __future__ import annotations

import hashlib
import json

import pytest

from simulation.decide import decide_loan, decide_reclaim, decide_schedule
from tests.simulation.decide_states import generated_state

PINNED = {
    "reclaim-aryl-1": (decide_reclaim, {"count": 1}, "db80bc9f17389bf09372"),
    "reclaim-aryl-6": (decide_reclaim, {"count": 6}, "ee88ded528f70e617df3"),
    "reclaim-aryl-20": (decide_reclaim, {"count": 20, "grace_period_seconds": 5},
                        "1dabba4adaa82c99c73d"),
    "reclaim-scf-6": (decide_reclaim, {"count": 6, "strategy": "scf"}, "464d7d73b779d7009d62"),
    "reclaim-random-6": (decide_reclaim, {"count": 6, "strategy": "random", "seed": 3},
                         "5fcad73c4bd31481d460"),
    "reclaim-gpu-fraction-6": (decide_reclaim, {"count": 6, "strategy": "gpu-fraction"},
                               "62d63a67182346a71ee4"),
    "loan-2": (decide_loan, {"count": 2}, "eae776ddd32772ab9815"),
    "schedule-fifo": (decide_schedule, {"policy": "fifo"}, "c304f72cab72bf84b727"),
    "schedule-aryl": (decide_schedule, {"policy": "aryl"}, "6d4838bea4a88f3d0c44"),
    "schedule-srtf": (decide_schedule, {"policy": "srtf"}, "0c6a69f1b49c478eee4c"),
}


@pytest.mark.parametrize("case", sorted(PINNED))
def test_answer_on_the_generated_state_is_unchanged(case: str) -> None:
    decide, body, digest = PINNED[case]
    answer = decide({**body, "state": generated_state()})
    if decide is decide_schedule:  # pinned before the answers said shares; none share here
        assert answer.pop("share") == []
    assert hashlib.sha256(json.dumps(answer).encode()).hexdigest()[:20] == digest
