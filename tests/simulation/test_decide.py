"""Live decisions on snapshots: DESIGN.md's reclaim example, Figure 5, schedule answers in the
elastic runtimes' terms, field-naming errors, determinism and the CLI's `decide`."""

from __future__ import annotations

import copy
import json
import subprocess
import sys

import pytest

from simulation.decide import decide_loan, decide_reclaim, decide_schedule
from simulation.errors import InputError
from simulation.policies.base import registry
from tests.support import REPO

DESIGN_RECLAIM = {
    "count": 2,
    "strategy": "aryl",
    "state": {
        "servers": [
            {"id": "inf-1", "pool": "inference", "gpus": 8, "gpu_type": "T4", "on_loan": True},
            {"id": "inf-2", "pool": "inference", "gpus": 8, "gpu_type": "T4", "on_loan": True},
        ],
        "jobs": [
            {"id": "job-a", "status": "running", "gpus_per_worker": 1,
             "min_workers": 8, "max_workers": 8,
             "placement": [{"server": "inf-1", "gpus": 4, "flexible": False},
                           {"server": "inf-2", "gpus": 4, "flexible": False}],
             "remaining_seconds": 3600},
        ],
    },
}


def figure_5_state() -> dict:
    """Aryl Figure 5: a fills s1-s2, b fills s3, c has 8 on s4 and 2 on s5, d 2 on s5, 8 on s6."""
    servers = [{"id": f"s{i}", "pool": "inference", "gpus": 10, "gpu_type": "T4",
                "on_loan": True} for i in range(1, 7)]
    layout = {"a": [("s1", 8), ("s2", 8)], "b": [("s3", 8)], "c": [("s4", 8), ("s5", 2)],
              "d": [("s5", 2), ("s6", 8)]}
    jobs = [{"id": job, "status": "running", "remaining_seconds": 600,
             "placement": [{"server": s, "gpus": g} for s, g in slots]}
            for job, slots in layout.items()]
    return {"servers": servers, "jobs": jobs}


def elastic_state() -> dict:
    """Job e: 2 base workers on t1, 4 flexible on inf-1 (on loan); job f fills inf-2."""
    return {
        "servers": [
            {"id": "t1", "pool": "training", "gpus": 8, "gpu_type": "V100"},
            {"id": "inf-1", "pool": "inference", "gpus": 8, "gpu_type": "T4", "on_loan": True},
            {"id": "inf-2", "pool": "inference", "gpus": 8, "gpu_type": "T4", "on_loan": True},
        ],
        "jobs": [
            {"id": "e", "status": "running", "min_workers": 2, "max_workers": 8,
             "remaining_seconds": 900,
             "placement": [{"server": "t1", "gpus": 2},
                           {"server": "inf-1", "gpus": 4, "flexible": True}]},
            {"id": "f", "status": "running", "remaining_seconds": 900,
             "placement": [{"server": "inf-2", "gpus": 8}]},
        ],
    }


def test_design_reclaim_example_gives_the_documented_answer() -> None:
    assert decide_reclaim(DESIGN_RECLAIM) == {
        "strategy": "aryl", "servers": ["inf-1", "inf-2"], "preempted_jobs": ["job-a"],
        "scaled_in": [], "collateral_gpus": 0,
    }


def test_figure_5_reclaim_of_two_servers_preempts_exactly_one_job() -> None:
    answer = decide_reclaim({"count": 2, "state": figure_5_state()})
    assert sorted(answer["servers"]) == ["s1", "s2"]
    assert answer["preempted_jobs"] == ["a"]
    assert answer["collateral_gpus"] == 0


def test_reclaim_scales_in_flexible_workers_with_hosts_and_grace_period() -> None:
    answer = decide_reclaim({"count": 1, "state": elastic_state(), "grace_period_seconds": 12})
    assert answer["servers"] == ["inf-1"]
    assert answer["preempted_jobs"] == []
    assert answer["scaled_in"] == [{
        "job": "e", "workers": 4, "from_workers": 6, "target_workers": 2,
        "min_workers": 2, "max_workers": 8, "join_hosts": [],
        "leave_hosts": [{"host": "inf-1", "slots": 4}],
        "placement": [{"server": "t1", "gpus": 2, "flexible": False}],
        "grace_period_seconds": 12.0,
    }]


@pytest.mark.parametrize("strategy", ["aryl", "scf", "random", "gpu-fraction", "optimal"])
def test_every_strategy_empties_the_returned_servers(strategy: str) -> None:
    answer = decide_reclaim({"count": 3, "strategy": strategy, "state": figure_5_state(),
                             "seed": 4})
    assert len(set(answer["servers"])) == 3
    assert answer == decide_reclaim({"count": 3, "strategy": strategy,
                                     "state": figure_5_state(), "seed": 4})


def test_schedule_launches_queued_jobs_within_free_gpus() -> None:
    state = elastic_state()
    queue = [{"id": "q1", "min_workers": 4, "remaining_seconds": 100},
             {"id": "q2", "min_workers": 2, "max_workers": 2, "remaining_seconds": 50}]
    answer = decide_schedule({"policy": "fifo", "state": state, "queue": queue})
    assert set(answer) == {"policy", "launch", "scale_out", "scale_in", "preempt", "migrate",
                           "share"}
    launched = {entry["job"]: entry for entry in answer["launch"]}
    assert set(launched) == {"q1", "q2"}
    used = {"t1": 2, "inf-1": 4, "inf-2": 8}
    for entry in launched.values():
        for slot in entry["placement"]:
            used[slot["server"]] += slot["gpus"]
    assert all(gpus <= 8 for gpus in used.values())


def test_schedule_scale_out_names_target_range_and_joining_hosts() -> None:
    state = {"servers": [{"id": f"t{i}", "pool": "training", "gpus": 8} for i in (1, 2)],
             "jobs": [{"id": "e", "status": "running", "min_workers": 2, "max_workers": 16,
                       "remaining_seconds": 3600, "model": "resnet50",
                       "placement": [{"server": "t1", "gpus": 2}]}]}
    answer = decide_schedule({"policy": "elastic-tiresias", "state": state})
    assert answer["launch"] == [] and answer["scale_out"]
    scale = answer["scale_out"][0]
    assert scale["job"] == "e" and scale["from_workers"] == 2
    assert 2 < scale["target_workers"] <= 16
    assert scale["workers"] == scale["target_workers"] - 2
    assert sum(h["slots"] for h in scale["join_hosts"]) == scale["workers"]
    assert scale["leave_hosts"] == [] and scale["grace_period_seconds"] == 0


def test_schedule_of_a_composition_scales_out_by_its_allocation_stage() -> None:
    """`srtf+aryl-expand` on one 8-GPU training server with elastic e on 2 of them (2 to 6
    workers, linear scaling) and nothing waiting: SRTF launches nothing, Aryl's knapsack
    gives e the 4 workers of its largest item (a saving that grows with w), all on t1."""
    state = {"servers": [{"id": "t1", "pool": "training", "gpus": 8}],
             "jobs": [{"id": "e", "status": "running", "min_workers": 2, "max_workers": 6,
                       "remaining_seconds": 3600, "placement": [{"server": "t1", "gpus": 2}]}]}
    answer = decide_schedule({"policy": "srtf+aryl-expand", "state": state})
    assert answer["policy"] == "srtf+aryl-expand" and answer["launch"] == []
    (scale,) = answer["scale_out"]
    assert (scale["job"], scale["from_workers"], scale["target_workers"]) == ("e", 2, 6)
    assert scale["join_hosts"] == [{"host": "t1", "slots": 4}]


def test_a_packing_launch_says_the_share_each_job_of_the_gpu_gets() -> None:
    """Tiresias with Gandiva's packing on a 1-GPU server running a (rhn): waiting b (scrnn)
    packs onto a's GPU, and both run at Table 1's C/2 = 1.425 / 2 = 0.7125."""
    state = {"servers": [{"id": "t1", "pool": "training", "gpus": 1}],
             "jobs": [{"id": "a", "status": "running", "min_workers": 1, "model": "rhn",
                       "remaining_seconds": 3000, "placement": [{"server": "t1", "gpus": 1}]}]}
    queue = [{"id": "b", "min_workers": 1, "remaining_seconds": 600, "model": "scrnn"}]
    answer = decide_schedule({"policy": "tiresias+gandiva-pack", "state": state,
                              "queue": queue})
    assert [entry["job"] for entry in answer["launch"]] == ["b"]
    assert answer["share"] == [{"job": "a", "share": 0.7125}, {"job": "b", "share": 0.7125}]
    plain = decide_schedule({"policy": "tiresias", "state": state, "queue": queue})
    assert (plain["launch"], plain["share"]) == ([], [])


def test_a_snapshots_packed_jobs_are_a_pack_the_next_job_may_join() -> None:
    """The state holds a and b on one GPU (an earlier packing decision). The stage takes them
    as a pack at 0.7125 each, and waiting c (vae, +412 %) joins it: C = min(3, (1.46 + 1.39 +
    5.12) / 3) = 2.656667, so 0.885556 each."""
    slot = [{"server": "t1", "gpus": 1}]
    state = {"servers": [{"id": "t1", "pool": "training", "gpus": 1}],
             "jobs": [{"id": "a", "status": "running", "min_workers": 1, "model": "rhn",
                       "remaining_seconds": 3000, "placement": slot},
                      {"id": "b", "status": "running", "min_workers": 1, "model": "scrnn",
                       "remaining_seconds": 600, "placement": slot}]}
    queue = [{"id": "c", "min_workers": 1, "remaining_seconds": 600, "model": "vae"}]
    answer = decide_schedule({"policy": "tiresias+gandiva-pack", "state": state,
                              "queue": queue})
    assert [entry["job"] for entry in answer["launch"]] == ["c"]
    assert [(e["job"], round(e["share"], 6)) for e in answer["share"]] == [
        ("a", 0.885556), ("b", 0.885556), ("c", 0.885556)]


def test_aryl_expand_puts_flexible_workers_on_loaned_servers_first() -> None:
    """Aryl §5.3: e (1 to 3 workers) runs on training server t1 beside a, which leaves one GPU
    free there; x1 is on loan and empty. The knapsack gives e both workers it may add, and
    both go to x1, so a reclaim of x1 only scales e in; in server order one would take t1's
    free GPU and one x1's (x1 sorts after t1)."""
    state = {"servers": [{"id": "t1", "pool": "training", "gpus": 4},
                         {"id": "x1", "pool": "inference", "gpus": 4, "on_loan": True}],
             "jobs": [{"id": "e", "status": "running", "min_workers": 1, "max_workers": 3,
                       "remaining_seconds": 3600, "placement": [{"server": "t1", "gpus": 1}]},
                      {"id": "a", "status": "running", "min_workers": 2,
                       "remaining_seconds": 9000, "placement": [{"server": "t1", "gpus": 2}]}]}
    answer = decide_schedule({"policy": "srtf+aryl-expand", "state": state})
    (scale,) = answer["scale_out"]
    assert (scale["job"], scale["target_workers"]) == ("e", 3)
    assert scale["join_hosts"] == [{"host": "x1", "slots": 2}]


@pytest.mark.parametrize("policy", sorted(registry()))
def test_every_registered_policy_answers_or_refuses_by_name(policy: str) -> None:
    """A policy that needs the history of a whole run (SIA) refuses; none crashes."""
    queue = [{"id": f"q{i}", "min_workers": 1 + i % 3, "remaining_seconds": 60.0 * (i + 1)}
             for i in range(5)]
    try:
        answer = decide_schedule({"policy": policy, "state": elastic_state(), "queue": queue})
    except InputError as exc:
        assert exc.field == "policy"
    else:
        assert answer["policy"] == policy


@pytest.mark.parametrize(("request_", "field"), [
    ({"count": 1}, "state"),
    ({"count": 0, "state": elastic_state()}, "count"),
    ({"count": 3, "state": elastic_state()}, "count"),
    ({"count": 1, "strategy": "nope", "state": elastic_state()}, "strategy"),
    ({"count": 1, "state": {"servers": [{"id": "x", "pool": "p"}]}}, "state.servers[0].gpus"),
    ({"count": 1, "state": {"servers": [{"id": "x", "pool": "p", "gpus": 8}],
                            "jobs": [{"id": "j", "status": "running", "remaining_seconds": 1,
                                      "placement": [{"server": "y", "gpus": 1}]}]}},
     "state.jobs[0].placement[0].server"),
    ({"count": 1, "state": {"servers": [{"id": k, "pool": "p", "gpus": 8, "on_loan": True}
                                        for k in ("x", "y")],
                            "jobs": [{"id": "j", "status": "running", "remaining_seconds": 1,
                                      "placement": [{"server": "x", "gpus": 9}]}]}},
     "state.jobs[0].placement"),
])
def test_bad_reclaim_requests_name_the_field(request_: dict, field: str) -> None:
    with pytest.raises(InputError) as caught:
        decide_reclaim(request_)
    assert caught.value.field == field


def test_bad_schedule_requests_name_the_field() -> None:
    with pytest.raises(InputError) as caught:
        decide_schedule({"policy": "no-such", "state": elastic_state()})
    assert caught.value.field == "policy"
    with pytest.raises(InputError) as caught:
        decide_schedule({"policy": "fifo", "state": elastic_state(),
                         "queue": [{"id": "e", "remaining_seconds": 1}]})
    assert caught.value.field == "queue[0].id"


def test_loan_by_count_respects_the_lending_limit_and_by_ids_refuses_training() -> None:
    state = {"pools": [{"name": "inference", "kind": "inference", "lending_limit": 2}],
             "servers": [{"id": f"i{k}", "pool": "inference", "gpus": 8} for k in range(4)]
             + [{"id": "t", "pool": "training", "gpus": 8}]}
    assert decide_loan({"count": 2, "state": state}) == {"servers": ["i0", "i1"]}
    with pytest.raises(InputError) as caught:
        decide_loan({"count": 3, "state": state})
    assert caught.value.field == "count"
    with pytest.raises(InputError) as caught:
        decide_loan({"servers": ["i0", "t"], "state": state})
    assert caught.value.field == "servers[1]"


def test_decisions_do_not_change_the_request() -> None:
    request = {"count": 1, "state": elastic_state()}
    before = copy.deepcopy(request)
    decide_reclaim(request)
    assert request == before


def test_cli_decide_prints_the_same_json_and_exits_2_on_bad_input(tmp_path) -> None:
    path = tmp_path / "reclaim.json"
    path.write_text(json.dumps(DESIGN_RECLAIM))
    done = subprocess.run([sys.executable, "-m", "simulation", "decide", "reclaim",
                           "--input", str(path)], capture_output=True, text=True, cwd=REPO)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == decide_reclaim(DESIGN_RECLAIM)
    path.write_text(json.dumps({"count": 5, "state": DESIGN_RECLAIM["state"]}))
    done = subprocess.run([sys.executable, "-m", "simulation", "decide", "reclaim",
                           "--input", str(path)], capture_output=True, text=True, cwd=REPO)
    assert done.returncode == 2
    assert "field 'count'" in done.stderr
