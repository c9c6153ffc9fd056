# SPDX-License-Identifier: BSD-3-Clause
"""The l_p Att-SVM: oracle (naive cvxpy, power cones), certificates, l_2 = Frobenius."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import svmgeo as sg
from svmgeo._linalg import entrywise_norm
from svmgeo.constraints import EQUALITY, MARGIN, ConstraintSet
from svmgeo.solvers import solve_naive_cvxpy
from svmgeo.solvers._certificates import dual_exponent, lp_certificate


def solve_lp(cs: ConstraintSet, p: float, **kw: object) -> sg.SVMResult:
    return sg.solve_svm(cs, norm=("lp", p), **kw)  # type: ignore[arg-type]


def _rows(seed: int, n: int = 4, T: int = 5, d: int = 6) -> ConstraintSet:
    data = sg.random_data(n, T, d, seed=seed)
    return sg.att_svm_constraints(data, sg.optimal_tokens(data))


def _assert_certified(cs: ConstraintSet, res: sg.SVMResult, p: float) -> None:
    """The KKT conditions of min ||W||_p, recomputed here from the definitions."""
    assert res.success, (res.status, res.message)
    W, lam = res.W, res.dual
    assert W is not None and lam is not None
    m = np.einsum("ja,ab,jb->j", cs.A, W, cs.B)
    margin = cs.kind == MARGIN
    assert np.all(m[margin] >= cs.rhs[margin] - 1e-12)
    assert np.all(lam[margin] >= 0.0)
    Lam = np.einsum("j,ja,jb->ab", lam, cs.A, cs.B)
    q = dual_exponent(p)
    dual_norm = np.abs(Lam).max() if math.isinf(q) else np.sum(np.abs(Lam) ** q) ** (1 / q)
    assert dual_norm <= 1.0 + 1e-10
    value = np.abs(W).max() if math.isinf(p) else np.sum(np.abs(W) ** p) ** (1 / p)
    np.testing.assert_allclose(lam @ cs.rhs, value, rtol=1e-8)  # zero duality gap
    np.testing.assert_allclose(res.objective, value, rtol=1e-12)


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("p", [1.0, 1.1, 1.5, 3.0, math.inf])
def test_matches_naive_cvxpy_and_is_certified(seed: int, p: float) -> None:
    cs = _rows(seed)
    res = sg.solve_svm(cs, norm=("lp", p))  # type: ignore[arg-type]
    _assert_certified(cs, res, p)
    W_ref, status, _, _ = solve_naive_cvxpy(cs, ("lp", p))
    assert status == "optimal" and W_ref is not None
    np.testing.assert_allclose(res.objective, entrywise_norm(W_ref, p), rtol=1e-7)
    if 1.0 < p < math.inf:  # strictly convex norm: the optimum is unique; the interior-point
        # W of the naive model is only ~sqrt(its objective accuracy) accurate
        np.testing.assert_allclose(res.W, W_ref, atol=1e-4 * np.abs(W_ref).max())


@pytest.mark.parametrize("method", ["fast", "cvxpy"])
def test_both_methods_certify_the_same_optimum(method: str) -> None:
    cs = _rows(5, n=3, T=4, d=5)
    res = solve_lp(cs, 1.7, method=method)
    _assert_certified(cs, res, 1.7)
    other = solve_lp(cs, 1.7, method="cvxpy" if method == "fast" else "fast")
    np.testing.assert_allclose(res.W, other.W, atol=1e-9 * np.abs(res.W).max())


def test_equality_rows_of_gen_svm() -> None:
    data = sg.random_data(3, 5, 6, seed=3)
    sel = np.zeros((3, 5), dtype=bool)
    sel[np.arange(3), sg.optimal_tokens(data)] = True
    sel[0, (int(sg.optimal_tokens(data)[0]) + 1) % 5] = True  # |O_0| = 2: one equality row
    cs = sg.selected_set_constraints(data, sel)
    assert np.any(cs.kind == EQUALITY)
    for p in (1.0, 1.5, 2.5):
        res = sg.solve_svm(cs, norm=("lp", p))  # type: ignore[arg-type]
        _assert_certified(cs, res, p)
        m = np.einsum("ja,ab,jb->j", cs.A, res.W, cs.B)
        np.testing.assert_allclose(m[cs.kind == EQUALITY], 0.0, atol=1e-10)
        W_ref, _, _, _ = solve_naive_cvxpy(cs, ("lp", p))
        np.testing.assert_allclose(res.objective, entrywise_norm(W_ref, p), rtol=1e-7)


@settings(max_examples=10, deadline=None)
@given(seed=st.integers(0, 10_000), n=st.integers(1, 4), T=st.integers(2, 5), d=st.integers(2, 6))
def test_l2_reduces_to_frobenius(seed: int, n: int, T: int, d: int) -> None:
    """||.||_2 entrywise is the Frobenius norm, so the two SVMs are the same program."""
    data = sg.random_data(n, T, d, seed=seed)
    alpha = sg.optimal_tokens(data)
    fro = sg.att_svm(data, alpha)
    lp = sg.att_svm(data, alpha, norm=("lp", 2.0))  # type: ignore[arg-type]
    assert fro.status == lp.status
    if not fro.success:
        return
    assert fro.W is not None and lp.W is not None
    np.testing.assert_allclose(lp.objective, fro.objective, rtol=1e-9)
    np.testing.assert_allclose(lp.W, fro.W, atol=1e-8 * np.abs(fro.W).max())


def test_certificate_catches_a_wrong_answer() -> None:
    cs = _rows(0)
    res = solve_lp(cs, 1.5)
    assert res.success and res.W is not None and res.dual is not None
    assert not lp_certificate(cs, 1.01 * res.W, res.dual, 1.5).passed  # not optimal: gap
    assert not lp_certificate(cs, 0.99 * res.W, res.dual, 1.5).passed  # infeasible
    assert not lp_certificate(cs, res.W, 1.01 * res.dual, 1.5).passed  # dual infeasible
    assert not lp_certificate(cs, res.W, res.dual, 1.6).passed  # the wrong norm


def test_infeasible_rows_give_a_farkas_certificate() -> None:
    e = np.eye(2)
    cs = ConstraintSet(
        A=np.array([e[0], -e[0]]),
        B=np.array([e[0], e[0]]),
        kind=np.array([MARGIN, MARGIN], dtype=np.int8),
        rhs=np.ones(2),
        seq=np.zeros(2, dtype=np.int64),
        query=np.zeros(2, dtype=np.int64),
        pref=np.zeros(2, dtype=np.int64),
        comp=np.array([1, 2], dtype=np.int64),
        n=1,
        K=1,
        T=3,
    )
    res = sg.solve_svm(cs, norm=("lp", 1.5))  # type: ignore[arg-type]
    assert res.status is sg.Status.INFEASIBLE and res.W is None
    assert res.farkas is not None
    np.testing.assert_allclose(np.einsum("j,ja,jb->ab", res.farkas, cs.A, cs.B), 0.0, atol=1e-12)


@pytest.mark.parametrize("norm", [("lp", 0.5), ("lq", 2.0), ("lp",), ("lp", "two")])
def test_bad_norm_is_a_clear_error(norm: object) -> None:
    data = sg.random_data(2, 3, 4, seed=0)
    with pytest.raises(sg.ProblemError, match=r"norm|p "):
        sg.att_svm(data, norm=norm)  # type: ignore[arg-type]


def test_a_failed_certificate_downgrades_with_a_message() -> None:
    cs = _rows(1)
    with pytest.warns(sg.InaccurateSolutionWarning):
        res = solve_lp(cs, 1.5, tol=1e-30)  # no float64 answer meets this
    assert res.status is sg.Status.OPTIMAL_INACCURATE
    assert "certificate check failed" in res.message
    # neither answer certifies, so the one with the smaller largest residual is kept
    # (better_answer): which one depends on the last bits of both solvers' answers, so either
    # message names the other attempt
    assert (
        "cvxpy fallback did not certify either" in res.message or "(fast path: " in res.message
    ), res.message
    assert res.certificate is not None and not res.certificate.passed


def test_extreme_exponents_never_crash_and_are_right_when_optimal() -> None:
    """p near 1 raised numpy's LinAlgError (LAPACK printing to stderr) and p = 700 returned
    W = 0; an OPTIMAL answer must lie within the norm bounds V_inf <= V_p <= (d^2)^(1/p) V_inf
    of the l_inf optimum."""
    data = sg.random_data(4, 4, 6, seed=0)
    cs = sg.att_svm_constraints(data, sg.optimal_tokens(data))
    v_inf = sg.solve_svm(cs, norm=("lp", np.inf)).objective
    v_one = sg.solve_svm(cs, norm=("lp", 1)).objective
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", sg.InaccurateSolutionWarning)
        for p in (1 + 1e-12, 1 + 1e-9, 700.0):
            res = sg.solve_svm(cs, norm=("lp", p))
            if res.status is not sg.Status.OPTIMAL:
                assert res.certificate is None or not res.certificate.passed
                continue
            if p > 2:
                assert (
                    v_inf * (1 - 1e-9) <= res.objective <= (cs.d**2) ** (1 / p) * v_inf * (1 + 1e-9)
                )
            else:
                assert res.objective <= v_one * (1 + 1e-9)


def _entrywise(M: np.ndarray, r: float) -> float:
    """(sum |M_kl|^r)^(1/r), as max|M| (sum (|M_kl| / max|M|)^r)^(1/r): |M|^r underflows."""
    top = float(np.abs(M).max())
    return (
        top
        if math.isinf(r) or top == 0.0
        else top * float(np.sum((np.abs(M) / top) ** r)) ** (1 / r)
    )


@pytest.mark.parametrize("p", [700.0, 1000.0])
def test_large_p_answers_a_feasible_w_bracketed_by_the_norm_bounds(p: float) -> None:
    """p = 700 returned W = 0 (every row violated) as OPTIMAL_INACCURATE: the smooth dual's
    multipliers scale as ||W||_p^(p-1) ~ 1e-267. Now a W meeting every row, with multipliers
    whose dual value bounds the optimum from below; both within the norm bounds
    V_inf <= V_p <= D^(1/p) V_inf (D = d^2 entries) of the l_inf optimum V_inf."""
    data = sg.random_data(3, 4, 5, seed=0)
    cs = sg.att_svm_constraints(data, sg.optimal_tokens(data))
    v_inf = solve_lp(cs, math.inf).objective
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", sg.InaccurateSolutionWarning)
        res = solve_lp(cs, p, method="fast")
    assert res.status in (sg.Status.OPTIMAL, sg.Status.OPTIMAL_INACCURATE)
    assert res.W is not None and res.dual is not None
    margins = np.einsum("ja,ab,jb->j", cs.A, res.W, cs.B)
    assert np.all(margins >= cs.rhs - 1e-12)  # W meets every row: an upper bound
    value = _entrywise(res.W, p)
    assert v_inf * (1 - 1e-9) <= value <= (cs.d**2) ** (1 / p) * v_inf * (1 + 1e-9)
    Lam = np.einsum("j,ja,jb->ab", res.dual, cs.A, cs.B)
    assert np.all(res.dual >= 0.0)
    assert _entrywise(Lam, dual_exponent(p)) <= 1.0 + 1e-10  # dual feasible: a lower bound
    assert v_inf * (1 - 1e-9) <= res.dual @ cs.rhs <= value * (1 + 1e-12)


@pytest.mark.parametrize("p", [1 + 1e-9, 1 + 1e-12])
def test_p_near_one_is_certified(p: float) -> None:
    """p this close to 1 gave W = 0 (|Λ|^(q-1) underflows, q ~ 1e9). The l_1 program's answer
    meets the KKT conditions of l_p within tol: its gap is at most D^(1 - 1/p) - 1 ~ 3e-9."""
    data = sg.random_data(3, 4, 5, seed=0)
    cs = sg.att_svm_constraints(data, sg.optimal_tokens(data))
    v_one = solve_lp(cs, 1.0).objective
    res = solve_lp(cs, p)
    _assert_certified(cs, res, p)
    assert (cs.d**2) ** (1 / p - 1) * v_one * (1 - 1e-12) <= res.objective <= v_one * (1 + 1e-12)


def test_a_polish_leaving_float64_keeps_cvxpys_answer() -> None:
    """method='cvxpy' at p = 1 + 1e-12: the Newton polish's |Λ|^(q-1) overflows; the answer was
    W = NaN (objective NaN); cvxpy's own finite answer is kept instead."""
    data = sg.random_data(3, 4, 5, seed=0)
    cs = sg.att_svm_constraints(data, sg.optimal_tokens(data))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", sg.InaccurateSolutionWarning)
        warnings.simplefilter("error", RuntimeWarning)  # the overflow stays inside
        res = solve_lp(cs, 1 + 1e-12, method="cvxpy")
    assert res.W is not None and np.all(np.isfinite(res.W))
    assert math.isfinite(res.objective)


@pytest.mark.parametrize("method", ["cvxpy", "auto"])
def test_a_polish_start_past_float64_keeps_cvxpys_answer(method: str) -> None:
    """Regression: at p = 200 the polish's start ||W||_p^(p-1) (||W||_p ~ 92) was a Python
    float power and raised OverflowError; cvxpy's answer is now certified unpolished."""
    data = sg.random_data(4, 5, 3, seed=1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # cvxpy's own overflow in |x|^200; svmgeo's warnings
        res = sg.att_svm(data, norm=("lp", 200.0), method=method)
    assert res.status.has_solution and res.W is not None and np.all(np.isfinite(res.W))
    assert math.isfinite(res.objective)
    assert res.status in (sg.Status.OPTIMAL, sg.Status.OPTIMAL_INACCURATE)
    slack = res.constraints.apply(res.W) - res.constraints.rhs
    assert slack.min() >= -1e-8  # cvxpy's accuracy; the status says when the certificate fails


def test_a_lapack_failure_in_the_polish_is_no_exception(monkeypatch: pytest.MonkeyPatch) -> None:
    """np.linalg.lstsq may raise LinAlgError (SVD did not converge); the polish stops there and
    the answer is judged by its certificate as any other."""

    def no_svd(*args: object, **kwargs: object) -> None:
        raise np.linalg.LinAlgError("SVD did not converge")

    cs = _rows(0)
    monkeypatch.setattr(np.linalg, "lstsq", no_svd)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", sg.InaccurateSolutionWarning)
        res = solve_lp(cs, 1.5, method="fast")
    assert res.certificate is not None and res.W is not None
    assert res.success == res.certificate.passed  # OPTIMAL only where svmgeo's check holds
    assert np.all(np.isfinite(res.W))


def test_of_two_failed_answers_the_better_certified_is_kept() -> None:
    """p = 10 on self-attention rows: Clarabel's answer misses only the gap (5e-8 > 1e-8); its
    Newton polish broke the margins (0.63), and that polish was returned by method='cvxpy'
    while 'auto' kept the l_inf program's point 1.5 % above the optimum (found by an audit).
    Now both return the answer whose certificate's largest residual is smaller."""
    import cvxpy as cp

    data = sg.random_data(4, 5, 5, seed=760126340, query="all")
    alpha = [[3, 0, 3, 2, 0], [1, 2, 3, 2, 3], [4, 3, 1, 3, 2], [0, 0, 3, 1, 2]]
    cs = sg.att_svm_constraints(data, alpha)
    W = cp.Variable((cs.d, cs.d))  # the naive model, the exact power cone (no approximation)
    rows = [cp.sum(cp.multiply(W, np.outer(cs.A[j], cs.B[j]))) >= cs.rhs[j] for j in range(cs.N)]
    oracle = cp.Problem(cp.Minimize(cp.pnorm(cp.vec(W, order="C"), 10, approx=False)), rows)
    oracle.solve(solver="CLARABEL")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", sg.InaccurateSolutionWarning)
        answers = [solve_lp(cs, 10.0, method=m) for m in ("auto", "cvxpy")]
    for res in answers:
        assert res.W is not None and res.certificate is not None
        assert cs.apply(res.W).min() >= 1.0 - 1e-7
        np.testing.assert_allclose(res.objective, oracle.value, rtol=1e-6)
        assert res.certificate.worst <= 1e-6


def test_better_answer_prefers_the_certified_then_the_smaller_residual() -> None:
    from svmgeo.solvers._result import better_answer, downgrade

    cs = _rows(0)
    good = solve_lp(cs, 1.5)
    assert good.success and good.certificate is not None
    worse = downgrade(good, _residuals(good.certificate, 1e-3))
    bad = downgrade(good, _residuals(good.certificate, 1e-1))
    assert better_answer(worse, good) is good and better_answer(good, worse) is good
    assert better_answer(bad, worse) is worse and better_answer(worse, bad) is worse
    assert better_answer(worse, worse) is worse
    nan = downgrade(good, _residuals(good.certificate, math.nan))
    assert better_answer(nan, bad) is bad


def _residuals(cert: sg.Certificate, gap: float) -> sg.Certificate:
    """``cert`` with its duality gap replaced (judged again at its tolerance)."""
    from svmgeo.solvers._certificates import judge

    return judge(
        tol=cert.tol,
        primal_infeasibility=cert.primal_infeasibility,
        dual_infeasibility=cert.dual_infeasibility,
        stationarity=cert.stationarity,
        complementarity=cert.complementarity,
        duality_gap=gap,
    )
