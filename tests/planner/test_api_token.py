"""POST /api/v1/auth/token: a user name and password give the user's API token, and failures
count against the sign-in limit the sign-in page and the admin share.

Rule: the right credentials answer the user's one token (the same on every call), which then
authenticates API calls; wrong ones answer 400 and count; after PLANNER_SIGNIN_MAX_FAILURES
failures for one user from one address, in any mix of the sign-in page and this endpoint, it
answers 429 even to the right password.
"""

from __future__ import annotations

import pytest
from django.core.cache import cache
from django.test import Client
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from tests.planner.factories import user_with_role

pytestmark = pytest.mark.django_db

PASSWORD = "right-password-1"


@pytest.fixture(autouse=True)
def _fast_password_hashing_and_clean_counts(settings):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    cache.clear()
    yield
    cache.clear()


def token_post(password: str, *, address: str = "10.0.0.1"):
    return APIClient(REMOTE_ADDR=address).post(
        "/api/v1/auth/token", {"username": "alice", "password": password}, format="json")


def test_the_right_credentials_give_the_users_token_which_authenticates():
    alice = user_with_role("alice", "viewer", password=PASSWORD)

    first, second = token_post(PASSWORD), token_post(PASSWORD)

    assert first.status_code == 200
    assert first.json() == second.json() == {"token": Token.objects.get(user=alice).key}
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {first.json()['token']}")
    assert client.get("/api/v1/runs/").status_code == 200


def test_failures_on_the_page_and_the_endpoint_share_one_limit(settings):
    settings.PLANNER_SIGNIN_MAX_FAILURES = 3
    user_with_role("alice", "viewer", password=PASSWORD)

    page = [Client(REMOTE_ADDR="10.0.0.1").post(
        "/accounts/login/", {"username": "alice", "password": "wrong"}).status_code
        for _ in range(2)]
    wrong = token_post("wrong")
    locked = token_post(PASSWORD)

    assert page == [200, 200]
    assert wrong.status_code == 400 and wrong.json() == {
        "request": ["wrong user name or password"]}
    assert locked.status_code == 429 and "Too many failed sign-ins" in locked.json()["detail"]
    assert not Token.objects.exists()  # never handed out while locked
    assert token_post(PASSWORD, address="10.0.0.2").status_code == 200  # another address
    locked_page = Client(REMOTE_ADDR="10.0.0.1").post(
        "/accounts/login/", {"username": "alice", "password": PASSWORD})
    assert locked_page.status_code == 429
