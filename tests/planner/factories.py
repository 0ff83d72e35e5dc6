"""Tiny clusters, workloads and scenarios for the planner tests (tens of jobs at most)."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import Group, User
from django.core.files.uploadedfile import SimpleUploadedFile

from planner.clusters.models import Cluster
from planner.clusters.services import cluster_create_from_spec
from planner.scenarios.models import Scenario, Workload
from planner.scenarios.services import (
    inference_load_create_generated,
    scenario_create,
    workload_create_from_generator,
    workload_create_from_upload,
)

SPEC_YAML = """\
name: {name}
gpu_types: {{V100: {{speed: 1.0, memory_gb: 32}}, T4: {{speed: 0.25, memory_gb: 16}}}}
pools:
  - {{name: training,  kind: training,  gpu_type: V100, servers: 2, gpus_per_server: 8}}
  - {{name: inference, kind: inference, gpu_type: T4,   servers: 2, gpus_per_server: 8,
      lending_limit: 1}}
"""

TRACE_CSV = """\
job_id,submit_time,num_gpus,duration
a,0,1,600
b,10,2,1200
c,20,4,300
d,30,8,900
e,40,1,60
"""


def cluster_make(*, name: str = "tiny") -> Cluster:
    return cluster_create_from_spec(spec_text=SPEC_YAML.format(name=name))


def upload(name: str, content: bytes | str) -> SimpleUploadedFile:
    data = content.encode() if isinstance(content, str) else content
    return SimpleUploadedFile(name, data, content_type="text/csv")


def workload_make(*, num_jobs: int | None = None, seed: int = 0) -> Workload:
    """The five-job trace above, or a generated workload of `num_jobs` jobs."""
    if num_jobs is None:
        return workload_create_from_upload(name="five jobs", file=upload("five.csv", TRACE_CSV))
    return workload_create_from_generator(
        name=f"{num_jobs} jobs", spec={"num_jobs": num_jobs, "duration_days": 0.5}, seed=seed)


def scenario_make(*, policies: list[Any] | None = None, seeds: list[int] | None = None,
                  num_jobs: int | None = None, inference: bool = False,
                  cluster_name: str = "tiny") -> Scenario:
    load = inference_load_create_generated(name="diurnal", params={"days": 2}) if inference \
        else None
    return scenario_create(
        name="what if", cluster=cluster_make(name=cluster_name),
        workload=workload_make(num_jobs=num_jobs), inference_load=load,
        policies=policies or ["fifo", "sjf"], seeds=seeds or [0],
    )


def user_with_role(name: str, role: str | None, *, password: str = "pw-for-tests-only") -> User:
    """A user in the role's group (viewer, planner, operator), or in none."""
    user = User.objects.create_user(name, password=password)
    if role is not None:
        user.groups.add(Group.objects.get_or_create(name=role)[0])
    return user
