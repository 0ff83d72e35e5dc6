"""A cluster whose jobs hold GPUs can be deleted (RESTRICT); a single such server still cannot."""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("clusters", "0001_initial"),
        ("live", "0004_live_state_version"),
    ]

    operations = [
        migrations.AlterField(
            model_name="placement",
            name="server",
            field=models.ForeignKey(on_delete=django.db.models.deletion.RESTRICT,
                                    related_name="placements", to="clusters.server"),
        ),
    ]
