"""A small live cluster and users with each role, signed in by token as REST clients are."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Group, User
from django.core.cache import cache
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from planner.clusters.models import Cluster
from planner.clusters.services import cluster_create_from_spec

LIVE_SPEC = """\
name: {name}
gpu_types: {{V100: {{speed: 1.0, memory_gb: 32}}, T4: {{speed: 0.25, memory_gb: 16}}}}
pools:
  - {{name: training,  kind: training,  gpu_type: V100, servers: 2, gpus_per_server: 8}}
  - {{name: inference, kind: inference, gpu_type: T4,   servers: {inference}, gpus_per_server: 8}}
"""


def live_cluster_make(*, name: str = "live", inference: int = 6) -> Cluster:
    return cluster_create_from_spec(spec_text=LIVE_SPEC.format(name=name, inference=inference))


def client_for(user: User | None) -> APIClient:
    client = APIClient()
    if user is not None:
        token, _ = Token.objects.get_or_create(user=user)
        client.credentials(HTTP_AUTHORIZATION=f"Token {token.key}")
    return client


def user_make(*, name: str, role: str | None) -> User:
    user = User.objects.create_user(username=name, password="pw-for-tests-only")
    if role is not None:
        user.groups.add(Group.objects.get_or_create(name=role)[0])
    return user


@pytest.fixture(autouse=True)
def _throttle_counts_reset():
    cache.clear()
    yield
    cache.clear()


@pytest.fixture
def cluster(db) -> Cluster:
    return live_cluster_make()


@pytest.fixture
def operator(db) -> APIClient:
    return client_for(user_make(name="op", role="operator"))


@pytest.fixture
def viewer(db) -> APIClient:
    return client_for(user_make(name="view", role="viewer"))
