# SPDX-License-Identifier: BSD-3-Clause
"""Exact Frobenius Att-SVM: oracle comparison, Lemma 1, certificates and their downgrade."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import svmgeo as sg
from svmgeo.constraints import EQUALITY, MARGIN, pair_constraints
from svmgeo.solvers import (
    Status,
    frobenius_certificate,
    solve_frobenius,
    solve_naive_cvxpy,
    solve_svm,
)
from svmgeo.solvers._result import downgrade
from svmgeo.testing import assert_farkas, assert_feasible_point

CLARABEL_TIGHT = {"tol_gap_abs": 1e-10, "tol_gap_rel": 1e-10, "tol_feas": 1e-10}

ATTENTION = [
    {},
    {"query": 0},
    {"n_queries": 3},
    {"query": "all"},
    {"query": "all", "mask": "causal"},
]


def _instances() -> list[tuple[int, int, int, dict, int]]:
    """60 seeded instances: every attention type, tiny to d < T (some infeasible)."""
    rng = np.random.default_rng(2024)
    out = [(1, 2, 1, {}, 0), (1, 2, 1, {"query": 0}, 1)]
    for seed in range(58):
        n = int(rng.integers(1, 5))
        T = int(rng.integers(2, 6))
        d = int(rng.integers(1, 7))
        out.append((n, T, d, ATTENTION[seed % len(ATTENTION)], seed))
    return out


def _oracle(cs: sg.ConstraintSet) -> tuple[np.ndarray | None, str]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # cvxpy warns on inaccurate solutions
        W, status, _, _ = solve_naive_cvxpy(cs, solver="CLARABEL", **CLARABEL_TIGHT)
    return W, status


def test_oracle_comparison_on_seeded_instances():
    n_feasible = n_infeasible = 0
    for n, T, d, kw, seed in _instances():
        data = sg.random_data(n, T, d, seed=seed, **kw)
        cs = sg.att_svm_constraints(data, sg.optimal_tokens(data, ties="first"))
        res = solve_svm(cs, method="fast")
        W_ref, ref_status = _oracle(cs)
        where = f"instance n={n}, T={T}, d={d}, {kw}, seed={seed}"
        assert res.status.is_infeasible == ref_status.startswith("infeasible"), where
        if res.status.is_infeasible:
            n_infeasible += 1
            assert res.W is None and res.farkas is not None, where
            assert_farkas(cs, res.farkas)
            continue
        n_feasible += 1
        assert res.status is Status.OPTIMAL, (where, res.message)
        assert res.certificate is not None and res.certificate.passed
        assert_feasible_point(cs, res.W, rtol=0.0, atol=1e-12)
        assert W_ref is not None
        # the oracle is the QP min 1/2 ||W||_F^2 solved tightly by Clarabel: W to 1e-6 ...
        np.testing.assert_allclose(res.W, W_ref, rtol=0, atol=1e-6 * np.linalg.norm(W_ref))
        # ... and certify optimality against the oracle exactly: for the unique minimiser W* and
        # any feasible W', strong convexity gives ||W' - W*||^2 <= ||W'||^2 - ||W*||^2.
        m_ref = cs.apply(W_ref)
        Wp = W_ref * max(1.0, float(np.max(cs.rhs / m_ref)))  # make the oracle exactly feasible
        lhs = np.linalg.norm(Wp - res.W) ** 2
        rhs = np.linalg.norm(Wp) ** 2 - np.linalg.norm(res.W) ** 2
        assert lhs <= rhs + 1e-12 * np.linalg.norm(Wp) ** 2, where
    assert n_feasible >= 40 and n_infeasible >= 3


@pytest.mark.parametrize(("n", "T", "d"), [(20, 10, 20), (12, 6, 30)])
def test_larger_instances_match_oracle(n, T, d):
    data = sg.random_data(n, T, d, seed=n + d)
    cs = sg.att_svm_constraints(data, sg.optimal_tokens(data))
    res = solve_frobenius(cs)
    W_ref, status = _oracle(cs)
    assert status.startswith("optimal") and W_ref is not None
    assert res.success, res.message
    np.testing.assert_allclose(res.W, W_ref, rtol=0, atol=1e-6 * np.linalg.norm(W_ref))
    assert res.objective <= np.linalg.norm(W_ref) * (1 + 1e-9)


@pytest.mark.parametrize("seed", range(5))
def test_lemma1_solution_lives_on_query_span(seed):
    # n < d, so span{z_i} is a proper subspace
    data = sg.random_data(3, 5, 8, seed=seed)
    res = sg.att_svm(data)
    assert res.success
    P = sg.query_projector(data.queries)
    np.testing.assert_allclose(res.W @ P, res.W, atol=1e-9 * np.linalg.norm(res.W))
    s = np.linalg.svd(res.W, compute_uv=False)
    assert np.all(s[data.n :] <= 1e-9 * s[0])


def test_kkt_representation_and_support_vectors():
    data = sg.random_data(6, 5, 7, seed=11)
    res = sg.att_svm(data)
    cs = res.constraints
    # W = sum lambda_j a_j b_j^T with lambda >= 0, nonzero only where the margin is tight
    W = np.einsum("j,ja,jb->ab", res.dual, cs.A, cs.B)
    np.testing.assert_allclose(res.W, W, atol=1e-12 * np.linalg.norm(W))
    assert np.all(res.dual >= 0)
    support = res.dual > 1e-9 * res.dual.max()
    np.testing.assert_allclose(res.margins[support], 1.0, atol=1e-11)
    assert np.all(res.margins >= 1.0 - 1e-12)
    np.testing.assert_allclose(res.objective, np.linalg.norm(res.W))
    # duality: ||W||^2 = sum lambda_j (c_j = 1)
    np.testing.assert_allclose(np.linalg.norm(res.W) ** 2, res.dual.sum(), rtol=1e-10)


def test_primal_representation_path_used_and_exact():
    # d small, many rows: the compressed primal (r1 r2 < N) and the interior-point method
    data = sg.random_data(10, 6, 3, seed=1)  # a feasible draw with d < T
    cs = sg.att_svm_constraints(data, sg.optimal_tokens(data))
    assert sg.check_feasibility(cs).feasible
    res = solve_frobenius(cs)
    assert res.extras["representation"] == "primal"
    assert res.success, res.message
    W_ref, _ = _oracle(cs)
    np.testing.assert_allclose(res.W, W_ref, rtol=0, atol=1e-6 * np.linalg.norm(W_ref))


def test_equality_rows_against_oracle():
    data = sg.random_data(3, 5, 6, seed=3)
    i = np.repeat(np.arange(3), 4)
    q = np.tile(np.arange(1, 5), 3)
    kind = np.where(q <= 1, EQUALITY, MARGIN)
    rhs = np.where(q <= 1, 0.5, 1.0)
    cs = pair_constraints(data, i, np.zeros(12, int), np.zeros(12, int), q, kind=kind, rhs=rhs)
    res = solve_svm(cs)
    assert res.success, res.message
    assert_feasible_point(cs, res.W, rtol=0.0, atol=1e-12)
    W_ref, status = _oracle(cs)
    assert status == "optimal"
    np.testing.assert_allclose(res.W, W_ref, rtol=0, atol=1e-6 * np.linalg.norm(W_ref))
    assert np.any(res.dual[kind == EQUALITY] < 0)  # free multipliers really used


def test_no_rows_gives_zero():
    data = sg.TokenData(np.ones((2, 1, 3)), Z=np.ones((2, 3)), v=np.ones(3))
    res = sg.att_svm(data)
    assert res.success and res.constraints.N == 0
    np.testing.assert_array_equal(res.W, np.zeros((3, 3)))
    assert res.objective == 0.0


def test_certificate_downgrade_names_the_residual():
    data = sg.random_data(4, 4, 6, seed=2)
    res = solve_frobenius(sg.att_svm_constraints(data, sg.optimal_tokens(data)))
    assert res.success
    cs = res.constraints
    W_bad = res.W + 1e-4 * np.random.default_rng(0).standard_normal(res.W.shape)
    cert = frobenius_certificate(cs, W_bad, res.dual, 1e-8)
    assert not cert.passed and cert.stationarity > 1e-8
    down = downgrade(res, cert)
    assert down.status is Status.OPTIMAL_INACCURATE
    assert "stationarity" in down.message and not down.success

    lam_bad = res.dual.copy()
    lam_bad[np.argmin(lam_bad)] = -1e-3
    cert = frobenius_certificate(cs, res.W, lam_bad, 1e-8)
    assert "dual infeasibility" in " ".join(cert.failures)
    assert downgrade(res, cert).status is Status.OPTIMAL_INACCURATE

    cert = frobenius_certificate(cs, 0.9 * res.W, 0.81 * res.dual, 1e-8)
    assert any(f.startswith("primal infeasibility") for f in cert.failures)


def test_infeasible_input_to_solver_is_a_status_not_an_exception():
    # two tokens identical to the selected one: no W, and solve_frobenius alone must not crash
    X = np.array([[[1.0, 0.0], [-1.0, 0.0], [0.0, 0.0]]])
    data = sg.TokenData(X, Z=np.array([[1.0, 0.0]]), v=np.ones(2))
    cs = sg.att_svm_constraints(data, np.array([2]))
    res = solve_frobenius(cs, max_iter=30)
    assert not res.success
    assert res.status in (Status.MAX_ITER, Status.NUMERICAL_ERROR, Status.OPTIMAL_INACCURATE)


@pytest.mark.parametrize("method", ["ipm", "clarabel"])
@pytest.mark.parametrize(
    ("n", "T", "d", "kw", "kind"),
    [(6, 5, 8, {}, "dual"), (10, 6, 3, {}, "primal"), (4, 4, 5, {"query": "all"}, "primal")],
)
def test_every_inner_method_polishes_to_the_same_optimum(method, n, T, d, kw, kind):
    from svmgeo.solvers import _geometry, _qp

    data = sg.random_data(n, T, d, seed=1, **kw)
    cs = sg.att_svm_constraints(data, sg.optimal_tokens(data, ties="first"))
    assert sg.check_feasibility(cs).feasible
    ref = solve_frobenius(cs)
    assert ref.success
    geo = _geometry.RowGeometry(cs)
    assert geo.kind == kind
    inner = _qp.interior_point if method == "ipm" else _qp.clarabel_qp
    lam, _, ok = (
        inner(geo, solver_tol=1e-10, max_iter=100) if method == "ipm" else inner(geo, max_iter=100)
    )
    assert ok
    # the raw answer is close; the polish makes it exact
    W_raw = cs.adjoint(lam)
    np.testing.assert_allclose(W_raw, ref.W, atol=1e-6 * np.linalg.norm(ref.W))
    S0 = ~geo.margin | (lam > geo.matvec(lam) - geo.c)
    lam_p, _, settled = _qp.polish_active_set(geo, lam, S0, max_rounds=10)
    assert settled
    W = cs.adjoint(lam_p)
    np.testing.assert_allclose(W, ref.W, atol=1e-9 * np.linalg.norm(ref.W))
    assert frobenius_certificate(cs, W, lam_p, 1e-8).passed


@pytest.mark.parametrize("n, T, d, seed", [(12, 10, 20, 0), (20, 10, 20, 2), (6, 5, 8, 1)])
def test_polish_from_every_row_tight_gives_the_general_rounds_bits(n, T, d, seed):
    """The first round from "every row tight" (``lam0 = S0 = None``: G^{-1}c checked on the
    round's own margins) ends where the general round from lambda = 0 on every row does."""
    from svmgeo.solvers import _geometry, _qp

    data = sg.random_data(n, T, d, seed=seed)
    cs = sg.att_svm_constraints(data, sg.optimal_tokens(data))
    fast = _qp.polish_active_set(_geometry.RowGeometry(cs), None, None, max_rounds=8)
    ones = np.ones(cs.N, dtype=bool)
    general = _qp.polish_active_set(_geometry.RowGeometry(cs), np.zeros(cs.N), ones, max_rounds=8)
    assert fast[1:] == general[1:] and fast[2]
    np.testing.assert_allclose(fast[0], general[0], rtol=0, atol=0)


def test_warm_start_is_polished_and_bad_warm_start_is_harmless():
    data = sg.random_data(5, 5, 6, seed=9)
    cs = sg.att_svm_constraints(data, sg.optimal_tokens(data))
    ref = solve_frobenius(cs)
    warm = solve_frobenius(cs, warm_start=ref.dual * (1 + 1e-6))
    assert warm.success and warm.solver == "svmgeo-warm-start"
    np.testing.assert_allclose(warm.W, ref.W, atol=1e-10 * np.linalg.norm(ref.W))
    junk = solve_frobenius(cs, warm_start=np.random.default_rng(0).normal(size=cs.N))
    assert junk.success
    np.testing.assert_allclose(junk.W, ref.W, atol=1e-9 * np.linalg.norm(ref.W))


def _many_support_vectors() -> sg.ConstraintSet:
    """N = 450 rows at d = 200, nearly all of them support vectors (G close to diagonal)."""
    data = sg.random_data(50, 10, 200, seed=3)
    return sg.att_svm_constraints(data, sg.optimal_tokens(data))


@pytest.mark.parametrize("every", [7, 2], ids=["products-with-G", "G_SS-gathered"])
def test_jacobi_cg_solve_meets_the_factor_accuracy(monkeypatch, every):
    """CG with products by all of G (S holds 6/7 of the rows) or by G_SS gathered (1/2)."""
    from svmgeo.solvers import _geometry
    from svmgeo.solvers._geometry import cho_factor, cho_solve

    monkeypatch.setattr(_geometry, "_cg_first", lambda size, N: True)
    cs = _many_support_vectors()
    geo = _geometry.RowGeometry(cs)
    assert geo.kind == "dual"
    G = geo.gram()
    S = np.flatnonzero(np.arange(cs.N) % every != 0)
    assert _geometry._gather_pays(S.size, cs.N) == (every == 2)
    r = np.random.default_rng(5).normal(size=S.size)
    calls: list[bool] = []
    cg = _geometry.RowGeometry._jacobi_cg

    def spy(self, S_, r_, gmax):
        x = cg(self, S_, r_, gmax)
        calls.append(x is not None)
        return x

    monkeypatch.setattr(_geometry.RowGeometry, "_jacobi_cg", spy)
    x = geo.min_norm_solve(S, r)
    assert calls == [True]
    assert geo._last is None and geo._cg_block is None  # no G_SS factored, no gather kept
    GSS = G[np.ix_(S, S)]
    ref = cho_solve(cho_factor(GSS), r)
    bound = 1e-11 * (np.diagonal(GSS).max() * max(np.abs(x).max(), 1.0) + np.abs(r).max())
    np.testing.assert_allclose(GSS @ x, r, rtol=0, atol=bound)
    np.testing.assert_allclose(x, ref, rtol=0, atol=1e-9 * np.abs(ref).max())


def test_jacobi_cg_gives_the_factored_optimum(monkeypatch):
    from svmgeo.solvers import _geometry

    cs = _many_support_vectors()
    monkeypatch.setattr(_geometry.RowGeometry, "_jacobi_cg", lambda self, S, r, gmax: None)
    ref = solve_svm(cs)
    monkeypatch.undo()
    used: list[int] = []
    cg = _geometry.RowGeometry._jacobi_cg

    def spy(self, S, r, gmax):
        used.append(S.size)
        return cg(self, S, r, gmax)

    monkeypatch.setattr(_geometry, "_cg_first", lambda size, N: True)
    monkeypatch.setattr(_geometry.RowGeometry, "_jacobi_cg", spy)
    res = solve_svm(cs)
    assert used  # the CG path ran
    assert res.status == ref.status and res.proof == ref.proof == "exact"
    np.testing.assert_allclose(res.objective, ref.objective, rtol=1e-12)
    np.testing.assert_allclose(res.W, ref.W, atol=1e-10 * np.linalg.norm(ref.W))
    assert frobenius_certificate(cs, res.W, res.dual, 1e-8).passed


@pytest.mark.parametrize("size", [447, 225], ids=["products-with-G", "G_SS-gathered"])
def test_jacobi_cg_falls_back_to_the_factor_when_it_stalls(monkeypatch, size):
    """The factor after a stalled CG; with G_SS gathered for CG, of that same block."""
    from svmgeo.solvers import _geometry

    monkeypatch.setattr(_geometry, "_cg_first", lambda size, N: True)
    monkeypatch.setattr(_geometry, "_CG_PRODUCTS", 1)  # one product: never accurate enough
    cs = _many_support_vectors()
    geo = _geometry.RowGeometry(cs)
    S = np.arange(size)
    gathers: list[int] = []
    block = _geometry._block
    monkeypatch.setattr(
        _geometry, "_block", lambda G, R, C: gathers.append(R.size) or block(G, R, C)
    )
    r = np.random.default_rng(6).normal(size=S.size)
    x = geo.min_norm_solve(S, r)
    assert geo._last is not None and np.array_equal(geo._last[0], S)  # factored after all
    assert gathers == [size] and geo._cg_block is None  # G_SS gathered once, then let go
    GSS = geo.gram()[np.ix_(S, S)]
    bound = 1e-11 * (np.diagonal(GSS).max() * max(np.abs(x).max(), 1.0) + np.abs(r).max())
    np.testing.assert_allclose(GSS @ x, r, rtol=0, atol=bound)


def test_compressed_width_counts_distinct_queries_by_value() -> None:
    """The count of distinct query vectors (a bound on the compressed dimension) compares rows
    as np.unique(axis=0) does, by value: -0.0 equals 0.0, and rows that differ in one entry
    differ."""
    from svmgeo.solvers._geometry import _distinct_rows

    rng = np.random.default_rng(0)
    for _ in range(300):
        n, d = rng.integers(1, 25), rng.integers(1, 5)
        values = rng.choice([0.0, -0.0, 1.0, -1.0, 0.5, 1e-300, 1e300], size=(n, d))
        M = values[rng.integers(0, n, size=n)]  # repeated rows
        assert _distinct_rows(M) == np.unique(M, axis=0).shape[0]
