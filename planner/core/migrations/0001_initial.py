"""Heartbeats of workers and of the periodic maintenance, read by the health check."""

from django.db import migrations, models


class Migration(migrations.Migration):

    initial = True

    dependencies = []

    operations = [
        migrations.CreateModel(
            name="Heartbeat",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False,
                                           verbose_name="ID")),
                ("name", models.CharField(help_text="worker node name", max_length=255,
                                          unique=True)),
                ("kind", models.CharField(choices=[("worker", "Celery worker"),
                                                   ("maintenance", "periodic maintenance")],
                                          max_length=16)),
                ("queues", models.CharField(blank=True, max_length=255,
                                            help_text="comma-separated queues a worker consumes")),
                ("seen_at", models.DateTimeField()),
            ],
            options={
                "ordering": ["name"],
                "constraints": [models.CheckConstraint(
                    condition=models.Q(("kind__in", ["worker", "maintenance"])),
                    name="heartbeat_kind_valid")],
            },
        ),
    ]
