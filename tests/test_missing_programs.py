"""A machine without the servers and browsers some tests start still runs `make test` green: each such test
skips with a reason that names the package to install (under CI, where they are installed, a missing one
fails instead)."""

import ast
import os
import subprocess
import sys
from pathlib import Path

from django.conf import settings

from tests.conftest import PROGRAM_PACKAGES

TESTS = Path(__file__).resolve().parent
SUBPROCESS_CALLS = {"run", "Popen", "call", "check_call", "check_output"}


def programs_started(tree: ast.AST) -> set[str]:
    """The programs a module starts by name: the first word of every literal argv given to subprocess."""
    names = set()
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
            continue
        if node.func.attr not in SUBPROCESS_CALLS or not node.args or not isinstance(node.args[0], ast.List):
            continue
        first = node.args[0].elts[0] if node.args[0].elts else None
        if isinstance(first, ast.Constant) and isinstance(first.value, str):
            names.add(first.value)
    return names


def programs_declared(tree: ast.AST) -> set[str]:
    """The programs named by `pytest.mark.programs(...)` anywhere in a module."""
    names = set()
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "programs"
            and isinstance(node.func.value, ast.Attribute) and node.func.value.attr == "mark"
        ):
            names |= {arg.value for arg in node.args if isinstance(arg, ast.Constant)}
    return names


def test_every_program_a_test_starts_is_declared_with_the_package_that_brings_it():
    undeclared = {}
    for path in sorted(TESTS.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        started = programs_started(tree)
        missing = started - programs_declared(tree)
        unknown = started - set(PROGRAM_PACKAGES)
        if missing or unknown:
            undeclared[str(path.relative_to(TESTS))] = sorted(missing | unknown)
    assert undeclared == {}, (
        "these test modules start programs that no @pytest.mark.programs(...) names, or that "
        f"tests.conftest.PROGRAM_PACKAGES does not map to a Debian package: {undeclared}"
    )


def test_the_scan_finds_a_program_started_by_a_literal_argv():
    tree = ast.parse('subprocess.Popen(["redis-server", "--port", "1"])\nsubprocess.run([sys.executable, "-c", ""])')
    assert programs_started(tree) == {"redis-server"}
    assert programs_declared(ast.parse('@pytest.mark.programs("redis-server")\ndef test(): pass')) == {"redis-server"}


def test_without_the_programs_and_the_browser_those_tests_skip_naming_the_package(tmp_path):
    """The tests that start a program, and the browser tests, run as on a fresh machine: an empty PATH, no
    Chromium, no CI, the embedded database and broker."""
    empty = tmp_path / "bin"
    empty.mkdir()
    keep = {k: v for k, v in os.environ.items() if k not in {"CI", "DATABASE_URL", "CELERY_BROKER_URL"}
            and not k.startswith(("PYTEST_", "GOLDKEY_"))}
    env = {**keep, "PATH": str(empty), "GOLDKEY_CHROMIUM": str(tmp_path / "no-chromium"),
           "GOLDKEY_VAR_DIR": str(tmp_path / "var")}
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:xdist", "-p", "no:cacheprovider", "-q", "-rs",
         "-m", "programs or browser", "tests"],
        cwd=settings.BASE_DIR, env=env, capture_output=True, text=True, timeout=600,
    )
    output = done.stdout + done.stderr
    assert done.returncode == 0, output[-4000:]
    closing = output.strip().splitlines()[-1]
    assert "failed" not in closing and "error" not in closing and "skipped" in closing, closing
    assert "passed" not in closing, f"a test that needs a program or Chromium ran without it: {closing}"
    for name in ("redis-server", "sha256sum"):
        assert f"{name} not found on PATH (apt-get install {PROGRAM_PACKAGES[name]})" in output
    assert "(apt-get install chromium)" in output
    summary = next(line for line in output.splitlines() if line.startswith("Skipped groups: "))
    assert "browser/Chromium (" in summary and "programs (" in summary, summary
