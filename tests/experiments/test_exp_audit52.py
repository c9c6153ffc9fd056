# SPDX-License-Identifier: BSD-3-Clause
"""Session 52: a final selection is never guessed. Non-finite logits leave no selection
(reported, and refused by verify)."""

from __future__ import annotations

import dataclasses
import math
import types
from typing import Any

import numpy as np
import pytest

import svmgeo as sg
from svmgeo.experiments import optimizers
from svmgeo.experiments._selection import final_selection

ALL_NON_FINITE = "; ".join(f"sequence {i}: non-finite logits" for i in range(3))


@pytest.mark.parametrize(
    "theta",
    [
        np.full((5, 5), np.nan),
        np.diag([np.inf, 1.0, 1.0, 1.0, 1.0]),
        np.full((5, 5), -np.inf),
        np.full(5, np.nan),  # a prompt vector p
    ],
    ids=["W NaN", "W inf", "W -inf", "p NaN"],
)
def test_non_finite_parameters_select_nothing(theta: np.ndarray) -> None:
    """Before: alpha was an argmax over NaN (token 0 of every query) or over inf, and no
    query was named."""
    data = sg.random_data(3, 4, 5, seed=0)
    alpha, reason = final_selection(data, theta)
    assert alpha is None
    assert reason == ALL_NON_FINITE


def test_logits_that_overflow_are_named_per_query() -> None:
    """A finite W whose logits overflow float64 on sequence 1 only: that query is named, the
    others are not, and there is no selection. Before: the +inf logit was taken as the
    largest (a selection, nothing named)."""
    data = sg.random_data(3, 4, 5, seed=0)
    X = np.array(data.X)
    X[1] *= 1e150
    big = sg.TokenData(X, Y=data.Y, v=data.v, Z=data.Z)
    W = 1e160 * np.eye(5)
    with np.errstate(over="ignore"):
        assert not np.all(np.isfinite(np.einsum("td,de,e->t", X[1], W, np.asarray(data.Z)[1])))
    alpha, reason = final_selection(big, W)
    assert alpha is None and reason == "sequence 1: non-finite logits"
    alpha, reason = final_selection(big, 1e-160 * W)  # the same logits, 1e-160 smaller
    assert reason == "" and alpha is not None


def test_non_finite_and_tied_queries_are_both_named() -> None:
    from ._ties import tied_final_iterate

    data, W = tied_final_iterate()
    X = np.array(data.X)
    X[2] *= 1e150
    W = W * 1e160 / np.abs(W).max()
    both = sg.TokenData(X, Y=data.Y, v=data.v, Z=data.Z)
    alpha, reason = final_selection(both, W)
    assert alpha is None
    assert reason == "sequence 2: non-finite logits; sequence 0: tokens [3, 5]"


def _with_final(run: Any, final: np.ndarray) -> Any:
    """``run`` ending on ``final`` (its recorded iterates unchanged)."""
    return dataclasses.replace(run, W=final)


def test_verify_refuses_non_finite_final_logits(monkeypatch: pytest.MonkeyPatch) -> None:
    """Before: verify read the argmax of NaN logits (token 0 of every query) as GD's
    selection and judged, solved and compared it."""
    from svmgeo.verify import _runs

    real = _runs.train
    monkeypatch.setattr(
        _runs, "train", lambda *a, **k: _with_final(real(*a, **k), np.full((5, 5), np.nan))
    )
    with pytest.raises(sg.ProblemError, match="non-finite logits") as info:
        sg.verify(sg.random_data(3, 4, 5, seed=0), n_steps=5, backend="numpy")
    assert not isinstance(info.value, sg.TieError)  # not a tie: no token is the largest
    assert "for 3 queries: sequence 0: non-finite logits" in str(info.value)


def test_verify_mirror_refuses_non_finite_final_logits(monkeypatch: pytest.MonkeyPatch) -> None:
    from svmgeo.verify import _runs

    real = _runs.run_mirror_descent
    W = np.diag([np.inf, 1.0, 1.0, 1.0, 1.0])
    monkeypatch.setattr(_runs, "run_mirror_descent", lambda *a, **k: _with_final(real(*a, **k), W))
    with pytest.raises(sg.ProblemError, match="non-finite logits"):
        sg.verify_mirror(sg.random_data(3, 4, 5, seed=0), exponent=1.5, n_steps=5,
                         backend="numpy")  # fmt: skip


def test_optimizers_row_names_non_finite_logits(monkeypatch: pytest.MonkeyPatch) -> None:
    """A finite W whose logits overflow: no selection, every SVM NaN, the query named."""
    data = sg.random_data(6, 8, 10, seed=0)
    X = np.array(data.X)
    X[4] *= 1e150
    big = sg.TokenData(X, Y=data.Y, v=data.v, Z=data.Z)
    monkeypatch.setattr(optimizers, "random_data", lambda *a, **k: big)
    monkeypatch.setattr(optimizers, "train",
                        lambda *a, **k: types.SimpleNamespace(W=1e160 * np.eye(10)))  # fmt: skip
    row = optimizers.trial(seed=0, param="W", optimizer="gd", n_steps=10)
    assert row["tied"] == "sequence 4: non-finite logits"
    assert all(math.isnan(row[f"corr_{k}"]) for k in optimizers.SVMS)
    assert row["closest"] == "none" and row["feasible"] is None
