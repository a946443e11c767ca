"""Freeze and export a real-shaped 100,000-item TWIST gold key, in-process and as a user runs it.

    .venv/bin/python bench/export_bench.py [--items 100000] [--json] [--queries] [--profile PREFIX] [--reuse FILE]
    DATABASE_URL=postgres://postgres@127.0.0.1:5432/goldkey_bench .venv/bin/python bench/export_bench.py

The database is a throw-away one (bench/scratch.py): a SQLite file in a new temporary folder, whatever
GOLDKEY_VAR_DIR says, or with DATABASE_URL a `test_<name>` database on that server, dropped at the end —
never the project's own.

Untimed setup, shaped like the released TWIST data: a LoCoMo corpus written in the released format
(100 conversations x 600 turns in dated sessions) and N Track B items in the released JSONL format (every
type and family, drafts, rationales, contradicted quotes, 1-3 evidence turns of the recipient), imported
through the real importers (`corpus_import_locomo`, `items_import_twist`); two campaigns over them,
each with two annotators' answers in both phases as the released answer files have them (annotator A
with a Phase 1 and a Phase 2 note on every item, B the bare choices), one revision per answer, both
enrollments submitted, the campaigns closed.

`--reuse FILE`: the first run saves the database as set up to FILE (with a PostgreSQL DATABASE_URL, to a
template database on that server named after FILE's name), later runs start from a copy of it instead of
setting up again (the setup of 100,000 items takes minutes); the template is never written by the timed
part. `--stages`: the wall time of each stage of the in-process part, as its caller waits for it.

Timed, the same work twice (and then the derive page of the frozen key, below):
  - in this process: `key_freeze` (queue check, entries, canonical JSONL, SHA-256, manifest with the
    agreement figures, the sealed release rendered and stored) and `key_export` (the hash check, the
    sealed files written to a folder), both through `call_command`; then the zip of the bundle;
  - as a user runs it: `manage.py key_freeze <campaign> --key-version ... --by ...` and
    `manage.py key_export <version> --out ...` as separate processes (interpreter and Django start-up
    included), wall time and the CPU of the command processes, and how much of it the kernel's (system
    CPU, page faults); with `--one-step`, `manage.py key_freeze ... --out ...` alone instead (the freeze
    writes the files as it seals them and moves them in once it has committed: one start-up, no second
    read of the entries).
Then, in this process, the derive page of the frozen key with three accepted errata: its preview (run by
every view of the page), five times, with its query count, and the derive it starts.
"""

import argparse
import cProfile
import io
import json
import os
import resource
import subprocess
import sys
import time
from contextlib import ExitStack
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from scratch import save_template, scratch_database, template_exists  # noqa: E402

NOTES = {
    "q1note": "The excerpt and the draft were read together; nothing in the recipient's turns rules the draft out.",
    "p2note": "Scanned every turn of the recipient for the activity, its dates and any change of plan; the quote "
              "states exactly the fact the draft gets wrong, and no later turn takes it back.",
}
AUTHOR = "bench-author"
VERDICT = {"contradicting": "contradicts", "aligned": "consistent", "hard_negative": "consistent"}


def load() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def answer_values(gold: str, with_notes: bool) -> dict:
    """Both phases of one answer, as in the released answer files (A writes notes, B does not)."""
    values = {"q1": VERDICT[gold]}
    values.update({"q2": "yes", "q2quote": "yes"} if gold == "contradicting" else {"q3": "clean", "q3turn": ""})
    if with_notes:
        values.update(NOTES)
    return values


def build(args, folder: Path) -> dict:
    from import_bench import generate

    from items.models import ItemSet
    from items.services import corpus_import_locomo, items_import_twist

    started = time.perf_counter()
    locomo, jsonl = generate(folder, items=args.items, conversations=100, turns=600, seed=7)
    corpus_import_locomo(path=locomo)
    report = items_import_twist(path=jsonl, item_set_name="bench items")
    assert report.created == args.items, report
    author = closed_campaigns(item_set=ItemSet.objects.get(name="bench items"), slugs=("bench", "bench-cmd"))
    return {"setup_s": round(time.perf_counter() - started, 1), "author": author}


def closed_campaigns(*, item_set, slugs) -> str:
    """A closed two-annotator campaign over `item_set` per slug, both annotators' answers on every item in
    both phases, as the released answer files have them; returns the author's username (who may freeze)."""
    from django.contrib.auth import get_user_model
    from django.db import transaction
    from django.utils import timezone

    import protocols
    from annotation.models import Answer, AnswerRevision, Assignment, Enrollment
    from annotation.services import campaign_close, campaign_create
    from goldkey import roles
    from goldkey.lib.bulk import bulk_insert

    roles.ensure_groups()
    User = get_user_model()
    author = User.objects.filter(username=AUTHOR).first() or User.objects.create_user(AUTHOR, password="x")
    other = User.objects.filter(username="bench-b").first() or User.objects.create_user("bench-b", password="x")
    author.groups.add(*roles.Group.objects.filter(name__in=[roles.AUTHOR, roles.ANNOTATOR]))
    other.groups.add(*roles.Group.objects.filter(name=roles.ANNOTATOR))
    spec = protocols.get("twist_b")
    n_items = item_set.items.count()
    for slug in slugs:
        campaign = campaign_create(slug=slug, item_set=item_set, annotators=[author, other], seed=1)
        now = timezone.now()
        with transaction.atomic():
            rows = list(Assignment.objects.filter(enrollment__campaign=campaign)
                        .values_list("id", "item__gold_label", "enrollment__annotator_id"))
            answers = []
            for assignment_id, gold, annotator_id in rows:
                values = answer_values(gold, with_notes=annotator_id == author.pk)
                answers.append({
                    "assignment_id": assignment_id, "values": values, "time_on_item_ms": 41_000, "revision": 1,
                    "updated_at": now, "phase1_done": spec.phase1_done(values),
                    "phase2_done": spec.phase2_done(values, gold), "answered_at": now, "extra": {},
                })
            bulk_insert(Answer, answers)
            saved_by = {author.pk: author.pk, other.pk: other.pk}
            answer_ids = dict(Answer.objects.filter(assignment__enrollment__campaign=campaign)
                              .values_list("assignment_id", "id"))
            bulk_insert(AnswerRevision, (
                {"answer_id": answer_ids[a["assignment_id"]], "revision": 1, "values": a["values"], "source": "web",
                 "saved_by_id": saved_by[annotator_id], "saved_at": now, "writer": None, "writer_seq": None}
                for a, (_, _, annotator_id) in zip(answers, rows, strict=True)
            ))
            Assignment.objects.filter(enrollment__campaign=campaign).update(phase1_done=True, phase2_done=True)
            Enrollment.objects.filter(campaign=campaign).update(
                phase1_done_count=n_items, phase2_done_count=n_items, phase1_completed_at=now, submitted_at=now
            )
        campaign_close(campaign=campaign, user=author)  # annotation over: a key can be frozen
    return author.username


# The stages `--stages` times: (module, attribute, name). Each is wrapped where it is called from, so that
# a stage is timed once, as its caller waits for it; the forked parts show as the waits for their values.
# A stage that is a context manager (the entries' insert, whose block is the next stages' work) is timed
# as its entry ("…: sent") and its exit ("…: awaited"), leaving its block to the stages inside.
STAGES = (
    ("keys.services", "campaign_snapshot", "freeze: campaign snapshot"),
    ("keys.services", "answers_exported", "freeze: answers exported"),
    ("keys.services", "item_set_evidence", "freeze: item set evidence"),
    ("keys.services", "_entries_from_campaign", "freeze: entries from the snapshot"),
    ("keys.services", "_entries_inserting", "freeze: entries inserted"),
    ("keys.services", "key_contents", "freeze: key records"),
    ("keys.services", "contents_bytes", "freeze: key bytes"),
    ("goldkey.lib.forked.in_fork", "result", "wait for a forked part"),
    ("keys.services", "campaign_manifest", "freeze: manifest"),
    ("keys.services", "_freeze", "freeze: key row frozen"),
    ("keys.services", "campaign_mark_frozen", "freeze: campaign marked frozen"),
    ("keys.releases", "bundle_data", "seal: release data"),
    ("keys.bundle", "render", "seal: render"),
    ("keys.releases", "bulk_insert", "seal: files stored"),
    ("keys.releases", "_sealed_rows", "export: sealed rows read"),
    ("keys.management.commands.key_export", "sha256_hex", "export: hash check (its hash)"),
    ("keys.selectors", "key_canonical_bytes", "export: hash check (key bytes)"),
    ("keys.releases", "_move_into", "export: files moved into place"),
)


def stage_timers(spent: dict[str, list[float]]) -> ExitStack:
    """Wrap every stage of STAGES so that its wall time is added to `spent[name]`, and the database's
    commits as "commit"; the stack undoes the wrapping."""
    import contextlib
    import functools
    import importlib
    import inspect

    from django.db import connections

    stack = ExitStack()

    def wrap(owner, attribute: str, name: str) -> None:
        original = getattr(owner, attribute)

        def add(label: str, start: float) -> None:
            spent.setdefault(label, []).append(time.perf_counter() - start)

        @functools.wraps(original)
        def timed(*args, **kwargs):
            start = time.perf_counter()
            try:
                return original(*args, **kwargs)
            finally:
                add(name, start)

        @functools.wraps(original)
        @contextlib.contextmanager
        def timed_block(*args, **kwargs):
            start = time.perf_counter()
            with contextlib.ExitStack() as block:
                value = block.enter_context(original(*args, **kwargs))
                add(f"{name}: sent", start)
                try:
                    yield value
                finally:
                    start = time.perf_counter()
            add(f"{name}: awaited", start)

        is_block = hasattr(original, "__wrapped__") and inspect.isgeneratorfunction(original.__wrapped__)
        setattr(owner, attribute, timed_block if is_block else timed)
        stack.callback(setattr, owner, attribute, original)

    for path, attribute, name in STAGES:
        parts = path.split(".")
        for n in range(len(parts), 0, -1):  # the longest prefix that is a module, then its attributes
            try:
                owner = importlib.import_module(".".join(parts[:n]))
                break
            except ModuleNotFoundError:
                continue
        for part in parts[n:]:
            owner = getattr(owner, part)
        wrap(owner, attribute, name)
    wrap(connections["default"], "commit", "commit")
    return stack


def in_process(args, scratch, author: str) -> dict:
    from django.core.management import call_command
    from django.db import connection

    from keys import bundle, releases
    from keys.models import GoldKey

    slow: list[tuple[float, str]] = []

    def timed(execute, sql, params, many, context):
        start = time.perf_counter()
        try:
            return execute(sql, params, many, context)
        finally:
            slow.append((time.perf_counter() - start, sql[:150]))

    stack = ExitStack()
    if args.queries:
        stack.enter_context(connection.execute_wrapper(timed))
    spent: dict[str, list[float]] = {}
    if args.stages:
        stack.enter_context(stage_timers(spent))
    out = scratch.folder / "bundle"
    profiler = cProfile.Profile() if args.profile else None
    # CPU of this process and of the processes it forked (the freeze's parts on the second core).
    def cpu() -> float:
        return time.process_time() + children_cpu_s()

    t1, c1 = time.perf_counter(), cpu()
    if profiler:
        profiler.enable()
    call_command("key_freeze", "bench", "--key-version", "BENCH-v1.0", "--by", author, stdout=io.StringIO())
    if profiler:
        profiler.disable()
        profiler.dump_stats(f"{args.profile}.freeze")
        profiler = cProfile.Profile()
        profiler.enable()
    t2, c2 = time.perf_counter(), cpu()
    call_command("key_export", "BENCH-v1.0", "--out", str(out), stdout=io.StringIO())
    t3, c3 = time.perf_counter(), cpu()
    if profiler:
        profiler.disable()
        profiler.dump_stats(f"{args.profile}.export")
    stack.close()
    key = GoldKey.objects.get(version="BENCH-v1.0")
    files = releases.release_files(key)
    t4 = time.perf_counter()
    archive = bundle.zip_bytes(files, key.version)
    t5 = time.perf_counter()
    return {
        "freeze_s": round(t2 - t1, 2), "freeze_cpu_s": round(c2 - c1, 2),
        "export_s": round(t3 - t2, 2), "export_cpu_s": round(c3 - c2, 2),
        "freeze_export_s": round(t3 - t1, 2), "freeze_export_cpu_s": round(c3 - c1, 2),
        "zip_s": round(t5 - t4, 2), "zip_mb": round(len(archive) / 1e6, 1),
        "entries": key.entries.count(), "sha256": key.sha256,
        "files": len(files), "bundle_mb": round(sum(len(b) for b in files.values()) / 1e6, 1),
        "load": load(),
        "slowest_queries": [(round(s, 3), sql) for s, sql in sorted(slow, reverse=True)[:12]],
        "stages_s": {name: round(sum(times), 3) for name, times in spent.items()},
    }


def derive(author_name: str) -> dict:
    """The derive page of the frozen key with three accepted errata (a drop, two relabels): its preview,
    which every view of the page runs, then the derive itself (the job it starts), both in this process.
    Until the preview was the derive's plan alone, each view ran the whole derive, freeze and seal and
    rolled it back: the preview cost at least the derive's time."""
    from django.contrib.auth import get_user_model
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from keys.models import GoldKey
    from keys.services import erratum_decide, erratum_file, key_derive, key_derive_preview

    author = get_user_model().objects.get(username=author_name)
    key = GoldKey.objects.get(version="BENCH-v1.0")
    # Relabels between the unquoted golds: the bench's made-up quotes would fail the quote gate.
    unquoted = list(key.entries.exclude(gold="contradicting").order_by("external_id")[:2])
    dropped = key.entries.filter(gold="contradicting").order_by("external_id").first()
    swap = {"aligned": "hard_negative", "hard_negative": "aligned"}
    errata = [("drop", "", dropped), *(("relabel", swap[e.gold], e) for e in unquoted)]
    for kind, value, entry in errata:
        filed = erratum_file(key=key, item_external_id=entry.external_id, kind=kind, value=value, description="bench", user=author)
        erratum_decide(erratum=filed, accept=True, note="bench", user=author)
    runs, queries = [], 0
    for _ in range(5):
        with CaptureQueriesContext(connection) as captured:
            start = time.perf_counter()
            preview = key_derive_preview(parent=key, version="BENCH-v1.1", user=author)
            runs.append(time.perf_counter() - start)
        queries = len(captured)
    if preview["problems"]:
        raise SystemExit(f"the derive preview found problems: {preview['problems']}")
    start = time.perf_counter()
    key_derive(parent=key, version="BENCH-v1.1", user=author)
    derive_s = time.perf_counter() - start
    return {"preview_s": [round(r, 3) for r in runs], "preview_queries": queries, "derive_s": round(derive_s, 2),
            "entries": preview["entries"], "load": load()}


def children_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def kernel_use() -> tuple[float, int]:
    """(system CPU seconds, minor page faults) of the processes this one has waited for."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_stime, usage.ru_minflt


def command(scratch, *argv: str) -> tuple[float, float, str, dict]:
    """Wall time, CPU, output and the kernel's share (system CPU, page faults) of one command."""
    cpu0, kernel0, start = children_cpu_s(), kernel_use(), time.perf_counter()
    done = subprocess.run([sys.executable, "manage.py", *argv], cwd=ROOT, env=scratch.env, capture_output=True, text=True)
    wall = time.perf_counter() - start
    if done.returncode:
        raise SystemExit(f"manage.py {' '.join(argv)} failed ({done.returncode}):\n{done.stdout}\n{done.stderr}")
    kernel = kernel_use()
    return wall, children_cpu_s() - cpu0, done.stdout, {"sys_s": round(kernel[0] - kernel0[0], 2), "faults": kernel[1] - kernel0[1]}


def command_path(scratch, author: str, one_step: bool = False) -> dict:
    """The two commands; `one_step`: `key_freeze --out` alone (the same files, written by the freeze as it
    seals them), its export figures zero."""
    out = scratch.folder / "bundle-cmd"
    freeze_s, freeze_cpu, freeze_out, freeze_kernel = command(
        scratch, "key_freeze", "bench-cmd", "--key-version", "BENCH-CMD-v1.0", "--by", author, "--json",
        *(("--out", str(out)) if one_step else ()),
    )
    if one_step:
        export_s, export_cpu, export_kernel = 0.0, 0.0, {"sys_s": 0.0, "faults": 0}
    else:
        export_s, export_cpu, _, export_kernel = command(scratch, "key_export", "BENCH-CMD-v1.0", "--out", str(out))
    size = sum(p.stat().st_size for p in out.rglob("*") if p.is_file())
    return {
        "freeze_s": round(freeze_s, 2), "freeze_cpu_s": round(freeze_cpu, 2),
        "export_s": round(export_s, 2), "export_cpu_s": round(export_cpu, 2),
        "freeze_export_s": round(freeze_s + export_s, 2), "freeze_export_cpu_s": round(freeze_cpu + export_cpu, 2),
        "sha256": json.loads(freeze_out)["sha256"], "files": sum(1 for p in out.rglob("*") if p.is_file()),
        "bundle_mb": round(size / 1e6, 1), "load": load(),
        "kernel": {"freeze": freeze_kernel, "export": export_kernel}, "one_step": one_step,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--items", type=int, default=100_000)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--queries", action="store_true", help="print the slowest queries of freeze and export")
    parser.add_argument("--profile", type=Path, help="write cProfile stats of freeze and export to this prefix")
    parser.add_argument("--reuse", type=Path, metavar="FILE",
                        help="start from this copy of the setup, made by the first run that names it: a SQLite file, "
                             "or with DATABASE_URL a template database named after FILE")
    parser.add_argument("--no-commands", action="store_true", help="time the in-process path only")
    parser.add_argument("--stages", action="store_true", help="print the wall time of each stage of the in-process part")
    parser.add_argument("--one-step", action="store_true",
                        help="on the command path, run `key_freeze --out` alone instead of key_freeze then key_export")
    args = parser.parse_args()
    reused = args.reuse is not None and template_exists(args.reuse)
    with scratch_database(template=args.reuse if reused else None) as scratch:
        figures = {"database": scratch.vendor, "items": args.items, "cpus": os.cpu_count(), "load_at_start": load()}
        if reused:
            from items.models import Item

            found = Item.objects.filter(item_set__name="bench items").count()
            if found != args.items:
                raise SystemExit(f"{args.reuse} holds {found:,} items, not {args.items:,}: pass --items {found}")
            built = {"setup_s": 0.0, "author": AUTHOR}
        else:
            built = build(args, scratch.folder)
            if args.reuse is not None:
                save_template(scratch, args.reuse)
        figures["setup_untimed_s"] = built["setup_s"]
        figures["reused_setup"] = reused
        # The setup (or the template's copy) leaves hundreds of megabytes of dirty pages: written back
        # now, not by whichever timed process the kernel makes pay for them (seconds of system time).
        os.sync()
        figures["in_process"] = in_process(args, scratch, built["author"])
        figures["derive"] = derive(built["author"])
        if not args.no_commands:
            os.sync()
            figures["command_path"] = command_path(scratch, built["author"], one_step=args.one_step)
    if args.json:
        print(json.dumps(figures, indent=1))
        return
    p, c = figures["in_process"], figures.get("command_path")
    print(f"database: {figures['database']}; items: {args.items:,}; setup (untimed): "
          f"{'reused ' + str(args.reuse) if reused else str(figures['setup_untimed_s']) + ' s'}; "
          f"load at start {figures['load_at_start']}")
    for seconds, sql in p["slowest_queries"]:
        print(f"  {seconds:6.3f} s  {sql}")
    for name, seconds in p["stages_s"].items():
        print(f"  {seconds:6.3f} s  {name}")
    print(f"in process  freeze {p['freeze_s']:6.2f} s (CPU {p['freeze_cpu_s']:5.2f})  export {p['export_s']:6.2f} s "
          f"(CPU {p['export_cpu_s']:5.2f})  = {p['freeze_export_s']:6.2f} s (CPU {p['freeze_export_cpu_s']:5.2f}) "
          f"| {p['files']} files, {p['bundle_mb']} MB; zip {p['zip_s']} s, {p['zip_mb']} MB | load {p['load']}")
    d = figures["derive"]
    print(f"derive page of {d['entries']:,} entries, 3 errata: preview {min(d['preview_s']):.3f}–{max(d['preview_s']):.3f} s "
          f"({d['preview_queries']} queries), the derive itself (its job) {d['derive_s']} s | load {d['load']}")
    if c is None:
        print(f"sha256 {p['sha256'][:16]}… (in process); commands not run (--no-commands)")
        return
    if c["one_step"]:
        k = c["kernel"]["freeze"]
        print(f"one command key_freeze --out {c['freeze_s']:6.2f} s (CPU {c['freeze_cpu_s']:5.2f}) | {c['files']} files, "
              f"{c['bundle_mb']} MB | load {c['load']}\n            of which in the kernel: {k['sys_s']:.2f} s, "
              f"{k['faults']:,} page faults")
        print(f"sha256 {p['sha256'][:16]}… (in process), {c['sha256'][:16]}… (one command); "
              f"target freeze + export < 10 s: {'met' if c['freeze_export_s'] < 10 else 'NOT met'} by the one command")
        return
    print(f"commands    freeze {c['freeze_s']:6.2f} s (CPU {c['freeze_cpu_s']:5.2f})  export {c['export_s']:6.2f} s "
          f"(CPU {c['export_cpu_s']:5.2f})  = {c['freeze_export_s']:6.2f} s (CPU {c['freeze_export_cpu_s']:5.2f}) "
          f"| {c['files']} files, {c['bundle_mb']} MB | load {c['load']}")
    k = c["kernel"]
    print(f"            of which in the kernel: freeze {k['freeze']['sys_s']:.2f} s, {k['freeze']['faults']:,} page faults; "
          f"export {k['export']['sys_s']:.2f} s, {k['export']['faults']:,} page faults")
    print(f"sha256 {p['sha256'][:16]}… (in process), {c['sha256'][:16]}… (commands); "
          f"target freeze + export < 10 s: {'met' if c['freeze_export_s'] < 10 else 'NOT met'} on the command path")


if __name__ == "__main__":
    main()
