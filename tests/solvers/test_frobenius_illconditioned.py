# SPDX-License-Identifier: BSD-3-Clause
"""Frobenius Att-SVM on low-dimensional, barely feasible problems (‖W^mm‖ ~ 1e3–1e4).

There the multipliers λ are huge and cancel (‖λ‖ ≫ ‖W‖), so margins computed as Gλ carry
round-off far above the certificate's 1e-8. These cases used to end OPTIMAL_INACCURATE
("primal infeasibility 5.3e-05 > tol"); svmgeo now polishes the primal itself in compressed
features. Every answer is checked against the naive cvxpy QP solved tightly by Clarabel and
with checks written from the maths (svmgeo.testing).
"""

from __future__ import annotations

import dataclasses
import itertools
import warnings

import numpy as np
import pytest

import svmgeo as sg
from svmgeo.solvers import (
    Status,
    check_feasibility,
    solve_frobenius,
    solve_naive_cvxpy,
    solve_svm,
)
from svmgeo.solvers._geometry import RowGeometry
from svmgeo.solvers._qp import polish_features
from svmgeo.solvers._result import no_solution
from svmgeo.testing import assert_farkas, assert_feasible_point

ORACLE_TIGHT = {"tol_gap_abs": 1e-12, "tol_gap_rel": 1e-12, "tol_feas": 1e-12}

# (n, T, d), seed, selection: every feasible selection that failed its certificate before the
# feature-space polish (from /work/briefs/lowd_repro.py), with the old primal infeasibility.
REGRESSIONS = [
    ((3, 4, 2), 1, (3, 3, 0)),  # 5.3e-05
    ((3, 4, 2), 8, (0, 0, 0)),  # 3.4e-08
    ((3, 4, 2), 8, (1, 0, 0)),  # 2.2e-05
    ((3, 4, 2), 8, (1, 1, 3)),  # 5.8e-08
    ((3, 4, 2), 8, (1, 3, 0)),  # 1.0e-06
    ((3, 4, 2), 8, (2, 0, 2)),  # 5.2e-07
    ((3, 4, 2), 8, (2, 0, 3)),  # 3.2e-05
    ((3, 4, 2), 8, (2, 2, 3)),  # 1.1e-07
    ((4, 3, 2), 1, (0, 2, 2, 0)),  # 9.7e-04
    ((4, 3, 2), 7, (1, 2, 2, 1)),  # 4.8e-05
    ((10, 6, 4), 466, (0, 0, 0, 0, 0, 0, 0, 0, 2, 0)),  # 4.0e-06
    ((10, 6, 4), 466, (0, 0, 0, 0, 0, 0, 0, 0, 2, 5)),  # 1.0e-07
    ((10, 6, 4), 466, (0, 0, 0, 0, 0, 0, 0, 1, 2, 1)),  # 3.7e-04
    ((10, 6, 4), 466, (0, 0, 0, 0, 0, 0, 0, 1, 2, 2)),  # 1.0e-06
    ((10, 6, 4), 466, (0, 0, 0, 0, 0, 0, 0, 2, 2, 3)),  # 1.3e-07
    ((10, 6, 4), 466, (0, 0, 0, 0, 0, 0, 1, 0, 3, 4)),  # 2.4e-08
]


def _oracle(cs: sg.ConstraintSet) -> np.ndarray:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        W, status, _, _ = solve_naive_cvxpy(cs, "fro", solver="CLARABEL", **ORACLE_TIGHT)
    assert status == "optimal" and W is not None, status
    return np.asarray(W)


def _assert_matches_oracle(cs: sg.ConstraintSet, W: np.ndarray) -> None:
    W_ref = _oracle(cs)
    np.testing.assert_allclose(W, W_ref, rtol=0, atol=1e-6 * np.linalg.norm(W_ref))
    # optimality against the oracle exactly: for the unique minimiser W* and any feasible W',
    # strong convexity gives ||W' - W*||^2 <= ||W'||^2 - ||W*||^2.
    Wp = W_ref * max(1.0, float(np.max(cs.rhs / cs.apply(W_ref))))
    lhs = np.linalg.norm(Wp - W) ** 2
    rhs = np.linalg.norm(Wp) ** 2 - np.linalg.norm(W) ** 2
    assert lhs <= rhs + 1e-12 * np.linalg.norm(Wp) ** 2


def _assert_feasible(cs: sg.ConstraintSet, W: np.ndarray) -> None:
    """Margins >= 1 up to the round-off of the exact polish (a linear solve on the active rows)
    and of a_j^T W b_j: a few hundred eps * ||a_j|| ||W|| ||b_j||. (At 1e-14 instead of 1e-13,
    the (4, 3, 2) seed-5 sweep fails with numpy 2.4 / OpenBLAS 0.3.31: a row short by 1.8e-11
    at ||W|| = 843, against 1.7e-11 allowed; svmgeo's certificate bound is 1e-8.)"""
    size = np.linalg.norm(cs.A, axis=1) * np.linalg.norm(cs.B, axis=1)
    assert_feasible_point(cs, W, rtol=0.0, atol=max(1e-12, 1e-13 * np.linalg.norm(W) * size.max()))


def _constraints(shape: tuple[int, int, int], seed: int, alpha: tuple[int, ...]):
    n, T, d = shape
    data = sg.random_data(n, T, d, seed=seed)
    return sg.att_svm_constraints(data, np.array(alpha))


@pytest.mark.parametrize(("shape", "seed", "alpha"), REGRESSIONS)
def test_barely_feasible_selections_are_certified_and_match_oracle(shape, seed, alpha):
    cs = _constraints(shape, seed, alpha)
    res = solve_svm(cs, method="fast")
    assert res.status is Status.OPTIMAL, res.message
    cert = res.certificate
    assert cert is not None and cert.passed and cert.tol == 1e-8
    assert res.objective >= 1e3  # the regime: barely feasible, huge norm
    _assert_feasible(cs, res.W)
    # W = sum_j lambda_j a_j b_j^T with lambda >= 0 (recomputed here, not from svmgeo)
    lam = res.dual
    assert np.all(lam >= 0.0)
    W_kkt = np.einsum("j,ja,jb->ab", lam, cs.A, cs.B)
    np.testing.assert_allclose(W_kkt, res.W, rtol=0, atol=1e-8 * np.linalg.norm(res.W))
    _assert_matches_oracle(cs, res.W)


def test_rescue_is_what_fixes_them_and_says_so():
    cs = _constraints(*REGRESSIONS[0])
    res = solve_frobenius(cs)
    assert res.success
    assert res.solver.endswith("+features")
    assert "compressed features" in res.message
    assert res.extras["polished"] is True


@pytest.mark.parametrize(("shape", "seed", "alpha"), REGRESSIONS[:3])
def test_feature_polish_from_every_row_settles_at_the_optimum(shape, seed, alpha):
    # the worst possible start (every row in the working set): rows are dropped until the
    # KKT conditions hold, and the answer is still the oracle's
    cs = _constraints(shape, seed, alpha)
    out = polish_features(RowGeometry(cs), np.ones(cs.N, bool), max_rounds=4 * cs.N)
    assert out is not None
    lam, W, _, settled = out
    assert settled
    assert np.all(lam >= 0.0)
    margins = np.einsum("ja,ab,jb->j", cs.A, W, cs.B)
    assert np.all(margins >= 1.0 - 1e-9)
    np.testing.assert_allclose(lam * (margins - 1.0), 0.0, atol=1e-8 * max(1.0, lam.max()))
    _assert_matches_oracle(cs, W)


def test_feature_polish_builds_features_for_the_gram_representation():
    data = sg.random_data(4, 3, 3, seed=5)
    cs = sg.att_svm_constraints(data, sg.optimal_tokens(data))
    geo = RowGeometry(cs)
    assert geo.kind == "dual"  # r1 r2 = 9 > N = 8
    out = polish_features(geo, np.ones(cs.N, bool), max_rounds=4 * cs.N)
    assert out is not None and out[3]
    _assert_matches_oracle(cs, out[1])


def test_feature_polish_declines_when_features_are_too_large():
    data = sg.random_data(70, 3, 70, seed=0)  # bound min(d, N) * n_queries = 4900 > 4096
    cs = sg.att_svm_constraints(data, sg.optimal_tokens(data))
    assert polish_features(RowGeometry(cs), np.ones(cs.N, bool), max_rounds=2) is None


def test_reported_huge_norm_instance_is_a_moderate_optimum():
    # reported once as ||W|| = 4.6e10 OPTIMAL_INACCURATE; the tight oracle's optimum is ~30
    data = sg.random_data(10, 6, 4, seed=466)
    cs = sg.att_svm_constraints(data, sg.optimal_tokens(data))
    res = solve_svm(cs, method="fast")
    assert res.status is Status.OPTIMAL, res.message
    W_ref = _oracle(cs)
    assert np.linalg.norm(W_ref) < 100.0
    _assert_matches_oracle(cs, res.W)


def test_well_conditioned_path_does_not_need_the_rescue():
    data = sg.random_data(20, 10, 20, seed=0)
    res = solve_svm(sg.att_svm_constraints(data, sg.optimal_tokens(data)), method="fast")
    assert res.status is Status.OPTIMAL
    assert not res.solver.endswith("+features")
    assert "feature_polish_rounds" not in res.extras


SWEEP = [((3, 4, 2), s) for s in range(10)] + [((4, 3, 2), s) for s in range(8)]


@pytest.mark.parametrize(("shape", "seed"), SWEEP)
def test_low_d_selection_sweep_is_optimal_or_infeasible(shape, seed):
    """Every selection of a low-d dataset: OPTIMAL (certified) or INFEASIBLE (Farkas)."""
    n, T, d = shape
    data = sg.random_data(n, T, d, seed=seed)
    counts = {"optimal": 0, "infeasible": 0}
    for alpha in itertools.product(range(T), repeat=n):
        cs = sg.att_svm_constraints(data, np.array(alpha))
        res = solve_svm(cs, method="fast")
        where = (shape, seed, alpha, res.message)
        assert res.status in (Status.OPTIMAL, Status.INFEASIBLE), where
        counts[str(res.status)] += 1
        if res.status is Status.OPTIMAL:
            assert res.certificate is not None and res.certificate.passed, where
            _assert_feasible(cs, res.W)
        else:
            assert res.W is None and res.farkas is not None, where
            assert_farkas(cs, res.farkas)
    assert counts["optimal"] >= 1 and counts["infeasible"] >= 1


def _failed_fast(cs: sg.ConstraintSet, **_: object) -> sg.SVMResult:
    """A fast-path answer that failed its certificate (stands in for an uncertifiable case)."""
    res = solve_frobenius(cs)
    return dataclasses.replace(res, status=Status.OPTIMAL_INACCURATE, message="fast failed")


def test_auto_falls_back_to_cvxpy_and_says_why(monkeypatch):
    from svmgeo.solvers import _norms

    monkeypatch.setattr(_norms, "frobenius", _failed_fast)
    cs = _constraints(*REGRESSIONS[0])
    res = solve_svm(cs, method="auto")
    assert res.solver.startswith("cvxpy")
    assert res.status is Status.OPTIMAL and res.certificate is not None
    assert "(fast path: optimal_inaccurate: fast failed)" in res.message
    _assert_matches_oracle(cs, res.W)


def test_auto_reports_a_failed_fallback(monkeypatch):
    from svmgeo.solvers import _norms

    def failed_cvxpy(req: _norms.Request) -> sg.SVMResult:
        return no_solution(
            req.cs, Status.SOLVER_ERROR, "cvxpy broke", norm=req.entry.name, solver="cvxpy-x"
        )

    monkeypatch.setattr(_norms, "frobenius", _failed_fast)
    fro = dataclasses.replace(_norms.NORMS["fro"], reference=failed_cvxpy)
    monkeypatch.setitem(_norms.NORMS, "fro", fro)
    res = solve_svm(_constraints(*REGRESSIONS[0]), method="auto")
    assert res.status is Status.OPTIMAL_INACCURATE and res.solver.startswith("svmgeo")
    assert res.message.startswith("fast failed; the cvxpy fallback did not certify either")
    assert "solver_error: cvxpy broke" in res.message


def test_auto_says_when_the_problem_is_too_large_for_the_fallback(monkeypatch):
    from svmgeo.solvers import _norms

    monkeypatch.setattr(_norms, "frobenius", _failed_fast)
    monkeypatch.setattr(_norms, "CVXPY_FALLBACK_SIZE", 10.0)
    res = solve_svm(_constraints(*REGRESSIONS[0]), method="auto")
    assert res.status is Status.OPTIMAL_INACCURATE and res.solver.startswith("svmgeo")
    assert "no cvxpy fallback: d^2*N = 36 exceeds 1e+01" in res.message


def _wedge(eps: float) -> sg.ConstraintSet:
    r"""One sequence whose Att-SVM is feasible only through a direction of size ``eps``.

    With :math:`u = Wz`, the rows read :math:`a_t^\top u \ge 1` for :math:`a_1 = (1, \epsilon)`,
    :math:`a_2 = (-2, \epsilon)`, :math:`a_3 = (-0.3, 3\epsilon)`: the first two are tight at
    :math:`u^\star = (0, 1/\epsilon)` (then :math:`a_3^\top u^\star = 3`), so
    :math:`W^{mm} = u^\star z^\top / \|z\|^2` and :math:`\|W^{mm}\| = 1/(\epsilon\|z\|)`, while the
    multipliers grow like :math:`1/\epsilon^2` and cancel.
    """
    X = np.array([[[0.0, 0.0], [-1.0, -eps], [2.0, -eps], [0.3, -3.0 * eps]]])
    data = sg.TokenData(X, Z=np.array([[1.0, 0.7]]), v=np.array([1.0, 0.0]))
    return sg.att_svm_constraints(data, np.array([0]))


@pytest.mark.parametrize("eps", [1e-4, 1e-6, 1e-9])
def test_wedge_certified_up_to_huge_norms(eps):
    cs = _wedge(eps)
    z = np.array([1.0, 0.7])
    W_exact = np.outer([0.0, 1.0 / eps], z) / (z @ z)
    res = solve_svm(cs, method="fast")
    assert res.status is Status.OPTIMAL, res.message
    np.testing.assert_allclose(res.W, W_exact, rtol=0, atol=1e-6 * np.linalg.norm(W_exact))
    _assert_feasible(cs, res.W)


def test_wedge_beyond_float64_resolution_is_decided_feasible_with_a_point():
    # eps = 1e-12: the rows are within 1e-12 (relative) of an infeasible set. In exact
    # arithmetic the problem is feasible with ||W|| ~ 8e11; the feasibility LP, posed on an
    # orthonormal basis of the row features, finds such a point (it used to answer
    # INFEASIBLE with a Farkas residual ~1e-12, accepted at the 1e-9 Farkas tolerance).
    cs = _wedge(1e-12)
    feas = check_feasibility(cs)
    assert feas.feasible and feas.status is Status.OPTIMAL, feas.message
    margins = np.einsum("ja,ab,jb->j", cs.A, feas.point, cs.B)
    assert np.all(margins >= 1.0)
    assert np.linalg.norm(feas.point) >= 1e11
    res = solve_svm(cs, method="fast")
    assert not res.status.is_infeasible, res.message


def _rotated_wedges(eps: float) -> sg.ConstraintSet:
    """Three rotated copies of the wedge with three queries in d = 3: the Gram representation."""
    rng = np.random.default_rng(0)
    base = np.array([[0.0, 0.0, 0.0], [-1.0, -eps, 0.0], [2.0, -eps, 0.0], [0.3, -3 * eps, 0.0]])
    Q, _ = np.linalg.qr(rng.standard_normal((3, 3)))
    X = np.stack(
        [base @ Q, (base + np.array([0.0, 0.0, 0.5])) @ Q[[1, 0, 2]], base[:, [1, 0, 2]] @ Q]
    )
    data = sg.TokenData(X, Z=rng.standard_normal((3, 3)), v=Q.T @ np.array([1.0, 0.0, 0.0]))
    return sg.att_svm_constraints(data, np.array([0, 0, 0]))


@pytest.mark.parametrize("eps", [1e-4, 1e-6])
def test_gram_represented_wedges_are_feasible_and_certified(eps):
    # at eps = 1e-6 the eigenvalue cut of G (1e-12 relative) used to drop the directions that
    # make the problem feasible: INFEASIBLE_INACCURATE for a feasible problem. (The naive cvxpy
    # model is no oracle here: Clarabel returns optimal_inaccurate with margins < 0.)
    cs = _rotated_wedges(eps)
    assert RowGeometry(cs).kind == "dual"
    res = solve_svm(cs, method="fast")
    assert res.status is Status.OPTIMAL, res.message
    margins = np.einsum("ja,ab,jb->j", cs.A, res.W, cs.B)
    assert margins.min() >= 1.0 - 1e-8
    # optimality from the maths: for lambda >= 0, c^T lambda - 1/2 ||sum lambda_j a_j b_j^T||^2
    # is a lower bound on 1/2 ||W'||^2 over every feasible W' (weak duality)
    lam = res.dual
    assert np.all(lam >= 0.0)
    lower = lam.sum() - 0.5 * np.linalg.norm(np.einsum("j,ja,jb->ab", lam, cs.A, cs.B)) ** 2
    upper = 0.5 * np.linalg.norm(res.W) ** 2
    assert upper >= 1e6  # the regime
    assert lower <= upper * (1 + 1e-12)
    assert upper - lower <= 1e-7 * upper


@pytest.mark.parametrize("norm", ["fro", "nuc", "spectral", ("lp", 1.0), ("lp", 2.5)])
def test_a_failed_answer_further_from_the_rows_than_the_verified_point_is_replaced(
    norm: object,
) -> None:
    """The selected token a rounding away from the segment of the other two: feasible, proved
    exactly, with a point of norm 4e17. fro and l_2.5 returned failed answers with margins of
    -1e4 and -2e7, spectral and l_1 no W at all; only nuc returned the verified point. Every
    norm now returns that point as an OPTIMAL_INACCURATE upper bound (found by an audit)."""
    X = np.array([[[0.2, 0.6], [0.1, 0.7], [0.3, 0.5]]])
    data = sg.TokenData(X, v=np.ones(2), Z=np.array([[1.0, 0.0]]))
    feas = sg.feasibility(data, [0])
    assert feas.feasible and feas.proof == "exact"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", sg.InaccurateSolutionWarning)
        res = sg.att_svm(data, [0], norm=norm)  # type: ignore[arg-type]
    assert res.status is sg.Status.OPTIMAL_INACCURATE and res.W is not None
    cs = res.constraints
    assert cs.apply(res.W).min() >= 1.0  # every row met: the verified point itself
    np.testing.assert_array_equal(res.W, feas.point)
    assert "a point was verified" in res.message


def test_feature_polish_stops_when_its_working_set_repeats(monkeypatch):
    """A round of the feature polish depends on its working set alone, so a set met before
    means the rounds cycle: it stops there, unsettled, instead of running all 2N rounds (this
    Graph-SVM solve made 1,564 identical rounds: two starts of 782, the same 159-row set whose
    least-norm point never solves the multipliers' equation)."""
    from svmgeo.solvers import _qp

    calls = []
    least_norm = _qp._least_norm
    monkeypatch.setattr(_qp, "_least_norm", lambda *a: calls.append(1) or least_norm(*a))
    data = sg.random_next_token_data(200, 6, 12, 12, tier_size=3, seed=0)
    res = sg.graph_svm(data)
    assert res.status is Status.OPTIMAL and res.certificate.passed, res.message
    # at most one round per start (two starts); whether the solve needs the polish at all
    # depends on the BLAS kernels' rounding (OpenBLAS's Haswell kernels: none; SkylakeX: 4
    # calls), so the cycle itself is tested directly below
    assert len(calls) <= 4


def test_feature_polish_stops_at_the_first_repeated_working_set(monkeypatch):
    """Multipliers that never solve the equation, with no negative one and no violated row:
    the round leaves the working set as it was, so the polish stops after one round,
    unsettled (before the cycle check it ran all max_rounds identical rounds)."""
    from svmgeo.solvers import _qp

    svm = sg.att_svm(sg.random_data(30, 3, 6, seed=0))
    geo = RowGeometry(svm.constraints)
    assert svm.status is Status.OPTIMAL and geo.kind == "primal"  # N = 60 rows in 36 dimensions
    support = np.asarray(svm.dual) > 0.0  # the optimum's rows: met, none violated
    calls = []
    least_norm = _qp._least_norm
    monkeypatch.setattr(_qp, "_least_norm", lambda *a: calls.append(1) or least_norm(*a))
    monkeypatch.setattr(_qp, "_row_multipliers", lambda PS, w, free: np.zeros(PS.shape[0]))
    out = _qp.polish_features(geo, support, max_rounds=50)
    assert out is not None
    _lam, _W, rounds, settled = out
    assert (rounds, settled, len(calls)) == (1, False, 1)
