"""A corpus of malformed inputs, each refused with a 4xx that names the field, nothing saved.

Rules: no user input gets a 500; an API answers JSON `{field: [message]}` (the field a JSON
path into the request, `request` for the body as a whole, `file` for an upload); a page
shows the error next to its input; and no row is left behind (every write is one
transaction). The cases come from the probe of issue #17 (deep nesting, NUL and lone
surrogates, oversized names and numbers, unbounded work) plus the limits of
`simulation/limits.py`. On PostgreSQL (DATABASE_URL) the NUL, surrogate, length and 32-bit
overflow cases are the ones the database itself would refuse with a DataError.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from typing import Any

import orjson
import pytest
from django.apps import apps
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from tests.planner.factories import scenario_make
from tests.planner.live.conftest import live_cluster_make

pytestmark = pytest.mark.django_db

DEEP = 5_000


def _rows() -> dict[str, int]:
    """Rows of every model of the planner's apps (what a refused input must not change)."""
    return {model.__name__: model.objects.count()
            for app in ("clusters", "scenarios", "live") for model in
            apps.get_app_config(app).get_models()}


def _snapshot(**server: Any) -> dict[str, Any]:
    return {"servers": [{"id": "inf-1", "pool": "inference", "gpus": 8, "gpu_type": "T4",
                         "on_loan": True, **server},
                        {"id": "inf-2", "pool": "inference", "gpus": 8, "gpu_type": "T4",
                         "on_loan": True}],
            "jobs": []}


def _reclaim(**extra: Any) -> bytes:
    return json.dumps({"count": 1, "strategy": "scf", "state": _snapshot(), **extra}).encode()


@dataclass(frozen=True)
class ApiCase:
    id: str
    method: str
    path: str  # formatted with {scenario}
    body: bytes | None = None
    status: int = 400
    field: str = "request"
    says: str = ""  # a word the message must contain, when the field alone is not enough
    upload: tuple[str, bytes] | None = None  # multipart file instead of a JSON body
    settings: dict[str, Any] = dataclasses.field(default_factory=dict)


def _trace(row: str) -> tuple[str, bytes]:
    return ("t.csv", f"job_id,submit_time,num_gpus,duration\na,0,1,60\n{row}\n".encode())


API_CASES = [
    # Deep nesting: RecursionError in the stdlib decoder (5,000 levels) or downstream.
    ApiCase("decision body 5,000 '['", "POST", "/api/v1/decisions/reclaim",
            b"[" * DEEP + b"]" * DEEP, says="nested"),
    ApiCase("decision body 40 levels", "POST", "/api/v1/decisions/reclaim",
            _reclaim(note=json.loads("[" * 40 + "]" * 40)), says="32 levels"),
    ApiCase("sweep grid 5,000 '['", "POST", "/api/v1/scenarios/{scenario}/sweeps",
            b'{"grid": {"load_scale": ' + b"[" * DEEP + b"]" * DEEP + b"}}", says="nested"),
    ApiCase("sweep grid value a list", "POST", "/api/v1/scenarios/{scenario}/sweeps",
            b'{"grid": {"load_scale": [[1]]}}', field="grid.load_scale"),
    ApiCase("Philly JSON upload 5,000 '['", "POST", "/api/v1/workloads/",
            upload=("philly.json", b"[" * DEEP + b"]" * DEEP), field="file", says="nested"),
    # NUL and lone surrogates: PostgreSQL's jsonb and text refuse them (DataError).
    ApiCase("NUL in a server id", "POST", "/api/v1/decisions/reclaim",
            _reclaim().replace(b'"inf-1"', b'"inf\\u00001"'), field="state.servers[0].id",
            says="U+0000"),
    ApiCase("lone surrogate in a server id", "POST", "/api/v1/decisions/reclaim",
            _reclaim().replace(b'"inf-1"', b'"\\ud800"'), field="state.servers[0].id",
            says="U+D800"),
    ApiCase("NUL in an extra field", "POST", "/api/v1/decisions/reclaim",
            _reclaim(note="a\u0000b"), field="note"),
    ApiCase("NUL in a grid key", "POST", "/api/v1/scenarios/{scenario}/sweeps",
            b'{"grid": {"a\\u0000": [1]}}', field="grid.a\\u0000"),
    ApiCase("lone surrogate in a job name", "POST", "/api/v1/jobs/",
            b'{"cluster": 1, "name": "\\udc80", "num_gpus": 1, "duration_seconds": 60}',
            field="name"),
    # Numbers past what a column holds or the simulator should be asked for.
    ApiCase("23-digit seed", "POST", "/api/v1/decisions/reclaim",
            _reclaim(seed=12345678901234567890123), field="seed"),
    ApiCase("3,000,000,000 GPUs per server", "POST", "/api/v1/decisions/reclaim",
            _reclaim().replace(b'"gpus": 8', b'"gpus": 3000000000', 1),
            field="state.servers[0].gpus", says="limit"),
    ApiCase("UTC offset +16:00", "GET",
            "/api/v1/decisions/?created_after=2020-01-01T00:00:00%2B16:00",
            field="created_after"),
    ApiCase("run filter past 32 bits", "GET", "/api/v1/runs/?scenario=99999999999999999999",
            field="scenario"),
    ApiCase("trace duration 1e308", "POST", "/api/v1/workloads/",
            upload=_trace("b,10,1,1e308"), field="file", says="field 'duration'"),
    ApiCase("trace submit time 1e12", "POST", "/api/v1/workloads/",
            upload=_trace("b,1e12,1,60"), field="file", says="field 'submit_time'"),
    ApiCase("trace 1,000,000 GPUs", "POST", "/api/v1/workloads/",
            upload=_trace("b,10,1000000,60"), field="file", says="field 'num_gpus'"),
    ApiCase("trace over the job limit", "POST", "/api/v1/workloads/",
            upload=_trace("b,10,1,60\nc,20,1,60"), field="file", says="limited to 2",
            settings={"simulation.workloads._rows.MAX_JOBS": 2}),
    ApiCase("sweep cluster_scale 1e9", "POST", "/api/v1/scenarios/{scenario}/sweeps",
            b'{"grid": {"cluster_scale": [1e9]}}', field="grid.cluster_scale"),
    ApiCase("sweep of 10^20 grid points", "POST", "/api/v1/scenarios/{scenario}/sweeps",
            json.dumps({"grid": {f"k{i}": list(range(100)) for i in range(10)}}).encode(),
            field="grid", says="grid points"),
    # Bodies over PLANNER_MAX_REQUEST_MB: JSON 413 naming the limit, never parsed.
    ApiCase("50,000-job snapshot", "POST", "/api/v1/decisions/schedule",
            orjson.dumps({"policy": "fifo", "state": {
                "servers": [{"id": f"train-{i}", "pool": "training", "gpus": 8}
                            for i in range(2_000)],
                "jobs": [{"id": f"job-{i:05d}", "status": "running", "gpus_per_worker": 1,
                          "min_workers": 1, "max_workers": 1, "remaining_seconds": 3600.0,
                          "model": "resnet50", "submit_time": float(i), "priority": 0,
                          "placement": [{"server": f"train-{i % 2_000}", "gpus": 1,
                                         "flexible": False}]} for i in range(50_000)]}}),
            status=413, says="PLANNER_MAX_REQUEST_MB"),
]


@pytest.fixture
def admin(django_user_model) -> APIClient:
    client = APIClient()
    user = django_user_model.objects.create_user("corpus-admin", is_staff=True)
    client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=user).key}")
    return client


@pytest.fixture(autouse=True)
def media_root(settings, tmp_path):
    settings.MEDIA_ROOT = str(tmp_path)


@pytest.mark.parametrize("case", API_CASES, ids=[c.id for c in API_CASES])
def test_api_refuses_malformed_input_naming_the_field(case: ApiCase, admin, monkeypatch):
    live_cluster_make()
    scenario = scenario_make(policies=["fifo"])
    for name, value in case.settings.items():
        module, attribute = name.rsplit(".", 1)
        monkeypatch.setattr(f"{module}.{attribute}", value)
    before = _rows()
    path = case.path.format(scenario=scenario.pk)

    if case.upload is not None:
        name, content = case.upload
        response = admin.post(path, {"file": SimpleUploadedFile(name, content)},
                              format="multipart")
    elif case.method == "GET":
        response = admin.get(path)
    else:
        response = admin.generic(case.method, path, case.body,
                                 content_type="application/json")

    assert response.status_code == case.status, response.content[:300]
    assert response["Content-Type"].startswith("application/json")
    body = response.json()
    assert case.field in body, body
    assert case.says in json.dumps(body[case.field], ensure_ascii=False), body
    assert _rows() == before


# --- the scenario builder page ---------------------------------------------------------------

SPEC = ("name: {name}\npools:\n  - {{name: {pool}, kind: training, gpu_type: V100, "
        "servers: {servers}, gpus_per_server: {gpus}}}\n")


def _spec(name: str = "built", pool: str = "training", servers: Any = 2,
          gpus: Any = 8) -> str:
    return SPEC.format(name=name, pool=pool, servers=servers, gpus=gpus)


@dataclass(frozen=True)
class PageCase:
    id: str
    data: dict[str, Any]
    field: str
    says: str = ""
    settings: dict[str, Any] = dataclasses.field(default_factory=dict)


def _many_pools(count: int) -> str:
    pools = "".join(f"  - {{name: p{i}, kind: training, gpu_type: V100, servers: 1, "
                    f"gpus_per_server: 8}}\n" for i in range(count))
    return f"name: many\npools:\n{pools}"


PAGE_CASES = [
    PageCase("YAML spec 10,000 '['", {"cluster_spec": "[" * 10_000 + "]" * 10_000},
             "cluster_spec", "nested"),
    PageCase("cluster name of 10,000 characters", {"cluster_spec": _spec(name="c" * 10_000)},
             "cluster_spec", "limit is 40"),
    PageCase("pool name of 10,000 characters", {"cluster_spec": _spec(pool="p" * 10_000)},
             "cluster_spec", "pools[0].name"),
    PageCase("NUL in the cluster name", {"cluster_spec": _spec(name='"a\\0b"')},
             "cluster_spec", "U+0000"),
    PageCase("gpus_per_server 3,000,000,000", {"cluster_spec": _spec(gpus=3_000_000_000)},
             "cluster_spec", "gpus_per_server"),
    PageCase("servers 1,000,000,000", {"cluster_spec": _spec(servers=10**9)},
             "cluster_spec", "servers"),
    PageCase("65 pools", {"cluster_spec": _many_pools(65)}, "cluster_spec", "limited to 64"),
    PageCase("a list where a pool name goes", {"cluster_spec": _spec(pool="[a, b]")},
             "cluster_spec", "expected text"),
    PageCase("23-digit seed", {"seeds": "12345678901234567890123"}, "seeds", "limit"),
    PageCase("23-digit workload seed", {"gen_seed": "12345678901234567890123"}, "gen_seed"),
    PageCase("10,000 seeds", {"seeds": ",".join(map(str, range(10_000)))}, "seeds",
             "PLANNER_MAX_SEEDS"),
    PageCase("policies x seeds over the run limit", {"seeds": "0, 1"}, "seeds",
             "PLANNER_SCENARIO_MAX_RUNS", settings={"PLANNER_SCENARIO_MAX_RUNS": 3}),
    PageCase("a million days of inference load", {"inference_source": "generated",
                                                  "inference_days": "1000000"},
             "inference_days"),
    PageCase("sample_interval of a millisecond", {"engine_settings": "sample_interval=0.001"},
             "engine_settings", "at least 60"),
    PageCase("trace duration 1e308", {"workload_source": "upload"}, "trace",
             "field 'duration'"),
]


@pytest.fixture
def signed_in(client, django_user_model):
    client.force_login(django_user_model.objects.create_user("corpus-page", is_staff=True))
    return client


@pytest.mark.parametrize("case", PAGE_CASES, ids=[c.id for c in PAGE_CASES])
def test_builder_shows_malformed_input_inline(case: PageCase, signed_in, settings):
    for name, value in case.settings.items():
        setattr(settings, name, value)
    data = {"name": "what if", "cluster": "", "cluster_spec": _spec(),
            "workload_source": "generator", "gen_num_jobs": "12",
            "gen_arrival_rate_per_hour": "30", "gen_median_duration_minutes": "10",
            "gen_elastic_fraction": "0", "gen_seed": "1", "inference_source": "none",
            "inference_days": "1", "inference_peak_utilization": "0.95",
            "policies": ["fifo", "sjf"], "seeds": "0", "engine_settings": "", **case.data}
    if data["workload_source"] == "upload":
        data["trace"] = SimpleUploadedFile("t.csv", b"job_id,submit_time,num_gpus,duration\n"
                                                    b"a,0,1,60\nb,10,1,1e308\n")
    before = _rows()

    response = signed_in.post(reverse("dashboard:scenario-new"), data)

    assert response.status_code == 400, response.content[:300]
    errors = response.context["form"].errors
    assert case.field in errors, errors
    assert case.says in " ".join(errors[case.field]), errors
    assert _rows() == before

