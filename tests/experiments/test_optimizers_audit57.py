# SPDX-License-Identifier: BSD-3-Clause
"""Session 57: ``optimizers.closest`` treats a missing correlation (None) as missing."""

from __future__ import annotations

import math

from svmgeo.experiments import optimizers as exp


def test_closest_treats_none_as_missing() -> None:
    """Regression: closest called math.isnan on every value, so a correlation that could not
    be computed (None, a table's empty cell, which the headline's spans count as missing)
    raised TypeError. None is skipped as NaN is."""
    assert exp.closest({"fro": None, "nuc": 0.5, "l1": 0.7}) == "l1"
    assert exp.closest({"fro": None, "nuc": math.nan}) == "none"
    # a missing value is no lower bound that could exceed the largest
    assert exp.closest({"fro": None, "nuc": 0.5}, frozenset({"fro"})) == "nuc"
    assert exp.closest({"fro": 0.4, "nuc": 0.5}, frozenset({"fro"})) == "nuc?"
