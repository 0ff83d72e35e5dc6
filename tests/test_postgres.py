"""With DATABASE_URL on PostgreSQL the suite really runs on PostgreSQL."""

import os

import pytest
from django.db import connection

from tests.support import skip_or_fail


@pytest.mark.django_db
def test_database_is_postgresql_when_database_url_says_so():
    if not os.environ.get("DATABASE_URL", "").startswith("postgres"):
        skip_or_fail("DATABASE_URL is not a PostgreSQL URL")

    assert connection.vendor == "postgresql"
    assert connection.settings_dict["NAME"].startswith("test_")
