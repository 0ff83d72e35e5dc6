"""Models for a trace that names none (`simulation.workloads.model_mix`)."""

from __future__ import annotations

from collections import Counter

from simulation.interleaving import job_profile
from simulation.model import JobSpec, Workload
from simulation.workloads.model_mix import MURI_MODELS, model_for, with_models


def test_unnamed_jobs_get_a_muri_model_and_named_ones_keep_theirs():
    jobs = (JobSpec("a", 0.0, 1, 60.0), JobSpec("b", 1.0, 2, 60.0, model="vgg16"),
            JobSpec("c", 2.0, 4, 60.0))
    named = with_models(Workload(jobs, source="t"))
    assert named.jobs[1].model == "vgg16"
    assert [named.jobs[0].model, named.jobs[2].model] == [model_for("a"), model_for("c")]
    assert all(job_profile(job) is not None for job in named.jobs)  # Muri can group them all
    # a job's model depends on its id alone, not on the rest of the trace
    assert with_models(Workload(jobs[2:])).jobs[0].model == named.jobs[2].model
    assert model_for("a", seed=1) in MURI_MODELS


def test_models_are_drawn_uniformly_like_muris_traces():
    # 8,000 ids over 8 models: 1,000 each, binomial sd ~30; Muri's trace 1 holds 167-201 of
    # 1,494 per model. A skewed or constant choice falls far outside 850-1,150.
    counts = Counter(model_for(str(i)) for i in range(8000))
    assert set(counts) == set(MURI_MODELS)
    assert all(850 <= n <= 1150 for n in counts.values())
