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
