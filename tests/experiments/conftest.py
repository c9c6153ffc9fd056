# SPDX-License-Identifier: BSD-3-Clause
"""Fixtures shared by the experiments tests."""

from __future__ import annotations

import os
from pathlib import Path

import pytest


@pytest.fixture
def unwritable_dir(tmp_path: Path) -> Path:
    """A directory this process cannot create files in (skip where there is none)."""
    if os.geteuid() != 0:
        locked = tmp_path / "locked"
        locked.mkdir(mode=0o500)
        return locked
    if Path("/sys").is_dir():  # sysfs refuses new files, even to root
        return Path("/sys")
    pytest.skip("running as root without a read-only directory")
