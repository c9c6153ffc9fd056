# SPDX-License-Identifier: BSD-3-Clause
"""Session 52: a final selection is never guessed. Non-finite logits leave no selection
(reported, and refused by verify), a closest SVM that a face lower bound may overturn is
marked undecided, and the mirror and gensvm experiments report a tied final selection in a
``tied`` column (as variants, stability, optimizers, local, global and companion_single do)
instead of an error row."""

from __future__ import annotations

import dataclasses
import math
import types
from typing import Any

import numpy as np
import pytest

import svmgeo as sg
from svmgeo.experiments import gensvm, mirror, optimizers
from svmgeo.experiments._selection import final_selection

from .test_exp_audit51 import _as_lower_bounds

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


# --- closest with face lower bounds ---------------------------------------------------------


def test_closest_is_undecided_where_another_value_is_a_lower_bound() -> None:
    """Before: closest took no lower bounds and called fro the closest, though linf's best
    over its face (at least 0.8) may exceed 0.9."""
    corr = {"fro": 0.9, "linf": 0.8, "nuc": math.nan}
    assert optimizers.closest(corr, {"linf"}) == "fro?"
    assert optimizers.closest(corr, {"fro"}) == "fro"  # its own bound only raises it
    assert optimizers.closest(corr, frozenset()) == "fro"
    assert optimizers.closest(corr, {"nuc"}) == "fro"  # no value, nothing to exceed
    assert optimizers.closest({"fro": math.nan}, {"fro"}) == "none"


def test_optimizers_row_and_headline_mark_an_undecided_closest(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _as_lower_bounds(monkeypatch, optimizers)
    row = optimizers.trial(seed=0, param="W", optimizer="sign", n_steps=200)
    corr = {k: row[f"corr_{k}"] for k in optimizers.SVMS}
    best = max(corr, key=corr.__getitem__)
    assert row["closest"] == f"{best}?"
    headline, _ = optimizers.summarize([{"param": "W", "optimizer": "sign", "seed": 0, **row}])
    assert headline["W sign: closest, seeds 0-0"] == f"{best}?"
    undecided = "W sign: closest undecided (x?: a face lower bound may exceed x)"
    assert headline[undecided] == "seed 0"


def test_calibration_marks_an_undecided_closest_by_correlation_only(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The margin ratios are exact: closest_margin takes no mark."""
    _as_lower_bounds(monkeypatch, optimizers)
    row = optimizers.linear_trial(seed=1, optimizer="sign", n_steps=100)
    assert row["closest"].endswith("?")
    assert not row["closest_margin"].endswith("?")


# --- mirror and gensvm: a tied final selection is a row, not an error -----------------------


def _identical_tokens(n: int, T: int, d: int, seed: int) -> sg.TokenData:
    """``random_data(n, T, d, seed)`` with every token of sequence 0 the same: any W ties
    them all."""
    data = sg.random_data(n, T, d, seed=seed)
    X = np.array(data.X)
    X[0, :] = X[0, 0]
    return sg.TokenData(X, Y=data.Y, v=data.v, Z=data.Z)


def _tagged(rows: list[dict[str, Any]], **params: Any) -> list[dict[str, Any]]:
    return [dict(r, **params, part=k, n_parts=len(rows)) for k, r in enumerate(rows)]


def test_mirror_reports_a_tied_final_selection(monkeypatch: pytest.MonkeyPatch) -> None:
    """Before: verify_mirror's TieError ended the trial (an error row)."""
    tie = "sequence 0: tokens [0, 1, 2, 3, 4]"
    monkeypatch.setattr(mirror, "random_data", lambda *a, **k: _identical_tokens(4, 5, 10, 0))
    rows = mirror.trial(4, 5, 10, seed=0, p=1.5, steps="normalized", n_steps=40)
    assert len(rows) == 41 and {r["tied"] for r in rows} == {tie}
    keys = ["one_minus_corr", "sparsity_svm", *(mirror._key(q) for q in mirror.PS)]
    assert all(math.isnan(r[k]) for r in rows for k in keys)
    assert all(0.0 <= r["sparsity_W"] <= 1.0 for r in rows)  # the run is still measured
    assert rows[-1]["alpha_is_opt"] is None and rows[-1]["alpha_is_lot"] is None
    headline, _ = mirror.summarize(_tagged(rows, seed=0, p=1.5, steps="normalized"))
    tag = "normalized p=1.5"
    assert headline[f"{tag}: tied final selection (no SVM)"] == f"seed 0: {tie}"
    assert headline[f"{tag}: seeds whose final selection is not opt"] == "none"
    assert headline[f"{tag}: seeds whose closest of the 4 SVMs is W_mm_p"] == "0/1"


def test_mirror_rows_without_an_svm_have_no_closest_svm() -> None:
    """Before: a row with every 1 − corr NaN counted as closest to W_mm_1.1 (the first p)."""
    row = {"step": 0, "one_minus_corr": math.nan, "sparsity_W": 0.5, "sparsity_svm": math.nan,
           "alpha_is_opt": False, "alpha_is_lot": False, "stop": "max_steps", "tied": ""}  # fmt: skip
    row.update({mirror._key(q): math.nan for q in mirror.PS})
    headline, _ = mirror.summarize(_tagged([row], seed=0, p=1.1, steps="plain"))
    assert headline["plain p=1.1: seeds whose closest of the 4 SVMs is W_mm_p"] == "0/1"


def test_mirror_rows_of_an_older_table_are_unknown() -> None:
    rows = mirror.trial(4, 5, 10, seed=0, p=2.0, steps="normalized", n_steps=20)
    old = [{k: v for k, v in r.items() if k != "tied"} for r in rows]
    headline, _ = mirror.summarize(_tagged(old, seed=0, p=2.0, steps="normalized"))
    assert headline["tied: unknown"].startswith("1 of 1 rows lack the column")
    assert {r["tied"] for r in rows} == {""}


def test_gensvm_reports_a_tied_final_selection(monkeypatch: pytest.MonkeyPatch) -> None:
    """Before: verify's TieError ended the trial (an error row)."""
    tie = "sequence 0: tokens [0, 1, 2, 3]"
    monkeypatch.setattr(gensvm, "random_data", lambda *a, **k: _identical_tokens(3, 4, 4, 0))
    rows = gensvm.trial(3, 4, 4, seed=0, n_steps=30, n_records=3)
    assert [r["step"] for r in rows] == [0, 10, 20, 30]
    assert {r["tied"] for r in rows} == {tie}
    cells = ["one_minus_corr_eq", "one_minus_corr_dir", "one_minus_corr_svm", "gamma"]
    assert all(math.isnan(r[k]) for r in rows for k in cells)
    headline, _ = gensvm.summarize(_tagged(rows, seed=0, d=4, v_sign="ones"))
    assert headline["v=ones d=4: tied final selection (no SVM)"] == f"seed 0: {tie}"
    assert headline["v=ones d=4: Gen-SVM defined / trials"] == "0/1"


def test_gensvm_rows_of_an_older_table_are_unknown() -> None:
    rows = gensvm.trial(3, 4, 4, seed=0, n_steps=30, n_records=3)
    assert {r["tied"] for r in rows} == {""}
    old = [{k: v for k, v in r.items() if k != "tied"} for r in rows]
    headline, _ = gensvm.summarize(_tagged(old, seed=0, d=4, v_sign="ones"))
    assert headline["tied: unknown"].startswith("1 of 1 rows lack the column")


# --- session 53: a tied run is trained once (the TieError carries it) ------------------------


def test_verify_tie_error_carries_the_run() -> None:
    """Before: the TieError had no run; the experiments trained the tied run a second time."""
    data = _identical_tokens(3, 4, 4, 0)
    with pytest.raises(sg.TieError) as caught:
        sg.verify(data, n_steps=30)
    run = caught.value.run
    assert isinstance(run, sg.GDRun) and run.W is not None
    np.testing.assert_array_equal(run.W, sg.train(data, n_steps=30).W)


@pytest.mark.parametrize("experiment", ["mirror", "gensvm"])
def test_a_tied_trial_trains_once(monkeypatch: pytest.MonkeyPatch, experiment: str) -> None:
    """Before: two runs per tied trial (verify's, then train's to report it)."""
    from svmgeo.gd import _engine, _mirror

    calls = []
    for module in (_engine, _mirror):  # every run of train, train_mirror and verify ends here
        original = module.run_loop

        def counted(*a: Any, _original: Any = original, **k: Any) -> Any:
            calls.append(1)
            return _original(*a, **k)

        monkeypatch.setattr(module, "run_loop", counted)
    if experiment == "mirror":
        monkeypatch.setattr(mirror, "random_data", lambda *a, **k: _identical_tokens(4, 5, 10, 0))
        rows = mirror.trial(4, 5, 10, seed=0, p=1.5, steps="normalized", n_steps=40)
    else:
        monkeypatch.setattr(gensvm, "random_data", lambda *a, **k: _identical_tokens(3, 4, 4, 0))
        rows = gensvm.trial(3, 4, 4, seed=0, n_steps=30, n_records=3)
    assert rows[0]["tied"] and len(calls) == 1
