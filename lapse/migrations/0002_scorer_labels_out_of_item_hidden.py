"""Move the scorer labels Goldkey's own scorers wrote into `Item.hidden` to `ScorerLabel` rows, and take
them out of `hidden`, which goes back to being the record the item was imported or built with.

What the old scoring code wrote, and where it goes:
  cascade + cascade_rule                      -> ScorerLabel(scorer="cascade", detail={"rule"})
  cascade_released (a label the file carried,  -> back to hidden["cascade"], as it was imported
    kept aside when the cascade overwrote it)
  judge + judge_member + judge_prompt_version  -> ScorerLabel(scorer="judge", member, prompt_version,
    (+ judge_raw)                                  detail={"raw"})
  auto_label, flagged                          -> dropped: derived from the labels on read
A `cascade` or `judge` without its companion key is a label the imported file carried (the released
battery, the demo items): part of the record, left in place. Written against the historical models
only, so it does not change when the live code does.
"""

from django.db import migrations

BATCH = 2000


def _behaviour(hidden: dict) -> bool:
    return hidden.get("arm") in ("behavioral", "e2", "l2e2")


def labels_out_of_hidden(apps, schema_editor):
    Item = apps.get_model("items", "Item")
    ScorerLabel = apps.get_model("lapse", "ScorerLabel")
    items, labels = [], []
    scored = Item.objects.filter(kind="lapse").only("id", "hidden").order_by("id")
    for item in scored.iterator(chunk_size=BATCH):
        hidden = dict(item.hidden or {})
        if not ({"cascade_rule", "judge_member", "judge_prompt_version", "auto_label", "flagged"} & hidden.keys()):
            continue
        if "cascade_rule" in hidden:
            label, rule = hidden.pop("cascade", None), hidden.pop("cascade_rule")
            if label:
                labels.append(ScorerLabel(item_id=item.id, scorer="cascade", label=label, detail={"rule": rule}))
            if "cascade_released" in hidden:
                hidden["cascade"] = hidden.pop("cascade_released")
        if "judge_member" in hidden or "judge_prompt_version" in hidden:
            label = hidden.pop("judge", None)
            member, version = hidden.pop("judge_member", ""), hidden.pop("judge_prompt_version", "")
            raw = hidden.pop("judge_raw", None)
            if label:
                labels.append(ScorerLabel(
                    item_id=item.id, scorer="judge", label=label, member=member or "", prompt_version=version or "",
                    detail={} if raw is None else {"raw": raw},
                ))
        hidden.pop("auto_label", None)
        hidden.pop("flagged", None)
        item.hidden = hidden
        items.append(item)
    Item.objects.bulk_update(items, ["hidden"], batch_size=BATCH)
    ScorerLabel.objects.bulk_create(labels, batch_size=BATCH)


def labels_back_into_hidden(apps, schema_editor):
    """The reverse, for a rollback: the old keys, with auto_label/flagged as the old code set them."""
    Item = apps.get_model("items", "Item")
    ScorerLabel = apps.get_model("lapse", "ScorerLabel")
    by_item: dict[int, dict] = {}
    for row in ScorerLabel.objects.order_by("item_id").iterator(chunk_size=BATCH):
        by_item.setdefault(row.item_id, {})[row.scorer] = row
    items = []
    for item in Item.objects.filter(id__in=list(by_item)).only("id", "hidden"):
        hidden, rows = dict(item.hidden or {}), by_item[item.id]
        cascade, judge = rows.get("cascade"), rows.get("judge")
        if cascade is not None:
            if "cascade" in hidden:
                hidden["cascade_released"] = hidden["cascade"]
            hidden.update(cascade=cascade.label, cascade_rule=cascade.detail.get("rule", ""))
        if judge is not None:
            hidden.update(judge=judge.label, judge_member=judge.member, judge_prompt_version=judge.prompt_version)
            if "raw" in judge.detail:
                hidden["judge_raw"] = judge.detail["raw"]
        if cascade is not None:
            if _behaviour(hidden):
                agreed = judge is not None and cascade.label == judge.label
                label = cascade.label if agreed and cascade.label not in ("RESIDUAL", "UNPARSED") else None
            else:
                label = cascade.label if cascade.label not in ("RESIDUAL", "UNPARSED") else None
            hidden.update(auto_label=label, flagged=label is None)
        item.hidden = hidden
        items.append(item)
    Item.objects.bulk_update(items, ["hidden"], batch_size=BATCH)
    ScorerLabel.objects.all().delete()


class Migration(migrations.Migration):
    dependencies = [("lapse", "0001_scorer_label"), ("items", "0003_item_set_schema")]

    operations = [migrations.RunPython(labels_out_of_hidden, labels_back_into_hidden)]
