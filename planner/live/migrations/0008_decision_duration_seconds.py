"""Decisions record how long they took, for /metrics' decision latency histogram."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("live", "0007_planner_role")]

    operations = [
        migrations.AddField(
            model_name="decision",
            name="duration_seconds",
            field=models.FloatField(
                blank=True, null=True,
                help_text="how long the service took to answer: lock wait, state read, "
                          "decision and its application (empty for decisions logged before "
                          "it was recorded); /metrics' decision latency histogram"),
        ),
    ]
