# SPDX-License-Identifier: BSD-3-Clause
"""sg.study: every number of the report against an independent computation."""

from __future__ import annotations

import json
import warnings
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
    from svmgeo.selection import selection_space

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


def _one_token_data() -> sg.TokenData:
    rng = np.random.default_rng(4)
    return sg.TokenData(rng.normal(size=(3, 1, 4)), Z=rng.normal(size=(3, 4)), v=np.ones(4))


def test_one_token_per_sequence_has_an_unbounded_margin_not_a_zero_division(tmp_path: Path):
    # issue 21: T = 1 (no constraint rows, W^mm = 0) raised ZeroDivisionError
    data = _one_token_data()
    res = sg.att_svm(data, sg.optimal_tokens(data))
    np.testing.assert_array_equal(res.W, np.zeros((4, 4)))  # the certified zero solution
    for W in (None, np.eye(4)):
        rep = sg.study(data, W=W, progress=False)
        assert rep.feasible is True and rep.margin == np.inf
        assert rep.rank_fro == 0 and rep.rank_nuc == 0
        assert rep.lots["count"] == 1 and rep.lots["exact"]
        assert any("no constraint rows" in n for n in rep.notes)
        if W is not None:
            t = rep.trained
            assert t is not None and t["is_optimal"] and t["is_lot"]
            assert t["corr_fro"] is None and t["corr_nuc"] is None  # no direction to compare
        loaded = json.loads(rep.to_json(tmp_path / "s.json").read_text())
        assert loaded["margin"] is None  # JSON has no inf
        names = sorted(p.name for p in rep.figures(tmp_path / "fig"))
        assert "margins.png" not in names  # no rows, no margins to plot


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"K": np.ones((5, 2)), "Q": np.ones((5, 3))}, r"Q must have shape \(5, 2\)"),
        ({"K": np.ones((4, 2)), "Q": np.ones((4, 2))}, r"K must have shape \(5, \?\)"),
        ({"K": np.ones(5), "Q": np.ones(5)}, "K must be a 2-D array"),
        ({"K": np.full((5, 2), 1e200), "Q": np.full((5, 2), 1e200)}, "K Q\\^T overflows"),
        ({"K": np.ones((5, 2)), "Q": np.full((5, 2), np.nan)}, "Q must be finite"),
    ],
    ids=["KQ-widths", "KQ-d", "KQ-1d", "KQ-overflow", "Q-nan"],
)
def test_bad_factors_are_clear_errors(kwargs: dict[str, object], match: str) -> None:
    # issue 21: K and Q of different widths raised numpy's matmul error
    with pytest.raises(sg.ProblemError, match=match):
        sg.study(sg.random_data(3, 4, 5, seed=1), progress=False, **kwargs)  # type: ignore[arg-type]


def test_trained_logits_that_overflow_are_a_clear_error() -> None:
    X = 1.0 + 0.1 * np.random.default_rng(2).normal(size=(3, 4, 5))  # x^T 1 z = about 25
    data = sg.TokenData(X, Z=np.ones((3, 5)), v=np.arange(5.0))
    with pytest.raises(sg.ProblemError, match="logits x\\^T W z of the trained W overflow"):
        sg.study(data, W=np.full((5, 5), 1e308), progress=False)


def test_factors_give_the_same_report_as_their_product() -> None:
    data = sg.random_data(3, 4, 5, seed=1)
    rng = np.random.default_rng(0)
    K, Q = rng.normal(size=(5, 2)), rng.normal(size=(5, 2))
    a = sg.study(data, K=K, Q=Q, progress=False).to_dict()
    b = sg.study(data, W=K @ Q.T, progress=False).to_dict()
    a.pop("timings"), b.pop("timings")
    assert a == b


def test_tied_trained_logits_are_noted() -> None:
    data = sg.random_data(3, 4, 5, seed=1)
    rep = sg.study(data, W=np.zeros((5, 5)), progress=False)  # every logit 0: all tied
    assert rep.trained is not None and rep.trained["selection"] is None  # no selection
    assert rep.trained["corr_fro"] is None  # W = 0 has no direction
    assert any("ties the top logits of 3 of 3 queries" in n for n in rep.notes)


@pytest.mark.filterwarnings("ignore::svmgeo.InaccurateSolutionWarning")  # the LOT test's SVMs
def test_trained_logits_a_rounding_apart_are_tied() -> None:
    # token 1 is token 0 scaled by 1 + 2e-16: their logits under W differ by rounding alone,
    # in either direction, so the selection among them is no decision of W's (the rule of
    # largest_logits / verify: equal up to 1e-12 times the sizes of their terms is a tie)
    rng = np.random.default_rng(1)
    X, Z = rng.standard_normal((3, 4, 8)), rng.standard_normal((3, 8))
    X[:, 1] = X[:, 0] * (1 + 2e-16)
    W = sum(np.outer(X[i, 0], Z[i]) for i in range(3))
    logits = np.einsum("ntd,de,ne->nt", X, W, Z)
    assert np.all(logits[:, :2].max(axis=1) == logits.max(axis=1))  # tokens 0, 1 on top
    np.testing.assert_allclose(logits[:, 1], logits[:, 0], rtol=1e-14)
    assert np.any(logits[:, 1] > logits[:, 0])  # a plain argmax would pick token 1 somewhere
    data = sg.TokenData(X, Z=Z, v=rng.standard_normal(8))
    rep = sg.study(data, W=W, max_lot_selections=1, progress=False)
    assert rep.trained is not None and rep.trained["selection"] is None  # tied: no selection
    assert rep.trained["tied"] == [f"sequence {i}: tokens [0, 1]" for i in range(3)]
    assert any("ties the top logits of 3 of 3 queries" in n for n in rep.notes), rep.notes


# -- issue 24: the write-up's three claims, measured ------------------------------------------


def _softmax_np(data: sg.TokenData, W: np.ndarray) -> np.ndarray:
    """(n, K, T) softmax of x^T W z over the visible keys, computed here from scratch."""
    logits = np.einsum("ntd,de,nke->nkt", data.X, W, data.queries)
    logits = np.where(data.visible, logits, -np.inf)
    e = np.exp(logits - logits.max(axis=2, keepdims=True))
    return e / e.sum(axis=2, keepdims=True)


@pytest.mark.parametrize("scale", [1.0, 30.0])
def test_measurements_match_an_independent_numpy_computation(scale: float) -> None:
    data = sg.random_data(3, 4, 5, seed=1)
    opt = sg.optimal_tokens(data)
    W = scale * sgt.oracle_att_svm(data, opt, "fro").W
    rep = sg.study(data, W=W, prune_threshold=0.05, progress=False)
    s = _softmax_np(data, W)
    # (a) top-k mass
    assert rep.sparsity is not None and "not a theorem" in rep.sparsity["status"]
    for k in (1, 2, 3):
        expected = np.array([[sorted(q, reverse=True)[:k] for q in seq] for seq in s]).sum(axis=2)
        np.testing.assert_allclose(rep.sparsity[f"top{k}"], expected, rtol=1e-12, atol=1e-15)
    # (b) ranks and singular-value profiles against the SVMs of W's selection (= opt here)
    sp = rep.spectrum
    assert sp is not None and "not a theorem" in sp["status"]
    for key, M in (
        ("W", W),
        ("fro", sgt.oracle_att_svm(data, opt, "fro").W),
        ("nuc", sgt.oracle_att_svm(data, opt, "nuc").W),
    ):
        sv = np.linalg.svd(M, compute_uv=False)
        assert sp[key]["rank"] == int(np.sum(sv > 1e-6 * sv[0])), key
        np.testing.assert_allclose(sp[key]["profile"], sv / sv[0], atol=1e-5)
    # (c) pruning the non-support tokens: keep alpha and the tokens of margin 1
    p = rep.pruning
    assert p is not None and "not a theorem" in p["status"]
    Wmm = sgt.oracle_att_svm(data, opt, "fro").W
    xa = data.X[np.arange(3), opt]
    margin = np.einsum("ntd,de,ne->nt", xa[:, None] - data.X, Wmm, data.Z)
    keep = np.isclose(margin, 1.0, atol=1e-5)
    keep[np.arange(3), opt] = True
    gamma = data.Y[:, None] * (data.X @ data.v)
    for name, kept in (("support", keep), ("mass", s[:, 0] >= 0.05)):
        kept = kept.copy()
        kept[np.arange(3), opt] = True
        s0 = s[:, 0]
        sk = np.where(kept, s0, 0.0)
        sk = sk / sk.sum(axis=1, keepdims=True)
        d_out = np.linalg.norm(np.einsum("nt,ntd->nd", s0 - sk, data.X), axis=1)
        d_pred = np.abs(((s0 - sk) * gamma).sum(axis=1))
        got = p[name]
        assert got["kept"] == kept.sum(axis=1, keepdims=True).tolist()
        np.testing.assert_allclose(np.ravel(got["output_change"]), d_out, atol=1e-12)
        np.testing.assert_allclose(np.ravel(got["prediction_change"]), d_pred, atol=1e-12)
        np.testing.assert_allclose(np.ravel(got["dropped_mass"]), (s0 * ~kept).sum(axis=1))
        # the claimed bounds hold (up to round-off)
        assert np.all(np.ravel(got["output_change"]) <= np.ravel(got["output_bound"]) + 1e-12)
        assert np.all(
            np.ravel(got["prediction_change"]) <= np.ravel(got["prediction_bound"]) + 1e-12
        )
        np.testing.assert_allclose(got["per_sequence"]["output_change"], d_out, atol=1e-12)
    np.testing.assert_allclose(p["radius"], sg.robustness_radius(data, W, svm=False).radius)
    assert "not pruning" in p["radius_bounds"]
    md = rep.to_markdown()
    assert "Measurements (not theorems)" in md and "measured pruning of non-support" in md


def test_pruning_non_support_tokens_at_a_saturated_W_changes_nothing_measurable() -> None:
    data = sg.random_data(4, 5, 6, seed=3)
    opt = sg.optimal_tokens(data)
    Wmm = sgt.oracle_att_svm(data, opt, "fro").W
    changes = []
    for scale in (2.0, 8.0, 32.0):
        p = sg.study(data, W=scale * Wmm, progress=False).pruning
        assert p is not None and p["support"] is not None
        bound = np.asarray(p["support"]["output_bound"])
        change = np.asarray(p["support"]["output_change"])
        assert np.all(change <= bound + 1e-12)
        changes.append(change.max())
    # non-support tokens have margin > 1: their mass, hence the change, vanishes with the scale
    assert changes[0] > changes[1] >= changes[2]
    assert changes[2] <= 1e-12  # round-off: the dropped mass is exp(-32 * (margin - 1))-small


def test_measurements_for_several_queries_and_self_attention() -> None:
    data = sg.random_data(3, 4, 6, n_queries=2, seed=0)
    rng = np.random.default_rng(1)
    W = rng.normal(size=(6, 6))
    rep = sg.study(data, W=W, progress=False)
    assert rep.sparsity is not None and np.shape(rep.sparsity["top1"]) == (3, 2)
    s = _softmax_np(data, W)
    np.testing.assert_allclose(rep.sparsity["top1"], s.max(axis=2), rtol=1e-12)
    assert rep.pruning is not None and np.shape(rep.pruning["mass"]["output_change"]) == (3, 2)
    assert len(rep.pruning["mass"]["per_sequence"]["output_change"]) == 3
    X = np.random.default_rng(2).normal(size=(3, 4, 5))
    self_data = sg.TokenData(X, query=0, v=np.ones(5))
    rep = sg.study(self_data, W=np.eye(5), progress=False)
    assert rep.pruning is not None and rep.pruning["radius"] is None
    assert "self-attention" in rep.pruning["radius_bounds"]


def test_without_trained_weights_there_is_nothing_to_measure() -> None:
    rep = sg.study(sg.random_data(3, 4, 5, seed=1), progress=False)
    assert rep.sparsity is None and rep.spectrum is None and rep.pruning is None
    assert "Measurements" not in rep.to_markdown()


@pytest.mark.parametrize("bad", [-0.1, 1.5, "x", float("nan")])
def test_bad_prune_threshold_is_a_clear_error(bad: object) -> None:
    with pytest.raises(sg.ProblemError, match="'prune_threshold' parameter of study"):
        sg.study(sg.random_data(3, 4, 5, seed=1), W=np.eye(5), prune_threshold=bad, progress=False)  # type: ignore[arg-type]


def test_an_undecided_feasibility_is_no_verdict() -> None:
    """Tokens collinear up to rounding (products s_t b, each rounded): the check ends
    INFEASIBLE_INACCURATE (undecided). study said feasible=False with no note, and called its
    LOT count inexact only by a work counter."""
    rng = np.random.default_rng(0)
    X = rng.standard_normal((3, 4, 1)) * rng.standard_normal(4)
    scores = np.array([[1.0, 0.0, -1.0, -2.0]] * 3)
    data = sg.TokenData(X, Z=rng.standard_normal((3, 4)), scores=scores)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", sg.InaccurateSolutionWarning)
        feas = sg.feasibility(data, sg.optimal_tokens(data))
        rep = sg.study(data, progress=False)
    assert feas.status is sg.Status.INFEASIBLE_INACCURATE  # the case itself
    assert rep.feasible is None and rep.status == "infeasible_inaccurate"
    assert any("feasibility of Att-SVM(opt) undecided" in note for note in rep.notes)
    assert rep.lots["exact"] is False and "not exact" in rep.summary()


def test_pruning_at_threshold_zero_keeps_only_visible_keys() -> None:
    """Hidden keys have attention exactly 0, which passed a threshold of 0: a query that sees
    one key was reported keeping all four."""
    rng = np.random.default_rng(0)
    X = rng.standard_normal((2, 4, 8))
    data = sg.TokenData(X, query="all", mask="causal", v=rng.standard_normal(8), Y=np.ones((2, 4)))
    rep = sg.study(data, rng.standard_normal((8, 8)) * 3, progress=False, prune_threshold=0.0)
    np.testing.assert_array_equal(rep.pruning["mass"]["kept"], data.visible.sum(axis=2))


def test_a_ragged_w_is_a_problem_error() -> None:
    with pytest.raises(sg.ProblemError, match="study: W must be a real array of shape"):
        sg.study(sg.random_data(3, 3, 4, seed=0), [[1.0, 2.0], [3.0]], progress=False)


def test_an_infeasible_dataset_within_theorem_1s_sizes_is_named_an_exception() -> None:
    # Theorem 1 (arXiv:2308.16898) holds for almost every dataset: a zero query makes
    # Att-SVM(opt) infeasible at any d, and the summary must not leave "condition: True"
    # beside "infeasible" unexplained
    d0 = sg.random_data(2, 3, 5, seed=0)
    Z = np.array(d0.Z, dtype=float)
    Z[0] = 0.0
    rep = sg.study(sg.TokenData(d0.X, Y=d0.Y, Z=Z, v=d0.v))
    assert rep.theorem1["holds"] and rep.status == "infeasible"
    assert any("one of its exceptions" in note for note in rep.notes)
    assert "one of its exceptions" in rep.summary()


def test_an_unsettled_svm_of_the_trained_selection_is_noted_not_called_infeasible(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A trained selection whose Att-SVM solve ends undecided (infeasible_inaccurate, no W) was
    noted "is infeasible: it is not a LOT", a verdict no proof backed; an inaccurate nuclear
    solve was not noted at all. The solves are replaced by undecided ones here (float data
    whose W selects a token make the real solve feasible)."""
    import dataclasses
    import importlib

    study_module = importlib.import_module("svmgeo.study")  # sg.study is the function

    data = sg.random_data(3, 4, 5, seed=1)
    opt = sg.optimal_tokens(data)
    W = 3.0 * sg.att_svm(data, opt).W  # selects opt
    real = study_module.att_svm

    def undecided(*args: object, **kwargs: object) -> object:
        res = real(*args, **kwargs)  # type: ignore[arg-type]
        return dataclasses.replace(
            res, W=None, status=sg.Status.INFEASIBLE_INACCURATE, message="undecided (test)"
        )

    monkeypatch.setattr(study_module, "att_svm", undecided)
    rep = sg.study(data, W, progress=False)
    assert rep.trained is not None and rep.trained["selection"] == list(opt)
    assert not any("not a LOT" in note for note in rep.notes)
    expected = "Att-SVM of the trained selection: infeasible_inaccurate: undecided (test)"
    assert expected in rep.notes
    assert "Att-SVM(opt): infeasible_inaccurate: undecided (test)" in rep.notes


def test_the_markdown_report_words_an_lot_count_over_the_cap_as_the_summary_does() -> None:
    """to_markdown printed '| LOTs | None of 256 (not enumerated: over the cap 2) |'."""
    rep = sg.study(sg.random_data(4, 4, 6, seed=1), max_lot_selections=2, progress=False)
    line = next(row for row in rep.to_markdown().splitlines() if row.startswith("| LOTs |"))
    assert "None" not in line and "not enumerated (256 selections > cap 2)" in line
    assert "LOTs: not enumerated (256 selections > cap 2)" in rep.summary()
