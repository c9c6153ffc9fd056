# SPDX-License-Identifier: BSD-3-Clause
"""Lemma 1, KKT/duality of every solution, norm inequalities and the factored identity."""

from __future__ import annotations

import numpy as np
from hypothesis import assume, given, settings
from hypothesis import strategies as st

import svmgeo as sg
from svmgeo.testing import (
    SOLVER_RTOL,
    Case,
    adjoint,
    assert_agree,
    assert_feasible_point,
    assert_frobenius_kkt,
    assert_nuclear_kkt,
    cases,
    examples,
    numerical_rank,
    row_values,
    selections,
    verdict,
)

NORMS = ("fro", "nuc")


def _query_projector(data: sg.TokenData) -> tuple[np.ndarray, int]:
    """Projector onto span{z_ik} and its dimension, from an SVD written here."""
    Z = np.asarray(data.queries).reshape(-1, data.d)
    _, s, Vt = np.linalg.svd(Z, full_matrices=False)
    r = int(np.count_nonzero(s > 1e-12 * s[0])) if s.size and s[0] > 0 else 0
    return Vt[:r].T @ Vt[:r], r


@settings(max_examples=examples(2))
@given(case=cases(), draw=st.data(), norm=st.sampled_from(NORMS))
def test_every_solution_is_certified(case: Case, draw: st.DataObject, norm: str) -> None:
    """Att-SVM / Att-SVM⋆ answers are optimal with KKT / dual certificates that we recompute,
    or infeasible with a Farkas vector; never an exception. Inaccurate statuses only on
    ill-conditioned problems (max-min margin below 1e-6 of the data scale)."""
    data = case.data
    alpha = draw.draw(selections(data), label="alpha")
    res = sg.att_svm(data, alpha, norm=norm)
    if verdict(res) != "optimal":  # infeasible: Farkas checked; inaccurate: ill-conditioned
        return
    assert res.certificate is not None
    assert res.certificate.passed == (res.status is sg.Status.OPTIMAL)
    if norm == "fro":
        assert_frobenius_kkt(res)
        np.testing.assert_allclose(res.objective, np.linalg.norm(res.W), rtol=1e-12)
    else:
        assert_nuclear_kkt(res)
        np.testing.assert_allclose(res.objective, np.linalg.norm(res.W, "nuc"), rtol=1e-9)


@settings(max_examples=examples(2))
@given(case=cases(), draw=st.data(), norm=st.sampled_from(NORMS))
def test_lemma1_solutions_live_in_the_query_span(
    case: Case, draw: st.DataObject, norm: str
) -> None:
    """Lemma 1: W = W P_Z, so rank W ≤ dim span{z_ik} ≤ nK (n for one query per sequence);
    the Frobenius optimum is Σ λ_j a_j b_jᵀ with λ ≥ 0."""
    data = case.data
    alpha = draw.draw(selections(data), label="alpha")
    res = sg.att_svm(data, alpha, norm=norm)
    assume(verdict(res) == "optimal")
    W = res.W
    assert W is not None
    P, r = _query_projector(data)
    scale = max(1.0, float(np.linalg.norm(W)))
    np.testing.assert_allclose(W @ P, W, atol=1e-9 * scale)
    assert numerical_rank(W) <= r <= data.n * data.K
    if data.single_query:
        assert numerical_rank(W) <= data.n
    if norm == "fro":
        lam = res.dual
        assert lam is not None
        assert np.all(lam >= -SOLVER_RTOL * max(1.0, float(np.abs(lam).max(initial=0.0))))
        np.testing.assert_allclose(adjoint(res.constraints, lam), W, atol=SOLVER_RTOL * scale)


@settings(max_examples=examples(2))
@given(case=cases(), draw=st.data())
def test_each_optimum_beats_the_other_in_its_own_norm(case: Case, draw: st.DataObject) -> None:
    """Each optimum beats the other in its own norm: ‖W_F‖_F ≤ ‖W_*‖_F and ‖W_*‖_* ≤ ‖W_F‖_*
    (both are feasible for the same rows, so a violation is a non-optimal answer)."""
    data = case.data
    alpha = draw.draw(selections(data), label="alpha")
    fro = sg.att_svm(data, alpha, norm="fro")
    nuc = sg.att_svm(data, alpha, norm="nuc")
    vf, vn = verdict(fro), verdict(nuc)
    assume(vf is not None and vn is not None)
    assert_agree(vf, vn, fro.constraints)
    assume(vf == vn == "optimal")
    WF, WN = fro.W, nuc.W
    assert WF is not None and WN is not None
    slack = 1.0 + 10 * SOLVER_RTOL
    assert np.linalg.norm(WF) <= np.linalg.norm(WN) * slack
    assert np.linalg.norm(WN, "nuc") <= np.linalg.norm(WF, "nuc") * slack


@settings(max_examples=examples(1))
@given(
    case=cases(d_range=(2, 6)),
    m=st.integers(1, 3),
    seed=st.integers(0, 2**16),
)
def test_rank_constrained_solutions(case: Case, m: int, seed: int) -> None:
    """Att-SVM⋆ with rank ≤ m: W = KQᵀ with rank ≤ m, feasible, ½(‖K‖²+‖Q‖²) = ‖W‖_* =
    objective ≥ the convex bound (equal when the convex optimum has rank ≤ m); OPTIMAL only
    when certified global, and a LOCALLY_OPTIMAL answer is a KKT point of the factored problem
    (K = ΛQ, Q = ΛᵀK, λ ≥ 0)."""
    data = case.data
    alpha = sg.optimal_tokens(data, ties="first")  # a tie makes Att-SVM infeasible: skipped
    convex = sg.att_svm(data, alpha, norm="nuc")
    assume(convex.success)
    res = sg.att_svm(data, alpha, norm="nuc", rank=m, seed=seed, n_restarts=3)
    if not res.status.has_solution:
        # a rank-m problem may be infeasible even when the convex one is not; svmgeo says it
        # cannot certify that
        assert res.status is sg.Status.INFEASIBLE_INACCURATE, res.message
        assert numerical_rank(convex.W) > m
        return
    W, K, Q = res.W, res.K, res.Q
    assert W is not None
    if K is None or Q is None:
        # svmgeo solves the convex problem without factors when the bound is vacuous:
        # m >= dim span{b_j} (Lemma 1) or m >= d
        rows = res.constraints.B
        r = numerical_rank(rows, rtol=1e-12) if rows.size else 0
        assert m >= min(data.d, r), res.message
        assert numerical_rank(W) <= m
        np.testing.assert_allclose(res.objective, convex.objective, rtol=1e-9)
        return
    assert K.shape == Q.shape == (data.d, m)
    nuc = float(np.linalg.norm(W, "nuc"))
    np.testing.assert_allclose(K @ Q.T, W, atol=1e-10 * max(1.0, nuc))
    assert numerical_rank(W) <= m
    assert_feasible_point(res.constraints, W, rtol=SOLVER_RTOL)
    half = 0.5 * (np.sum(K**2) + np.sum(Q**2))
    np.testing.assert_allclose(half, nuc, rtol=1e-6)
    np.testing.assert_allclose(res.objective, half, rtol=1e-9)
    assert res.lower_bound is not None
    np.testing.assert_allclose(res.lower_bound, convex.objective, rtol=1e-9)
    assert res.objective >= res.lower_bound * (1.0 - SOLVER_RTOL)
    if numerical_rank(convex.W, rtol=1e-9) <= m:
        np.testing.assert_allclose(res.objective, res.lower_bound, rtol=1e-6)
    if res.status is sg.Status.OPTIMAL:
        # OPTIMAL means certified global: the convex bound is attained within tol (1e-8), or
        # the convex optimum (rank <= m) is returned and passes the nuclear KKT check
        if res.relative_gap is None:  # a zero convex bound (no rows): W = 0 is optimal
            assert res.lower_bound is not None and res.objective is not None
            assert res.lower_bound <= 0.0 and res.objective <= 1e-12, res.message
        elif "exact" in res.message:
            assert_nuclear_kkt(res)
        else:
            assert res.relative_gap <= 1e-8, res.message
    elif res.status is sg.Status.LOCALLY_OPTIMAL:
        # a KKT point of the factored problem above the convex bound: a solution, no success
        assert not res.success and res.relative_gap is not None and res.relative_gap > 1e-8
        cs, lam = res.constraints, res.dual
        assert lam is not None
        margin = cs.kind == sg.MARGIN
        assert np.all(lam[margin] >= -SOLVER_RTOL * max(1.0, float(np.abs(lam).max(initial=0.0))))
        Lam = adjoint(cs, lam)
        size = max(1.0, float(np.linalg.norm(K) + np.linalg.norm(Q)))
        np.testing.assert_allclose(Lam @ Q, K, atol=1e-6 * size)
        np.testing.assert_allclose(Lam.T @ K, Q, atol=1e-6 * size)
        slack = row_values(cs, W) - cs.rhs
        assert np.all(np.abs(lam[margin] * slack[margin]) <= 1e-6 * max(1.0, half))
