"""Decision requests move from jsonb to zlib-compressed JSON (`CompressedJSONField`): a
reclaim's snapshot of 2,000 jobs is 700 KB as jsonb and about 25 KB compressed."""


from django.db import migrations

import planner.live.models


def compress(apps, schema_editor):
    decision = apps.get_model("live", "Decision")
    for row in decision.objects.only("id", "request").iterator(chunk_size=200):
        decision.objects.filter(pk=row.pk).update(request_compressed=row.request)


def expand(apps, schema_editor):
    decision = apps.get_model("live", "Decision")
    for row in decision.objects.only("id", "request_compressed").iterator(chunk_size=200):
        decision.objects.filter(pk=row.pk).update(request=row.request_compressed)


class Migration(migrations.Migration):
    dependencies = [("live", "0002_roles")]

    operations = [
        migrations.AddField(
            model_name="decision", name="request_compressed",
            field=planner.live.models.CompressedJSONField(default=dict),
        ),
        migrations.RunPython(compress, expand),
        migrations.RemoveField(model_name="decision", name="request"),
        migrations.RenameField(model_name="decision", old_name="request_compressed",
                               new_name="request"),
        migrations.AlterField(model_name="decision", name="request",
                              field=planner.live.models.CompressedJSONField()),
    ]
