"""Freeze + export timed in the process, on the real Track B shape or on the data of the bench as it was
before the restructure (`763ee5b`), to compare with that code's own bench.

    .venv/bin/python bench/export_compare.py [--items 20000] [--json] [--profile PREFIX] [--release-format 1]
    .venv/bin/python bench/export_compare.py --shape 763ee5b --items 20000 --release-format 1   # like for like

`--shape real` (the default): items as the released data has them, imported by the real importers from
bench/import_bench.py's generated files (100 LoCoMo conversations of 600 turns in dated sessions; every
Track B item with its conversation, recipient, draft, rationale, quote and 1-3 evidence turns of the
recipient), and a closed two-annotator campaign with both annotators' answers in both phases, notes
included (bench/export_bench.py's `closed_campaigns`): the key's entries carry their evidence, the release
its conversations' turns. `--shape 763ee5b`: the untimed data that code's bench built (N items without
conversation or evidence, a two-annotator campaign, one one-field answer per assignment; the enrollments
handed in and the campaign closed, which current code requires), so its figures compare with
`cd <checkout of 763ee5b> && .venv/bin/python bench/export_bench.py --items 20000` on the same machine.
Timed in this process: `key_freeze` (which now also renders and seals the release) and what `key_export`
does (the key's hash checked against its rows, the sealed files written to a folder), with the load
average. A throw-away database (bench/scratch.py), never the project's own. (The same work as a user
runs it, each command a process: bench/export_bench.py.)

`--release-format 1` seals the release in its first format, the files the code before wrote (no
croissant.json, CITATION.cff or trail tables): the same files as that code, so what is left between the
two is the work both do plus the seal (compression, storage) and the export's hash check.
"""

import argparse
import cProfile
import functools
import io
import json
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from common import load  # noqa: E402
from scratch import scratch_database  # noqa: E402

TYPES = ["contradicting", "aligned", "hard_negative"]
VERDICT = {"contradicting": "contradicts", "aligned": "consistent", "hard_negative": "consistent"}


def build_real(items: int, folder: Path):
    """The released shape (see the module's docstring); returns the closed campaign and its author."""
    from django.contrib.auth import get_user_model
    from export_bench import closed_campaigns
    from import_bench import generate

    from annotation.models import Campaign
    from items.models import ItemSet
    from items.services import corpus_import_locomo, items_import_twist

    locomo, jsonl = generate(folder, items=items, conversations=100, turns=600, seed=7)
    corpus_import_locomo(path=locomo)
    items_import_twist(path=jsonl, item_set_name="bench")
    author = closed_campaigns(item_set=ItemSet.objects.get(name="bench"), slugs=["bench"])
    return Campaign.objects.get(slug="bench"), get_user_model().objects.get(username=author)


def build(items: int):
    from django.contrib.auth import get_user_model
    from django.utils import timezone

    from annotation.models import Answer, Assignment, Enrollment
    from annotation.services import campaign_close, campaign_create
    from goldkey import roles
    from items.models import Item
    from items.services import item_set_get_or_create

    roles.ensure_groups()
    User = get_user_model()
    author = User.objects.create_user("bench-author", password="x")
    other = User.objects.create_user("bench-b", password="x")
    author.groups.add(*roles.Group.objects.filter(name__in=[roles.AUTHOR, roles.ANNOTATOR]))
    item_set = item_set_get_or_create(name="bench items", kind="twist")
    Item.objects.bulk_create(
        (
            Item(
                item_set=item_set, kind="twist", external_id=f"bench-{i:06d}", recipient="Ana",
                draft=f"Hey Ana, how is the pottery class going? ({i})", gold_label=TYPES[i % 3],
                family=f"F{i % 7}", contradicted_quote="I quit pottery last week" if i % 3 == 0 else "",
                rationale="synthetic", history_turns=369 + i % 320,
            )
            for i in range(items)
        ),
        batch_size=5000,
    )
    campaign = campaign_create(slug="bench", item_set=item_set, annotators=[author, other], seed=1)
    Answer.objects.bulk_create(
        (
            Answer(assignment_id=a_id, values={"q1": VERDICT[gold]}, revision=1)
            for a_id, gold in Assignment.objects.filter(enrollment__campaign=campaign).values_list("id", "item__gold_label")
        ),
        batch_size=5000,
    )
    # The code before froze an open campaign; now the enrollments are handed in and the campaign closed.
    Enrollment.objects.filter(campaign=campaign).update(submitted_at=timezone.now())
    campaign_close(campaign=campaign, user=author)
    return campaign, author


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--items", type=int, default=20_000)
    parser.add_argument("--shape", choices=("real", "763ee5b"), default="real",
                        help="real: the released Track B shape; 763ee5b: the data of that code's bench")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--profile", type=Path, help="write cProfile stats of freeze and export to this prefix")
    parser.add_argument("--release-format", type=int, choices=(1, 2), default=None,
                        help="seal the release in this format (1: the files of the code before; default: the current)")
    args = parser.parse_args()
    with scratch_database() as scratch:
        from django.core.management import call_command

        from keys import bundle
        from keys.services import key_freeze

        if args.release_format is not None:
            # The seal renders with the module's default format and records bundle.FORMAT; a check of a
            # sealed release passes its recorded format explicitly, which the partial lets through.
            bundle.render = functools.partial(bundle.render, fmt=args.release_format)
            bundle.FORMAT = args.release_format

        campaign, author = build_real(args.items, scratch.folder) if args.shape == "real" else build(args.items)
        os.sync()  # the setup's dirty pages written back before the timed part, not during it
        profiler = cProfile.Profile() if args.profile else None
        w0, c0 = time.perf_counter(), time.process_time()
        if profiler:
            profiler.enable()
        key = key_freeze(campaign=campaign, version="BENCH-v1.0", user=author)
        if profiler:
            profiler.disable()
            profiler.dump_stats(f"{args.profile}.freeze")
            profiler = cProfile.Profile()
            profiler.enable()
        w1, c1 = time.perf_counter(), time.process_time()
        out = scratch.folder / "bundle"
        call_command("key_export", key.version, "--out", str(out), stdout=io.StringIO())
        w2, c2 = time.perf_counter(), time.process_time()
        if profiler:
            profiler.disable()
            profiler.dump_stats(f"{args.profile}.export")
        files = [p for p in out.rglob("*") if p.is_file()]
        figures = {
            "items": args.items, "shape": args.shape, "freeze_cpu_s": round(c1 - c0, 2), "export_cpu_s": round(c2 - c1, 2),
            "freeze_export_cpu_s": round(c2 - c0, 2), "freeze_s": round(w1 - w0, 2), "export_s": round(w2 - w1, 2),
            "freeze_export_s": round(w2 - w0, 2), "sha256": key.sha256, "files": len(files),
            "bundle_mb": round(sum(p.stat().st_size for p in files) / 1e6, 1), "load": load(),
            "release_format": key.release.format,
        }
    if args.json:
        print(json.dumps(figures, indent=1))
        return
    print(f"items {args.items:,} ({args.shape} shape): freeze CPU {figures['freeze_cpu_s']:.2f} s, export CPU {figures['export_cpu_s']:.2f} s, "
          f"freeze + export CPU {figures['freeze_export_cpu_s']:.2f} s (wall {figures['freeze_export_s']:.2f} s) | {figures['files']} files, {figures['bundle_mb']} MB (release format {figures['release_format']}) | "
          f"sha256 {key.sha256[:16]}… | load {figures['load']}")


if __name__ == "__main__":
    main()
