"""A log of what each live state version changed, so a web process holding an older copy of
the state re-reads only the rows that changed."""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("clusters", "0001_initial"),
        ("live", "0005_placement_server_restrict"),
    ]

    operations = [
        migrations.CreateModel(
            name="LiveStateChange",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("version", models.BigIntegerField()),
                ("job_id", models.BigIntegerField(blank=True, null=True)),
                ("server_id", models.BigIntegerField(blank=True, null=True)),
                (
                    "cluster",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="+",
                        to="clusters.cluster",
                    ),
                ),
            ],
            options={
                "indexes": [
                    models.Index(
                        fields=["cluster", "version"], name="live_livest_cluster_036bb6_idx"
                    )
                ],
            },
        ),
    ]
