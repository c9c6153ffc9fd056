# SPDX-License-Identifier: BSD-3-Clause
"""The examples the docs run (docs/beyond.md) run, quickly: two of them had fallen behind the
API (``run.W_history``, ``train_mirror(p=...)``) with nothing to notice it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


@pytest.mark.parametrize(
    "args",
    [
        ["ntp_graph_svm.py", "--quick", "--steps", "60", "--loss", "retrieval"],
        ["mirror_descent.py", "--quick"],
    ],
    ids=["ntp_graph_svm", "mirror_descent"],
)
def test_example_runs_and_draws_its_figure(args: list[str], tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    script, *rest = args
    out = subprocess.run(
        [sys.executable, str(EXAMPLES / script), *rest, "--out", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert out.returncode == 0, out.stderr
    figures = list(tmp_path.glob("*.png"))
    assert figures and all(f.stat().st_size > 0 for f in figures), out.stdout


def test_the_gen_svm_search_runs_and_finds_seed_8() -> None:
    """docs/verify.md §6's search on one seed: seed 8 of (2, 3, 4) counts (|O| = (2, 1)), and
    dropping the margin rows of its mixing sequence recovers GD's direction (corr > 0.9999)."""
    out = subprocess.run(
        [sys.executable, str(EXAMPLES / "gen_svm_search.py"), "--seeds", "8-8"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert out.returncode == 0, out.stderr
    rows = [line.split() for line in out.stdout.splitlines() if line.startswith("(2, 3, 4)")]
    seed8 = [r for r in rows if r[3] == "8"]
    assert len(seed8) == 1, out.stdout
    assert float(seed8[0][-2]) > 0.9999


def _run_example(*args: str) -> str:
    out = subprocess.run(
        [sys.executable, str(EXAMPLES / args[0]), *args[1:]],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert out.returncode == 0, out.stderr
    return out.stdout


def test_normalized_mirror_descent_beats_plain_at_the_same_budget() -> None:
    """docs/beyond.md's statement, quick form (seed 0, 400 steps): for every p, normalized
    steps end closer in direction to the l_p Att-SVM than plain ones."""
    stdout = _run_example("mirror_plain_vs_normalized.py", "--quick")
    rows = [line.split() for line in stdout.splitlines() if line.startswith("   0 ")]
    assert len(rows) == 4, stdout
    for _, _, normalized, plain, _ in rows:
        assert float(normalized) < float(plain), stdout


def test_normalized_ntp_fin_error_scales_with_the_step() -> None:
    """docs/beyond.md's O(eta) statement, quick form (seed 0, 3000 steps): halving the
    normalized step halves the fin error."""
    import numpy as np

    stdout = _run_example("ntp_normalized_fin_error.py", "--quick", "--etas", "0.1", "0.05")
    fin = {float(r[0]): float(r[3]) for r in (line.split() for line in stdout.splitlines())
           if len(r) == 5 and r[1] == "0"}  # fmt: skip
    assert set(fin) == {0.1, 0.05}, stdout
    np.testing.assert_allclose(fin[0.05] / fin[0.1], 0.05 / 0.1, rtol=0.05)
