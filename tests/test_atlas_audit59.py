# SPDX-License-Identifier: BSD-3-Clause
"""``page_differences`` on a closest SVM that round-off can swap (session 59 audit).

The evidence of ``docs/atlas.md`` has runs whose two largest correlations are 0.007 apart
(KQ spectral descent, seed 1: spectral 0.847, fro 0.840), while (K, Q) spectral descent moves
them by up to 1e-2 between machines; numbers moved within ``ATLAS_TOLERANCE`` could flip the
*closest* cell (and the first table's evidence cell), which ``svmgeo atlas --check`` read as a
difference."""

from __future__ import annotations

from typing import Any

from svmgeo import atlas
from svmgeo.experiments.optimizers import SVMS, closest

TOL = atlas.ATLAS_TOLERANCE
RUN = ("KQ", "spectral")  # a run in the atlas's evidence


def _rows(top: dict[str, float], bounds: frozenset[str] = frozenset()) -> list[dict[str, Any]]:
    """Trial rows for every evidence run, seeds 0 and 1: correlations 0.5 but ``top`` on
    ``RUN``'s seed 1 (``bounds``: its face lower bounds); closest by the experiment's rule."""
    runs = {run for c in atlas.CORRESPONDENCES for run in c.evidence}
    rows = []
    for param, optimizer in sorted(runs):
        for seed in (0, 1):
            corr = {s: 0.5 + 0.01 * k for k, s in enumerate(SVMS)}
            marked = frozenset()
            if (param, optimizer) == RUN and seed == 1:
                corr.update(top)
                marked = bounds
            row = {f"corr_{s}": v for s, v in corr.items()}
            row.update(param=param, optimizer=optimizer, seed=seed, n_steps=1000)
            cell = " ".join(s for s in SVMS if s in marked) or "none"
            row.update(closest=closest(corr, marked), face_lower_bounds=cell)
            rows.append(row)
    return rows


def _page(top: dict[str, float], bounds: frozenset[str] = frozenset()) -> str:
    return atlas.atlas_markdown(_rows(top, bounds))


def test_a_closest_swapped_within_the_tolerance_is_no_difference():
    committed = _page({"spectral": 0.847, "fro": 0.840})  # closest spectral
    moved = _page({"spectral": 0.847 - 0.009, "fro": 0.840 + 0.009})  # closest fro
    assert committed != moved  # the closest cell and the evidence cell differ
    assert atlas.page_differences(committed, moved) == []
    assert atlas.page_differences(moved, committed) == []


def test_a_closest_beyond_the_tolerance_is_a_difference():
    committed = _page({"spectral": 0.847, "fro": 0.800})
    moved = _page({"spectral": 0.847 - 0.009, "fro": 0.800 + 0.049})  # fro moved by 0.049
    lines = [d[0] for d in atlas.page_differences(committed, moved)]
    # the evidence row (its fro cell and its closest) and the first table's evidence cell
    assert len(lines) == 2
    text = "\n".join(d[2] for d in atlas.page_differences(committed, moved))
    assert "spectral: " in text and "| fro |" in text


def test_a_closest_far_from_the_largest_is_a_difference_even_with_close_numbers():
    # every number within the tolerance, but the generated closest names an SVM 0.07 below
    # the largest: not round-off.
    committed = _page({"spectral": 0.847, "fro": 0.840})
    page = committed.splitlines()
    row = next(
        k
        for k, line in enumerate(page)
        if line.startswith("| ") and "| KQ | spectral | 1 |" in line
    )
    cells = page[row].split("|")
    cells[-3] = " l1 "
    page[row] = "|".join(cells)
    assert [d[0] for d in atlas.page_differences(committed, "\n".join(page) + "\n")] == [row + 1]


def test_an_undecided_closest_swapped_within_the_tolerance_is_no_difference():
    # nuc's face correlation only a lower bound: "spectral?" (nuc's best may exceed it); moved
    # within the tolerance, nuc is the largest and decided ("nuc": its own bound only raises it)
    bounds = frozenset({"nuc"})
    committed = _page({"spectral": 0.847, "nuc": 0.840}, bounds)
    moved = _page({"spectral": 0.838, "nuc": 0.849}, bounds)
    assert "| spectral? |" in committed and "| nuc |" in moved
    assert atlas.page_differences(committed, moved) == []
    assert atlas.page_differences(moved, committed) == []
