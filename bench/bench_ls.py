"""Goldkey and Label Studio side by side on the same Track B data: import, next item, freeze + export.

    make bench-ls                                            # 100,000 items, 3 pairs of each
    make bench-ls BENCH_LS_ARGS="--items 2000 --pairs 2"     # a quick run
    DATABASE_URL=postgres://postgres@127.0.0.1:5432/goldkey_bench .venv/bin/python bench/bench_ls.py --json

Label Studio comes from its pinned PyPI version (LS_VERSION) in a virtualenv of its own under
var/bench-ls/ (gitignored), made by this script on its first run; when it cannot be installed the
comparison is skipped with a message (exit 0), and nothing else is downloaded. Label Studio runs as its
users start it (`label-studio start`: its own SQLite database, in a folder of this run); Goldkey runs on a
throw-away database (bench/scratch.py: SQLite, or with DATABASE_URL a `test_<name>` database on that
PostgreSQL server) behind gunicorn with 2 workers.

The data: bench/import_bench.py's generator (real Track B shape: CONVERSATIONS LoCoMo conversations of
TURNS turns in dated sessions, N items with 1-3 evidence turns of the recipient). Goldkey reads the
released files; Label Studio gets the same items as one JSON task file, each task carrying the item's
fields and its cited turns (speaker, dia_id, text), with a labeling config showing the draft and the turns.

Timed in alternating pairs (which tool goes first changes every pair), each pair printed as it ends:
  - import, whole, validated: Goldkey's `manage.py import_twist FILE --conversations DIR` (the conversations
    and the items, one process, one transaction) into an empty database, against Label Studio's import API (POST the task file to a new project;
    synchronous in its Community edition), HTTP included;
  - next item over HTTP, a new connection per request (REQUESTS of them, p50/p95): Goldkey's Resume
    (GET /annotate/<campaign>/, 302) and the item page it names, against Label Studio's
    GET /api/projects/<id>/next (what its labeling stream asks for the next task);
  - freeze + export: `manage.py key_freeze <campaign> --out DIR` (one command: the key frozen, the sealed
    release written) of a closed campaign with two annotators' answers on every item, against Label
    Studio's JSON export (GET /api/projects/<id>/export?exportType=JSON) of a project holding the same
    tasks with two annotations each; Label Studio's server memory (its high-water mark) is printed too.
Before each tool's import and export the files written so far are flushed and the bench waits for an idle
machine (common.settled; the seconds it took are printed): the kernel writes the previous tool's files back
for seconds after it answered, and the tool timed next would pay for it.
Then the median of the pairs' ratios (Label Studio / Goldkey: above 1, Goldkey is faster) with the load
average at each step: figures from a busy machine only compare within a pair.
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from common import (  # noqa: E402
    Server,
    bytecode_compiled,
    free_port,
    fresh_get,
    goldkey_login,
    gunicorn,
    latency,
    latency_line,
    load,
    settled,
)

LS_VERSION = "1.23.2"
LS_HOME = ROOT / "var" / "bench-ls"
LS_USER, LS_PASSWORD, LS_TOKEN = "bench@example.com", "bench-ls-pass", "benchlstoken0123456789"
GK_PASSWORD = "bench-pass"
LABEL_CONFIG = """<View>
  <Header value="Draft to $recipient"/>
  <Text name="draft" value="$draft"/>
  <Paragraphs name="evidence" value="$evidence" layout="dialogue" nameKey="speaker" textKey="text"/>
  <Choices name="q1" toName="draft" choice="single">
    <Choice value="contradicts"/><Choice value="consistent"/><Choice value="cannot-tell"/>
  </Choices>
  <TextArea name="q1note" toName="draft"/>
</View>"""
VERDICT = {"contradicting": "contradicts", "aligned": "consistent", "hard_negative": "consistent"}


def log(args, text: str) -> None:
    print(text, file=sys.stderr if args.json else sys.stdout, flush=True)


# ----- Label Studio ---------------------------------------------------------------------------------

def ls_install(args) -> Path | None:
    """The `label-studio` program of the pinned version, installed into var/bench-ls/venv when missing;
    None (with the reason printed) when it cannot be."""
    venv = LS_HOME / "venv"
    program = venv / "bin" / "label-studio"
    marker = venv / f".installed-{LS_VERSION}"
    if marker.exists():
        return program
    log(args, f"installing Label Studio {LS_VERSION} from PyPI into {venv} (once; a few minutes)…")
    try:
        if not venv.exists():
            subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, capture_output=True)
        subprocess.run([str(venv / "bin" / "pip"), "install", "--quiet", f"label-studio=={LS_VERSION}"],
                       check=True, capture_output=True, text=True)
    except (subprocess.CalledProcessError, OSError) as exc:
        detail = getattr(exc, "stderr", "") or str(exc)
        log(args, f"Label Studio {LS_VERSION} could not be installed: the comparison is skipped.\n"
                  f"  {detail.strip().splitlines()[-1] if detail.strip() else exc}")
        return None
    marker.touch()
    return program


def ls_environment(data_dir: Path) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO", "DATABASE_URL", "GOLDKEY"))}
    return env | {
        # No calls out: the version check, analytics and error reports would time the network, not the tool.
        "LABEL_STUDIO_BASE_DATA_DIR": str(data_dir), "LATEST_VERSION_CHECK": "false", "COLLECT_ANALYTICS": "false",
        "SENTRY_DSN": "", "FRONTEND_SENTRY_DSN": "", "SENTRY_RATE": "0",
        # The 100,000 tasks with their annotations are one file of a few hundred megabytes.
        "DATA_UPLOAD_MAX_MEMORY_SIZE": str(2 * 1024**3),
    }


def ls_server(program: Path, data_dir: Path, log_file: Path) -> Server:
    port = free_port()
    command = [str(program), "start", "--no-browser", "--internal-host", "127.0.0.1", "-p", str(port),
               "--data-dir", str(data_dir), "--username", LS_USER, "--password", LS_PASSWORD,
               "--user-token", LS_TOKEN, "--enable-legacy-api-token", "--log-level", "WARNING"]
    # Its first start migrates a new database: minutes on a busy machine.
    return Server(command, env=ls_environment(data_dir), log=log_file, port=port, cwd=data_dir, ready_s=900)


def ls_data_dir(program: Path, folder: Path) -> Path:
    """A copy of a migrated Label Studio data folder (the migration, made once, is not what is timed)."""
    template = LS_HOME / f"template-{LS_VERSION}"
    if not (template / "label_studio.sqlite3").exists():
        shutil.rmtree(template, ignore_errors=True)
        template.mkdir(parents=True)
        ls_server(program, template, LS_HOME / "template.log").stop()
    data_dir = folder / "label-studio"
    shutil.copytree(template, data_dir)
    return data_dir


class LabelStudio:
    def __init__(self, server: Server):
        import requests

        self.server, self.base = server, server.base
        self.http = requests.Session()
        self.http.headers["Authorization"] = f"Token {LS_TOKEN}"
        deadline = time.monotonic() + 120
        while self.http.get(f"{self.base}/api/projects/", headers={"Connection": "close"}).status_code != 200:
            if time.monotonic() > deadline:
                raise RuntimeError("Label Studio's API does not answer with the bench's token")
            time.sleep(1)

    def get(self, path: str, **kwargs):
        return fresh_get(self.http, self.base + path, **kwargs)

    def _fresh(self):
        """The session with no pooled connection: Label Studio's server may close one after answering
        without saying so, and the next request would fail on it (as `fresh_get` explains)."""
        self.http.close()
        return self.http

    def project(self, title: str) -> int:
        response = self._fresh().post(f"{self.base}/api/projects/", json={"title": title, "label_config": LABEL_CONFIG})
        response.raise_for_status()
        return response.json()["id"]

    def import_file(self, project: int, path: Path) -> dict:
        with path.open("rb") as f:
            response = self._fresh().post(f"{self.base}/api/projects/{project}/import", files={"file": (path.name, f)},
                                      headers={"Connection": "close"})
        if response.status_code != 201:
            raise RuntimeError(f"Label Studio import: {response.status_code} {response.text[:300]}")
        return response.json()

    def delete(self, project: int) -> None:
        self._fresh().delete(f"{self.base}/api/projects/{project}/", headers={"Connection": "close"})

    def peak_rss_mb(self) -> float:
        """The server's memory high-water mark (VmHWM; `label-studio start` serves from one process)."""
        for line in Path(f"/proc/{self.server.process.pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return round(int(line.split()[1]) / 1024)
        return 0.0


def ls_tasks(jsonl: Path, locomo: Path, out: Path, *, annotated: bool) -> None:
    """The Track B items as Label Studio tasks (the same fields, the cited turns inline); `annotated`: each
    with two annotations as Goldkey's campaigns have them (A with a note, B the bare choice)."""
    turns = {}
    for path in locomo.glob("*.json"):
        doc = json.loads(path.read_text(encoding="utf-8"))
        for key, session in doc.items():
            if key.startswith("session_") and isinstance(session, list):
                for turn in session:
                    turns[(f"conv-{path.stem}", turn["dia_id"])] = turn
    tasks = []
    with jsonl.open(encoding="utf-8") as f:
        for line in f:
            item = json.loads(line)
            data = {k: v for k, v in item.items() if k != "evidence"}
            data |= {"recipient": item["speaker"],
                     "evidence": [turns[(item["conv"], dia_id)] for dia_id in item["evidence"]]}
            task: dict = {"data": data}
            if annotated:
                choice = {"from_name": "q1", "to_name": "draft", "type": "choices",
                          "value": {"choices": [VERDICT[item["type"]]]}}
                note = {"from_name": "q1note", "to_name": "draft", "type": "textarea",
                        "value": {"text": ["The excerpt and the draft were read together."]}}
                task["annotations"] = [{"result": [choice, note]}, {"result": [choice]}]
            tasks.append(task)
    out.write_text(json.dumps(tasks), encoding="utf-8")


# ----- Goldkey --------------------------------------------------------------------------------------

def gk_command(scratch, *argv: str) -> float:
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "manage.py", *argv], cwd=ROOT, env=scratch.env, capture_output=True, text=True)
    if done.returncode:
        raise SystemExit(f"manage.py {' '.join(argv)} failed ({done.returncode}):\n{done.stdout}\n{done.stderr}")
    return time.perf_counter() - start


def vacuum() -> None:
    """On PostgreSQL, the statistics and visibility autovacuum gives the tables soon after a bulk write:
    without them the first pages after a 200,000-row campaign_create are planned blind."""
    from django.db import connection

    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("VACUUM (ANALYZE)")


def gk_annotator(username: str):
    from django.contrib.auth import get_user_model

    from goldkey import roles

    roles.ensure_groups()
    user = get_user_model().objects.create_user(username, password=GK_PASSWORD)
    user.groups.add(roles.Group.objects.get(name=roles.ANNOTATOR))
    return user


# ----- the pairs -------------------------------------------------------------------------------------

def pair_line(what: str, n: int, first: str, gk: float, ls: float, unit: str = "s") -> str:
    return (f"  pair {n + 1} ({first} first): Goldkey {gk:8.3f} {unit}  Label Studio {ls:8.3f} {unit}  "
            f"ratio {ls / gk:5.2f}x   (load {load()})   {what}")


def summary(pairs: list[dict], key_gk: str, key_ls: str) -> dict:
    ratios = [p[key_ls] / p[key_gk] for p in pairs]
    return {"pairs": pairs, "median_ratio": round(statistics.median(ratios), 2),
            "ratios": [round(r, 2) for r in ratios], "load": load()}


def import_pairs(args, scratch, ls: LabelStudio, files: dict) -> dict:
    from import_bench import items_emptied

    from items.models import Item

    pairs = []
    for n in range(args.pairs):
        first = "Goldkey" if n % 2 == 0 else "Label Studio"
        items_emptied()
        project = ls.project(f"import {n + 1}")
        times, waited = {}, {}
        for tool in ((first, "Label Studio" if first == "Goldkey" else "Goldkey")):
            waited[tool] = settled()
            if tool == "Goldkey":
                times["goldkey_s"] = gk_command(scratch, "import_twist", str(files["jsonl"]), "--item-set", "bench",
                                                "--conversations", str(files["locomo"]))
            else:
                start = time.perf_counter()
                answer = ls.import_file(project, files["tasks"])
                times["label_studio_s"] = time.perf_counter() - start
                if answer.get("task_count") != args.items:
                    raise RuntimeError(f"Label Studio imported {answer.get('task_count')} tasks, not {args.items}")
        assert Item.objects.count() == args.items
        pairs.append({k: round(v, 3) for k, v in times.items()} | {"first": first, "load": load(), "settled_s": waited})
        log(args, pair_line("import, whole, validated", n, first, times["goldkey_s"], times["label_studio_s"]))
        log(args, f"    waited for an idle machine before each: {waited} s")
        if n + 1 < args.pairs:
            ls.delete(project)  # untimed; the last import's project stays for the next-item pairs
        else:
            files["ls_project"] = project
    return summary(pairs, "goldkey_s", "label_studio_s")


def next_item_pairs(args, scratch, ls: LabelStudio, project: int) -> dict:
    import requests

    from annotation.services import campaign_create
    from items.models import ItemSet

    annotator = gk_annotator("bench-next")
    campaign_create(slug="bench-next", item_set=ItemSet.objects.get(name="bench"),
                    annotators=[annotator, gk_annotator("bench-next-b")], seed=1)
    vacuum()  # what autovacuum does after the bulk write, before an annotator's first page
    server = gunicorn(scratch.env, scratch.folder)
    try:
        session = requests.Session()
        goldkey_login(session, server.base, annotator.username, GK_PASSWORD)

        def goldkey_next() -> None:
            resume = fresh_get(session, f"{server.base}/annotate/bench-next/", allow_redirects=False)
            assert resume.status_code == 302, resume.status_code
            page = fresh_get(session, server.base + resume.headers["Location"])
            assert page.status_code == 200, page.status_code

        def ls_next() -> None:
            response = ls.get(f"/api/projects/{project}/next")
            assert response.status_code == 200 and "data" in response.json(), response.status_code

        for _ in range(5):  # warm up both (connections to the databases, templates, code paths)
            goldkey_next()
            ls_next()
        pairs = []
        for n in range(args.pairs):
            first = "Goldkey" if n % 2 == 0 else "Label Studio"
            figures = {}
            for tool in (first, "Label Studio" if first == "Goldkey" else "Goldkey"):
                fn = goldkey_next if tool == "Goldkey" else ls_next
                walls = []
                for _ in range(args.requests):
                    start = time.perf_counter()
                    fn()
                    walls.append(time.perf_counter() - start)
                figures["goldkey" if tool == "Goldkey" else "label_studio"] = latency(walls)
            pair = {"first": first, "goldkey": figures["goldkey"], "label_studio": figures["label_studio"],
                    "goldkey_p95_ms": figures["goldkey"]["p95_ms"], "label_studio_p95_ms": figures["label_studio"]["p95_ms"]}
            pairs.append(pair)
            log(args, pair_line("next item p95, new connection per request", n, first, pair["goldkey_p95_ms"],
                                pair["label_studio_p95_ms"], "ms"))
            log(args, latency_line("    Goldkey: Resume (302) + item page", figures["goldkey"]))
            log(args, latency_line("    Label Studio: GET /api/projects/<id>/next", figures["label_studio"]))
    finally:
        server.stop()
    return summary(pairs, "goldkey_p95_ms", "label_studio_p95_ms")


def export_pairs(args, scratch, ls: LabelStudio, files: dict) -> dict:
    from export_bench import closed_campaigns

    from items.models import ItemSet

    slugs = [f"bench-freeze-{n + 1}" for n in range(args.pairs)]
    author = closed_campaigns(item_set=ItemSet.objects.get(name="bench"), slugs=slugs)
    project = ls.project("export")
    ls.import_file(project, files["annotated_tasks"])
    os.sync()  # the setups' dirty pages written back now, not by whichever timed process the kernel picks
    pairs = []
    for n, slug in enumerate(slugs):
        first = "Goldkey" if n % 2 == 0 else "Label Studio"
        times, waited = {}, {}
        for tool in (first, "Label Studio" if first == "Goldkey" else "Goldkey"):
            waited[tool] = settled()
            if tool == "Goldkey":
                out = scratch.folder / f"release-{n + 1}"
                times["goldkey_s"] = gk_command(scratch, "key_freeze", slug, "--key-version", f"BENCH-LS-{n + 1}",
                                                "--by", author, "--out", str(out))
            else:
                size, start = 0, time.perf_counter()
                with ls.get(f"/api/projects/{project}/export", params={"exportType": "JSON"}, stream=True) as response:
                    response.raise_for_status()
                    for chunk in response.iter_content(1 << 20):
                        size += len(chunk)
                times["label_studio_s"] = time.perf_counter() - start
                times["label_studio_mb"] = size / 1e6
        pair = {k: round(v, 3) for k, v in times.items()} | {
            "first": first, "label_studio_peak_rss_mb": ls.peak_rss_mb(), "load": load(), "settled_s": waited,
            "goldkey_release_mb": round(sum(p.stat().st_size for p in out.rglob("*") if p.is_file()) / 1e6, 1),
        }
        pairs.append(pair)
        log(args, pair_line("freeze + export (one command) vs JSON export", n, first, times["goldkey_s"],
                            times["label_studio_s"]))
        log(args, f"    Goldkey release {pair['goldkey_release_mb']} MB; Label Studio export "
                  f"{pair['label_studio_mb']} MB, server memory high-water mark {pair['label_studio_peak_rss_mb']} MB")
    return summary(pairs, "goldkey_s", "label_studio_s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--items", type=int, default=100_000)
    parser.add_argument("--conversations", type=int, default=100)
    parser.add_argument("--turns", type=int, default=600)
    parser.add_argument("--pairs", type=int, default=3, help="alternating pairs of each measure")
    parser.add_argument("--requests", type=int, default=200, help="timed next-item requests per tool and pair")
    parser.add_argument("--only", default="import,next,export", help="comma-separated: import, next, export")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON (progress goes to stderr)")
    args = parser.parse_args()
    only = {part.strip() for part in args.only.split(",")}
    if "import" not in only and only & {"next", "export"}:
        only.add("import")  # the next-item and export data are what the last import wrote

    program = ls_install(args)
    if program is None:
        if args.json:
            print(json.dumps({"skipped": f"Label Studio {LS_VERSION} could not be installed"}))
        return

    from import_bench import generate
    from scratch import scratch_database

    bytecode_compiled()
    with scratch_database() as scratch:
        figures = {"items": args.items, "conversations": args.conversations, "turns": args.turns,
                   "goldkey_database": scratch.vendor, "label_studio": f"{LS_VERSION}, label-studio start, SQLite",
                   "goldkey_server": "gunicorn, 2 sync workers", "cpus": os.cpu_count(), "load_at_start": load(),
                   "date": time.strftime("%Y-%m-%d %H:%M %Z")}
        log(args, f"{args.items:,} Track B items ({args.conversations} conversations x {args.turns} turns); Goldkey on "
                  f"{scratch.vendor}, Label Studio {LS_VERSION} on SQLite; {os.cpu_count()} CPUs, load {load()}")
        locomo, jsonl = generate(scratch.folder, items=args.items, conversations=args.conversations,
                                 turns=args.turns, seed=7)
        files = {"locomo": locomo, "jsonl": jsonl, "tasks": scratch.folder / "ls-tasks.json",
                 "annotated_tasks": scratch.folder / "ls-tasks-annotated.json"}
        ls_tasks(jsonl, locomo, files["tasks"], annotated=False)
        if "export" in only:
            ls_tasks(jsonl, locomo, files["annotated_tasks"], annotated=True)
        data_dir = ls_data_dir(program, scratch.folder)
        server = ls_server(program, data_dir, scratch.folder / "label-studio.log")
        try:
            ls = LabelStudio(server)
            figures["import"] = import_pairs(args, scratch, ls, files)
            if "next" in only:
                figures["next_item"] = next_item_pairs(args, scratch, ls, files["ls_project"])
            if "export" in only:
                figures["freeze_export"] = export_pairs(args, scratch, ls, files)
        except Exception:
            log(args, "Label Studio's log ends:\n" + server.log.read_text(errors="replace")[-3000:])
            raise
        finally:
            server.stop()
        figures["load_at_end"] = load()
    if args.json:
        print(json.dumps(figures, indent=1))
        return
    print(f"median ratio, Label Studio / Goldkey (above 1: Goldkey faster), {args.items:,} items, load at end {load()}:")
    for key, name in (("import", "import, whole, validated"), ("next_item", "next item p95 (new connection)"),
                      ("freeze_export", "freeze + export vs JSON export")):
        if key in figures:
            print(f"  {name:<34} {figures[key]['median_ratio']:5.2f}x  (pairs: {figures[key]['ratios']})")


if __name__ == "__main__":
    main()
