"""Sign-in attempts limited per user name and client address.

After PLANNER_SIGNIN_MAX_FAILURES failed sign-ins for one user name from one address, further
attempts from there are refused without checking the password until
PLANNER_SIGNIN_WINDOW_SECONDS have passed since the first failure (HTTP 429 on the sign-in
page, the same refusal on the admin's). The count lives in the Django cache, Redis when
REDIS_URL is set, so every web process shares it; when the cache is unreachable sign-ins are
checked as usual and a warning logged.
"""

from __future__ import annotations

import hashlib
import logging

from django.conf import settings
from django.contrib.admin.forms import AdminAuthenticationForm
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


class RateLimitedSignInMixin:
    """For Django's AuthenticationForm and its admin variant: refuse, then count failures."""

    locked = False

    def clean(self):
        username = self.cleaned_data.get("username") or ""
        address = _address(self.request)
        try:
            failures = signin_failures(username=username, address=address)
        except Exception as error:  # cache down: check the password as usual
            logger.warning("sign-in limit not applied: cache unreachable (%s)", error)
            return super().clean()
        if username and failures >= settings.PLANNER_SIGNIN_MAX_FAILURES:
            self.locked = True
            minutes = max(1, round(settings.PLANNER_SIGNIN_WINDOW_SECONDS / 60))
            raise ValidationError(
                f"Too many failed sign-ins for this user from your address; try again in "
                f"up to {minutes} minute(s).", code="too_many_attempts")
        try:
            return super().clean()
        except ValidationError:
            if username:
                try:
                    signin_failure_record(username=username, address=address)
                except Exception as error:
                    logger.warning("sign-in failure not counted: cache unreachable (%s)", error)
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
