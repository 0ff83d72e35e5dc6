"""With DEBUG off, what Django answers by itself under /api/ is JSON, not an HTML page.

An unexpected exception (500), a Host header not in ALLOWED_HOSTS (DisallowedHost, 400) and
an unknown URL (404) are handled by Django's handlers, outside DRF's own error handling; a
REST client must still get JSON it can read. Pages keep Django's HTML.
"""

from __future__ import annotations

import pytest
from django.test import Client

pytestmark = pytest.mark.django_db


@pytest.fixture
def production(settings):
    settings.DEBUG = False
    settings.ALLOWED_HOSTS = ["planner.example.org"]


@pytest.fixture
def staff_client(django_user_model) -> Client:
    client = Client(raise_request_exception=False, HTTP_HOST="planner.example.org")
    client.force_login(django_user_model.objects.create_user("errors-admin", is_staff=True))
    return client


def test_an_unexpected_error_is_json_under_api(production, staff_client, monkeypatch):
    def broken(**kwargs):
        raise RuntimeError("a bug")

    monkeypatch.setattr("planner.scenarios.selectors.run_list", broken)

    response = staff_client.get("/api/v1/runs/")

    assert response.status_code == 500
    assert response["Content-Type"] == "application/json"
    assert "a bug" not in response.content.decode()  # nothing internal leaks
    assert set(response.json()) == {"detail"}


def test_a_bad_host_header_is_json_under_api_and_html_on_pages(production):
    client = Client(raise_request_exception=False, HTTP_HOST="evil.example")

    api = client.get("/api/v1/runs/")
    page = client.get("/clusters/")

    assert api.status_code == 400 and api["Content-Type"] == "application/json"
    assert "request" in api.json() and "evil.example" not in api.content.decode()
    assert page.status_code == 400 and page["Content-Type"].startswith("text/html")


def test_an_unknown_api_path_is_json(production, staff_client):
    response = staff_client.get("/api/v1/no-such-thing/")

    assert response.status_code == 404 and response["Content-Type"] == "application/json"
    assert "/api/v1/no-such-thing/" in response.json()["detail"]


def test_a_form_body_over_the_limit_under_api_is_json_413(production, staff_client, settings):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 1_000

    # Django's multipart parser refuses the large field itself (RequestDataTooBig).
    response = staff_client.post("/api/v1/workloads/", {"name": "n" * 2_000})

    assert response.status_code == 413 and response["Content-Type"] == "application/json"
    assert "PLANNER_MAX_REQUEST_MB" in response.json()["request"][0]


@pytest.mark.parametrize("url", ["/api/v1/clusters/", "/api/v1/runs/"])
@pytest.mark.parametrize(("page", "status"), [("", 404), ("abc", 404), ("1", 200)])
def test_an_empty_page_number_is_an_invalid_page(production, staff_client, url, page, status):
    # DRF alone reads `?page=` as page 1; an empty number is as invalid as `abc`.
    response = staff_client.get(f"{url}?page={page}")

    assert response.status_code == status
    if status == 404:
        assert response.json() == {"detail": "Invalid page."}
