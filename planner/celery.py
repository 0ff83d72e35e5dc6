"""Celery application: configured from Django settings (``CELERY_*`` names), tasks autodiscovered.

Start a worker with ``celery -A planner worker``; every worker host uses the same REDIS_URL
and DATABASE_URL.
"""

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "planner.settings")

app = Celery("planner")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
