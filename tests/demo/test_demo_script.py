"""`make demo`'s script (scripts/demo.sh), run as a process: what it refuses before it starts anything."""

import subprocess

import pytest
from django.conf import settings

SCRIPT = settings.BASE_DIR / "scripts" / "demo.sh"


def _run(tmp_path, *, py_exit: int, **ports: str):
    """The script with PY a program that leaves a mark and exits with `py_exit`, so that nothing starts:
    returns the process and whether PY ran (migrate, the demo data and the servers all go through it)."""
    marker = tmp_path / "ran"
    py = tmp_path / "py"
    py.write_text(f"#!/bin/sh\ntouch {marker}\nexit {py_exit}\n")
    py.chmod(0o755)
    env = {"PATH": "/usr/bin:/bin", "PY": str(py), "GOLDKEY_VAR_DIR": str(tmp_path / "var"), **ports}
    done = subprocess.run(["bash", str(SCRIPT)], env=env, capture_output=True, text=True, timeout=30)
    return done, marker.exists()


@pytest.mark.programs("bash")
def test_one_port_for_the_web_server_and_the_llm_server_is_refused_before_anything_runs(tmp_path):
    done, ran = _run(tmp_path, py_exit=0, PORT="8765")
    assert done.returncode == 2
    assert "PORT and LLM_PORT are both 8765" in done.stderr
    assert not ran
    assert not (tmp_path / "var").exists()


@pytest.mark.programs("bash")
def test_two_different_ports_get_past_the_check(tmp_path):
    done, ran = _run(tmp_path, py_exit=3, PORT="8765", LLM_PORT="8766")
    assert done.returncode == 3
    assert "LLM_PORT" not in done.stderr
    assert ran
