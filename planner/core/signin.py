"""Sign-in attempts limited per user name and client address.

After PLANNER_SIGNIN_MAX_FAILURES failed sign-ins for one user name from one address, further
attempts from there are refused without checking the password until
PLANNER_SIGNIN_WINDOW_SECONDS have passed since the first failure (HTTP 429 on the sign-in
page and on `POST /api/v1/auth/token`, the same refusal on the admin's); the three count
failures together. The count lives in the Django cache, Redis when
REDIS_URL is set, so every web process shares it; when the cache is unreachable sign-ins are
checked as usual and a warning logged.
"""

from __future__ import annotations

import hashlib
import logging

from django.conf import settings
from django.contrib.admin.forms import AdminAuthenticationForm
from django.contrib.auth import authenticate
from django.contrib.auth.forms import AuthenticationForm
from django.contrib.auth.views import LoginView
from django.core.cache import cache
from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponse

logger = logging.getLogger(__name__)


def _key(*, username: str, address: str) -> str:
    digest = hashlib.sha256(f"{username.strip().lower()}\0{address}".encode()).hexdigest()
    return f"signin-failures:{digest[:32]}"


def _address(request: HttpRequest | None) -> str:
    return (request.META.get("REMOTE_ADDR") or "unknown") if request is not None else "unknown"


def signin_failures(*, username: str, address: str) -> int:
    return cache.get(_key(username=username, address=address), 0)


def signin_failure_record(*, username: str, address: str) -> int:
    """Count one failed sign-in; the count expires a window after the first failure."""
    key = _key(username=username, address=address)
    cache.add(key, 0, timeout=settings.PLANNER_SIGNIN_WINDOW_SECONDS)
    try:
        return cache.incr(key)
    except ValueError:  # expired between add and incr
        cache.add(key, 1, timeout=settings.PLANNER_SIGNIN_WINDOW_SECONDS)
        return 1


def signin_locked(*, username: str, address: str) -> bool:
    """Whether this user name is locked out from this address (never when the cache is
    down: then passwords are checked as usual)."""
    try:
        failures = signin_failures(username=username, address=address)
    except Exception as error:
        logger.warning("sign-in limit not applied: cache unreachable (%s)", error)
        return False
    return bool(username) and failures >= settings.PLANNER_SIGNIN_MAX_FAILURES


def signin_failure_count(*, username: str, address: str) -> None:
    """Count a failed sign-in, if the cache can be reached."""
    if not username:
        return
    try:
        signin_failure_record(username=username, address=address)
    except Exception as error:
        logger.warning("sign-in failure not counted: cache unreachable (%s)", error)


def signin_locked_message() -> str:
    minutes = max(1, round(settings.PLANNER_SIGNIN_WINDOW_SECONDS / 60))
    return (f"Too many failed sign-ins for this user from your address; try again in up to "
            f"{minutes} minute(s).")


class SignInLocked(Exception):
    """Refused without checking the password: too many failures (`signin_locked`)."""


def signin_check(*, request: HttpRequest | None, username: str, password: str):
    """The active user these credentials name, or None; a failure counts against the limit.

    Raises `SignInLocked` once the limit is reached, whatever the password. For sign-ins
    outside Django's forms (the API's token endpoint), so they cannot go around the limit.
    """
    address = _address(request)
    if signin_locked(username=username, address=address):
        raise SignInLocked(username)
    user = authenticate(request, username=username, password=password)
    if user is None:
        signin_failure_count(username=username, address=address)
    return user


def api_token_obtain(*, request: HttpRequest | None, username: str, password: str
                     ) -> str | None:
    """The API token of the user these credentials name (created on first use), or None;
    raises `SignInLocked` like `signin_check`."""
    from rest_framework.authtoken.models import Token

    user = signin_check(request=request, username=username, password=password)
    if user is None:
        return None
    return Token.objects.get_or_create(user=user)[0].key


class RateLimitedSignInMixin:
    """For Django's AuthenticationForm and its admin variant: refuse, then count failures."""

    locked = False

    def clean(self):
        username = self.cleaned_data.get("username") or ""
        address = _address(self.request)
        if signin_locked(username=username, address=address):
            self.locked = True
            raise ValidationError(signin_locked_message(), code="too_many_attempts")
        try:
            return super().clean()
        except ValidationError:
            signin_failure_count(username=username, address=address)
            raise


class RateLimitedAuthenticationForm(RateLimitedSignInMixin, AuthenticationForm):
    pass


class RateLimitedAdminAuthenticationForm(RateLimitedSignInMixin, AdminAuthenticationForm):
    pass


class SignInView(LoginView):
    """Django's sign-in page with the limit; a refused attempt answers 429."""

    authentication_form = RateLimitedAuthenticationForm

    def form_invalid(self, form) -> HttpResponse:
        response = super().form_invalid(form)
        if form.locked:
            response.status_code = 429
        return response
