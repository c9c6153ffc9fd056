# SPDX-License-Identifier: BSD-3-Clause
"""Every non-solver result prints as one short line and has a readable summary()."""

from __future__ import annotations

import numpy as np
import pytest

import svmgeo as sg
from svmgeo._summary import brief

DATA = sg.random_data(20, 10, 20, seed=0)
ALPHA = sg.optimal_tokens(DATA)
SMALL = sg.random_data(3, 3, 2, seed=0)


def _results() -> dict[str, object]:
    run = sg.train(DATA, n_steps=20, backend="numpy")
    return {
        "support_tokens": sg.support_tokens(DATA, ALPHA),
        "is_locally_optimal": sg.is_locally_optimal(DATA, ALPHA),
        "locally_optimal_selections": sg.locally_optimal_selections(SMALL),
        "selected_sets": sg.selected_sets(np.full((20, 10), 0.1)),
        "train": run,
        "history": run.history,
        "train_batch": sg.train_batch([DATA, DATA], n_steps=20, backend="numpy"),
    }


@pytest.mark.parametrize(("name", "result"), list(_results().items()))
def test_repr_is_one_short_line_and_summary_names_every_field(name: str, result: object) -> None:
    text = repr(result)
    assert "\n" not in text and len(text) < 700, (name, len(text))
    assert text.startswith(type(result).__name__ + "(")
    summary = result.summary()  # type: ignore[attr-defined]
    assert isinstance(summary, str) and summary.count("\n") < 40
    # no array of hundreds of entries is written out
    assert len(summary) < 3000


def test_brief_writes_small_arrays_and_shapes_of_large_ones() -> None:
    assert brief(np.arange(3), full=True) == "[0, 1, 2]"
    assert brief(np.zeros((20, 10))) == "array(float64, shape=(20, 10))"
    assert brief("x" * 100).endswith("...'") and len(brief("x" * 100)) <= 62


def test_verify_report_summary_is_its_table() -> None:
    rep = sg.verify(sg.random_data(4, 5, 6, seed=1), n_steps=50, backend="numpy")
    assert rep.summary() == str(rep)
    assert "\n" not in repr(rep) and len(repr(rep)) < 1500
