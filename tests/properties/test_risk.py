# SPDX-License-Identifier: BSD-3-Clause
"""The risk L(W) of GD: its formula, Lemma 2 (L > L⋆, L(R·W) → L⋆) and Theorem 3."""

from __future__ import annotations

import numpy as np
from hypothesis import assume, given, settings
from hypothesis import strategies as st

import svmgeo as sg
from svmgeo.gd import loss_and_grad
from svmgeo.testing import (
    KINDS,
    LOSSES,
    SINGLE_QUERY,
    Case,
    build_b1_case,
    build_b2_case,
    cases,
    examples,
    optimal_risk,
    risk,
    risk_gap_lower_bound,
    risk_grad,
    row_values,
    verdict,
    visible_scores,
)

EPS = np.finfo(float).eps


@st.composite
def matrices(draw: st.DrawFn, d: int, max_norm: float = 3.0) -> np.ndarray:
    """A d × d matrix of Frobenius norm in [0, max_norm] (0 included), random direction."""
    seed = draw(st.integers(0, 2**32 - 1))
    r = draw(st.one_of(st.just(0.0), st.floats(0.0, max_norm)))
    G = np.random.default_rng(seed).normal(size=(d, d))
    return r * G / np.linalg.norm(G)


@settings(max_examples=examples(1))
@given(case=cases(), draw=st.data(), loss=st.sampled_from(LOSSES))
def test_gd_risk_and_gradient_are_the_spec_formulas(
    case: Case, draw: st.DataObject, loss: str
) -> None:
    """loss_and_grad (what train uses) = (1/n) Σ_ik ℓ(Y_ik vᵀX_iᵀs_ik) and the SPEC gradient."""
    data = case.data
    W = draw.draw(matrices(data.d), label="W")
    value, grad = loss_and_grad(data, W, loss=loss)
    np.testing.assert_allclose(value, risk(data, W, loss), rtol=1e-12, atol=1e-14)
    G = risk_grad(data, W, loss)
    np.testing.assert_allclose(grad, G, rtol=1e-9, atol=1e-12 * max(1.0, float(np.abs(G).max())))


@settings(max_examples=examples(2))
@given(case=cases(), draw=st.data(), loss=st.sampled_from(LOSSES))
def test_lemma2_risk_exceeds_the_optimal_risk(case: Case, draw: st.DataObject, loss: str) -> None:
    """L(W) > L⋆ = (1/n) Σ_ik ℓ(γ_ik,opt) at every finite W when some visible token is not
    optimal. Checked quantitatively: L(W) − L⋆ ≥ Σ |ℓ'(γ⋆)| Σ_t s_t(γ⋆ − γ_t) / n, a bound
    free of cancellation, and strictly whenever that bound is above round-off."""
    data = case.data
    W = draw.draw(matrices(data.d), label="W")
    value, _ = loss_and_grad(data, W, loss=loss)
    star = optimal_risk(data, loss)
    bound = risk_gap_lower_bound(data, W, loss)
    roundoff = 8 * EPS * max(1.0, abs(value), abs(star)) * data.K
    assert value - star >= bound * (1 - 1e-9) - roundoff
    g = visible_scores(data)
    some_suboptimal = bool(np.any(np.isfinite(g) & (g < g.max(axis=2, keepdims=True))))
    if some_suboptimal and bound > roundoff:
        assert value > star


@settings(max_examples=examples(2))
@given(case=cases(), loss=st.sampled_from(LOSSES), seed=st.integers(0, 2**32 - 1))
def test_lemma2_risk_along_a_feasible_direction_tends_to_the_optimal_risk(
    case: Case, loss: str, seed: int
) -> None:
    """For W feasible for Att-SVM(opt) (margins ≥ 1): 0 ≤ L(RW) − L⋆ ≤ Σ_ik |ℓ'(γ_min)|
    Σ_t e^{−R m_t}(γ⋆ − γ_t) / n, so L(RW) → L⋆ (reached to round-off at R = 64).
    W is W^mm, or W^mm plus a random perturbation rescaled to margins ≥ 1."""
    data = case.data
    try:
        opt = sg.optimal_tokens(data)
    except sg.TieError:
        assume(False)
    res = sg.att_svm(data, opt)
    assume(res.success)
    W = res.W
    assert W is not None
    cs = res.constraints
    noise = np.random.default_rng(seed).normal(size=W.shape)
    W2 = W + 0.3 * np.linalg.norm(W) * noise / np.linalg.norm(noise)
    m2 = row_values(cs, W2)
    if cs.N and m2.min() > 0:
        W = W2 / m2.min()
    m = row_values(cs, W)
    assert np.all(m >= 1 - 1e-7)
    star = optimal_risk(data, loss)
    g = visible_scores(data)
    best = g.max(axis=2)
    gap = best[cs.seq, cs.query] - g[cs.seq, cs.query, cs.comp]  # γ⋆ − γ_t per row
    low = np.where(np.isfinite(g), g, np.inf).min(axis=2)
    lip = {"logistic": 1.0, "exponential": np.exp(-low), "correlation": 1.0}[loss]
    lip_rows = np.broadcast_to(lip, best.shape)[cs.seq, cs.query]
    for R in (1.0, 4.0, 16.0, 64.0):
        value, _ = loss_and_grad(data, R * W, loss=loss)
        roundoff = 8 * EPS * max(1.0, abs(value), abs(star)) * data.K
        upper = float(np.sum(lip_rows * np.exp(-R * m) * gap)) / data.n
        assert -roundoff <= value - star <= upper * (1 + 1e-9) + roundoff
    np.testing.assert_allclose(value, star, rtol=1e-13, atol=1e-13)


def _assert_theorem3(data: sg.TokenData, W: np.ndarray, loss: str) -> None:
    opt = sg.optimal_tokens(data)
    res = sg.att_svm(data, opt)
    assume(res.success)
    # the theorem needs a non-optimal visible token (some row); else W^mm = 0
    assume(res.constraints.N > 0)
    Wmm = res.W
    assert Wmm is not None
    _, grad = loss_and_grad(data, W, loss=loss)
    assert np.vdot(grad, Wmm) < 0, float(np.vdot(grad, Wmm))


THEOREM3 = {
    "n": st.integers(1, 5),
    "T": st.integers(2, 6),
    "seed": st.integers(0, 2**32 - 1),
    "loss": st.sampled_from(LOSSES),
    "draw": st.data(),
}


@settings(max_examples=examples(2))
@given(kind=st.sampled_from(KINDS), d=st.integers(1, 8), **THEOREM3)
def test_theorem3_b2_gradient_correlates_negatively_with_wmm(
    kind: str, n: int, T: int, d: int, seed: int, loss: str, draw: st.DataObject
) -> None:
    """Under B.2 (all non-optimal scores of a query equal): ⟨∇L(W), W^mm⟩ < 0 at every finite
    W, so L has no stationary point (when Att-SVM(opt) is feasible)."""
    case = build_b2_case(kind, n=n, T=T, d=d, seed=seed)
    data = case.data
    g = visible_scores(data)
    best = g.max(axis=2, keepdims=True)
    low = np.isfinite(g) & (g < best)
    spread = np.where(low, g, -np.inf).max(axis=2) - np.where(low, g, np.inf).min(axis=2)
    assert np.all(
        np.where(low.any(axis=2), spread, 0.0) <= 1e-12 * max(1.0, float(np.abs(best).max()))
    )
    W = draw.draw(matrices(d, max_norm=5.0), label="W")
    _assert_theorem3(data, W, loss)


@settings(max_examples=examples(2))
@given(kind=st.sampled_from(SINGLE_QUERY), d=st.integers(2, 8), **THEOREM3)
def test_theorem3_b1_gradient_correlates_negatively_with_wmm(
    kind: str, n: int, T: int, d: int, seed: int, loss: str, draw: st.DataObject
) -> None:
    """Under B.1 (every non-optimal token is a support token of W^mm): ⟨∇L(W), W^mm⟩ < 0.
    The construction keeps W^mm (checked) and makes every non-optimal margin exactly 1."""
    case = build_b1_case(kind, n=n, T=T, d=d, seed=seed)
    assume(case is not None)
    assert case is not None
    data = case.data
    opt = sg.optimal_tokens(data)
    res = sg.att_svm(data, opt)
    assume(verdict(res) == "optimal")  # a failure is accepted only when ill-conditioned
    assert res.W is not None
    # W^mm is a degenerate optimum (all rows active, some with λ = 0): re-solving it is
    # accurate to about sqrt(1e-8) on the moved rows
    np.testing.assert_allclose(row_values(res.constraints, res.W), 1.0, rtol=1e-4)
    sup = sg.support_tokens(data, opt, tol=1e-4)
    non_opt = np.ones((data.n, data.T), dtype=bool)
    non_opt[np.arange(data.n), opt] = False
    np.testing.assert_array_equal(np.asarray(sup), non_opt)
    W = draw.draw(matrices(d, max_norm=5.0), label="W")
    _assert_theorem3(data, W, loss)
