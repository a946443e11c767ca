"""The locked, lean install: both lock files pin every package with hashes, the runtime half carries no test
tools or statsmodels/pandas, and make / CI / the image install from them."""

import re
import subprocess
import tomllib

import pytest
from django.conf import settings

from tests.conftest import skip_summary

ROOT = settings.BASE_DIR
PIN = re.compile(r"^([A-Za-z0-9._-]+)==([^ \\]+)", re.M)


def _name(requirement: str) -> str:
    return re.split(r"[<>=!~\[; ]", requirement, maxsplit=1)[0].lower().replace("_", "-")


def _pins(lock: str) -> dict[str, str]:
    return {name.lower(): version for name, version in PIN.findall((ROOT / lock).read_text())}


@pytest.fixture(scope="module")
def project() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]


def test_statsmodels_and_pandas_are_not_runtime_dependencies(project):
    runtime = {_name(r) for r in project["dependencies"]}
    assert not runtime & {"statsmodels", "pandas"}
    assert "statsmodels" in {_name(r) for r in project["optional-dependencies"]["test"]}


def test_the_runtime_lock_has_no_test_tools_and_no_pandas():
    assert not set(_pins("requirements.lock")) & {"statsmodels", "pandas", "pytest", "playwright", "ruff"}


@pytest.mark.parametrize(("lock", "extras"), [("requirements.lock", []), ("requirements-test.lock", ["test"])])
def test_every_declared_dependency_is_locked(project, lock, extras):
    declared = {_name(r) for r in project["dependencies"]}
    for extra in extras:
        declared |= {_name(r) for r in project["optional-dependencies"][extra]}
    assert declared - set(_pins(lock)) == set()


@pytest.mark.parametrize("lock", ["requirements.lock", "requirements-test.lock"])
def test_every_locked_package_carries_its_hashes(lock):
    entries = re.split(r"\n(?=[A-Za-z0-9])", (ROOT / lock).read_text().split("\n\n")[-1].strip())
    entries = [e for e in entries if PIN.match(e)]
    assert len(entries) > 30
    assert [e.split()[0] for e in entries if "--hash=sha256:" not in e] == []


def test_the_test_lock_pins_the_runtime_packages_at_the_same_versions():
    runtime, full = _pins("requirements.lock"), _pins("requirements-test.lock")
    assert {name: (version, full.get(name)) for name, version in runtime.items() if full.get(name) != version} == {}


def test_ruff_is_pinned(project):
    assert [r for r in project["optional-dependencies"]["test"] if _name(r) == "ruff"][0].startswith("ruff==")


@pytest.mark.parametrize(("path", "lock"), [("Makefile", "requirements-test.lock"), ("Dockerfile", "requirements.lock")])
def test_make_and_the_image_install_from_a_lock_with_hashes(path, lock):
    text = (ROOT / path).read_text()
    assert "--require-hashes" in text and lock in text
    assert "pip install ." not in text and 'install --quiet -e ".[test]"' not in text


def test_the_ci_script_installs_through_make():
    text = (ROOT / ".ci" / "run").read_text()
    assert "make lint" in text and "make test" in text


def test_the_makefile_says_what_to_install_when_venv_fails():
    assert "apt-get install python3.11-venv" in (ROOT / "Makefile").read_text()


@pytest.mark.programs("git")
def test_no_egg_info_is_tracked():
    tracked = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    assert ".egg-info/" not in tracked
    assert "egg-info" in (ROOT / ".gitignore").read_text()


def test_the_closing_line_names_each_skipped_group_and_how_to_enable_it():
    line = skip_summary([
        "Chromium not found at /usr/bin/chromium (apt-get install chromium)",
        "row locks need PostgreSQL (SQLite serialises writers anyway)",
        "TRUNCATE exists on PostgreSQL only",
        "needs a broker with acknowledgements (set CELERY_BROKER_URL=redis://…)",
        "released data not found at ../shared/data",
        "SQLite only: PostgreSQL's batch setting is tested below",
        "redis-server not found on PATH (apt-get install redis-server)",
    ])  # fmt: skip
    assert line.startswith("Skipped groups: ")
    assert "browser/Chromium (1 test: apt-get install chromium" in line
    assert "PostgreSQL-only (2 tests: set DATABASE_URL=" in line
    assert "Redis-only (1 test: set CELERY_BROKER_URL=redis://" in line
    assert "real data (1 test: put the released data at ../shared/data" in line
    assert "SQLite-only (1 test: run without DATABASE_URL" in line
    # A missing redis-server is a program to install, not a broker setting (its reason says "redis" too).
    assert "programs (1 test: apt-get install the package each skip reason names" in line
    assert line.count("Redis-only (") == 1


def test_the_closing_line_says_when_nothing_was_skipped():
    assert skip_summary([]).startswith("Skipped groups: none")
