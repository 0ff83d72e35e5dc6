"""Sign-in attempts are limited per user name and address (planner/core/signin.py).

Rule: after PLANNER_SIGNIN_MAX_FAILURES failed sign-ins for one user from one address, the
next attempt is refused with 429 and a message, even with the right password, until the
window has passed; another address, or the same one after the window, signs in as usual.
The admin's sign-in page has the same limit.
"""

from __future__ import annotations

import pytest
from django.core.cache import cache
from django.test import Client

from tests.planner.factories import user_with_role

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _fast_password_hashing(settings):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]

PASSWORD = "right-password-1"


def attempt(password: str, *, address: str = "10.0.0.1", path: str = "/accounts/login/"):
    client = Client(REMOTE_ADDR=address)
    return client.post(path, {"username": "alice", "password": password}), client


def test_the_sixth_attempt_after_five_failures_is_refused(settings):
    settings.PLANNER_SIGNIN_MAX_FAILURES = 5
    user_with_role("alice", "viewer", password=PASSWORD)

    failures = [attempt("wrong")[0].status_code for _ in range(5)]
    refused, client = attempt(PASSWORD)

    assert failures == [200] * 5  # the form again, with Django's usual message
    assert refused.status_code == 429
    assert "Too many failed sign-ins" in refused.content.decode()
    assert "_auth_user_id" not in client.session
    assert attempt(PASSWORD, address="10.0.0.2")[0].status_code == 302
    cache.clear()  # the window passed
    assert attempt(PASSWORD)[0].status_code == 302


def test_the_admin_sign_in_has_the_same_limit(settings):
    settings.PLANNER_SIGNIN_MAX_FAILURES = 2
    admin = user_with_role("alice", None, password=PASSWORD)
    admin.is_staff = True
    admin.save()

    for _ in range(2):
        attempt("wrong", path="/admin/login/")
    refused, client = attempt(PASSWORD, path="/admin/login/")

    assert "Too many failed sign-ins" in refused.content.decode()
    assert "_auth_user_id" not in client.session
