# SPDX-License-Identifier: BSD-3-Clause
"""Shared test configuration: hypothesis profiles and markers."""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

# Deterministic in CI; "thorough" on demand: HYPOTHESIS_PROFILE=thorough pytest tests/properties
settings.register_profile(
    "ci",
    derandomize=True,
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
    print_blob=True,
)
settings.register_profile("dev", max_examples=25, deadline=None)
settings.register_profile(
    "thorough", max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci" if os.environ.get("CI") else "dev"))
