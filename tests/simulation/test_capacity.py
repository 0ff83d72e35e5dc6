"""The capacity search (simulation/capacity.py): hand-derived answers, costs, the bracketing
rounds, non-monotone detection, and that an answer is never a size that missed a target."""

from __future__ import annotations

import random

import pytest

from simulation import capacity
from simulation.capacity import (
    AXIS_LOAN,
    AXIS_SERVERS,
    Axis,
    CostModel,
    Outcome,
    Point,
    Problem,
    Target,
)
from simulation.errors import InputError
from simulation.model import JobSpec, PoolKind
from tests.simulation.builders import cluster, training_cluster, workload

HOUR = 3600.0
SERVERS = Axis(AXIS_SERVERS, pools=("training",))


def _fifo_search(targets: tuple[Target, ...], *, jobs: int, per_round: int = 1) -> dict:
    """`jobs` jobs of 8 GPUs, one hour each, all at t=0, under FIFO on 8-GPU servers."""
    trace = workload(*[JobSpec(f"j{i}", 0.0, 8, HOUR) for i in range(jobs)])
    base = training_cluster(4, 8)
    problem = Problem(policies=("fifo",), targets=targets, axis=SERVERS, low=1, high=2 * jobs,
                      points_per_round=per_round)

    def evaluate(points):
        return {p: capacity.evaluate_point(base, trace, p, SERVERS) for p in points}

    return capacity.search(problem, evaluate, cluster=base, costs=CostModel({"V100": 2.0}))


@pytest.mark.parametrize("per_round", [1, 3])
def test_jobs_that_fit_exactly_in_n_servers_need_n_servers_for_makespan_one_duration(per_round):
    # 6 jobs of one whole server each: all finish within one duration only if they all run
    # at once, on 6 servers; 5 servers leave one job for a second wave (makespan 2 h).
    result = _fifo_search((Target("makespan", HOUR),), jobs=6, per_round=per_round)
    fifo = result["policies"][0]
    assert (fifo["status"], fifo["level"], fifo["bracket"]) == (
        "found", 6, {"meets": 6, "misses": 5})
    assert fifo["cost_per_hour"] == 6 * 8 * 2.0
    assert fifo["gpus"] == {"V100": 48}


def test_mean_jct_bound_gives_the_hand_derived_size():
    # N servers run waves of N one-hour jobs: mean JCT over 6 jobs is
    # N=3: (3x1 h + 3x2 h)/6 = 1.5 h, N=2: (2x1 + 2x2 + 2x3)/6 = 2 h. Bound 1.5 h -> 3.
    result = _fifo_search((Target("jct.mean", 1.5 * HOUR),), jobs=6)
    fifo = result["policies"][0]
    assert (fifo["level"], fifo["bracket"]["misses"]) == (3, 2)
    assert fifo["metrics"]["jct.mean"]["mean"] == 1.5 * HOUR
    assert [p["feasible"] for p in fifo["points"] if p["level"] == 2] == [False]


def test_a_cluster_costs_its_gpus_and_fixed_server_price_per_hour():
    spec = cluster(("training", PoolKind.TRAINING, 4, 8), ("inference", PoolKind.INFERENCE, 10, 4))
    spec = spec.__class__(spec.name, spec.gpu_types, (
        spec.pools[0], spec.pools[1].__class__("inference", PoolKind.INFERENCE, "T4", 10, 4)))
    costs = CostModel({"V100": 2.5, "T4": 0.5}, {"V100": 1.0})
    # 4 x (8 x 2.5 + 1) + 10 x 4 x 0.5 = 84 + 20
    assert costs.per_hour(spec) == 104.0
    # Servers axis on training: 6 servers -> 6 x 21 + 20.
    assert Axis(AXIS_SERVERS, pools=("training",)).cost(spec, 6, costs) == 146.0
    # Loan axis: the inference pool is paid for the 3 servers it may lend only: 84 + 3 x 2.
    loan = Axis(AXIS_LOAN)
    assert loan.cost(spec, 3, costs) == 90.0
    assert loan.settings(spec, 3) == {"loan_headroom": 7}
    with pytest.raises(InputError, match="no price per GPU-hour for T4") as error:
        CostModel({"V100": 2.5}).check(spec)
    assert error.value.field == "costs.gpu_hour"


def test_pools_sized_together_keep_their_ratio_to_the_first():
    spec = cluster(("training", PoolKind.TRAINING, 8, 8), ("inference", PoolKind.INFERENCE, 4, 8))
    axis = Axis(AXIS_SERVERS, pools=("training", "inference"))
    assert axis.pool_servers(spec, 6) == {"training": 6, "inference": 3}
    resized, settings = axis.apply(spec, 6)
    assert [p.servers for p in resized.pools] == [6, 3] and settings == {}


def test_the_range_starts_where_the_widest_job_fits():
    trace = workload(JobSpec("wide", 0.0, 24, HOUR), JobSpec("small", 0.0, 1, HOUR))
    # 24 GPUs on 8-GPU servers: 3 servers at least; the default top is twice the 4 given.
    assert SERVERS.default_range(training_cluster(4, 8), trace) == (3, 8)


class FakeRuns:
    """An evaluator whose level meets `queuing.p95 <= 1` when `meets(level)`; counts calls."""

    def __init__(self, meets) -> None:
        self.meets, self.calls = meets, []

    def __call__(self, points):
        self.calls.append(sorted(points))
        return {p: Outcome({"queuing": {"p95": 0.0 if self.meets(p.level) else 2.0},
                            "unfinished": 0}) for p in points}


def _problem(**kwargs) -> Problem:
    values = {"policies": ("fifo",), "targets": (Target("queuing.p95", 1.0),),
              "axis": SERVERS, "low": 1, "high": 100}
    return Problem(**{**values, **kwargs})


def test_k_ary_bracketing_narrows_with_k_points_per_round():
    # Threshold 37 in 1..100, 3 points a round, 2 seeds:
    # round 1: ceil(i x 100/3) = 34 misses, 67, 100 meet -> (34, 67)
    # round 2: 34 + round(i x 33/4) = 42, 50, 59 meet -> (34, 42)
    # round 3: 34 + round(i x 8/4) = 36 misses, 38, 40 meet -> (36, 38)
    # round 4: only 37 lies inside -> meets: answer 37.
    runs = FakeRuns(lambda level: level >= 37)
    result = capacity.search(_problem(points_per_round=3, seeds=(0, 1)), runs,
                             cluster=training_cluster(4, 8), costs=CostModel({"V100": 1.0}))
    levels = [sorted({p.level for p in call}) for call in runs.calls]
    assert levels == [[34, 67, 100], [42, 50, 59], [36, 38, 40], [37]]
    assert all(len(call) == 2 * len(lv) for call, lv in zip(runs.calls, levels, strict=True))
    fifo = result["policies"][0]
    assert (fifo["level"], fifo["evaluations"], result["rounds"]) == (37, 20, 4)
    assert fifo["non_monotone"] == []


def test_a_level_meeting_the_targets_below_one_missing_them_is_reported_not_answered():
    # Round 1 evaluates 4, 7, 10 (ceil(i x 10/3)): 4 meets, 7 misses, 10 meets -> the
    # answer can only be above 7; round 2 tries 8 and 9 (7 + round(i x 3/4)), both meet.
    pattern = {4: True, 7: False, 8: True, 9: True, 10: True}
    runs = FakeRuns(lambda level: pattern[level])
    result = capacity.search(_problem(points_per_round=3, high=10), runs,
                             cluster=training_cluster(4, 8), costs=CostModel({"V100": 1.0}))
    fifo = result["policies"][0]
    assert fifo["level"] == 8
    assert fifo["non_monotone"] == [[4, 7]]
    assert len(runs.calls) == 2


def test_nothing_met_at_the_top_of_the_range_is_not_met_with_the_closest_shown():
    runs = FakeRuns(lambda level: False)
    result = capacity.search(_problem(high=10), runs, cluster=training_cluster(4, 8),
                             costs=CostModel({"V100": 1.0}))
    fifo = result["policies"][0]
    assert (fifo["status"], fifo["closest"]["level"], len(runs.calls)) == ("not_met", 10, 1)
    assert result["saving"] is None


def test_a_level_with_an_unfinished_job_never_meets_the_targets():
    problem = _problem()
    seeds = {0: {"unfinished": 1.0, "queuing.p95": 0.0}}
    assert capacity.level_meets(problem, seeds) is False
    assert capacity.level_meets(problem, {0: {"unfinished": 0.0, "queuing.p95": 0.0}}) is True


def test_the_mean_over_seeds_decides_not_each_seed():
    # Seeds at 0.5 and 1.4: mean 0.95 <= 1 meets, although one seed alone misses.
    problem = _problem(seeds=(0, 1))
    seeds = {0: {"unfinished": 0.0, "queuing.p95": 0.5}, 1: {"unfinished": 0.0,
                                                             "queuing.p95": 1.4}}
    assert capacity.level_meets(problem, seeds) is True
    seeds[1]["queuing.p95"] = 1.6
    assert capacity.level_meets(problem, seeds) is False


@pytest.mark.parametrize("seed", range(30))
def test_the_answer_was_evaluated_and_met_every_target(seed):
    """Random feasibility patterns (monotone or not), random k and seeds: the answer is an
    evaluated level that met the targets on the mean, with every evaluated level above it
    meeting them; on a monotone pattern it is the true least level."""
    rng = random.Random(seed)
    high = rng.randint(1, 60)
    threshold = rng.randint(1, high + 1)
    noisy = {lv for lv in range(1, high + 1) if rng.random() < 0.15}
    monotone = seed % 2 == 0

    def meets(level):
        return (level >= threshold) != (not monotone and level in noisy)

    runs = FakeRuns(meets)
    problem = _problem(high=high, points_per_round=rng.randint(1, 4))
    fifo = capacity.search(problem, runs, cluster=training_cluster(4, 8),
                           costs=CostModel({"V100": 1.0}))["policies"][0]
    evaluated = {p["level"]: p["feasible"] for p in fifo["points"]}
    assert all(evaluated[lv] == meets(lv) for lv in evaluated)
    if fifo["status"] == "found":
        assert evaluated[fifo["level"]] and meets(fifo["level"])
        assert all(ok for lv, ok in evaluated.items() if lv > fifo["level"])
    else:
        assert not meets(high)
    if monotone:
        assert fifo.get("level") == (threshold if threshold <= high else None)


def test_slowed_share_counts_jobs_slower_than_the_baseline_on_the_cluster_as_given():
    problem = _problem(targets=(Target("slowed_share", 0.01),), policies=("fifo", "tiresias"),
                       reference_level=4)
    # The baseline's runs at the given size come first, in a round of their own.
    assert capacity.plan(problem, {}) == [Point("fifo", 4, 0)]
    reference = [{"job_id": j, "jct": 10.0} for j in "abcd"]
    jobs = [{"job_id": "a", "jct": 10.0}, {"job_id": "b", "jct": 12.0},
            {"job_id": "c", "jct": 9.0}, {"job_id": "d", "jct": 11.0}]
    # b and d take longer than under the baseline, c less: 2 of 4 slowed.
    measured = capacity.measure(problem, {"unfinished": 0}, jobs, reference)
    assert measured == {"unfinished": 0.0, "slowed_share": 0.5}


@pytest.mark.parametrize(("text", "metric", "bound"), [
    ("queuing.p95<=3600", "queuing.p95", 3600.0),
    ("queuing.p95 <= 1h", "queuing.p95", 3600.0),
    ("jct.mean<=90min", "jct.mean", 5400.0),
    ("slowed_share<=1%", "slowed_share", 0.01),
])
def test_targets_read_units(text, metric, bound):
    target = Target.parse(text)
    assert (target.metric, target.bound) == (metric, pytest.approx(bound))


@pytest.mark.parametrize(("text", "message"), [
    ("queuing.p95>=3600", "expected METRIC<=BOUND"),
    ("latency<=3", "unknown metric 'latency'"),
    ("jct.mean<=5%", "jct.mean is not a share"),
    ("slowed_share<=2h", "slowed_share is not a time"),
    ("slowed_share<=150%", "a share in [0, 1]"),
    ("makespan<=soon", "is not a number"),
])
def test_a_bad_target_is_refused_naming_the_argument(text, message):
    with pytest.raises(InputError, match=message.replace("[", r"\[").replace("]", r"\]")
                       ) as error:
        Target.parse(text, field="--target")
    assert error.value.field == "--target"


def test_the_saving_sentence_compares_the_cheapest_with_the_baseline():
    # FIFO needs 10 servers, Tiresias 8: 80 vs 64 GPUs is 20 % fewer.
    need = {"fifo": 10, "tiresias": 8}

    def evaluate(points):
        return {p: Outcome({"queuing": {"p95": 0.0 if p.level >= need[p.policy] else 2.0},
                            "unfinished": 0}) for p in points}

    result = capacity.search(_problem(policies=("tiresias", "fifo"), high=20), evaluate,
                             cluster=training_cluster(4, 8), costs=CostModel({"V100": 1.0}))
    assert result["saving"]["sentence"] == (
        "tiresias meets queuing.p95 <= 1 s with 20% fewer training GPUs than fifo "
        "(64 vs 80 GPUs, 20% lower cost)")


@pytest.mark.parametrize(("metric", "cell", "text"), [
    ("queuing.p95", {"mean": 3099.0, "ci95": 13344.0}, "51.6 ± 222.4 min"),
    ("jct.mean", {"mean": 90000.0, "ci95": None}, "25 h"),
    ("slowed_share", {"mean": 0.0125, "ci95": 0.005}, "1.25% ± 0.50%"),
])
def test_a_mean_and_its_interval_read_in_the_means_unit(metric, cell, text):
    assert capacity.format_mean_ci(metric, cell) == text
