"""Celery task of a paper reproduction: takes an id and calls one service."""

from celery import shared_task

from planner.reproductions import services


@shared_task(name="reproductions.execute", bind=True)
def reproduction_execute_task(self, reproduction_id: int) -> str:
    return services.reproduction_execute(reproduction_id=reproduction_id,
                                         task_id=self.request.id)
