"""The planner group: what-if writes (planner.core.roles), next to viewer and operator
(0002_roles)."""

from django.db import migrations


def create_role(apps, schema_editor):
    apps.get_model("auth", "Group").objects.get_or_create(name="planner")


def delete_role(apps, schema_editor):
    apps.get_model("auth", "Group").objects.filter(name="planner").delete()


class Migration(migrations.Migration):
    dependencies = [("live", "0006_live_state_change")]

    operations = [migrations.RunPython(create_role, delete_role)]
