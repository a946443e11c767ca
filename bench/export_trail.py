"""Freeze and export the released TWIST trail under a fixed clock, to compare bundles byte for byte.

    .venv/bin/python bench/export_trail.py --db /tmp/trail.sqlite3 --build        # import the trail once
    .venv/bin/python bench/export_trail.py --db /tmp/trail.sqlite3 --out DIR      # freeze v1.0, derive v1.1, export both

The export step works on a copy of the built database, with `django.utils.timezone.now` pinned, so two
runs (e.g. the code before and after a change) must write identical files: compare with
`(cd DIR && find . -type f | sort | xargs sha256sum)`. Not a test: it needs ../shared/data.
"""

import argparse
import os
import shutil
import sys
import tempfile
from datetime import UTC, datetime
from pathlib import Path
from unittest import mock

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", required=True, type=Path)
    parser.add_argument("--build", action="store_true")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    db = args.db
    if not args.build:
        copy = Path(tempfile.mkdtemp(prefix="goldkey-trail-")) / "db.sqlite3"
        shutil.copy(db, copy)
        db = copy
    os.environ["DATABASE_URL"] = f"sqlite:///{db}"
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "goldkey.settings")
    import django

    django.setup()
    from django.conf import settings
    from django.contrib.auth import get_user_model
    from django.core.management import call_command

    clock = datetime(2026, 11, 29, 12, 0, 0, tzinfo=UTC)
    with mock.patch("django.utils.timezone.now", return_value=clock):
        if args.build:
            from adjudication.services import decisions_import
            from annotation.services import campaign_close, campaign_create
            from annotation.transfer import answers_import
            from council.services import council_votes_import
            from goldkey import roles
            from items.models import ItemSet
            from items.services import corpus_import_locomo, items_import_twist

            data = Path(settings.GOLDKEY_SHARED_DATA)
            call_command("migrate", verbosity=0)
            roles.ensure_groups()
            corpus_import_locomo(path=data / "locomo10")
            items_import_twist(
                path=data / "twist-v1" / "track_b_items_v1_candidates.jsonl",
                item_set_name="TWIST Track B v1 candidates",
                rejects_path=data / "twist-v1" / "track_b_v1_generation_rejects.jsonl",
            )
            User = get_user_model()
            users = [User.objects.create_user(name, password="x") for name in ("ann1", "ann2")]
            author = User.objects.create_user("author", password="x")
            author.groups.add(*roles.Group.objects.filter(name__in=[roles.AUTHOR]))
            twist = campaign_create(
                slug="twist-v1", item_set=ItemSet.objects.get(name="TWIST Track B v1 candidates"),
                annotators=users, per_item=2, seed=20260919,
            )
            folder = data / "twist-v1" / "annotation"
            answers_import(campaign=twist, path=folder / "twist_v1_answers_A.json", annotator="A")
            answers_import(campaign=twist, path=folder / "twist_v1_answers_B.json", annotator="B")
            campaign_close(campaign=twist, user=author)
            for path in sorted((folder / "council").glob("*.json")):
                member = path.stem.removeprefix("twist_v1_answers_")
                council_votes_import(campaign=twist, path=path, member_name=member, is_generator=member == "openai-gpt-4o")
            decisions_import(campaign=twist, path=folder / "adjudication_decisions.json", user=author)
            print(f"built {db}")
            return
        from annotation.models import Campaign
        from keys import bundle
        from keys.selectors import bundle_data
        from keys.services import erratum_decide, erratum_file, key_derive, key_freeze

        author = get_user_model().objects.get(username="author")
        campaign = Campaign.objects.get(slug="twist-v1")
        v10 = key_freeze(campaign=campaign, version="TWIST-v1.0", user=author)
        entry = v10.entries.order_by("external_id").first()
        erratum = erratum_file(key=v10, item_external_id=entry.external_id, kind="drop", description="bench", user=author)
        type(erratum).objects.filter(pk=erratum.pk).update(filed_at=clock)  # a default bound at import
        erratum_decide(erratum=erratum, accept=True, note="ok", user=author)
        v11 = key_derive(parent=v10, version="TWIST-v1.1", user=author)
        for key in (v10, v11):
            key.refresh_from_db()
            bundle.write(bundle.render(bundle_data(key)), args.out / key.version)
            archive = bundle.zip_bytes(bundle.render(bundle_data(key)), key.version)
            (args.out / f"{key.version}.zip").write_bytes(archive)
        print(f"exported to {args.out}")


if __name__ == "__main__":
    main()
