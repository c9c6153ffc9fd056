# SPDX-License-Identifier: BSD-3-Clause
"""Gen-SVM and selected sets: hand-derived cases, reduction to Att-SVM, bad input."""

from __future__ import annotations

import math

import numpy as np
import pytest

import svmgeo as sg
from svmgeo.testing import assert_farkas

from ._cases import E1

# One sequence, z = e_1, u = W e_1. Tokens x_0 = (1, 0), x_1 = (0, 1), x_2 = (−1, −1).
# O = {0, 1}, Ō = {2}: equality (x_0 − x_1)·u = 0 ⇒ u_0 = u_1 = c; margins (2, 1)·u ≥ 1 and
# (1, 2)·u ≥ 1 ⇒ 3c ≥ 1 ⇒ W_dir = u e_1ᵀ with u = (1/3, 1/3).
PAIR_X = np.array([[[1.0, 0.0], [0.0, 1.0], [-1.0, -1.0]]])
PAIR_O = np.array([[True, True, False]])


def _pair_data() -> sg.TokenData:
    return sg.TokenData(PAIR_X, Z=E1, v=np.ones(2))


def test_directional_component_by_hand() -> None:
    gen = sg.gen_svm(_pair_data(), PAIR_O)
    assert gen.feasible and gen.farkas is None
    np.testing.assert_allclose(gen.W_dir, [[1 / 3, 0.0], [1 / 3, 0.0]], atol=1e-10)
    np.testing.assert_array_equal(gen.masked, [[False, False, True]])
    assert gen.W_fin is None and gen.R is None and gen.W_eq is None and gen.gamma is None


def test_finite_component_r_and_gamma_by_hand() -> None:
    # W_fin: (x_0 − x_1)·u = u_0 − u_1 = log(s_0/s_1), min ‖u‖ ⇒ u = (ℓ/2, −ℓ/2), ℓ = log(5/3).
    # fit_to = W_fin + 3 W_dir + E with ⟨E, W_dir⟩ = 0 ⇒ R = 3. Γ = s_2 = 0.2.
    s = np.array([[0.5, 0.3, 0.2]])
    ell = math.log(0.5 / 0.3)
    W_fin = np.array([[ell / 2, 0.0], [-ell / 2, 0.0]])
    W_dir = np.array([[1 / 3, 0.0], [1 / 3, 0.0]])
    E = np.array([[0.0, 1.0], [0.0, 0.0]])
    gen = sg.gen_svm(_pair_data(), PAIR_O, probs=s, fit_to=W_fin + 3.0 * W_dir + E)
    np.testing.assert_allclose(gen.W_fin, W_fin, atol=1e-10)
    assert gen.R == pytest.approx(3.0, rel=1e-9)
    np.testing.assert_allclose(gen.W_eq, W_fin + 3.0 * W_dir, atol=1e-9)
    assert gen.gamma == pytest.approx(0.2)
    F = W_fin + 3.0 * W_dir + E
    expected_corr = np.vdot(gen.W_eq, F) / (np.linalg.norm(gen.W_eq) * np.linalg.norm(F))
    assert gen.fit_correlation == pytest.approx(expected_corr, rel=1e-12)
    # a fit_to pointing against W_dir clips R at 0
    clipped = sg.gen_svm(_pair_data(), PAIR_O, probs=s, fit_to=W_fin - 5.0 * W_dir)
    assert clipped.R == 0.0
    np.testing.assert_allclose(clipped.W_eq, clipped.W_fin, atol=0)


@pytest.mark.parametrize(
    "data",
    [
        sg.random_data(4, 5, 6, seed=0),
        sg.random_data(3, 4, 6, seed=1, query=0),
        sg.random_data(3, 4, 6, seed=2, query="all", mask="causal"),
    ],
    ids=["cross", "self", "causal"],
)
def test_singleton_selected_sets_equal_att_svm(data: sg.TokenData) -> None:
    alpha = sg.optimal_tokens(data)
    full = np.zeros((data.n, data.K, data.T), dtype=bool)
    np.put_along_axis(full, alpha.reshape(data.n, data.K, 1), True, axis=2)
    selected = full[:, 0] if data.single_query else full
    gen = sg.gen_svm(data, selected)
    ref = sg.att_svm(data, alpha)
    np.testing.assert_allclose(gen.W_dir, ref.W, atol=1e-8)
    cs_gen = sg.selected_set_constraints(data, selected)
    cs_att = sg.att_svm_constraints(data, alpha)
    np.testing.assert_array_equal(cs_gen.A, cs_att.A)
    np.testing.assert_array_equal(cs_gen.B, cs_att.B)
    assert cs_gen.n_margin == cs_gen.N


def test_equalities_hold_inside_every_selected_set() -> None:
    data = sg.random_data(3, 5, 8, seed=4)
    O = np.zeros((3, 5), dtype=bool)
    O[0, [0, 2, 3]] = O[1, [1, 4]] = O[2, [2]] = True
    gen = sg.gen_svm(data, O)
    logits = np.einsum("itd,de,ie->it", data.X, gen.W_dir, data.Z)
    for i in range(3):
        inside, outside = logits[i, O[i]], logits[i, ~O[i]]
        np.testing.assert_allclose(inside, inside[0], atol=1e-9)  # all pairwise equalities
        assert inside.min() - outside.max() >= 1.0 - 1e-9


def test_infeasible_gen_svm_has_certificate() -> None:
    # x_2 = (x_0 + x_1)/2: the margin rows (x_0 − x_2)·u ≥ 1 and (x_1 − x_2)·u ≥ 1 add up to
    # (x_0 + x_1 − 2 x_2)·u = 0 ≥ 2, impossible.
    X = np.array([[[1.0, 0.0], [0.0, 1.0], [0.5, 0.5]]])
    data = sg.TokenData(X, Z=E1, v=np.ones(2))
    gen = sg.gen_svm(data, PAIR_O, probs=[[0.6, 0.4 - 1e-7, 1e-7]], fit_to=np.eye(2))
    assert not gen.feasible and gen.W_dir is None
    assert_farkas(gen.svm.constraints, gen.farkas)
    # the finite component does not depend on the margin rows: u = (ℓ/2, −ℓ/2) as above
    ell = math.log(0.6 / (0.4 - 1e-7))
    np.testing.assert_allclose(gen.W_fin, [[ell / 2, 0.0], [-ell / 2, 0.0]], atol=1e-12)
    assert gen.R is None and gen.W_eq is None


def test_selected_derived_from_probs() -> None:
    gen = sg.gen_svm(_pair_data(), probs=[[0.6, 0.4 - 1e-8, 1e-8]])
    np.testing.assert_array_equal(gen.selected, PAIR_O)
    assert gen.gamma == pytest.approx(1e-8)


def test_selected_sets_thresholds() -> None:
    probs = np.array([[0.5, 0.5 - 1e-3 - 1e-6, 1e-3, 1e-6], [0.9, 0.1 - 2e-6, 1e-6, 1e-6]])
    sel = sg.selected_sets(probs)
    np.testing.assert_array_equal(sel.selected, [[1, 1, 1, 0], [1, 1, 0, 0]])
    np.testing.assert_array_equal(sel.masked, [[0, 0, 0, 1], [0, 0, 1, 1]])
    assert not sel.any_ambiguous


def test_selected_sets_flags_ambiguous() -> None:
    probs = np.array([[0.7, 0.3 - 1e-4, 1e-4]])
    with pytest.warns(UserWarning, match="neither selected nor masked"):
        sel = sg.selected_sets(probs)
    np.testing.assert_array_equal(sel.ambiguous, [[False, False, True]])
    assert sel.any_ambiguous
    custom = sg.selected_sets(probs, selected_tol=1e-5)
    np.testing.assert_array_equal(custom.selected, [[True, True, True]])


@pytest.mark.parametrize(
    ("probs", "match"),
    [
        ([[0.5, 0.6, -0.1]], "nonnegative"),
        ([[0.5, 0.4, 0.0]], "sum to 1"),
        ([0.5, 0.5], "2-D or 3-D"),
        ([[0.5, np.nan, 0.5]], "finite"),
    ],
)
def test_probs_must_be_distributions(probs: object, match: str) -> None:
    with pytest.raises(sg.ProblemError, match=match):
        sg.selected_sets(probs)
    with pytest.raises(sg.ProblemError, match=match):
        sg.gen_svm(_pair_data(), PAIR_O, probs=probs)


def test_sum_tolerance() -> None:
    sg.selected_sets([[0.5, 0.5 + 5e-7]])  # within 1e-6
    with pytest.raises(sg.ProblemError, match="sum to 1"):
        sg.selected_sets([[0.5, 0.5 + 5e-6]])


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"selected_tol": 0.0}, "selected_tol"),
        ({"masked_tol": -1.0}, "masked_tol"),
        ({"masked_tol": 1e-3, "selected_tol": 1e-4}, "below selected_tol"),
    ],
)
def test_selected_sets_bad_thresholds(kwargs: dict[str, float], match: str) -> None:
    with pytest.raises(sg.ProblemError, match=match):
        sg.selected_sets([[0.5, 0.5]], **kwargs)


@pytest.mark.parametrize(
    ("selected", "match"),
    [
        (np.array([[False, False, False]]), "empty"),
        (np.array([[1, 0, 0]]), "boolean"),
        (np.array([[True, False]]), "shape"),
    ],
)
def test_bad_selected_sets(selected: np.ndarray, match: str) -> None:
    with pytest.raises(sg.ProblemError, match=r"selected.*" + match):
        sg.gen_svm(_pair_data(), selected)


def test_bad_gen_svm_arguments() -> None:
    with pytest.raises(sg.ProblemError, match="fit_to needs probs"):
        sg.gen_svm(_pair_data(), PAIR_O, fit_to=np.eye(2))
    with pytest.raises(sg.ProblemError, match="selected="):
        sg.gen_svm(_pair_data())
    with pytest.raises(sg.ProblemError, match="probs must have shape"):
        sg.gen_svm(_pair_data(), PAIR_O, probs=[[0.5, 0.5]])
    with pytest.raises(sg.ProblemError, match="fit_to"):
        sg.gen_svm(_pair_data(), PAIR_O, probs=[[0.5, 0.3, 0.2]], fit_to=np.eye(3))
    with pytest.raises(sg.ProblemError, match="probs is 0 at a selected token"):
        sg.gen_svm(_pair_data(), PAIR_O, probs=[[1.0, 0.0, 0.0]])


def test_several_queries_with_probabilities() -> None:
    data = sg.random_data(2, 3, 5, seed=0, n_queries=2)
    row = [0.7, 0.3 - 1e-8, 1e-8]
    probs = np.array([[row, row[::-1]], [row, row]])  # (n, K, T)
    gen = sg.gen_svm(data, probs=probs)
    expected = np.array([[[1, 1, 0], [0, 1, 1]], [[1, 1, 0], [1, 1, 0]]], dtype=bool)
    np.testing.assert_array_equal(gen.selected, expected)
    assert gen.gamma == pytest.approx(1e-8)
    logits = np.einsum("itd,de,ike->ikt", data.X, gen.W_fin, data.queries)
    for i in range(2):
        for k in range(2):
            O = np.flatnonzero(expected[i, k])
            # W_fin reproduces the log-probability ratio inside O_ik
            np.testing.assert_allclose(
                logits[i, k, O[0]] - logits[i, k, O[1]],
                np.log(probs[i, k, O[0]] / probs[i, k, O[1]]),
                atol=1e-9,
            )


# ---------------------------------------------------------------- conjecture label, full sets


def test_result_is_labelled_a_conjecture() -> None:
    gen = sg.gen_svm(_pair_data(), PAIR_O)
    assert gen.note.startswith("conjecture") and "proposed" in gen.note
    assert "conjecture" in (sg.gen_svm.__doc__ or "")


def test_selected_set_with_every_token() -> None:
    # sequence 0 selects all its tokens (GD masked nothing there): equality rows only, so
    # W_dir gives its tokens equal logits; sequence 1 is an ordinary set {0}
    data = sg.random_data(2, 3, 6, seed=3)
    O = np.array([[True, True, True], [True, False, False]])
    gen = sg.gen_svm(data, O)
    assert gen.feasible and gen.W_dir is not None
    cs = gen.svm.constraints
    assert set(cs.seq[~cs.is_margin].tolist()) == {0} and set(cs.seq[cs.is_margin]) == {1}
    logits = np.einsum("itd,de,ie->it", data.X, gen.W_dir, data.Z)
    np.testing.assert_allclose(logits[0], logits[0, 0], atol=1e-9)
    assert logits[1, 0] - logits[1, 1:].max() >= 1.0 - 1e-9
    np.testing.assert_array_equal(gen.masked[0], [False, False, False])
    # every set full: no margin row, W_svm = 0 and the prediction is the finite W_fin
    probs = np.array([[0.5, 0.3, 0.2], [0.2, 0.2, 0.6]])
    W_fit = np.random.default_rng(0).standard_normal((6, 6))
    full = sg.gen_svm(data, np.ones((2, 3), dtype=bool), probs=probs, fit_to=W_fit)
    assert full.feasible and full.R is None and full.gamma is None
    np.testing.assert_array_equal(full.W_dir, np.zeros((6, 6)))
    np.testing.assert_array_equal(full.W_eq, full.W_fin)
    assert full.fit_correlation == pytest.approx(sg.correlation(full.W_fin, W_fit), rel=1e-12)
    lf = np.einsum("itd,de,ie->it", data.X, full.W_fin, data.Z)
    np.testing.assert_allclose(lf - lf[:, :1], np.log(probs / probs[:, :1]), atol=1e-9)


# ---------------------------------------------------------------- first-order costs

# z = e1, one sequence. ReLU head h(x) = ReLU(x_1) (V = e1, one unit of weight 1), O = {0}:
# x_0 = (1, 0) (h = 1), x_1 = (-1, 0) (h = 0), x_2 = (1, 5) (h = 1). Moving mass onto x_1
# lowers h at rate 2; onto x_2 not at all (same first coordinate): a zero-cost masked token.
# Rows (x_0 - x_t)·u >= 1, u = W e1: (2, 0)·u >= 1 and (0, -5)·u >= 1, so u = (1/2, -1/5);
# without x_2's row u = (1/2, 0).
RELU_X = np.array([[[1.0, 0.0], [-1.0, 0.0], [1.0, 5.0]]])
RELU_V = np.array([[1.0], [0.0]])


def _relu_data() -> sg.TokenData:
    return sg.TokenData(RELU_X, Z=E1, v=np.ones(2))


def test_relu_zero_cost_row_by_hand() -> None:
    O = np.array([[True, False, False]])
    probs = [[1.0 - 2e-9, 1e-9, 1e-9]]
    kw = {"probs": probs, "head": "relu", "V": RELU_V, "v": [1.0]}
    gen = sg.gen_svm(_relu_data(), O, **kw)
    np.testing.assert_allclose(gen.cost_fixed, [[np.nan, 2.0, 0.0]], atol=1e-12)
    np.testing.assert_allclose(gen.cost_envelope, [[np.nan, 2.0, 0.0]], atol=1e-12)
    np.testing.assert_array_equal(gen.zero_cost, [[False, False, True]])
    assert gen.dropped is None
    np.testing.assert_allclose(gen.W_dir, [[0.5, 0.0], [-0.2, 0.0]], atol=1e-9)
    drop = sg.gen_svm(_relu_data(), O, drop_zero_cost=True, **kw)
    np.testing.assert_array_equal(drop.dropped, [[False, False, True]])
    assert "svmgeo's extension" in drop.note and drop.note.startswith("conjecture")
    assert drop.svm.constraints.n_margin == 1
    np.testing.assert_allclose(drop.W_dir, [[0.5, 0.0], [0.0, 0.0]], atol=1e-9)


def test_linear_head_costs_are_score_gaps() -> None:
    # |O| = 1, linear head: c = gamma_alpha - gamma_tau under both methods (no freedom in O)
    data = sg.random_data(3, 4, 5, seed=7)
    alpha = sg.optimal_tokens(data)
    O = np.zeros((3, 4), dtype=bool)
    O[np.arange(3), alpha] = True
    probs = np.where(O, 1.0 - 3e-9, 1e-9)
    gen = sg.gen_svm(data, O, probs=probs, head="linear")
    g = sg.token_scores(data)
    want = np.where(O, np.nan, g[np.arange(3), alpha][:, None] - g)
    np.testing.assert_allclose(gen.cost_fixed, want, rtol=1e-12)
    np.testing.assert_allclose(gen.cost_envelope, want, rtol=1e-12)
    assert not gen.zero_cost.any()  # type: ignore[union-attr]


def test_envelope_cost_on_a_kink_by_hand() -> None:
    # h(x) = -|x_1| = -ReLU(x_1) - ReLU(-x_1); O = {0, 1} with x_0 = (1, 0), x_1 = (-1, 0)
    # in equal parts: the composition sits on the kink x_1 = 0, the head's maximum.
    # tau = (2, 0): fixed cost |2| = 2, but re-weighting O keeps the mean at 0: envelope 0.
    # tau = (0, 3): 0 under both.
    X = np.array([[[1.0, 0.0], [-1.0, 0.0], [2.0, 0.0], [0.0, 3.0]]])
    data = sg.TokenData(X, Z=E1, v=np.ones(2))
    V = np.array([[1.0, -1.0], [0.0, 0.0]])
    O = np.array([[True, True, False, False]])
    probs = [[0.5 - 1e-9, 0.5 - 1e-9, 1e-9, 1e-9]]
    gen = sg.gen_svm(data, O, probs=probs, head="relu", V=V, v=[-1.0, -1.0])
    np.testing.assert_allclose(gen.cost_fixed, [[np.nan, np.nan, 2.0, 0.0]], atol=1e-7)
    np.testing.assert_allclose(gen.cost_envelope, [[np.nan, np.nan, 0.0, 0.0]], atol=1e-7)
    np.testing.assert_array_equal(gen.zero_cost, [[False, False, True, True]])
    # h(x) = ReLU(x_1) at the same composition is not maximal inside O: envelope undefined
    up = sg.gen_svm(data, O, probs=probs, head="relu", V=V[:, :1], v=[1.0])
    assert np.isnan(up.cost_envelope).all()  # type: ignore[arg-type]


def test_cost_arguments() -> None:
    with pytest.raises(sg.ProblemError, match="drop_zero_cost"):
        sg.gen_svm(_pair_data(), PAIR_O, drop_zero_cost=True)
    with pytest.raises(sg.ProblemError, match="need probs"):
        sg.gen_svm(_pair_data(), PAIR_O, head="linear")
    with pytest.raises(sg.ProblemError, match=r"head='relu'.*needs V"):
        sg.gen_svm(_pair_data(), PAIR_O, probs=[[0.5, 0.5 - 1e-8, 1e-8]], head="relu")
    with pytest.raises(sg.ProblemError, match="needs lam"):
        sg.gen_svm(_pair_data(), PAIR_O, probs=[[0.5, 0.5 - 1e-8, 1e-8]], head="concave")
    with pytest.raises(sg.ProblemError, match="'head'"):
        sg.gen_svm(_pair_data(), PAIR_O, probs=[[0.5, 0.5 - 1e-8, 1e-8]], head="tanh")


def test_costs_read_the_head_features_values() -> None:
    # The head reads u_it (values), not the attention tokens x_it: the relu hand case above with
    # its tokens moved to the head features and unrelated attention tokens gives the same costs.
    rng = np.random.default_rng(11)
    data = sg.TokenData(rng.normal(size=(1, 3, 4)), values=RELU_X, Z=rng.normal(size=(1, 4)))
    O = np.array([[True, False, False]])
    kw = {"probs": [[1.0 - 2e-9, 1e-9, 1e-9]], "head": "relu", "V": RELU_V, "v": [1.0]}
    gen = sg.gen_svm(data, O, **kw)
    np.testing.assert_allclose(gen.cost_fixed, [[np.nan, 2.0, 0.0]], atol=1e-12)
    np.testing.assert_array_equal(gen.zero_cost, [[False, False, True]])
    with pytest.raises(sg.ProblemError, match=r"V must have shape \(2, p\)"):
        sg.gen_svm(data, O, **{**kw, "V": np.ones((4, 1))})


def test_gen_svm_checks_its_options_and_names_probs() -> None:
    """kink_tol = -1, zero_tol = NaN and drop_zero_cost = 'no' were accepted; sets derived
    from probs that select a hidden key blamed 'selected', which the caller never passed."""
    data = sg.random_data(2, 3, 2, seed=0, mask=np.array([[True, True, False]]))
    sets = np.array([[True, False, False]] * 2)
    for bad in ({"kink_tol": -1.0}, {"zero_tol": float("nan")}, {"drop_zero_cost": "no"}):
        with pytest.raises(sg.ProblemError, match=next(iter(bad))):
            sg.gen_svm(data, selected=sets, **bad)
    probs = np.array([[0.5, 0.2, 0.3], [0.9, 0.1, 0.0]])
    with pytest.raises(sg.ProblemError, match="probs"):
        sg.gen_svm(data, probs=probs)


def test_a_rank_bound_applies_to_the_directional_solve_only() -> None:
    """Regression: norm="nuc", rank=m with probs raised "rank applies to norm='nuc' only":
    the rank reached the finite component's Frobenius solve."""
    data = sg.random_data(4, 5, 8, seed=0)
    S = np.zeros((4, 5), bool)
    S[:, :2] = True
    P = np.full((4, 5), 1e-9)
    P[:, 0] = 0.4
    P[:, 1] = 0.6 - 3e-9
    bounded = sg.gen_svm(data, selected=S, probs=P, norm="nuc", rank=2)
    plain = sg.gen_svm(data, selected=S, probs=P)
    alone = sg.gen_svm(data, selected=S, norm="nuc", rank=2)
    assert bounded.feasible and bounded.W_fin is not None
    np.testing.assert_array_equal(bounded.W_fin, plain.W_fin)  # always Frobenius
    np.testing.assert_allclose(bounded.W_dir, alone.W_dir, rtol=0, atol=1e-12)
    assert np.linalg.matrix_rank(bounded.W_dir, tol=1e-8) <= 2


def test_a_units_kink_is_judged_on_its_own_scale() -> None:
    """Regression: kink_tol was scaled by the largest |V_p^T x| over all units, so rescaling
    one unit (V_p -> c V_p, v_p -> v_p / c: the same head) moved another onto its kink.
    Here xbar = (1/2, 1/2): V_0^T xbar = 0.005 and V_1^T xbar = 0.5 c, both units active, so
    the fixed cost of the masked token is -(V_0 + V_1)^T (x_2 - xbar) = 1.515 at every c."""
    X = np.array([[[1.0, 0.0], [0.0, 1.0], [-1.0, -1.0]]])
    data = sg.TokenData(X, Z=np.array([[1.0, 0.0]]), v=np.ones(2))
    V = np.array([[1.0, 0.0], [-0.99, 1.0]])
    P = np.array([[0.5 - 5e-10, 0.5 - 5e-10, 1e-9]])
    costs = []
    for c in (1.0, 1e4):
        Vc, vc = V.copy(), np.ones(2)
        Vc[:, 1] *= c
        vc[1] /= c
        costs.append(sg.gen_svm(data, selected=P > 1e-3, probs=P, head="relu", V=Vc, v=vc))
    np.testing.assert_allclose(costs[0].cost_fixed[0, 2], 1.515, rtol=1e-12)
    np.testing.assert_allclose(costs[1].cost_fixed[0, 2], 1.515, rtol=1e-12)


def test_relu_units_orthogonal_to_the_sequence_add_no_sign_patterns(monkeypatch) -> None:
    """A unit with V_p^T x_t = 0 on every token of the sequence was counted on its kink: the
    envelope test solved 2^J LPs per masked token (29 s at 15 such units, hours at 24). Those
    units are 0 on the tokens' span; the costs and the LPs are those of the 3 units that see
    the tokens. More than 12 units truly on their kink are refused."""
    from svmgeo.analysis import _gensvm

    d = 24
    X = np.zeros((1, 3, d))
    X[0, [0, 1, 2], [0, 1, 2]] = 1.0
    data = sg.TokenData(X, Z=np.ones((1, d)))
    P = np.array([[1 - 2e-9, 1e-9, 1e-9]])
    calls = []
    linprog = _gensvm.linprog
    monkeypatch.setattr(_gensvm, "linprog", lambda *a, **k: calls.append(1) or linprog(*a, **k))
    ref = sg.gen_svm(data, probs=P, head="relu", V=np.eye(d)[:, :3], v=np.ones(3))
    n_ref = len(calls)
    wide = sg.gen_svm(data, probs=P, head="relu", V=np.eye(d), v=np.ones(d))
    assert len(calls) == 2 * n_ref == 16  # units 1, 2 on their kink: 4 patterns per token
    np.testing.assert_array_equal(wide.cost_fixed, ref.cost_fixed)
    np.testing.assert_array_equal(wide.cost_envelope, ref.cost_envelope)
    np.testing.assert_array_equal(wide.zero_cost, ref.zero_cost)
    kinked = np.tile((np.eye(d)[1] - np.eye(d)[2])[:, None], (1, 13))  # 0 at w1 = w2
    with pytest.raises(sg.ProblemError, match=r"2\^13 patterns at query \(0, 0\), beyond 2\^12"):
        sg.gen_svm(data, probs=P, head="relu", V=kinked, v=np.ones(13))
