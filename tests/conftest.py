# SPDX-License-Identifier: BSD-3-Clause
"""Shared test configuration: hypothesis profiles (from the public testing kit)."""

from __future__ import annotations

import os

from hypothesis import settings

from svmgeo.testing import register_profiles

# Deterministic by default (the README's test command, CI): the same examples on every run.
# Random ones on demand: HYPOTHESIS_PROFILE=dev (25 per test) or thorough (500) pytest tests/properties
register_profiles()
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))
