"""The agreement figures a sealed release records are the same floats on every machine: computed here
and in a process whose NumPy and BLAS take other CPU kernels (no AVX2, OpenBLAS's oldest x86-64
kernel), every figure has the same repr — the last bits included, which a BLAS dot product had let the
CPU decide (goldkey/lib/statistics.py, _REPRODUCIBLE)."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

FIGURES = r"""
import json, random
from goldkey.lib import statistics as s
rng = random.Random(11)
labels = ["contradicts", "consistent", "cannot-tell"]
a = [rng.choice(labels) for _ in range(997)]
b = [x if rng.random() < 0.7 else rng.choice(labels) for x in a]
c = [x if rng.random() < 0.6 else rng.choice(labels) for x in a]
figures = {
    "kappa": s.cohen_kappa(a, b), "se": s.kappa_se(a, b), "ci": s.kappa_ci_analytic(a, b),
    "boot": s.kappa_ci_bootstrap(a, b), "ac1": s.gwet_ac1(a, b), "pabak": s.pabak(a, b),
    "per_category": s.per_category_agreement(a, b), "summary": s.kappa_summary(a, b),
    "fleiss": s.fleiss_summary(list(zip(a, b, c)), replicates=500, seed=3),
    "alpha": s.krippendorff_alpha_summary([a, b, c]),
}
print(json.dumps(s.json_safe(figures), sort_keys=True))
"""


def _figures(env: dict) -> str:
    done = subprocess.run([sys.executable, "-c", FIGURES], cwd=ROOT, env=env, capture_output=True, text=True, check=True)
    return done.stdout


def _other_kernels() -> dict:
    from numpy._core._multiarray_umath import __cpu_features__ as features

    env = {**os.environ, "OPENBLAS_CORETYPE": "Prescott"}  # OpenBLAS's SSE3 kernels, whatever the CPU has
    if features.get("X86_V3"):
        env["NPY_DISABLE_CPU_FEATURES"] = "X86_V3"  # NumPy's own AVX2 loops off too
    return env


@pytest.mark.skipif(os.uname().machine != "x86_64", reason="x86-64 only: the other kernels named here are x86's")
def test_the_figures_do_not_depend_on_the_cpus_kernels():
    here = _figures(dict(os.environ))
    elsewhere = _figures(_other_kernels())
    assert json.loads(here)["kappa"] == pytest.approx(0.5, abs=0.5)  # real figures, not an error
    assert here == elsewhere
