"""Malformed uploads are refused with the line and field, and nothing is saved."""

import pytest
from django.core.files.uploadedfile import TemporaryUploadedFile
from rest_framework.test import APIClient

from planner.scenarios.models import Workload
from tests.planner.factories import TRACE_CSV, upload, user_with_role

pytestmark = pytest.mark.django_db


@pytest.fixture
def media_root(settings, tmp_path):
    """A MEDIA_ROOT of this test alone, so 'nothing saved' can look at the folder."""
    settings.MEDIA_ROOT = str(tmp_path)
    return tmp_path


@pytest.fixture
def client() -> APIClient:
    api = APIClient()
    api.force_authenticate(user_with_role("planner", "planner"))
    return api


def _post(client: APIClient, file) -> tuple[int, dict]:
    response = client.post("/api/v1/workloads/", {"name": "t", "file": file}, format="multipart")
    return response.status_code, response.json()


def _nothing_saved(media_root) -> bool:
    folder = media_root / "workloads"
    return not Workload.objects.exists() and not (folder.exists() and any(folder.iterdir()))


def test_a_valid_trace_is_stored_with_its_summary(client, media_root):
    status, body = _post(client, upload("five.csv", TRACE_CSV))

    assert status == 201
    assert body["num_jobs"] == 5 and body["format"] == "canonical"
    assert body["summary"]["max_gpus"] == 8
    assert Workload.objects.get().file.read().decode() == TRACE_CSV


@pytest.mark.parametrize(("content", "line", "field"), [
    ("job_id,submit_time,num_gpus\na,0,1\n", 1, "duration"),
    (TRACE_CSV.replace("c,20,4,300", "c,20,-4,300"), 4, "num_gpus"),
    (TRACE_CSV.replace("d,30,8,900", "d,thirty,8,900"), 5, "submit_time"),
])
def test_a_malformed_trace_names_line_and_field(client, media_root, content, line, field):
    status, body = _post(client, upload("bad.csv", content))

    assert status == 400
    assert f"line {line}" in body["file"][0] and f"'{field}'" in body["file"][0]
    assert _nothing_saved(media_root)


def test_an_empty_file_is_refused(client, media_root):
    status, body = _post(client, upload("empty.csv", b""))

    assert status == 400
    assert "empty (0 bytes)" in body["file"][0]
    assert _nothing_saved(media_root)


def test_a_100_mb_file_is_refused_before_it_is_read(client, media_root, settings):
    big = TemporaryUploadedFile("big.csv", "text/csv", 100 * 2**20, None)
    big.write(TRACE_CSV.encode())
    big.truncate(100 * 2**20)  # sparse: 100 MB on paper, nothing to parse
    big.seek(0)

    status, body = _post(client, big)

    assert status == 400
    assert "100.0 MB" in body["file"][0]
    assert f"limited to {settings.PLANNER_MAX_UPLOAD_MB} MB" in body["file"][0]
    assert _nothing_saved(media_root)
