# SPDX-License-Identifier: BSD-3-Clause
"""``svmgeo reproduce NAME --quick`` run in this process, and its summary table, for the
experiment test modules' module-scoped fixtures."""

from __future__ import annotations

import contextlib
import csv
import io
from pathlib import Path

import pytest

from svmgeo.cli import main


def run_quick(name: str, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """The output directory and stdout of ``svmgeo reproduce NAME --quick`` (exit code 0)."""
    out = tmp_path_factory.mktemp(f"reproduce-{name}")
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        rc = main(["reproduce", name, "--quick", "--out", str(out), "--no-progress",
                   "--workers", "0"])  # fmt: skip
    assert rc == 0, buf.getvalue()
    return out, buf.getvalue()


def quick_summary(out: Path, name: str) -> list[dict[str, str]]:
    """The rows of ``NAME-quick_summary.csv`` in ``out``."""
    with (out / f"{name}-quick_summary.csv").open() as fh:
        return list(csv.DictReader(fh))
