# SPDX-License-Identifier: BSD-3-Clause
"""Session 51's audit of the experiments' output: what the calibration's headline calls a
theorem and what it measures, face correlations that are only lower bounds, tied final
selections (SPEC §2: reported, never broken), and rows of tables written before those
columns (unknown, not empty)."""

from __future__ import annotations

import dataclasses
import math
import types
from typing import Any

import numpy as np
import pytest

import svmgeo as sg
from svmgeo.experiments import optimizers, stability, variants
from svmgeo.selection import TIE_RTOL

from ._ties import tied_final_iterate as _tied


def test_a_tie_of_the_largest_logit_is_named_and_leaves_no_selection() -> None:
    from svmgeo.experiments._selection import final_selection  # new in session 51

    data, W = _tied()
    alpha, tied = final_selection(data, W)
    assert alpha is None and tied == "sequence 0: tokens [3, 5]"
    alpha, tied = final_selection(sg.random_data(6, 8, 10, seed=0), W)  # distinct tokens
    assert tied == "" and alpha is not None and alpha.shape == data.selection_shape


def test_the_tie_tolerance_is_svmgeos_relative_one() -> None:
    """Two logits within TIE_RTOL (relative) of each other tie, as in verify's final selection
    and optimal_tokens; ten times farther apart they do not."""
    from svmgeo.experiments._selection import final_selection  # new in session 51

    data = sg.TokenData(np.array([[[1.0, 0.0], [1.0, 0.0], [0.0, 1.0]]]), Y=[1], v=[1.0, 0.0],
                        Z=[[1.0, 0.0]])  # fmt: skip
    for gap, is_tied in ((0.5 * TIE_RTOL, True), (10 * TIE_RTOL, False)):
        X = np.array(data.X)
        X[0, 1, 0] = 1.0 - gap
        shifted = sg.TokenData(X, Y=[1], v=[1.0, 0.0], Z=[[1.0, 0.0]])
        assert (final_selection(shifted, np.eye(2))[0] is None) == is_tied


def test_variants_solves_no_att_svm_for_a_tied_selection() -> None:
    """Before: argmax picked token 3 and Att-SVM(3, ...) was solved and correlated."""
    data, W = _tied()
    sols = variants.svm_solutions(data, W)
    assert sols["fro"] is None and sols["nuc"] is None
    assert sols["linear"] is not None  # not a selection's SVM: still solved


def test_variants_trial_and_summary_name_the_tie(monkeypatch: pytest.MonkeyPatch) -> None:
    data, W = _tied()
    run = types.SimpleNamespace(W=W, history=types.SimpleNamespace(loss=np.array([0.5])))
    monkeypatch.setattr(variants, "random_data", lambda *a, **k: data)
    monkeypatch.setattr(variants, "train_map", lambda *a, **k: run)
    row = variants.trial(seed=0, attention="softmax", n_steps=10)
    assert row["tied"] == "sequence 0: tokens [3, 5]"
    assert math.isnan(row["corr_fro"]) and math.isnan(row["corr_nuc"])
    headline, summary = variants.summarize([{"attention": "softmax", "seed": 0, **row}])
    assert headline["softmax, seeds 0-0: tied final selection (no fro, nuc)"] == (
        "seed 0: sequence 0: tokens [3, 5]"
    )
    assert summary[0]["tied"] == row["tied"]


def test_stability_has_no_softmax_limit_for_a_tied_selection() -> None:
    data, W = _tied()
    assert stability.limit_direction(data, "softmax", W) is None
    assert stability.limit_direction(data, "linear", W) is not None


def _stability_rows(monkeypatch: pytest.MonkeyPatch, attention: str) -> list[dict[str, Any]]:
    """stability's trial rows for a run of ``attention`` that ends on the tied W of
    :func:`_tied` (the run itself replaced)."""
    data, W = _tied()
    steps = stability.marks(True)
    history = types.SimpleNamespace(step=np.array(steps), W=np.array([W] * len(steps)),
                                    loss=np.full(len(steps), 0.5))  # fmt: skip
    monkeypatch.setattr(stability, "random_data", lambda *a, **k: data)
    monkeypatch.setattr(stability, "train_map",
                        lambda *a, **k: types.SimpleNamespace(W=W, history=history))  # fmt: skip
    return stability.trial(seed=0, attention=attention, quick=True)


def test_stability_rows_name_the_tie(monkeypatch: pytest.MonkeyPatch) -> None:
    rows = _stability_rows(monkeypatch, "softmax")
    assert {r["tied"] for r in rows} == {"sequence 0: tokens [3, 5]"}
    assert all(math.isnan(r["corr_limit"]) for r in rows)
    tagged = [dict(r, attention="softmax", seed=0, part=k, n_parts=len(rows))
              for k, r in enumerate(rows)]  # fmt: skip
    headline, _ = stability.summarize(tagged)
    assert headline["softmax at step 2000, seeds 0-0: tied final selection"] == (
        "seed 0: sequence 0: tokens [3, 5]"
    )


def test_optimizers_solves_no_svm_for_a_tied_selection(monkeypatch: pytest.MonkeyPatch) -> None:
    data, W = _tied()
    monkeypatch.setattr(optimizers, "random_data", lambda *a, **k: data)
    monkeypatch.setattr(optimizers, "train", lambda *a, **k: types.SimpleNamespace(W=W))
    row = optimizers.trial(seed=0, param="W", optimizer="sign", n_steps=10)
    assert row["tied"] == "sequence 0: tokens [3, 5]"
    assert all(math.isnan(row[f"corr_{k}"]) for k in optimizers.SVMS)
    assert row["closest"] == "none" and row["feasible"] is None  # not "infeasible": unknown
    headline, _ = optimizers.summarize([{"param": "W", "optimizer": "sign", "seed": 0, **row}])
    assert headline["W sign: tied final selection (no SVM)"] == "seed 0: sequence 0: tokens [3, 5]"


def _as_lower_bounds(monkeypatch: pytest.MonkeyPatch, module: Any) -> None:
    """Every face alignment of ``module`` reports a lower bound (``maximum`` False), as when
    the face problem's point misses the face."""
    real = module.optimal_face_alignment

    def missed(res, direction, **kw):  # type: ignore[no-untyped-def]
        return dataclasses.replace(real(res, direction, **kw), maximum=False)

    monkeypatch.setattr(module, "optimal_face_alignment", missed)


def test_optimizers_rows_and_headline_mark_face_lower_bounds(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Before: the row had no trace of FaceAlignment.maximum, and a lower bound was printed as
    the face's best (docs/optimizers.md's 0.756, really '>= 0.687')."""
    honest = optimizers.trial(seed=0, param="W", optimizer="sign", n_steps=200)
    assert honest["face_lower_bounds"] == "none"
    _as_lower_bounds(monkeypatch, optimizers)
    row = optimizers.trial(seed=0, param="W", optimizer="sign", n_steps=200)
    faces = [k for k in optimizers.SVMS if k in optimizers.FACE_SVMS]  # nuc l1 linf spectral
    assert row["face_lower_bounds"] == " ".join(faces)
    corr = [row[f"corr_{k}"] for k in optimizers.SVMS]
    np.testing.assert_allclose(corr, [honest[f"corr_{k}"] for k in optimizers.SVMS], atol=1e-6)
    headline, summary = optimizers.summarize([{"param": "W", "optimizer": "sign", "seed": 0,
                                               **row}])  # fmt: skip
    assert summary[0]["face_lower_bounds"] == " ".join(faces)
    spans = headline["W sign: corr min-max"]
    assert f"linf ≥ {row['corr_linf']:.3f}-≥ {row['corr_linf']:.3f}" in spans
    assert f"fro {row['corr_fro']:.3f}-{row['corr_fro']:.3f}" in spans  # Frobenius: unique
    assert headline["W sign: face lower bounds (≥)"].startswith(
        f"seed 0 l1 ≥ {row['corr_l1']:.3f}; seed 0 linf ≥ {row['corr_linf']:.3f}"
    )


def test_calibration_rows_mark_face_lower_bounds(monkeypatch: pytest.MonkeyPatch) -> None:
    _as_lower_bounds(monkeypatch, optimizers)
    row = optimizers.linear_trial(seed=1, optimizer="sign", n_steps=100)
    faces = [k for k in optimizers.SVMS if k in optimizers.FACE_SVMS]
    assert row["face_lower_bounds"] == " ".join(faces)
    headline, _ = optimizers.linear_summarize([{"optimizer": "sign", "seed": 1, "n_steps": 100,
                                                **row}])  # fmt: skip
    own = next(v for k, v in headline.items() if k.startswith("sign (own linf")
               and k.endswith("own margin ratio, own corr min-max"))  # fmt: skip
    assert own.endswith(f"≥ {row['corr_linf']:.4f}-≥ {row['corr_linf']:.4f}")


def test_rows_of_an_older_table_are_unknown_not_empty() -> None:
    """A table written before the new columns (read back with read_results) summarizes,
    its marks and ties said to be unknown instead of absent."""
    row = optimizers.trial(seed=0, param="W", optimizer="gd", n_steps=50)
    old = {k: v for k, v in row.items() if k not in ("face_lower_bounds", "tied")}
    headline, _ = optimizers.summarize([{"param": "W", "optimizer": "gd", "seed": 0, **old}])
    assert headline["face_lower_bounds: unknown"].startswith("1 of 1 rows lack the column")
    assert headline["tied: unknown"].startswith("1 of 1 rows lack the column")
    assert optimizers.face_lower_bounds(old) is None
    assert optimizers.face_lower_bounds(row) == frozenset()


def _calibration_rows() -> list[dict[str, Any]]:
    """Rows of every rule of the calibration, seeds 0-1 (made-up numbers: the headline's
    wording is under test)."""
    rows = []
    for name, (_, own, _) in optimizers.LINEAR_OPTIMIZERS.items():
        for seed in (0, 1):
            row: dict[str, Any] = {"optimizer": name, "seed": seed, "n_steps": 1000, "own": own,
                                   "step": 0.1, "stop": "max_steps", "own_ratio_tenth": 0.5,
                                   "closest": own, "closest_margin": own,
                                   "face_lower_bounds": "none"}  # fmt: skip
            row.update({f"corr_{k}": 0.5 for k in optimizers.SVMS})
            row.update({f"ratio_{k}": 0.5 for k in optimizers.SVMS})
            rows.append(row)
    return rows


def test_calibration_headline_says_what_is_proved_and_what_is_measured() -> None:
    """Before: 'sign (own linf, theorem): closest by corr, seeds 0-1', a finite run's closest
    SVM tagged 'theorem'. Gunasekar et al. 2018 prove the limit of the margin (the direction
    tends to the optimal face) under their hypotheses; what step T shows is measured."""
    headline, _ = optimizers.linear_summarize(_calibration_rows())
    theorem = headline["theorem (the limit, t -> inf)"]
    for words in ("Gunasekar, Lee, Soudry, Srebro 2018", "separable rows", "exponential loss",
                  "t -> inf", "optimal face", "covers gd, steepest 1, steepest 1.5, sign, "
                  "spectral; not muon 0.9, adam, adam eps=0"):  # fmt: skip
        assert words in theorem
    assert headline["measured (below)"].startswith("the runs at step 1000: ")
    measured = [k for k in headline if "closest by" in k or "own margin ratio" in k]
    assert len(measured) == 3 * len(optimizers.LINEAR_OPTIMIZERS)
    assert all(": measured " in k for k in measured)
    assert "sign (own linf; limit: theorem): measured closest by corr, seeds 0-1" in headline
    adam = "adam (own linf; limit: outside the theorem)"
    assert f"{adam}: measured closest by corr, seeds 0-1" in headline


def test_the_max_of_a_span_is_a_lower_bound_when_any_row_is() -> None:
    """A session-51 review: with seed 0's l1 correlation 0.9 (the face's best) and seed 1's
    0.6 only a lower bound, the span read "≥ 0.600-0.900", though seed 1's true value may
    exceed 0.9; the max is now marked too."""

    def row(seed: int, l1: float, bounds: str) -> dict[str, object]:
        out: dict[str, object] = {"param": "W", "optimizer": "gd", "seed": seed,
                                  "closest": "fro", "tied": "", "face_lower_bounds": bounds}  # fmt: skip
        for k in optimizers.SVMS:
            out[f"corr_{k}"] = out[f"returned_corr_{k}"] = 0.5
        out["corr_l1"] = l1
        return out

    headline, _ = optimizers.summarize([row(0, 0.9, "none"), row(1, 0.6, "l1")])
    spans = headline["W gd: corr min-max"]
    assert "l1 ≥ 0.600-≥ 0.900" in spans, spans
    assert "fro 0.500-0.500" in spans, spans


def test_stability_names_no_tie_for_the_linear_maps(monkeypatch: pytest.MonkeyPatch) -> None:
    """A session-51 review: the linear maps' limit uses no selection, so a tie of their final
    logits leaves nothing out and is not reported."""
    rows = _stability_rows(monkeypatch, "linear")
    assert {r["tied"] for r in rows} == {""}
