# SPDX-License-Identifier: BSD-3-Clause
"""The l_p Att-SVM near p = 1 and at large p: a W certified in value is not the minimizer.

Session 60's audit: for p within ~1e-8 of 1, and at p = 1e8, ``att_svm(norm=("lp", p))`` was
OPTIMAL (value certified to tol) with a W far from the unique minimizer, and
``is_locally_optimal`` read a decided, wrong verdict off it. The oracles are closed forms
(derived in each instance's docstring) and, at moderate p, a naive cvxpy + Clarabel model
written here.
"""

from __future__ import annotations

import warnings

import cvxpy as cp
import numpy as np
import pytest

import svmgeo as sg

C = 1.9


def near_one_data() -> sg.TokenData:
    r"""One sequence, z = e1, alpha = 0, u = W e1: rows :math:`u_1 + u_2 \ge 1` (token 1) and
    :math:`c\,u_1 \ge 1` (token 2), c = 1.9. For every p > 1 the minimizer is
    :math:`u^\star = (1/c, 1 - 1/c)`: the unconstrained minimum of :math:`|u_1|^p + |u_2|^p`
    on :math:`u_1 + u_2 = 1` is :math:`u_1 = 1/2 < 1/c`, so :math:`u_1 = 1/c` binds; both rows
    are tight and token 2's multiplier :math:`p(u_1^{p-1} - u_2^{p-1})/c` is positive. Token
    2 scores 2 > 1 = selected: alpha = 0 is NOT a LOT, for every p > 1."""
    X = np.array([[[0.0, 0.0], [-1.0, -1.0], [-C, 0.0]]])
    return sg.TokenData(X, Z=np.array([[1.0, 0.0]]), scores=np.array([[1.0, 0.0, 2.0]]))


U_NEAR_ONE = np.array([1.0 / C, 1.0 - 1.0 / C])


def large_p_data(scores: tuple[float, float, float] = (1.0, 0.0, 2.0)) -> sg.TokenData:
    r"""One sequence, z = e1, alpha = 0, u = W e1: rows :math:`u_1 \ge 1` (token 1) and
    :math:`\tfrac23(u_1 + u_2) \ge 1` (token 2). For every p in (1, ∞) the minimizer is
    :math:`u^\star = (1, 1/2)`: :math:`u_1 \ge 1` is forced, then :math:`u_2 \ge 1/2` and
    :math:`|u_2|^p` increases; both rows are tight. With the default scores token 2 scores
    2 > 1: alpha = 0 is NOT a LOT."""
    X = np.array([[[0.0, 0.0], [-1.0, 0.0], [-2.0 / 3.0, -2.0 / 3.0]]])
    return sg.TokenData(X, Z=np.array([[1.0, 0.0]]), scores=np.array([scores]))


U_LARGE_P = np.array([1.0, 0.5])


def _lp_value(u: np.ndarray, p: float) -> float:
    """(sum |u_i|^p)^(1/p), as max|u| (sum (|u_i|/max|u|)^p)^(1/p)."""
    top = float(np.max(np.abs(u)))
    return top * float(np.sum((np.abs(u) / top) ** p)) ** (1.0 / p)


def _solve(data: sg.TokenData, p: float, method: str = "auto") -> sg.SVMResult:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", sg.InaccurateSolutionWarning)
        return sg.att_svm(data, [0], norm=("lp", p), method=method)


def _lot(data: sg.TokenData, p: float, method: str = "auto") -> sg.LocalOptimality:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", sg.InaccurateSolutionWarning)
        return sg.is_locally_optimal(data, [0], norm=("lp", p), method=method)


def _claimed(res: sg.SVMResult) -> bool:
    """Whether svmgeo claims W is the minimizer: OPTIMAL, and no record says it is not shown
    (before session 60 there was none: every OPTIMAL W was read as the minimizer)."""
    check = res.extras.get("argmin")
    return res.status is sg.Status.OPTIMAL and (check is None or bool(check.shown))


def _assert_w_is_the_closed_form_where_claimed(res: sg.SVMResult, u_star: np.ndarray) -> None:
    """Where svmgeo claims W is the minimizer, W e1 is the closed form (and W e2 = 0)."""
    assert res.W is not None
    if _claimed(res):
        np.testing.assert_allclose(res.W[:, 0], u_star, rtol=1e-7)
        np.testing.assert_allclose(res.W[:, 1], 0.0, atol=1e-12)


@pytest.mark.parametrize("method", ["auto", "fast", "cvxpy"])
@pytest.mark.parametrize("p", [1 + 1e-8, 1 + 1e-10])
def test_near_one_verdict_is_never_a_decided_lot(p: float, method: str) -> None:
    """p = 1 + 1e-8 and 1 + 1e-10 answered the l_1 program's vertex u = (1, 0), certified in
    value, and is_locally_optimal said LOT (decided); the truth is 'not a LOT'."""
    lot = _lot(near_one_data(), p, method)
    assert lot.answer in (False, None), lot.reason
    _assert_w_is_the_closed_form_where_claimed(lot.support.svm, U_NEAR_ONE)
    if not lot.decided:
        assert "not shown to be the unique" in lot.reason


@pytest.mark.parametrize("p", [1 + 1e-8, 1 + 1e-10])
def test_near_one_value_is_certified_and_w_is_not_claimed(p: float) -> None:
    """The vertex's value is within tol of the minimum (the status stays OPTIMAL), but it is
    far from the minimizer: the result says W is not shown to be it."""
    res = _solve(near_one_data(), p)
    assert res.status is sg.Status.OPTIMAL
    np.testing.assert_allclose(res.objective, _lp_value(U_NEAR_ONE, p), rtol=1e-8)
    assert np.max(np.abs(res.W[:, 0] - U_NEAR_ONE)) > 0.1  # the vertex, not the minimizer
    assert not _claimed(res)
    check = res.extras["argmin"]
    assert check.residual > check.tol
    assert "not shown to be the unique" in res.message


@pytest.mark.parametrize("p", [1 + 1e-4, 1 + 1e-6])
def test_near_one_minimizer_is_claimed_and_right_where_float64_resolves_it(p: float) -> None:
    """Further from 1 (the cvxpy fallback's polished answer): W is shown to be the minimizer,
    equals the closed form, and the verdict is decided: not a LOT (token 2 is a support
    token with a positive multiplier and scores higher)."""
    lot = _lot(near_one_data(), p)
    res = lot.support.svm
    assert _claimed(res)
    np.testing.assert_allclose(res.W[:, 0], U_NEAR_ONE, rtol=1e-7)
    assert lot.answer is False
    assert [v.token for v in lot.violations] == [2]


@pytest.mark.parametrize("method", ["auto", "cvxpy"])
@pytest.mark.parametrize("p", [100.0, 1e4, 1e8])
def test_large_p_verdict_is_never_a_decided_lot(p: float, method: str) -> None:
    """p = 1e8 answered u = (1, 0.999999) (value certified: every u_2 <= 1 has l_p norm within
    2^(1/p) - 1 = 7e-9 of 1) and a decided LOT; p = 100, 1e4 answered u_2 = 0.585, 0.661."""
    lot = _lot(large_p_data(), p, method)
    assert lot.answer in (False, None), lot.reason
    _assert_w_is_the_closed_form_where_claimed(lot.support.svm, U_LARGE_P)


def test_large_p_value_is_certified_and_w_is_not_claimed() -> None:
    res = _solve(large_p_data(), 1e8)
    assert res.status is sg.Status.OPTIMAL
    np.testing.assert_allclose(res.objective, _lp_value(U_LARGE_P, 1e8), rtol=1e-8)
    assert abs(res.W[1, 0] - U_LARGE_P[1]) > 0.1
    assert not _claimed(res)
    assert "not shown to be the unique" in res.message


@pytest.mark.parametrize("p", [10.0, 30.0])
def test_large_p_minimizer_is_claimed_and_right_where_float64_resolves_it(p: float) -> None:
    """At p = 10 and 30 the smooth dual finds u* = (1, 1/2) (token 2's multiplier,
    (3/2) u_2^(p-1) / ||u||_p^(p-1), is 2e-3 and 3e-9: representable) and says so."""
    res = _solve(large_p_data(), p)
    assert _claimed(res)
    np.testing.assert_allclose(res.W[:, 0], U_LARGE_P, rtol=1e-9)
    np.testing.assert_allclose(res.W[:, 1], 0.0, atol=1e-12)
    assert _lot(large_p_data(), 10.0).answer is False


def test_support_tokens_say_when_w_is_not_the_minimizer() -> None:
    """support_tokens at p = 1e8: the masks are W's, and W is not shown to be the minimizer:
    a warning, and the reason in sup.argmin_doubt."""
    with pytest.warns(sg.InaccurateSolutionWarning, match="not shown to be its unique optimum"):
        sup = sg.support_tokens(large_p_data(), [0], norm=("lp", 1e8))
    assert sup.argmin_doubt is not None and "not shown to be the unique" in sup.argmin_doubt
    assert sup.unique_optimum  # the norm's property: one minimizer, which W is not shown to be


def test_no_high_scoring_token_leaves_the_verdict_decided() -> None:
    """Where no token scores at least as high as the selected one, alpha is a LOT whatever
    the support (SPEC §5): the verdict stays decided although W is not the minimizer."""
    lot = _lot(large_p_data((3.0, 0.0, 2.0)), 1e8)
    assert lot.answer is True
    assert not _claimed(lot.support.svm)


def test_verify_mirror_does_not_name_an_unproved_lp_target() -> None:
    """verify_mirror at exponent 100: the l_p target was Clarabel's u = (1, 0.585), certified
    in value only (u* = (1, 1/2)), and converged_to named it ('lp') at threshold 0.96."""
    data = large_p_data((3.0, 0.0, 2.0))  # alpha = 0 is the optimal token: the run selects it
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", sg.InaccurateSolutionWarning)
        rep = sg.verify_mirror(data, exponent=100.0, n_steps=300, backend="numpy", threshold=0.96)
    assert np.asarray(rep.selection).tolist() == [0]
    assert rep.converged_to != "lp"
    assert not _claimed(rep.svm_lp)


def _oracle(cs: sg.ConstraintSet, p: float) -> tuple[np.ndarray, float]:
    """min ||vec W||_p s.t. a_j^T W b_j >= c_j: the naive model, by cvxpy + Clarabel at tight
    tolerances (its W is accurate to ~1e-7 there, its value to ~1e-12; it may call that
    'optimal_inaccurate')."""
    W = cp.Variable((cs.d, cs.d))
    rows = [cp.sum(cp.multiply(W, np.outer(cs.A[j], cs.B[j]))) >= cs.rhs[j] for j in range(cs.N)]
    problem = cp.Problem(cp.Minimize(cp.pnorm(cp.vec(W, order="C"), p)), rows)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # cvxpy's "may be inaccurate"
        problem.solve(solver="CLARABEL", tol_gap_abs=1e-12, tol_gap_rel=1e-12, tol_feas=1e-12)
    assert problem.status in ("optimal", "optimal_inaccurate")
    return np.asarray(W.value), float(problem.value)


@pytest.mark.parametrize(("seed", "p"), [(0, 1.5), (1, 3.0), (3, 6.0), (3, 1.2), (4, 2.5)])
def test_moderate_p_minimizer_is_claimed_and_matches_a_naive_oracle(seed: int, p: float) -> None:
    """At moderate p on random data the check changes nothing: W is shown to be the
    minimizer, and it is the naive model's."""
    data = sg.random_data(3, 4, 3, seed=seed)
    res = sg.att_svm(data, sg.optimal_tokens(data), norm=("lp", p))
    assert _claimed(res), res.message
    assert "not shown" not in res.message
    W_ref, value = _oracle(res.constraints, p)
    np.testing.assert_allclose(res.objective, value, rtol=1e-9)
    np.testing.assert_allclose(res.W, W_ref, atol=1e-5 * float(np.abs(W_ref).max()))
