"""Django project of the GPU cluster planner; importing it loads the Celery app."""

from planner.celery import app as celery_app

__all__ = ("celery_app",)
