# SPDX-License-Identifier: BSD-3-Clause
"""sg.study: every number of the report against an independent computation."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from analysis._oracle import brute_force_lots

import svmgeo as sg
import svmgeo.testing as sgt


def test_report_matches_independent_checks(tmp_path: Path) -> None:
    data = sg.random_data(3, 4, 5, seed=1)
    opt = sg.optimal_tokens(data)
    fro = sgt.oracle_att_svm(data, opt, "fro")
    W_star = fro.W
    rep = sg.study(data, W=7.0 * W_star, progress=False)
    assert rep.feasible is True and rep.opt == opt.tolist()
    assert rep.theorem1["holds"] == (data.d >= max(data.T - 1, data.n))
    np.testing.assert_allclose(rep.margin, 1.0 / fro.objective, rtol=1e-6)
    assert rep.rank_fro == sgt.numerical_rank(W_star, rtol=1e-6)
    nuc = sgt.oracle_att_svm(data, opt, "nuc")
    assert rep.rank_nuc == sgt.numerical_rank(nuc.W, rtol=1e-6)
    lots, _ = brute_force_lots(data)
    assert rep.lots["exact"] and rep.lots["count"] == len(lots)
    assert rep.lots["space"] == data.T**data.n
    # support tokens: margin 1 under the oracle's W
    m = np.einsum("ntd,de,ne->nt", data.X[np.arange(3), opt][:, None] - data.X, W_star, data.Z)
    expected = np.isclose(m, 1.0, atol=1e-5)
    expected[np.arange(3), opt] = False
    np.testing.assert_array_equal(np.asarray(rep.support), expected)
    t = rep.trained
    assert t is not None and t["is_optimal"] and t["is_lot"]
    np.testing.assert_allclose(t["corr_fro"], 1.0, atol=1e-6)
    # files
    md = rep.to_markdown(tmp_path / "s.md")
    assert "Theorem 1 condition" in md and (tmp_path / "s.md").read_text() == md
    loaded = json.loads((rep.to_json(tmp_path / "s.json")).read_text())
    assert loaded["lots"]["count"] == len(lots) and "_attention" not in loaded
    names = sorted(p.name for p in rep.figures(tmp_path / "fig"))
    assert names == ["attention.png", "margins.png"]
    assert "Att-SVM(opt): optimal" in rep.summary() and len(repr(rep)) < 200


def test_caps_ties_and_infeasible_are_reported() -> None:
    data = sg.random_data(6, 5, 3, seed=0)
    rep = sg.study(data, max_lot_selections=10, progress=False)
    assert rep.lots["count"] is None and rep.lots["space"] == 5**6 and not rep.lots["exact"]
    assert "not enumerated" in rep.summary()
    from svmgeo.study import selection_space

    assert selection_space(sg.random_data(400, 8, 4, seed=0)) == 8**400  # exact, beyond floats
    X = np.array(data.X)
    X[:, 1] = X[:, 0]  # token 1 duplicates token 0 in every sequence
    tied = sg.TokenData(X, Z=data.Z, v=data.v)
    v = np.asarray(data.v)
    if np.any((X[:, 0] @ v) >= (X @ v).max(axis=1) - 1e-12):  # the duplicate may be the best
        rep = sg.study(tied, max_lot_selections=10, progress=False)
        assert rep.opt is None and rep.feasible is None and any("tie" in n for n in rep.notes)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"W": np.ones((3, 3))}, r"shape \(d, d\) = \(5, 5\)"),
        ({"W": np.ones((5, 5)), "K": np.ones((5, 2))}, "either W or both K and Q"),
        ({"K": np.ones((5, 2))}, "K and Q go together"),
        ({"W": np.full((5, 5), np.nan)}, "NaN"),
    ],
)
def test_bad_weights_are_clear_errors(kwargs: dict[str, object], match: str) -> None:
    with pytest.raises(sg.ProblemError, match=match):
        sg.study(sg.random_data(3, 4, 5, seed=1), progress=False, **kwargs)  # type: ignore[arg-type]
