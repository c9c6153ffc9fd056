# SPDX-License-Identifier: BSD-3-Clause
"""``page_differences`` on marked and NaN cells (session 56 audit)."""

from __future__ import annotations

from svmgeo import atlas

TOL = atlas.ATLAS_TOLERANCE


def _row(*cells: str) -> str:
    return "| 3 | W | GD | 0 | " + " | ".join(cells) + " | fro | fro |"


def test_lower_bound_cells_compare_numerically_within_the_tolerance():
    # "0.998" vs "0.997" agree (|diff| = 0.001 <= TOL); the same pair with the lower-bound
    # mark on both sides must agree too (before: float("≥ 0.997") raised, a difference).
    assert atlas.page_differences(_row("0.998"), _row("0.997")) == []
    assert atlas.page_differences(_row("≥ 0.998"), _row("≥ 0.997")) == []
    far = f"≥ {0.5 + 2 * TOL:.3f}"
    assert [d[0] for d in atlas.page_differences(_row("≥ 0.500"), _row(far))] == [1]


def test_a_lower_bound_mark_on_one_side_only_is_a_difference():
    assert [d[0] for d in atlas.page_differences(_row("≥ 0.998"), _row("0.998"))] == [1]
    assert [d[0] for d in atlas.page_differences(_row("0.998"), _row("≥ 0.998"))] == [1]


def test_nan_equals_only_nan():
    # abs(nan - x) > atol is False for every x: a NaN cell agreed with any number before.
    assert [d[0] for d in atlas.page_differences(_row("nan"), _row("0.500"))] == [1]
    assert [d[0] for d in atlas.page_differences(_row("0.500"), _row("nan"))] == [1]
    assert [d[0] for d in atlas.page_differences(_row("≥ nan"), _row("≥ 0.500"))] == [1]
    assert atlas.page_differences(_row("nan"), _row("nan")) == []
    assert atlas.page_differences(_row("nan"), _row("NaN")) == []
