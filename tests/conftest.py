# SPDX-License-Identifier: BSD-3-Clause
"""Shared test configuration: hypothesis profiles (from the public testing kit)."""

from __future__ import annotations

import os

from hypothesis import settings

from svmgeo.testing import register_profiles

# Deterministic in CI; "thorough" on demand: HYPOTHESIS_PROFILE=thorough pytest tests/properties
register_profiles()
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci" if os.environ.get("CI") else "dev"))
