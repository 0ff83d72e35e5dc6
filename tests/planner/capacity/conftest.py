"""A scenario whose capacity answer is derived by hand, and a driver that plays the workers."""

from __future__ import annotations

import pytest

from planner.capacity.models import CapacitySearch, CapacityStatus
from planner.clusters.services import cluster_create_from_spec
from planner.scenarios import services as scenario_services
from planner.scenarios.models import Run, RunStatus, Scenario
from tests.planner.factories import upload

CLUSTER = """\
name: {name}
gpu_types: {{V100: {{speed: 1.0, memory_gb: 32}}}}
pools:
  - {{name: training, kind: training, gpu_type: V100, servers: 4, gpus_per_server: 8}}
"""
# Six jobs of one whole 8-GPU server each, one hour, all at t=0. Under FIFO the makespan is
# one hour only when all six run at once (6 servers); the mean JCT is 1.5 h at 3 servers
# ((3 x 1 h + 3 x 2 h) / 6) and 2 h at 2.
TRACE = "job_id,submit_time,num_gpus,duration\n" + "".join(
    f"j{i},0,8,3600\n" for i in range(6))


@pytest.fixture(autouse=True)
def media_root(settings, tmp_path):
    settings.MEDIA_ROOT = str(tmp_path)
    return tmp_path


@pytest.fixture
def no_broker(monkeypatch):
    """Runs stay queued in the database: the test executes them itself (`drive`)."""
    sent = []
    monkeypatch.setattr("planner.scenarios.dispatch.runs_dispatch",
                        lambda *, runs: sent.extend(runs) or len(runs))
    return sent


def scenario_make(*, policies=("fifo",), seeds=(0,), name: str = "six") -> Scenario:
    cluster = cluster_create_from_spec(spec_text=CLUSTER.format(name=name))
    workload = scenario_services.workload_create_from_upload(name="six jobs",
                                                             file=upload("six.csv", TRACE))
    return scenario_services.scenario_create(name="six jobs", cluster=cluster,
                                             workload=workload, policies=list(policies),
                                             seeds=list(seeds))


def drive(search: CapacitySearch, capture) -> CapacitySearch:
    """Execute the search's queued runs as a worker would, with the commits' callbacks (the
    `run_ended` signal) run, until the search ends."""
    for _ in range(50):
        search.refresh_from_db()
        if search.status != CapacityStatus.RUNNING:
            return search
        queued = Run.objects.filter(capacity_points__search=search, status=RunStatus.QUEUED)
        assert queued.exists(), "a running search with nothing queued"
        for run in queued:
            with capture(execute=True):
                scenario_services.run_execute(run_id=run.pk)
    raise AssertionError("the search did not end")
