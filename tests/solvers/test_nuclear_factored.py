# SPDX-License-Identifier: BSD-3-Clause
"""Att-SVM⋆ by the factored primal + dual certificate (issue 16), against the naive cvxpy model."""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import pytest

import svmgeo as sg
from svmgeo.solvers import Status, solve_naive_cvxpy
from svmgeo.solvers import _nuclear_factored as factored
from svmgeo.solvers._nuclear import solve_nuclear
from svmgeo.solvers._nuclear_factored import GAP_TOL, solve_nuclear_factored

TIGHT = {"tol_gap_abs": 1e-10, "tol_gap_rel": 1e-10, "tol_feas": 1e-10}

# d >= max(T - 1, n * K): Att-SVM(opt) is feasible (Theorem 1)
CASES: list[tuple[int, int, int, dict[str, Any], int]] = [
    (4, 4, 6, {}, 0),
    (6, 5, 8, {}, 1),
    (8, 4, 12, {}, 2),
    (5, 5, 7, {"query": 0}, 3),
    (3, 4, 9, {"n_queries": 3}, 4),
    (2, 4, 8, {"query": "all", "mask": "causal"}, 5),
]


def _cs(n: int, T: int, d: int, kw: dict[str, Any], seed: int) -> sg.ConstraintSet:
    data = sg.random_data(n, T, d, seed=seed, **kw)
    return sg.att_svm_constraints(data, sg.optimal_tokens(data))


def _certified_sdp(cs: sg.ConstraintSet) -> sg.SVMResult:
    """The compressed SDP (the reference path) from the first backend whose answer certifies."""
    for backend in ("scs", "clarabel"):
        sdp = solve_nuclear(cs, solver=backend)
        if sdp.status is Status.OPTIMAL:
            return sdp
    raise AssertionError(f"no SDP backend certified: {sdp.message}")


def _assert_certified(cs: sg.ConstraintSet, res: sg.SVMResult) -> None:
    """The dual certificate, recomputed here from the definitions (SPEC §6, nuclear)."""
    W, lam = res.W, res.dual
    margins = np.einsum("ja,ab,jb->j", cs.A, W, cs.B)
    assert margins.min() >= 1.0 - 1e-12
    assert lam.min() >= 0.0
    Lam = np.einsum("j,ja,jb->ab", lam, cs.A, cs.B)
    assert np.linalg.norm(Lam, 2) <= 1.0 + 1e-12  # dual feasible: c'λ is a lower bound
    nuc = np.linalg.svd(W, compute_uv=False).sum()
    assert abs(nuc - lam.sum()) <= GAP_TOL * nuc  # lower bound = upper bound: optimal
    np.testing.assert_allclose(res.objective, nuc, rtol=1e-13)


@pytest.mark.parametrize("case", CASES, ids=[str(c[:4]) for c in CASES])
def test_factored_against_naive_cvxpy(case: tuple[int, int, int, dict[str, Any], int]) -> None:
    cs = _cs(*case)
    res = solve_nuclear_factored(cs)
    assert res.status is Status.OPTIMAL, res.message
    assert res.solver == "svmgeo-factored"
    assert res.certificate.passed and res.certificate.duality_gap <= GAP_TOL
    W_ref, status, value, _ = solve_naive_cvxpy(cs, "nuc", solver="CLARABEL", **TIGHT)
    assert status == "optimal"
    np.testing.assert_allclose(res.objective, value, rtol=1e-8)
    # the naive model's W is accurate to ~1e-6 only (its objective ~1e-11 off; W errs like the
    # square root); svmgeo's KKT-polished SDP is the sharper reference for W
    np.testing.assert_allclose(res.W, W_ref, atol=5e-6 * np.abs(W_ref).max())
    sdp = _certified_sdp(cs)
    np.testing.assert_allclose(res.W, sdp.W, atol=1e-8 * np.abs(sdp.W).max())
    _assert_certified(cs, res)


def test_auto_uses_the_factored_path_and_agrees_with_the_sdp() -> None:
    cs = _cs(10, 6, 30, {}, 7)
    res = solve_nuclear(cs)
    sdp = _certified_sdp(cs)
    assert res.solver == "svmgeo-factored" and res.status is Status.OPTIMAL, res.message
    np.testing.assert_allclose(res.objective, sdp.objective, rtol=1e-9)
    np.testing.assert_allclose(res.W, sdp.W, atol=1e-7 * np.abs(sdp.W).max())
    _assert_certified(cs, res)


def test_equality_rows() -> None:
    data = sg.random_data(3, 4, 7, seed=5)
    cs = sg.att_svm_constraints(data, sg.optimal_tokens(data))
    kind = np.where(np.arange(cs.N) % 4 == 0, sg.EQUALITY, sg.MARGIN)
    rhs = np.where(kind == sg.EQUALITY, 0.3, 1.0)
    cs_eq = sg.pair_constraints(data, cs.seq, cs.query, cs.pref, cs.comp, kind=kind, rhs=rhs)
    res = solve_nuclear_factored(cs_eq)
    _, status, value, _ = solve_naive_cvxpy(cs_eq, "nuc", solver="CLARABEL", **TIGHT)
    assert status == "optimal"
    assert res.status is Status.OPTIMAL, res.message
    np.testing.assert_allclose(res.objective, value, rtol=1e-8)
    np.testing.assert_allclose(res.margins[kind == sg.EQUALITY], 0.3, atol=1e-10)
    assert np.all(res.margins[kind == sg.MARGIN] >= 1.0 - 1e-12)


def test_unpolished_answer_is_not_optimal_and_auto_falls_back(monkeypatch) -> None:
    cs = _cs(6, 5, 8, {}, 1)
    # without the KKT polish the first-order answer (~1e-5) cannot meet the 1e-9 gap
    monkeypatch.setattr(factored, "_polish_active_set", lambda *args, **kw: None)
    res = solve_nuclear_factored(cs)
    assert res.status is not Status.OPTIMAL
    assert "did not settle" in res.message
    fallback = solve_nuclear(cs)
    assert fallback.solver in ("scs", "clarabel") and fallback.status is Status.OPTIMAL
    _, _, value, _ = solve_naive_cvxpy(cs, "nuc", solver="CLARABEL", **TIGHT)
    np.testing.assert_allclose(fallback.objective, value, rtol=1e-7)


def test_gap_above_the_bound_downgrades(monkeypatch) -> None:
    cs = _cs(4, 4, 6, {}, 0)
    # a certificate that passes at tol but whose gap exceeds GAP_TOL must not be OPTIMAL
    monkeypatch.setattr(factored, "GAP_TOL", 0.0)
    res = solve_nuclear_factored(cs)
    assert res.status is Status.OPTIMAL_INACCURATE
    assert "recomputed gap" in res.message


def test_escape_adds_the_top_pair_of_lambda_in_a_spare_column() -> None:
    rng = np.random.default_rng(0)
    P, R = rng.normal(size=(12, 5)), rng.normal(size=(12, 3))
    rows = factored._Rows(P, R, np.ones(12), np.ones(12, dtype=bool))
    K = np.zeros((5, 2))
    Q = np.zeros((3, 2))
    K[:, 0], Q[:, 0] = rng.normal(size=5), rng.normal(size=3)
    y = 10.0 * np.abs(rng.normal(size=12))  # ||Λ||_2 > 1: not dual feasible
    grown = factored._escape(rows, K, Q, y)
    assert grown is not None
    K2, Q2 = grown
    np.testing.assert_allclose(K2 @ Q2.T - K @ Q.T, np.outer(K2[:, 1], Q2[:, 1]), atol=1e-12)
    U, _, Vt = np.linalg.svd(rows.adjoint(y))
    np.testing.assert_allclose(abs(K2[:, 1] @ U[:, 0]), np.linalg.norm(K2[:, 1]), rtol=1e-12)
    np.testing.assert_allclose(abs(Q2[:, 1] @ Vt[0]), np.linalg.norm(Q2[:, 1]), rtol=1e-12)
    assert factored._escape(rows, K, Q, 1e-6 * y) is None  # dual feasible: nothing to add


def test_widen_adds_the_escape_pairs_of_lambda_off_the_range_of_x() -> None:
    rng = np.random.default_rng(1)
    P, R = rng.normal(size=(30, 6)), rng.normal(size=(30, 4))
    rows = factored._Rows(P, R, np.ones(30), np.ones(30, dtype=bool))
    K, Q = rng.normal(size=(6, 2)), rng.normal(size=(4, 2))  # rank 2: every column used
    y = 10.0 * np.abs(rng.normal(size=30))
    Ux, _, Vxt = np.linalg.svd(K @ Q.T, full_matrices=False)
    off = rows.adjoint(y)
    off = (np.eye(6) - Ux[:, :2] @ Ux[:, :2].T) @ off @ (np.eye(4) - Vxt[:2].T @ Vxt[:2])
    U, s, Vt = np.linalg.svd(off)
    extra = int(np.count_nonzero(s > 1.0 + 1e-4))
    assert extra == 2  # both free directions are descent directions here
    grown = factored._widen(rows, K, Q, y)
    assert grown is not None
    K2, Q2 = grown
    assert K2.shape == (6, 2 + extra) and Q2.shape == (4, 2 + extra)
    np.testing.assert_allclose(K2[:, :2] @ Q2[:, :2].T, K @ Q.T, atol=1e-12)
    for i in range(extra):  # column 2 + i lies along the i-th singular pair off X's range
        np.testing.assert_allclose(abs(K2[:, 2 + i] @ U[:, i]), np.linalg.norm(K2[:, 2 + i]))
        np.testing.assert_allclose(abs(Q2[:, 2 + i] @ Vt[i]), np.linalg.norm(Q2[:, 2 + i]))
    # Λ's singular values off X's range at most 1: X's width suffices, nothing is added
    assert factored._widen(rows, K, Q, y / (1.01 * s[0])) is None
    # a spare column: the first phase's _escape acts instead
    assert (
        factored._widen(rows, np.hstack([K, 0 * K[:, :1]]), np.hstack([Q, 0 * Q[:, :1]]), y) is None
    )


def test_a_width_equal_to_the_optimal_rank_is_kept() -> None:
    # regression for (n, T, d) = (100, 20, 1000), seed 2 (issue 16): the 16-column answer had
    # rank 16 and was optimal (Λ's 17th singular value 0.995), but "every column used" doubled
    # the width to 32; the surplus columns, with curvature 1 - σ_i(Λ) ≈ 0.005, left L-BFGS
    # crawling (15 435 steps, gap 0.64) and the answer uncertified. Here: rank 3 with width 3.
    cs = _cs(10, 6, 30, {}, 7)
    full = solve_nuclear_factored(cs)
    assert full.status is Status.OPTIMAL, full.message
    rank = full.extras["rank"]
    assert rank == 3 and rank < full.extras["width"]  # the instance the test is about
    res = solve_nuclear_factored(cs, width=rank)
    assert res.status is Status.OPTIMAL, res.message
    assert res.extras["width"] == rank and res.extras["widenings"] == 0
    np.testing.assert_allclose(res.objective, full.objective, rtol=1e-12)
    _assert_certified(cs, res)


def test_a_too_narrow_start_is_widened_along_the_dual_certificate() -> None:
    cs = _cs(10, 6, 30, {}, 7)  # optimum of rank 3
    res = solve_nuclear_factored(cs, width=1)
    assert res.status is Status.OPTIMAL, res.message
    assert res.extras["widenings"] >= 1 and res.extras["width"] >= 3
    sdp = _certified_sdp(cs)
    np.testing.assert_allclose(res.objective, sdp.objective, rtol=1e-9)
    _assert_certified(cs, res)


@pytest.mark.slow
def test_factored_against_sdp_at_a_research_size() -> None:
    cs = _cs(15, 10, 100, {}, 1)
    res = solve_nuclear(cs)
    sdp = solve_nuclear(cs, solver="scs")
    assert res.solver == "svmgeo-factored" and res.status is Status.OPTIMAL, res.message
    np.testing.assert_allclose(res.objective, sdp.objective, rtol=1e-8)
    _assert_certified(cs, res)
    assert dataclasses.asdict(res.certificate)["duality_gap"] <= GAP_TOL


def test_no_rows_and_zero_rows() -> None:
    data = sg.random_data(2, 3, 4, seed=0)
    cs = sg.att_svm_constraints(data, sg.optimal_tokens(data))
    empty = sg.pair_constraints(data, cs.seq[:0], cs.query[:0], cs.pref[:0], cs.comp[:0])
    res = solve_nuclear_factored(empty)
    assert res.status is Status.OPTIMAL and res.objective == 0.0
    same = sg.pair_constraints(data, cs.seq[:1], cs.query[:1], cs.pref[:1], cs.pref[:1])
    assert solve_nuclear_factored(same).status is Status.INFEASIBLE  # a_j = 0 but needs 1


@pytest.mark.parametrize("m", [1, 4, 10])
def test_compact_lbfgs_product_is_the_two_loop_recursion(m):
    # oracle: the textbook two-loop recursion (Nocedal & Wright, Algorithm 7.4), H0 = gamma I
    rng = np.random.default_rng(m)
    n = 30
    A = rng.normal(size=(n, n))
    S = rng.normal(size=(m, n))
    Y = S @ (A @ A.T + n * np.eye(n))  # s_i^T y_i > 0
    g = rng.normal(size=n)
    gamma = float(S[-1] @ Y[-1]) / float(Y[-1] @ Y[-1])
    q, alphas = g.copy(), []
    for s, y in zip(S[::-1], Y[::-1], strict=True):
        a = float(s @ q) / float(s @ y)
        q -= a * y
        alphas.append(a)
    q *= gamma
    for s, y, a in zip(S, Y, alphas[::-1], strict=True):
        q += (a - float(y @ q) / float(s @ y)) * s
    got = factored._inverse_hessian_times(g, S, Y, gamma)
    np.testing.assert_allclose(got, q, rtol=1e-10, atol=1e-12 * np.abs(q).max())


def test_a_checkpoint_polish_that_certifies_ends_phase_one_with_the_same_answer(
    monkeypatch,
) -> None:
    # issue 25: at (10, 10, 20) the KKT polish certifies after the first augmented-Lagrangian
    # subproblem; the answer must be the one phase 1 run to its end gives (checkpoints off)
    cs = _cs(10, 10, 20, {}, 0)
    early = solve_nuclear_factored(cs)
    assert early.status is Status.OPTIMAL, early.message
    assert "phase-1 checkpoint" in early.message
    _assert_certified(cs, early)
    monkeypatch.setattr(factored, "_EARLY_MAX_KKT", 0)  # every checkpoint try declines
    full = solve_nuclear_factored(cs)
    assert full.status is Status.OPTIMAL and "checkpoint" not in full.message, full.message
    assert early.extras["lbfgs_iterations"] < full.extras["lbfgs_iterations"]
    assert early.extras["rank"] == full.extras["rank"]
    np.testing.assert_allclose(early.objective, full.objective, rtol=1e-13)
    np.testing.assert_allclose(early.W, full.W, atol=1e-12 * np.abs(full.W).max())
    np.testing.assert_allclose(early.dual, full.dual, atol=1e-10 * np.abs(full.dual).max())


def test_a_checkpoint_try_that_does_not_certify_lets_phase_one_go_on(monkeypatch) -> None:
    # a try whose certificate fails (here: the gap screen always says no) must not stop phase 1
    cs = _cs(6, 5, 8, {}, 1)
    assert "phase-1 checkpoint" in solve_nuclear_factored(cs).message  # what is switched off
    monkeypatch.setattr(factored, "_closes_gap", lambda *args: False)
    res = solve_nuclear_factored(cs)
    assert res.status is Status.OPTIMAL and "checkpoint" not in res.message, res.message
    _assert_certified(cs, res)


def test_compress_is_computed_once_per_constraint_set() -> None:
    cs = _cs(4, 4, 6, {}, 0)
    comp = factored.compress(cs)
    assert factored.compress(cs) is comp
    for array in (comp.U, comp.V, comp.long, comp.short):
        assert not array.flags.writeable
    np.testing.assert_allclose(comp.U.T @ comp.U, np.eye(comp.U.shape[1]), atol=1e-13)
    np.testing.assert_allclose(cs.A @ comp.U @ comp.U.T, cs.A, atol=1e-13)
