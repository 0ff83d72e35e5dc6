"""Live and what-if clusters told apart by a field.

Existing rows: a cluster that a scenario uses and that never had live state (a live job or a
stateful decision) was made for that scenario, so it becomes what-if; every other cluster
stays live. Going back drops the field.
"""

from django.db import migrations, models


def mark_what_if(apps, schema_editor):
    Cluster = apps.get_model("clusters", "Cluster")
    Job = apps.get_model("live", "Job")
    Decision = apps.get_model("live", "Decision")
    Scenario = apps.get_model("scenarios", "Scenario")
    live = set(Job.objects.values_list("cluster_id", flat=True)) | set(
        Decision.objects.filter(cluster__isnull=False).values_list("cluster_id", flat=True))
    used = set(Scenario.objects.values_list("cluster_id", flat=True))
    Cluster.objects.filter(pk__in=used - live).update(kind="what-if")


class Migration(migrations.Migration):

    dependencies = [
        ("clusters", "0001_initial"),
        ("live", "0007_planner_role"),
        ("scenarios", "0002_run_dispatched_at"),
    ]

    operations = [
        migrations.AddField(
            model_name="cluster",
            name="kind",
            field=models.CharField(
                choices=[("live", "live"), ("what-if", "what-if (a scenario's template)")],
                default="live", help_text="live: a real cluster; what-if: made for a scenario",
                max_length=16),
        ),
        migrations.AddConstraint(
            model_name="cluster",
            constraint=models.CheckConstraint(condition=models.Q(("kind__in", ["live", "what-if"])),
                                              name="cluster_kind_valid"),
        ),
        migrations.RunPython(mark_what_if, migrations.RunPython.noop),
    ]
