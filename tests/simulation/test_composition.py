"""Policies composed of stages (issue #20): names, what a capacity stage changes, errors."""

from __future__ import annotations

import pytest

from simulation.composition import (
    compose,
    create_policy,
    describe_stages,
    policy_stages,
    resolve_policy,
    split_composition,
)
from simulation.decisions import Launch, ReclaimPlan, Resize, Slot
from simulation.engine import EngineConfig, Simulation
from simulation.errors import InputError, InvalidDecision
from simulation.model import InferenceLoad, JobSpec, PoolKind, ResourceProfile
from simulation.policies.base import Policy, registry
from simulation.runner import engine_config, run_simulation
from tests.simulation.builders import cluster, training_cluster, workload


def test_a_composition_takes_its_policy_and_the_stages_it_names() -> None:
    cls = resolve_policy("elastic-tiresias+aryl-loan")
    assert cls.composition == {"capacity": "aryl-loan", "ordering": "tiresias",
                               "allocation": "edl-compact", "placement": "best-fit"}
    assert resolve_policy("srtf+edl-expand").composition == {
        "capacity": "scf-loan", "ordering": "srtf", "allocation": "edl-expand",
        "placement": "best-fit"}
    # EDL's own stop-free scaling stays; the capacity stage sets Aryl's reclaim.
    assert cls.engine_defaults == {"scaling_mode": "stop-free", "reclaim_strategy": "aryl"}
    assert cls.base_policy == "elastic-tiresias"
    assert resolve_policy("elastic-tiresias+aryl-loan") is cls  # built once
    assert split_composition(cls.name) == ("elastic-tiresias", {"capacity": "aryl-loan"})


def test_every_registered_policy_names_its_paper_reclaim_as_its_capacity_stage() -> None:
    assert policy_stages(registry()["aryl"])["capacity"] == "aryl-loan"
    assert policy_stages(registry()["srtf"])["capacity"] == "scf-loan"  # the engine default
    assert describe_stages(registry()["srtf"]) == (
        "capacity: scf-loan, ordering: srtf, allocation: requested, placement: best-fit")
    assert describe_stages(registry()["fifo"]) == (
        "capacity: scf-loan, ordering+placement: fifo, allocation: requested")


def test_a_policy_that_leaves_placement_open_has_the_priority_key_a_placement_stage_reads() -> None:
    open_placement = sorted(name for name, cls in registry().items()
                            if "placement" not in cls.layers)
    assert open_placement == ["srsf", "srtf", "tiresias"]
    for name in open_placement:
        assert callable(getattr(registry()[name], "priority_key", None)), name


def test_a_stage_brings_its_parameters_and_a_placement_stage_wraps_inside_allocation() -> None:
    cls = resolve_policy("tiresias+gandiva-pack+edl-expand")
    assert [p.name for p in cls.params] == ["thresholds", "promote_knob", "pack_trial",
                                            "pack_max_util"]
    assert cls.shares_gpus
    assert [c.__name__ for c in cls.__mro__[1:4]] == ["EdlExpansion", "GandivaPackStage",
                                                      "Tiresias"]
    with pytest.raises(InputError, match="has no parameter 'pack_trial'"):
        create_policy("tiresias", {"pack_trial": 30})
    with pytest.raises(InputError, match="0 is outside 1 to 86400") as caught:
        create_policy("tiresias+gandiva-pack", {"pack_trial": "0"})
    assert caught.value.field == "pack_trial"
    with pytest.raises(InputError, match="policy 'fifo' decides placement itself"):
        resolve_policy("fifo+gandiva-pack")


def test_compose_drops_a_stage_the_policy_already_has() -> None:
    assert compose("srtf", {"capacity": "aryl-loan"}) == "srtf+aryl-loan"
    assert compose("srtf", {"capacity": "scf-loan"}) == "srtf"
    assert compose("aryl", {"capacity": "aryl-loan"}) == "aryl"
    assert compose("srtf", {"capacity": ""}) == "srtf"
    assert compose("aryl", {"capacity": "no-loan"}) == "aryl+no-loan"


def test_the_policy_of_a_composition_may_come_after_its_stages() -> None:
    cls = resolve_policy("aryl-loan+muri-s")
    assert cls is resolve_policy("muri-s+aryl-loan")
    assert cls.name == "muri-s+aryl-loan"
    assert resolve_policy("gandiva-pack+aryl-loan+tiresias").name == (
        "tiresias+gandiva-pack+aryl-loan")


@pytest.mark.parametrize(("name", "message"), [
    ("gandiva+srtf", "names the policies 'gandiva' and 'srtf'"),
    ("gandiva+aryl-loan-x", "unknown stage 'aryl-loan-x'"),
    ("nosuch+aryl-loan", "unknown policy 'nosuch'"),
    ("srtf+aryl-loan+scf-loan", "stages 'aryl-loan' and 'scf-loan' both take the capacity"),
    ("srtf+", "unknown stage ''"),
])
def test_a_bad_composition_is_refused_with_the_part_named(name: str, message: str) -> None:
    with pytest.raises(InputError, match=message) as caught:
        resolve_policy(name)
    assert caught.value.field == "policy"


def _reclaim_case() -> tuple:
    """One 2-GPU training server (t0 on it) and three 2-GPU inference servers, all lent at
    t = 0: best fit puts a on i0 and b (4 GPUs) across i1 and i2. At 600 s inference takes two
    servers back."""
    spec = cluster(("training", PoolKind.TRAINING, 1, 2), ("inference", PoolKind.INFERENCE, 3, 2))
    jobs = workload(JobSpec("t0", 0, 2, 1000), JobSpec("a", 0, 2, 1000),
                    JobSpec("b", 0, 4, 1000))
    return spec, jobs, InferenceLoad(times=(0.0, 600.0), busy_servers=(0, 2))


def test_aryl_loan_under_elastic_tiresias_returns_the_servers_of_one_job() -> None:
    """Every server holds one job, so SCF (Elastic-Tiresias' default) returns the first two
    in cluster order, i0 and i1, and preempts a and b. Aryl's Algorithm 1 returns i1 (cost
    1/2, and preempting b vacates i2) then i2: only b stops.

    By hand, 63 s restart: SCF: a restarts at once on i2, 600 + 63 + 400 = 1063; b waits for
    4 GPUs (t0's at 1000, a's at 1063) and ends at 1063 + 63 + 400 = 1526. Aryl: a ends at
    1000 untouched, b restarts at 1000 on t0's and a's GPUs: 1000 + 63 + 400 = 1463."""
    spec, jobs, load = _reclaim_case()
    ends = {}
    for name in ("elastic-tiresias", "elastic-tiresias+aryl-loan"):
        result = run_simulation(spec, jobs, name, inference_load=load)
        ends[name] = {row["job_id"]: row["end"] for row in result.jobs}
        assert result.summary["loaning"]["servers_reclaimed"] == 2
    assert ends["elastic-tiresias"] == {"t0": 1000.0, "a": 1063.0, "b": 1526.0}
    assert ends["elastic-tiresias+aryl-loan"] == {"t0": 1000.0, "a": 1000.0, "b": 1463.0}


def test_no_loan_keeps_training_on_its_own_pool() -> None:
    """Nothing is lent: a waits for t0's server (1000 + 1000 s) and b, wider than the
    training pool, never runs (reported unfinished, not waited for). With its own stage
    SRTF lends all three inference servers at 0 and a and b start at once."""
    spec, jobs, load = _reclaim_case()
    lent = run_simulation(spec, jobs, "srtf", inference_load=load)
    alone = run_simulation(spec, jobs, "srtf+no-loan", inference_load=load)
    assert lent.summary["loaning"]["servers_lent"] == 3
    assert alone.summary["loaning"]["servers_lent"] == 0
    assert {row["job_id"]: row["end"] for row in alone.jobs} == {
        "t0": 1000.0, "a": 2000.0, "b": None}
    assert alone.summary["engine"]["lending"] is False


@pytest.mark.parametrize(("raw", "value"), [("false", False), ("on", True), (False, False)])
def test_lending_is_a_yes_no_engine_setting(raw, value) -> None:
    assert engine_config({"lending": raw}, seed=0).lending is value


def test_a_lending_setting_that_is_no_yes_or_no_names_the_field() -> None:
    with pytest.raises(InputError, match="expected bool") as caught:
        engine_config({"lending": "sometimes"}, seed=0)
    assert caught.value.field == "lending"


def test_a_composition_runs_as_its_policy_with_the_stage_set_by_hand() -> None:
    spec, jobs, load = _reclaim_case()
    composed = run_simulation(spec, jobs, "tiresias+aryl-loan", inference_load=load)
    by_hand = run_simulation(spec, jobs, "tiresias", inference_load=load,
                             settings={"reclaim_strategy": "aryl"})
    assert composed.jobs == by_hand.jobs
    assert composed.summary["policy"] == "tiresias+aryl-loan"
    assert composed.summary["engine"]["reclaim_strategy"] == "aryl"


@pytest.mark.parametrize("policy", sorted(registry()))
def test_a_capacity_stage_changes_nothing_where_nothing_is_reclaimed(policy: str) -> None:
    """No inference pool: every policy with another capacity stage makes the same decisions,
    random draws included (a composition draws from its policy's stream)."""
    jobs = workload(*(JobSpec(f"j{i}", 40.0 * i, 2 ** (i % 3), 300.0 + 50 * i, min_workers=1,
                              max_workers=4) for i in range(8)))
    alone = run_simulation(training_cluster(2, 4), jobs, policy)
    composed = run_simulation(training_cluster(2, 4), jobs, f"{policy}+random-loan")
    assert composed.jobs == alone.jobs


def test_a_composition_draws_from_its_policys_random_stream() -> None:
    draws = [create_policy(name, seed=3).rng.random() for name in ("themis", "themis+aryl-loan")]
    assert draws[0] == draws[1]


def _one_elastic_one_waiting() -> tuple:
    """One 4-GPU server; A elastic (1 to 4 workers of 1 GPU) asks for 1 GPU and 1000 s; B
    (2 GPUs, 100 s) arrives at 100 s. Linear scaling."""
    return training_cluster(1, 4), workload(
        JobSpec("A", 0, 1, 1000, min_workers=1, max_workers=4), JobSpec("B", 100, 2, 100))


def test_edl_expand_gives_srtf_s_elastic_job_the_gpus_nobody_waits_for() -> None:
    """Free resizes (`scaling_mode=none`) to check the allocation rule alone. A starts on 1
    GPU and expands to 4 (400 done at 100 s). B waits, so A returns to 1; SRTF starts B (100 <
    600 left) and A expands into the last free GPU: 2 GPUs, 200 done by 200 s. B ends and A
    takes 4 again: 400 / 4, ends at 300. Plain SRTF: A ends at 1000. B is not delayed."""
    cluster, jobs = _one_elastic_one_waiting()
    plain = run_simulation(cluster, jobs, "srtf")
    expanded = run_simulation(cluster, jobs, "srtf+edl-expand",
                              settings={"scaling_mode": "none"})
    assert {row["job_id"]: row["end"] for row in plain.jobs} == {"A": 1000.0, "B": 200.0}
    assert {row["job_id"]: row["end"] for row in expanded.jobs} == {"A": 300.0, "B": 200.0}
    assert expanded.summary["scaling_ops"] == 4  # grow at 0, back and grow at 100, grow at 200


OPEN_ALLOCATION = sorted(name for name, cls in registry().items()
                         if "allocation" not in cls.layers)


@pytest.mark.parametrize("stage", ["edl-expand", "aryl-expand"])
@pytest.mark.parametrize("policy", OPEN_ALLOCATION)
def test_every_policy_open_to_allocation_expands_a_lone_elastic_job(policy, stage) -> None:
    """A alone (1 GPU of 4, up to 4 workers, 1000 s), free resizes: EDL's gain and Aryl's
    knapsack (w = 3 saves 1000 (1 - 1/4), the most) both give it all 4 GPUs: 250 s."""
    jobs = workload(JobSpec("A", 0, 1, 1000, min_workers=1, max_workers=4))
    result = run_simulation(training_cluster(1, 4), jobs, f"{policy}+{stage}",
                            settings={"scaling_mode": "none"})
    assert [row["end"] for row in result.jobs] == [250.0]


def test_edl_expand_brings_edl_s_stop_free_scaling() -> None:
    """The stage's default mechanism (EDL §4.2): a scale-out keeps the old workers training
    while the new ones prepare (30 s), then all stop 0.5 s; a scale-in stops nobody.
    0-30 at 1 GPU (30), 30.5-100 at 4 (278): 308. 100-130 at 1 (30), 130.5-200 at 2 (139):
    477. 200-230 at 2 (60), then 463 left at 4 GPUs from 230.5: ends at 346.25."""
    cluster, jobs = _one_elastic_one_waiting()
    result = run_simulation(cluster, jobs, "srtf+edl-expand")
    assert result.summary["engine"]["scaling_mode"] == "stop-free"
    assert {row["job_id"]: row["end"] for row in result.jobs} == {"A": 346.25, "B": 200.0}


def test_aryl_expand_splits_the_free_gpus_by_the_knapsack() -> None:
    """One 5-GPU server, A (1 GPU, up to 4) and B (2 GPUs, up to 4), 1000 s each at their
    requested size, linear scaling, free resizes: 2 GPUs are free. EDL's greedy gain gives
    both to A (gain 1, then 1/2 before B's 1/2 by order): A at 3 ends at 333.3; B then grows
    to 4 with 666.7 left: ends at 666.7. Aryl's knapsack values A+1 at 1000 (1 - 1/2) = 500
    and B+1 at 1000 (1 - 2/3) = 333.3, more than A+2's 666.7: A at 2 ends at 500; B at 3
    has done 750 by then and grows to 4: ends at 500 + 250 / 2 = 625."""
    jobs = workload(JobSpec("A", 0, 1, 1000, min_workers=1, max_workers=4),
                    JobSpec("B", 0, 2, 1000, min_workers=2, max_workers=4))
    ends = {}
    for stage in ("edl-expand", "aryl-expand"):
        result = run_simulation(training_cluster(1, 5), jobs, f"srtf+{stage}",
                                settings={"scaling_mode": "none"})
        ends[stage] = {row["job_id"]: round(row["end"], 6) for row in result.jobs}
    assert ends == {"edl-expand": {"A": 333.333333, "B": 666.666667},
                    "aryl-expand": {"A": 500.0, "B": 625.0}}


def test_aryl_loan_with_aryl_expand_scales_in_where_scf_preempts() -> None:
    """A 2-GPU training server holds A (elastic, 1 GPU up to 3, 3000 s) and B (1 GPU, 1000
    s); the 2-GPU inference server is lent at 0 and A's two flexible workers go there (on-loan
    first, its base stays). At 600 s inference takes it back. Aryl's reclaim finds it holds
    only flexible workers and scales A in: 1800 done at 3 GPUs, 400 more at 1 by 1000, then
    A takes B's GPU: 1000 + 800 / 2 = 1400, never preempted. SCF preempts A (63 s restart):
    663-1000 at 1 GPU, then 863 left at 2: 1431.5."""
    spec = cluster(("training", PoolKind.TRAINING, 1, 2), ("inference", PoolKind.INFERENCE, 1, 2))
    load = InferenceLoad(times=(0.0, 600.0), busy_servers=(0, 1))
    jobs = workload(JobSpec("A", 0, 1, 3000, min_workers=1, max_workers=3),
                    JobSpec("B", 0, 1, 1000))
    aryl = run_simulation(spec, jobs, "srtf+aryl-loan+aryl-expand", inference_load=load,
                          settings={"scaling_mode": "none"})
    scf = run_simulation(spec, jobs, "srtf+aryl-expand", inference_load=load,
                         settings={"scaling_mode": "none"})
    assert {row["job_id"]: row["end"] for row in aryl.jobs} == {"A": 1400.0, "B": 1000.0}
    assert (aryl.summary["loaning"]["reclaim_preemptions"],
            aryl.summary["loaning"]["servers_freed_by_scale_in"]) == (0, 1)
    assert {row["job_id"]: row["end"] for row in scf.jobs} == {"A": 1431.5, "B": 1000.0}
    assert scf.summary["loaning"]["reclaim_preemptions"] == 1


def _on_one_resource(resource: int) -> ResourceProfile:
    """A profile whose iteration is one second on one of Muri's four resources."""
    return ResourceProfile(tuple(1.0 if k == resource else 0.0 for k in range(4)))


@pytest.mark.parametrize(("u2_resource", "ends"), [
    (1, {"U1": 6464.0, "U2": 6464.0}),  # complementary: one group, both at full speed
    (0, {"U1": 6464.0, "U2": 8464.0}),  # the same resource: no gain, U2 waits
])
def test_muri_interleaves_on_a_loaned_server_until_aryl_loan_takes_it_back(
        u2_resource: int, ends: dict) -> None:
    """A 1-GPU training server runs T (non-preemptible, 5000 s); a 1-GPU inference server is
    lent at 0 and taken back at 600 s. U1 and U2 (2000 s each) arrive at 1 s. Interleaving
    overhead off (`group_overhead=none`). On complementary resources they form one group on
    the loaned GPU, each at full speed: 599 s done each when the reclaim preempts both; they
    restart together after T: 5000 + 63 + 1401 = 6464 (without loaning, 5000 + 2000). On the
    same resource a group gains nothing, so U1 runs alone on the loaned GPU and U2 waits for
    it: 6464 + 2000."""
    spec = cluster(("training", PoolKind.TRAINING, 1, 1), ("inference", PoolKind.INFERENCE, 1, 1))
    load = InferenceLoad(times=(0.0, 600.0), busy_servers=(0, 1))
    jobs = workload(JobSpec("T", 0, 1, 5000, profile=_on_one_resource(2), preemptible=False),
                    JobSpec("U1", 1, 1, 2000, profile=_on_one_resource(0)),
                    JobSpec("U2", 1, 1, 2000, profile=_on_one_resource(u2_resource)))
    result = run_simulation(spec, jobs, "muri-s+aryl-loan", inference_load=load,
                            settings={"group_overhead": "none"})
    assert {row["job_id"]: row["end"] for row in result.jobs} == {"T": 5000.0, **ends}
    assert result.summary["loaning"]["reclaim_preemptions"] == (2 if u2_resource else 1)


def test_a_stage_for_a_layer_the_policy_decides_is_refused() -> None:
    with pytest.raises(InputError, match="policy 'gandiva' decides placement itself"):
        resolve_policy("gandiva+gandiva-pack")
    assert describe_stages(registry()["gandiva"]) == (
        "capacity: scf-loan, ordering+allocation+placement: gandiva")


def test_elastic_tiresias_names_its_stages_and_keeps_them() -> None:
    """A registered composition takes other capacity stages; its other layers are its
    definition, so another stage there is a different composition of its ordering."""
    assert describe_stages(registry()["elastic-tiresias"]) == (
        "capacity: scf-loan, ordering: tiresias, allocation: edl-compact, placement: best-fit")
    with pytest.raises(InputError, match="'elastic-tiresias' is tiresias with the allocation "
                                         "stage 'edl-compact'; name 'tiresias' with the stages"):
        resolve_policy("elastic-tiresias+edl-expand")
    assert resolve_policy("tiresias+edl-compact").engine_defaults == (
        registry()["elastic-tiresias"].engine_defaults)


def test_an_invalid_decision_of_an_allocation_stage_names_it(monkeypatch) -> None:
    def resize_onto_nowhere(view):
        for job_id in view.running:
            yield Resize(job_id, (Slot("nowhere", 2),))

    monkeypatch.setattr("simulation.policies.edl_expansion.expand", resize_onto_nowhere)
    cluster, jobs = _one_elastic_one_waiting()
    with pytest.raises(InvalidDecision, match=r"^stage 'edl-expand' \(allocation\) of policy "
                                              r"'srtf\+edl-expand': "):
        run_simulation(cluster, jobs, "srtf+edl-expand")


class _PlacesOnNoServer(Policy):
    name = "no-server"
    interval = None

    def schedule(self, view):
        return [Launch(job_id, (Slot("nowhere", 1),)) for job_id in view.queue]


def test_an_invalid_decision_names_the_stage_that_made_it() -> None:
    sim = Simulation(training_cluster(1, 4), workload(JobSpec("a", 0, 1, 10)),
                     _PlacesOnNoServer())
    with pytest.raises(InvalidDecision, match=r"^stage 'no-server' \(ordering, allocation, "
                                              r"placement\) of policy 'no-server': "):
        sim.run()


def test_an_invalid_reclaim_plan_names_the_capacity_stage() -> None:
    spec, jobs, load = _reclaim_case()
    sim = Simulation(spec, jobs, create_policy("fifo+random-loan"),
                     config=EngineConfig(reclaim_strategy="random"), inference_load=load)
    sim.reclaim_strategy = lambda view, count, rng: ReclaimPlan(servers=(), preempt=())
    with pytest.raises(InvalidDecision, match=r"^stage 'random-loan' \(capacity\) of policy "
                                              r"'fifo\+random-loan': reclaim plan returns 0"):
        sim.run()
