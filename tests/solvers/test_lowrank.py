# SPDX-License-Identifier: BSD-3-Clause
"""Rank-constrained Att-SVM⋆ (factored, nonconvex) against its convex lower bound."""

from __future__ import annotations

import dataclasses
from functools import cache
from typing import Any

import numpy as np
import pytest

import svmgeo as sg
from svmgeo.solvers import Status
from svmgeo.solvers._factored import compress
from svmgeo.solvers._lowrank import factored_certificate, solve_lowrank
from svmgeo.solvers._nuclear import solve_nuclear
from svmgeo.solvers._result import downgrade
from svmgeo.testing import margin_rows

SHAPES: list[tuple[int, int, int, dict[str, Any]]] = [
    (3, 4, 5, {}),
    (4, 3, 6, {}),
    (5, 4, 8, {}),
    (4, 5, 6, {"query": 0}),
    (6, 4, 8, {"query": 0}),
    (2, 3, 6, {"n_queries": 3}),
    (2, 3, 6, {"query": "all", "mask": "causal"}),
]
CASES = [(n, T, d, kw, seed, m) for (n, T, d, kw) in SHAPES for seed in (0, 1) for m in (1, 2)]
IDS = [
    f"n{n}T{T}d{d}-{'-'.join(f'{k}={v}' for k, v in kw.items()) or 'cross'}-s{seed}-m{m}"
    for (n, T, d, kw, seed, m) in CASES
]
INDICES = pytest.mark.parametrize("index", range(len(CASES)), ids=IDS)


@cache
def _instance(n: int, T: int, d: int, kw: tuple[tuple[str, Any], ...], seed: int) -> Any:
    data = sg.random_data(n, T, d, seed=200 + seed, **dict(kw))
    return sg.att_svm_constraints(data, sg.optimal_tokens(data))


def _cs(index: int) -> sg.ConstraintSet:
    n, T, d, kw, seed, _ = CASES[index]
    return _instance(n, T, d, tuple(kw.items()), seed)


@cache
def _solved(index: int) -> Any:
    return solve_lowrank(_cs(index), CASES[index][5], seed=0)


def _nuc(W: np.ndarray) -> float:
    return float(np.linalg.svd(W, compute_uv=False).sum())


def _assert_status_matches_gap(res: Any, tol: float = 1e-8) -> None:
    """OPTIMAL only when certified global (the convex bound attained within ``tol``, or the
    convex optimum kept); a KKT point above the bound is LOCALLY_OPTIMAL, not a success."""
    assert res.relative_gap is not None
    if res.status is Status.OPTIMAL:
        assert res.success and res.status.has_solution
        assert res.relative_gap <= tol or "exact" in res.message, res.message
    else:
        assert res.status is Status.LOCALLY_OPTIMAL, res.message
        assert res.status.has_solution and not res.success and not res.status.is_inaccurate
        assert res.relative_gap > tol
        assert f"relative gap to the convex bound {res.relative_gap:.3e}" in res.message


@INDICES
def test_feasible_rank_m_and_above_convex_bound(index: int) -> None:
    cs, m = _cs(index), CASES[index][5]
    res = _solved(index)
    _assert_status_matches_gap(res)
    assert res.certificate is not None and res.certificate.passed
    assert res.rank == m and res.K.shape == (cs.d, m) and res.Q.shape == (cs.d, m)
    np.testing.assert_allclose(res.W, res.K @ res.Q.T, rtol=0, atol=1e-12)
    s = np.linalg.svd(res.W, compute_uv=False)
    assert np.count_nonzero(s > 1e-9 * s[0]) <= m
    margins = cs.apply(res.W)
    assert np.min(margins[cs.is_margin] - cs.rhs[cs.is_margin]) >= -1e-9
    convex = solve_nuclear(cs)
    np.testing.assert_allclose(res.lower_bound, convex.objective, rtol=1e-9)
    assert res.objective >= res.lower_bound - 1e-8 * max(1.0, res.lower_bound)
    assert res.relative_gap is not None and res.relative_gap >= -1e-8


@INDICES
def test_factored_identity_at_balanced_point(index: int) -> None:
    res = _solved(index)
    half = 0.5 * (np.sum(res.K**2) + np.sum(res.Q**2))
    np.testing.assert_allclose(half, res.objective, rtol=1e-12)
    np.testing.assert_allclose(half, _nuc(res.K @ res.Q.T), rtol=1e-9)
    scale = max(1.0, float(np.abs(res.K.T @ res.K).max()))
    np.testing.assert_allclose(res.K.T @ res.K, res.Q.T @ res.Q, atol=1e-8 * scale)


@INDICES
def test_kkt_of_factored_problem_rechecked(index: int) -> None:
    cs = _cs(index)
    res = _solved(index)
    lam = res.dual
    assert np.all(lam[cs.is_margin] >= 0.0)
    Lam = cs.adjoint(lam)
    scale = max(1.0, float(np.linalg.norm(res.K) + np.linalg.norm(res.Q)))
    np.testing.assert_allclose(res.K, Lam @ res.Q, rtol=0, atol=1e-7 * scale)
    np.testing.assert_allclose(res.Q, Lam.T @ res.K, rtol=0, atol=1e-7 * scale)
    slack = cs.apply(res.W) - cs.rhs
    np.testing.assert_allclose(lam * slack, 0.0, atol=1e-7)
    # the Lagrangian value equals the objective at a KKT point
    np.testing.assert_allclose(cs.rhs @ lam, res.objective, rtol=1e-7)


@INDICES
def test_message_states_local_or_global(index: int) -> None:
    res = _solved(index)
    if res.status is Status.LOCALLY_OPTIMAL:
        assert "local solution of the nonconvex rank-" in res.message
        assert "not certified globally optimal" in res.message
    else:
        assert res.status is Status.OPTIMAL, res.message
        assert "exact" in res.message or "global" in res.message


def test_large_gap_local_point_is_not_optimal() -> None:
    """A KKT point far above the convex bound (the issue's 80 % case) is LOCALLY_OPTIMAL."""
    gaps = {IDS[i]: _solved(i).relative_gap for i in range(len(CASES))}
    worst = max(gaps, key=lambda k: gaps[k])
    res = _solved(IDS.index(worst))
    assert res.relative_gap > 0.05, gaps  # the catalogue holds a genuinely local answer
    assert res.status is Status.LOCALLY_OPTIMAL, res.message
    assert not res.success and res.status.has_solution
    assert res.certificate is not None and res.certificate.passed  # a verified KKT point
    assert f"{res.relative_gap:.3e}" in res.message


@pytest.mark.parametrize("index", [0, 4, 8, 12, 20])
def test_rank_at_least_convex_rank_gives_zero_gap(index: int) -> None:
    cs = _cs(index)
    convex = solve_nuclear(cs)
    s = np.linalg.svd(convex.W, compute_uv=False)
    r = int(np.count_nonzero(s > 1e-7 * s[0]))
    for m in (r, r + 1, cs.d):
        res = solve_lowrank(cs, m, seed=0)
        assert res.status is Status.OPTIMAL and res.success, res.message
        assert abs(res.relative_gap) <= 1e-7
        assert "exact" in res.message
        np.testing.assert_allclose(res.W, convex.W, atol=1e-6 * max(1.0, np.abs(convex.W).max()))
        assert res.K.shape == (cs.d, m)


def test_more_restarts_never_hurt_and_seed_is_deterministic() -> None:
    index = IDS.index("n5T4d8-cross-s0-m2")
    cs = _cs(index)
    base = solve_lowrank(cs, 2, n_restarts=0)
    more = _solved(index)
    assert more.objective <= base.objective * (1 + 1e-10)
    again = solve_lowrank(cs, 2, seed=0)
    np.testing.assert_allclose(again.objective, more.objective, rtol=1e-12)


def test_rank1_not_beaten_by_random_feasible_points() -> None:
    index = IDS.index("n3T4d5-cross-s0-m1")
    cs = _cs(index)
    res = _solved(index)
    rng = np.random.default_rng(3)
    best = np.inf
    for _ in range(4000):
        k, q = rng.standard_normal(cs.d), rng.standard_normal(cs.d)
        m = (cs.A @ k) * (cs.B @ q)
        if np.all(m > 0):
            t = float(np.max(cs.rhs / m))
            best = min(best, t * np.linalg.norm(k) * np.linalg.norm(q))
    assert np.isfinite(best)  # the sample did find feasible rank-1 points
    assert res.objective <= best * (1 + 1e-9)


def test_perturbed_multipliers_fail_and_downgrade() -> None:
    index = IDS.index("n5T4d8-cross-s0-m1")
    cs = _cs(index)
    res = _solved(index)
    comp = compress(cs)
    At, Bt = cs.A @ comp.U, cs.B @ comp.V
    K, Q = comp.U.T @ res.K, comp.V.T @ res.Q
    lam = res.dual * 1.01
    cert = factored_certificate(cs, At, Bt, K, Q, lam, cs.apply(res.W), 1e-8)
    assert not cert.passed
    assert any("stationarity" in f for f in cert.failures)
    bad = downgrade(res, cert)
    assert bad.status is Status.OPTIMAL_INACCURATE and not bad.success
    assert "certificate check failed" in bad.message


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"rank": 0}, "'rank' parameter"),
        ({"rank": 1.5}, "'rank' parameter"),
        ({"rank": 1, "n_restarts": -1}, "'n_restarts' parameter"),
        ({"rank": 1, "max_iter": 0}, "'max_iter' parameter"),
        ({"rank": 1, "tol": -1.0}, "'tol' parameter"),
    ],
)
def test_bad_arguments_raise_problem_error(kwargs: dict[str, Any], match: str) -> None:
    with pytest.raises(sg.ProblemError, match=match):
        solve_lowrank(_cs(0), **kwargs)


def test_infeasible_convex_problem_is_passed_through() -> None:
    data = sg.random_data(1, 3, 4, seed=1)
    cs = sg.pair_constraints(data, [0, 0], [0, 0], [0, 1], [1, 0])
    res = solve_lowrank(cs, 1)
    assert res.status is Status.INFEASIBLE and res.W is None
    assert res.rank == 1


def test_rank1_infeasible_is_reported_not_raised() -> None:
    # W11 >= 1, W12 >= 1, W21 >= 1, W22 <= -1: feasible, but no rank-1 W = k qᵀ can do it
    # (W11 W22 = W12 W21 would need a negative number to equal a positive one)
    e = np.eye(2)
    A = np.array([e[0], e[0], e[1], -e[1]])
    B = np.array([e[0], e[1], e[0], e[1]])
    idx = np.zeros(4, dtype=np.int64)
    cs = sg.ConstraintSet(
        A=A,
        B=B,
        kind=np.zeros(4, dtype=np.int8),
        rhs=np.ones(4),
        seq=idx,
        query=idx,
        pref=idx,
        comp=idx + 1,
        n=1,
        K=1,
        T=2,
    )
    res = solve_lowrank(cs, 1, seed=0)
    assert res.status is Status.INFEASIBLE_INACCURATE and res.W is None
    assert "may be infeasible" in res.message
    assert res.lower_bound is not None and res.lower_bound > 0
    full = solve_lowrank(cs, 2)
    assert full.status is Status.OPTIMAL and "exact" in full.message
    assert np.min(cs.apply(full.W) - 1.0) >= -1e-9


def test_equality_rows_are_held_exactly() -> None:
    data = sg.random_data(5, 4, 8, seed=3)
    cs = sg.att_svm_constraints(data, sg.optimal_tokens(data))
    kind = np.where(np.arange(cs.N) % 4 == 0, sg.EQUALITY, sg.MARGIN)
    rhs = np.where(kind == sg.EQUALITY, 0.3, 1.0)
    cs_eq = sg.pair_constraints(data, cs.seq, cs.query, cs.pref, cs.comp, kind=kind, rhs=rhs)
    res = solve_lowrank(cs_eq, 1, seed=1)
    _assert_status_matches_gap(res)
    margins = cs_eq.apply(res.W)
    np.testing.assert_allclose(margins[kind == sg.EQUALITY], 0.3, atol=1e-9)
    assert np.min(margins[kind == sg.MARGIN] - 1.0) >= -1e-9
    assert res.objective >= res.lower_bound * (1 - 1e-9)


def test_lower_bound_is_a_bound_when_the_convex_solve_is_not_certified() -> None:
    """One row 1e8 times the others: the convex solve is not certified, and its objective
    (5.51) was reported as ``lower_bound`` above the rank-1 objective and the convex optimum
    (4.98, on the same rows each divided by its scale). The bound is now weak duality's
    c^T lam / ||Lambda||_2 of its multipliers, at most the optimum."""
    rng = np.random.default_rng(3)
    A, B = rng.standard_normal((4, 3)), rng.standard_normal((4, 3))
    scale = np.array([1.0, 1.0, 1.0, 1e8])
    res = sg.solve_svm(margin_rows(A * scale[:, None], B), norm="nuc", rank=1, seed=0)
    unit = dataclasses.replace(margin_rows(A, B), rhs=1.0 / scale)  # the same problem
    optimum = sg.solve_svm(unit, norm="nuc")
    assert optimum.status is Status.OPTIMAL, optimum.message
    assert res.lower_bound is not None and 0.0 < res.lower_bound
    assert res.lower_bound <= optimum.objective * (1.0 + 1e-8)
    assert res.objective is not None and res.lower_bound <= res.objective


def test_a_bound_taken_as_vacuous_never_reports_a_higher_rank_w_as_rank_m() -> None:
    """Regression: queries e1 and e1 + 1e-13 e2 span one dimension to the query-rank
    threshold (rtol 1e-12), so rank=1 is taken as vacuous and the convex problem is solved;
    its W (a verified feasible point here: singular values 1e13 and 1) has rank 2 (its rank-1
    truncation misses row 2 by 1), and the result said rank=1 with no word about it. Now the
    message says so and K, Q stay None."""
    e1, e2 = np.eye(2)
    z = np.zeros(3, int)
    cs = sg.ConstraintSet(
        np.array([e1, e2, -e2]), np.array([e1, e1 + 1e-13 * e2, e1]),
        np.full(3, sg.MARGIN, np.int8), np.array([1.0, 1.0, 0.0]), np.arange(3), z, z, z + 1,
        n=3, K=1, T=2,
    )  # fmt: skip
    with pytest.warns(sg.InaccurateSolutionWarning):
        res = sg.solve_svm(cs, norm="nuc", rank=1, seed=0)
    assert res.W is not None and np.linalg.matrix_rank(res.W) == 2
    assert res.status is not Status.OPTIMAL and res.K is None and res.Q is None
    assert "but W is not of rank 1: its rank-1 truncation misses the rows" in res.message
