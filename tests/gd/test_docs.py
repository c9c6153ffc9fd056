# SPDX-License-Identifier: BSD-3-Clause
"""The doctest examples of docs/gd.md (values, param="p", train_head, normalize_eps) run."""

from __future__ import annotations

import doctest
from pathlib import Path

DOC = Path(__file__).resolve().parents[2] / "docs" / "gd.md"


def test_gd_doc_examples() -> None:
    result = doctest.testfile(
        str(DOC), module_relative=False, optionflags=doctest.NORMALIZE_WHITESPACE
    )
    assert result.attempted >= 15 and result.failed == 0, result
