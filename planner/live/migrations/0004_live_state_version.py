"""A state version per cluster, bumped by every write to its live state, so a web process
may decide on its cached copy of the state while the version is unchanged."""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("clusters", "0001_initial"),
        ("live", "0003_decision_request_compressed"),
    ]

    operations = [
        migrations.CreateModel(
            name="LiveStateVersion",
            fields=[
                ("cluster", models.OneToOneField(
                    on_delete=django.db.models.deletion.CASCADE, primary_key=True,
                    related_name="live_state_version", serialize=False,
                    to="clusters.cluster")),
                ("version", models.BigIntegerField(default=0)),
            ],
        ),
    ]
