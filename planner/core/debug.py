"""Debug error pages that show no settings and no credentials.

Django's technical 500 page (DEBUG on) lists every setting and the request's environment,
hiding only names that look secret: a DATABASE_URL or REDIS_URL with a password inside was
shown whole. This filter drops the settings section and cuts the password out of any
``scheme://user:password@host`` it finds in what is still shown (environment, frame locals).
"""

from __future__ import annotations

import re

from django.views.debug import SafeExceptionReporterFilter

_URL_PASSWORD = re.compile(r"(://[^/\s:@]*:)[^@\s/]+@")


def url_passwords_cut(text: str) -> str:
    return _URL_PASSWORD.sub(r"\1***@", text)


class NoSettingsExceptionReporterFilter(SafeExceptionReporterFilter):
    def get_safe_settings(self) -> dict:
        return {}

    def cleanse_setting(self, key, value):
        cleansed = super().cleanse_setting(key, value)
        return url_passwords_cut(cleansed) if isinstance(cleansed, str) else cleansed

    def get_traceback_frame_variables(self, request, tb_frame):
        return [(name, url_passwords_cut(value) if isinstance(value, str) else value)
                for name, value in super().get_traceback_frame_variables(request, tb_frame)]
