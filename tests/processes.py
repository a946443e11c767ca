"""A Python script run in a fresh process with the project's settings, for tests of what a process loads
(a management command's start-up, the SDK imported on first use): the test process has loaded it all."""

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def fresh_process_says_ok(script: str, tmp_path: Path) -> None:
    """Run `script` (which prints 'ok' when its checks pass) in a new interpreter on SQLite in `tmp_path`."""
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "goldkey.settings", "GOLDKEY_VAR_DIR": str(tmp_path)}
    env.pop("DATABASE_URL", None)
    done = subprocess.run([sys.executable, "-c", script], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr[-2000:]
