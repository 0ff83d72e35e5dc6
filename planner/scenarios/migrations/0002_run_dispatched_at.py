"""When each run was sent to the broker: empty runs are sent by the periodic maintenance.

Runs queued before this migration have none, so the maintenance sends them again under a new
task id; a message of theirs still in the broker is then skipped by the worker."""

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ("scenarios", "0001_initial"),
    ]

    operations = [
        migrations.AddField(
            model_name="run",
            name="dispatched_at",
            field=models.DateTimeField(
                blank=True, null=True,
                help_text="when the run was sent to the broker; empty while the broker was "
                "unreachable (the periodic maintenance sends it)"),
        ),
        migrations.AlterField(
            model_name="run",
            name="task_id",
            field=models.CharField(blank=True, max_length=64,
                                   help_text="the message a worker may execute this run for"),
        ),
    ]
