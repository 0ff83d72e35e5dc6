"""Browser fixtures: Playwright driving Debian's Chromium headless against the live server.

Playwright's own browser download does not work offline, so the fixture launches
/usr/bin/chromium (``make browser`` installs it when run as root). Without it the browser tests
skip, or fail where services are required (CI, REQUIRE_SERVICES=1). Screenshots go to
test-artifacts/ (gitignored) so a failed run can be inspected.
"""

import os
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support import REPO, skip_or_fail

CHROMIUM = Path(os.environ.get("CHROMIUM", "/usr/bin/chromium"))
ARTIFACTS = REPO / "test-artifacts"
CHROMIUM_ARGS = [
    "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--disable-background-networking",
    "--disable-component-update", "--no-first-run", "--disable-sync",
]


def _signed_in(client, django_user_model, *, role: str):
    from django.contrib.auth.models import Group

    user = django_user_model.objects.create_user(role, password=f"pw-{role}-1")
    user.groups.add(Group.objects.get_or_create(name=role)[0])
    client.force_login(user)
    return client


@pytest.fixture
def viewer(client, django_user_model):
    """A Django test client signed in as a viewer (the pages need a role)."""
    return _signed_in(client, django_user_model, role="viewer")


@pytest.fixture
def planner(client, django_user_model):
    """A Django test client signed in as a planner (the scenario builder needs that role)."""
    return _signed_in(client, django_user_model, role="planner")


@pytest.fixture(scope="session")
def chromium() -> Iterator[object]:
    """One headless Chromium for the session."""
    if not CHROMIUM.exists():
        skip_or_fail(f"{CHROMIUM} not found: `make browser` installs Debian's chromium as root")
    # Playwright's sync API runs an event loop in this thread; Django's ORM would otherwise
    # refuse to run from it (SynchronousOnlyOperation) in the test's own database calls.
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS
        )
        try:
            yield browser
        finally:
            browser.close()


@pytest.fixture
def page(chromium, request: pytest.FixtureRequest) -> Iterator[object]:
    """A fresh laptop-sized page; its last state is saved as a screenshot at teardown."""
    context = chromium.new_context(viewport={"width": 1366, "height": 768}, accept_downloads=True)
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.console_errors = errors
    try:
        yield page
    finally:
        ARTIFACTS.mkdir(exist_ok=True)
        name = re.sub(r"[^A-Za-z0-9_.-]+", "_", request.node.name)
        page.screenshot(path=str(ARTIFACTS / f"{name}-last.png"), full_page=True)
        context.close()


@pytest.fixture
def screenshot(page):
    """``screenshot("name")`` saves the page into test-artifacts/name.png (kept for review)."""

    def save(name: str) -> Path:
        ARTIFACTS.mkdir(exist_ok=True)
        path = ARTIFACTS / f"{name}.png"
        page.screenshot(path=str(path), full_page=True)
        return path

    return save
