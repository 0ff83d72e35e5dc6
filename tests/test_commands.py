"""Management commands and tasks that run without any server."""

import logging

import pytest
from django.core.management import call_command

from planner.core.tasks import ping


@pytest.mark.django_db
def test_load_demo_is_idempotent(caplog):
    with caplog.at_level(logging.INFO, logger="planner"):
        call_command("load_demo")
        call_command("load_demo")

    from planner.scenarios.models import Run, Scenario

    assert caplog.messages.count("demo data already loaded") == 1
    assert Scenario.objects.filter(slug="demo").count() == 1
    assert Run.objects.filter(scenario__slug="demo").count() >= 3


@pytest.mark.django_db
def test_load_demo_creates_a_local_sign_in(client, capsys):
    call_command("load_demo")
    assert "demo sign-in: demo / demo" in capsys.readouterr().out
    assert client.login(username="demo", password="demo")
    assert client.get("/clusters/").status_code == 200


@pytest.mark.django_db
def test_no_demo_sign_in_in_production(settings):
    from django.contrib.auth import get_user_model

    from planner.core.services import demo_user_ensure

    settings.IS_PRODUCTION = True
    assert demo_user_ensure() is False
    assert not get_user_model().objects.filter(username="demo").exists()


@pytest.mark.django_db
def test_check_services_passes_on_the_configured_services(capsys):
    call_command("check_services", "--timeout", "2")

    assert capsys.readouterr().out.startswith("planner: ok: ")


def test_ping_task_answers_pong():
    assert ping.apply().get() == "pong"
