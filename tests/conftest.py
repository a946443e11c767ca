"""Personas and shared fixtures. Every test module uses these people, never ad-hoc users."""

import os
import shutil
from pathlib import Path

import pytest
from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group

from goldkey import roles

IN_CI = os.environ.get("CI", "").lower() == "true"


def shared_data_dir() -> Path:
    return Path(settings.GOLDKEY_SHARED_DATA)


def require_shared_data(*parts: str) -> Path:
    """The released data file or folder; skips outside CI when absent, fails under CI."""
    path = shared_data_dir().joinpath(*parts)
    if not path.exists():
        message = f"released data not found at {path} (tests read ../shared/data; see shared/data/README.md)"
        if IN_CI:
            pytest.fail(message)
        pytest.skip(message)
    return path


@pytest.fixture
def shared_data():
    return require_shared_data


# Programs some tests start themselves, and the Debian package that brings each one. A test names the ones
# it needs with `@pytest.mark.programs(...)`; tests/test_missing_programs.py checks that every program a
# test runs is named so, and that the suite skips (not fails) on a machine without them.
PROGRAM_PACKAGES = {
    "redis-server": "redis-server", "redis-cli": "redis-tools", "sha256sum": "coreutils", "git": "git", "bash": "bash",
}


def missing_program_message(name: str) -> str:
    return f"{name} not found on PATH (apt-get install {PROGRAM_PACKAGES[name]})"


def require_programs(*names: str) -> None:
    """Skips outside CI, and fails under CI, when a program a test starts is not on the PATH."""
    for name in names:
        if shutil.which(name) is None:
            message = missing_program_message(name)
            if IN_CI:
                pytest.fail(message)
            pytest.skip(message)


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    # Before any fixture is built: a test that starts a program should not first start a Celery worker.
    for marker in item.iter_markers("programs"):
        require_programs(*marker.args)


@pytest.fixture(scope="session")
def django_db_setup(django_db_setup, django_db_blocker):
    """pytest-django's test database, with autovacuum off on PostgreSQL (`tests.migrating.autovacuum_off`
    says why)."""
    from tests.migrating import autovacuum_off

    with django_db_blocker.unblock():
        autovacuum_off()


def _user(username: str, *groups: str, **extra):
    user = get_user_model().objects.create_user(username=username, password=f"{username}-pass", **extra)
    for name in groups:
        user.groups.add(Group.objects.get_or_create(name=name)[0])
    return user


@pytest.fixture
def annotator_a(db):
    return _user("ann_a", roles.ANNOTATOR)


@pytest.fixture
def annotator_b(db):
    return _user("ann_b", roles.ANNOTATOR)


@pytest.fixture
def fake_llm():
    """The local OpenAI-compatible server (council/fakellm.py) on a free port of 127.0.0.1, for the duration of a
    test: council members, judges and verifiers reach it through the `openai` SDK."""
    from council.fakellm import serve_in_thread

    server = serve_in_thread(port=0)
    yield server
    server.shutdown()
    server.server_close()


@pytest.fixture
def author(db):
    """Adjudicates and freezes keys; in TWIST the author was also one of the annotators."""
    return _user("author", roles.AUTHOR, roles.ANNOTATOR, is_staff=True)


@pytest.fixture
def admin_user(db):
    return _user("root", roles.ADMIN, is_staff=True, is_superuser=True)


@pytest.fixture
def outsider(db):
    return _user("outsider")


TWIST_C_DEMO = Path(__file__).resolve().parents[1] / "demo" / "twist_c"


@pytest.fixture
def demo_chains():
    """The demo's TWIST Track C chains (every family) in the item set "chains", over the version conv-c.tc1 of
    the invented conversation conv-c. Uses the test's own database (plain or transactional)."""
    from chains.importer import items_import_twist_c
    from items.models import ItemSet
    from items.services import corpus_import_locomo, corpus_import_version

    corpus_import_locomo(path=TWIST_C_DEMO / "conv-c.json", external_id="conv-c")
    corpus_import_version(path=TWIST_C_DEMO / "conv-c.tc1.json", version_of="conv-c")
    items_import_twist_c(path=TWIST_C_DEMO / "items.jsonl", item_set_name="chains")
    return ItemSet.objects.get(name="chains")


@pytest.fixture
def twist_corpus(db, shared_data):
    """The 10 released LoCoMo conversations and the 200 v1 candidates (with rejects)."""
    from items.services import corpus_import_locomo, items_import_twist

    data = shared_data()
    corpus_import_locomo(path=data / "locomo10")
    items_import_twist(
        path=data / "twist-v1" / "track_b_items_v1_candidates.jsonl",
        item_set_name="TWIST Track B v1 candidates",
        rejects_path=data / "twist-v1" / "track_b_v1_generation_rejects.jsonl",
    )
    from items.models import ItemSet

    return ItemSet.objects.get(name="TWIST Track B v1 candidates")


# ---------------------------------------------------------------------------------------------
# Real Chromium through Playwright (the system browser; nothing is downloaded).

CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
]


@pytest.fixture(scope="session")
def browser():
    # Playwright's sync API runs an event loop in this thread; Django's ORM calls in the test body
    # are still synchronous, so the async-safety guard does not apply here.
    os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
    executable = os.environ.get("GOLDKEY_CHROMIUM", "/usr/bin/chromium")
    if not Path(executable).exists():
        message = f"Chromium not found at {executable} (apt-get install chromium)"
        if IN_CI:
            pytest.fail(message)
        pytest.skip(message)
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        instance = playwright.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS, headless=True)
        yield instance
        instance.close()


@pytest.fixture(scope="session")
def live_requests():
    """Installs the request counter before the live server builds its handler (so it must be requested
    before `live_server`)."""
    from django.conf import settings

    from tests import live_requests as counter

    settings.MIDDLEWARE = ["tests.live_requests.CountRequests", *settings.MIDDLEWARE]
    return counter


@pytest.fixture
def page(live_requests, browser, live_server):
    context = browser.new_context(base_url=live_server.url, viewport={"width": 1280, "height": 900})
    context.set_default_timeout(10_000)
    tab = context.new_page()
    # Every browser test also proves the Content-Security-Policy blocks nothing the page needs.
    # A test that expects a refusal takes it out of page.csp_refusals.
    refused = tab.csp_refusals = []
    tab.on("console", lambda m: refused.append(m.text) if "Content Security Policy" in m.text else None)
    yield tab
    tab.goto("about:blank")  # the page's unload saves go out now, while the test's database is still there
    context.close()
    assert live_requests.wait_until_quiet(), "the live server was still handling requests 10 s after the test"
    assert not refused, f"the page broke its Content-Security-Policy: {refused}"


REPO_ROOT = Path(__file__).resolve().parents[1]
SCREENSHOT_VIEWPORT = {"width": 1280, "height": 800}


def screenshot_folder() -> Path | None:
    """Where browser tests write the docs' screenshots: GOLDKEY_SCREENSHOTS names the folder (relative to
    the repository root; "1" means docs/screenshots). Unset, nothing is written, so CI leaves the tree alone."""
    value = os.environ.get("GOLDKEY_SCREENSHOTS", "").strip()
    if not value:
        return None
    folder = Path("docs/screenshots") if value == "1" else Path(value)
    return folder if folder.is_absolute() else REPO_ROOT / folder


def save_screenshot(page, name: str) -> Path | None:
    """The page as the docs show it (`<folder>/<name>.png`, the 1280x800 viewport only, so the files stay
    small), when screenshots are asked for; returns the path written, or None."""
    folder = screenshot_folder()
    if folder is None:
        return None
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.png"
    page.set_viewport_size(SCREENSHOT_VIEWPORT)
    page.screenshot(path=str(path))
    return path


def browser_login(page, user) -> None:
    """Log a persona in through the real login form (passwords are '<username>-pass')."""
    page.goto("/accounts/login/")
    page.fill("input[name=username]", user.username)
    page.fill("input[name=password]", f"{user.username}-pass")
    page.click("button[type=submit]")
    page.wait_for_load_state()


# ---------------------------------------------------------------------------------------------
# The closing summary: a green run that skipped whole groups of tests says so, and how to run them.

SKIP_GROUPS = [
    # (group, words that mark its skip reasons, how to enable it)
    ("browser/Chromium", ("Chromium",), "apt-get install chromium, or set GOLDKEY_CHROMIUM=/path/to/chromium"),
    # Before Redis-only: "redis-server not found on PATH" is a missing program, not a missing broker.
    ("programs", ("not found on PATH",), "apt-get install the package each skip reason names (redis-server, …)"),
    # Before PostgreSQL: a SQLite-only test's reason may name the other database.
    ("SQLite-only", ("SQLite only",), "run without DATABASE_URL (the embedded SQLite database)"),
    ("PostgreSQL-only", ("PostgreSQL",), "set DATABASE_URL=postgres://USER@HOST:PORT/NAME"),
    ("Redis-only", ("CELERY_BROKER_URL=redis", "Redis"), "set CELERY_BROKER_URL=redis://HOST:PORT/N"),
    ("real data", ("released data",), "put the released data at ../shared/data, or set GOLDKEY_SHARED_DATA"),
]


def skip_reason(report) -> str:
    longrepr = report.longrepr
    return longrepr[2] if isinstance(longrepr, tuple) else str(longrepr)


def skipped_groups(reasons: list[str]) -> dict[str, int]:
    counts = {}
    for reason in reasons:
        group = next((name for name, words, _ in SKIP_GROUPS if any(w in reason for w in words)), "other")
        counts[group] = counts.get(group, 0) + 1
    return counts


def skip_summary(reasons: list[str]) -> str:
    counts = skipped_groups(reasons)
    if not counts:
        return "Skipped groups: none (no browser, program, PostgreSQL-only, Redis-only or real-data test was skipped)"
    how = {name: enable for name, _, enable in SKIP_GROUPS}
    parts = [
        f"{group} ({n} test{'s' if n != 1 else ''}: {how[group]})" if group in how else f"other ({n}: see the reasons above)"
        for group, n in counts.items()
    ]
    return "Skipped groups: " + "; ".join(parts)


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_terminal_summary(terminalreporter, exitstatus, config):
    # The outermost wrapper, so the line comes after pytest's own short summary, right above the counts.
    result = yield
    reasons = [skip_reason(r) for r in terminalreporter.stats.get("skipped", []) if r.when in ("setup", "call")]
    terminalreporter.write_line(skip_summary(reasons), yellow=bool(reasons), bold=True)
    return result


def close_campaign(campaign, user=None):
    """Annotation is over: close the campaign so that its disagreements can be decided. Enrollments that
    a fixture left unsubmitted are ended, as an author closing early would."""
    from annotation.services import campaign_close

    closer = user or get_user_model().objects.filter(groups__name=roles.AUTHOR).order_by("id").first()
    if closer is None:
        closer = _user("closer", roles.AUTHOR)
    return campaign_close(campaign=campaign, user=closer, end_open=True)


def item_content_update(queryset, **values) -> None:
    """Change content fields of the items of `queryset` in place (a test's edit of an imported item;
    the content is one JSON value, so an UPDATE of one field is a read, a merge and a write)."""
    for item in queryset:
        item.content = {**item.content, **values}
        item.save(update_fields=["content"])
