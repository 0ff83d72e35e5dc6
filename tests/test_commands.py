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
    from planner.clusters.models import Cluster
    from planner.scenarios.models import Sweep

    scenario = Scenario.objects.get(slug="demo-contended")
    # 8 policies x 3 seeds, and a sweep of 3 load scales over the same policies and seeds.
    assert Run.objects.filter(scenario=scenario, sweep=None).count() == 8 * 3
    assert Sweep.objects.get(scenario=scenario).runs.count() == 3 * 8 * 3
    assert Cluster.objects.filter(name__in=["demo-what-if", "demo-live"]).count() == 2


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
