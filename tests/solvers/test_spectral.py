# SPDX-License-Identifier: BSD-3-Clause
"""The spectral-norm Att-SVM (issue #23): compressed SDP against the naive cvxpy sigma_max
model, svmgeo's certificate, infeasible rows, the CLI; the optimal face (non-unique optima)."""

from __future__ import annotations

import dataclasses
import json
import warnings

import numpy as np
import pytest

import svmgeo as sg
from svmgeo._linalg import orthonormal_basis
from svmgeo.cli import main
from svmgeo.constraints import EQUALITY, MARGIN, ConstraintSet
from svmgeo.solvers import (
    _face,
    optimal_face_alignment,
    optimum_uniqueness,
    solve_naive_cvxpy_duals,
)
from svmgeo.solvers._certificates import spectral_certificate
from svmgeo.solvers._spectral import GAP_TARGET

REFERENCE = {"tol_gap_abs": 1e-10, "tol_gap_rel": 1e-10, "tol_feas": 1e-10, "max_iter": 400}
"""The naive model at tolerances tight enough for a 1e-8 comparison."""

INSTANCES = {
    "cross-attention": {"seed": 0},
    "cross-attention, seed 1": {"seed": 1},
    "K=2 queries": {"seed": 3, "n_queries": 2},
    "self-attention, query token 0": {"seed": 2, "query": 0},
    "sequence self-attention (K=T)": {"seed": 9, "query": "all"},
}


def _rows(**kw: object) -> ConstraintSet:
    data = sg.random_data(6, 8, 10, **kw)  # type: ignore[arg-type]
    return sg.att_svm_constraints(data, sg.optimal_tokens(data))


def _spectral(cs: ConstraintSet, **kw: object) -> sg.SVMResult:
    return sg.solve_svm(cs, norm="spectral", **kw)  # type: ignore[arg-type]


def _margin_rows(A: np.ndarray, B: np.ndarray) -> ConstraintSet:
    """Margin rows a_j^T W b_j >= 1 of one sequence, token 0 preferred over tokens 1, 2, ..."""
    N = A.shape[0]
    index = np.zeros(N, dtype=np.int64)
    kind = np.full(N, MARGIN, dtype=np.int8)
    return ConstraintSet(
        A=A, B=B, kind=kind, rhs=np.ones(N), seq=index, query=index, pref=index,
        comp=np.arange(1, N + 1, dtype=np.int64), n=1, K=1, T=N + 1,
    )  # fmt: skip


def _single_row() -> ConstraintSet:
    """One row a = b = e1 in d = 2: min ||W|| s.t. W_11 >= 1."""
    e = np.eye(2)
    return _margin_rows(e[:1].copy(), e[:1].copy())


def test_compression_keeps_every_row_and_never_raises_the_norm() -> None:
    # the module's proof, checked: a_j^T P_U W P_V b_j = a_j^T W b_j, ||P_U W P_V||_2 <= ||W||_2
    cs = _rows(seed=0)
    U, V = orthonormal_basis(cs.A), orthonormal_basis(cs.B)
    rng = np.random.default_rng(0)
    for _ in range(5):
        W = rng.standard_normal((cs.d, cs.d))
        P = U @ U.T @ W @ V @ V.T
        np.testing.assert_allclose(cs.apply(P), cs.apply(W), rtol=1e-12, atol=1e-12)
        assert np.linalg.norm(P, 2) <= np.linalg.norm(W, 2) * (1 + 1e-12)
    assert V.shape[1] < cs.d  # a proper compression on this instance (6 queries in d = 10)


@pytest.mark.filterwarnings("ignore:Solution may be inaccurate")
@pytest.mark.parametrize("name", list(INSTANCES))
def test_matches_the_naive_sigma_max_model(name: str) -> None:
    cs = _rows(**INSTANCES[name])
    res = _spectral(cs)
    assert res.success and res.norm == "spectral", res.message
    assert res.certificate is not None and res.certificate.duality_gap <= GAP_TARGET
    assert res.certificate.worst <= GAP_TARGET
    W_ref, _, status, value, _ = solve_naive_cvxpy_duals(cs, "spectral", **REFERENCE)  # type: ignore[arg-type]
    assert W_ref is not None and status.startswith("optimal"), status
    np.testing.assert_allclose(res.objective, value, rtol=1e-8)
    np.testing.assert_allclose(res.objective, np.linalg.norm(res.W, 2), rtol=1e-14)
    # W is unique only up to the optimal face: svmgeo's multipliers certify cvxpy's W too,
    # and every row they support is tight at both solutions (complementarity)
    assert res.dual is not None
    cross = spectral_certificate(cs, W_ref, res.dual, tol=1e-8)
    assert cross.duality_gap <= 1e-8 and cross.primal_infeasibility <= 1e-8, cross.failures
    support = res.dual > 1e-3 * res.dual.max()
    np.testing.assert_allclose(res.margins[support], cs.rhs[support], rtol=1e-8)
    np.testing.assert_allclose(cs.apply(W_ref)[support], cs.rhs[support], rtol=1e-6)


def test_reference_model_is_certified_by_svmgeo() -> None:
    # method="cvxpy": the naive model at Clarabel's default tolerances (about 1e-8), so its
    # certificate may fall just short of tol = 1e-8 (then OPTIMAL_INACCURATE, with a warning)
    cs = _rows(seed=1)
    fast = _spectral(cs)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", sg.InaccurateSolutionWarning)
        ref = _spectral(cs, method="cvxpy")
    assert ref.solver == "cvxpy-clarabel" and ref.norm == "spectral"
    assert ref.status.has_solution and ref.certificate is not None, ref.message
    assert ref.certificate.worst <= 1e-7
    np.testing.assert_allclose(ref.objective, fast.objective, rtol=1e-7)


def test_equality_rows_with_zero_right_hand_side() -> None:
    # rows of the relaxed SVM: c = 1 on some, "= 0" on others (as the joint SVM builds them)
    cs = _rows(seed=4)
    kind = np.where(np.arange(cs.N) % 5 == 0, EQUALITY, MARGIN).astype(np.int8)
    rhs = np.where(kind == EQUALITY, 0.0, 1.0)
    cs = dataclasses.replace(cs, kind=kind, rhs=rhs, tokens=None)
    res = _spectral(cs)
    assert res.success, res.message
    assert res.certificate is not None and res.certificate.worst <= GAP_TARGET
    _, _, status, value, _ = solve_naive_cvxpy_duals(cs, "spectral", **REFERENCE)  # type: ignore[arg-type]
    assert status.startswith("optimal"), status
    np.testing.assert_allclose(res.objective, value, rtol=1e-8)
    np.testing.assert_allclose(res.margins[kind == EQUALITY], 0.0, atol=1e-10)


def test_certificate_rejects_what_is_not_the_optimum() -> None:
    cs = _rows(seed=0)
    res = _spectral(cs)
    assert res.W is not None and res.dual is not None
    assert spectral_certificate(cs, res.W, res.dual).passed
    assert not spectral_certificate(cs, 1.01 * res.W, res.dual).passed  # gap
    assert not spectral_certificate(cs, 0.99 * res.W, res.dual).passed  # rows violated
    assert not spectral_certificate(cs, res.W, 1.01 * res.dual).passed  # ||Lambda||_* > 1
    fro = sg.solve_svm(cs)  # the Frobenius optimum is feasible but not spectral-optimal
    assert fro.W is not None and fro.dual is not None
    assert not spectral_certificate(cs, fro.W, fro.dual).passed


def test_infeasible_rows_give_the_farkas_certificate() -> None:
    # W_11 >= 1 and -W_11 >= 1: the Farkas vector (1/2, 1/2), whatever the norm
    e = np.eye(2)
    cs = _margin_rows(np.array([e[0], -e[0]]), np.array([e[0], e[0]]))
    res = _spectral(cs)
    assert res.status is sg.Status.INFEASIBLE and res.W is None and res.norm == "spectral"
    assert res.farkas is not None and res.proof == "exact"
    np.testing.assert_allclose(np.einsum("j,ja,jb->ab", res.farkas, cs.A, cs.B), 0.0, atol=1e-12)
    np.testing.assert_allclose(res.farkas @ cs.rhs, 1.0)


def test_rows_met_by_zero_give_zero() -> None:
    cs = _rows(seed=0)
    cs = dataclasses.replace(cs, rhs=np.zeros(cs.N), tokens=None)
    res = _spectral(cs)
    assert res.success and res.objective == 0.0
    np.testing.assert_array_equal(res.W, 0.0)


def test_options_used_or_refused() -> None:
    cs = _rows(seed=0)
    res = _spectral(cs, solver="clarabel")
    assert res.success and res.solver == "svmgeo-spectral-sdp/clarabel"
    scs = _spectral(cs, solver="scs")  # first-order: certified at tol, not necessarily 1e-9
    assert scs.success and scs.solver == "svmgeo-spectral-sdp/scs", scs.message
    np.testing.assert_allclose(scs.objective, res.objective, rtol=1e-8)
    with pytest.raises(sg.ProblemError, match="max_iter"):
        _spectral(cs, max_iter=10)
    with pytest.raises(sg.ProblemError, match="seed"):
        _spectral(cs, seed=0)
    with pytest.raises(sg.ProblemError, match="rank"):
        _spectral(cs, rank=2)
    with pytest.raises(sg.ProblemError, match="solver"):
        _spectral(cs, solver="highs")


def test_cli_solve_equals_the_api(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["solve", "--n", "6", "--T", "8", "--d", "10", "--seed", "0"]
    assert main([*argv, "--norm", "spectral", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    res = sg.att_svm(sg.random_data(6, 8, 10, seed=0), norm="spectral")  # type: ignore[arg-type]
    assert out["norm"] == "spectral" and out["status"] == str(res.status)
    np.testing.assert_allclose(out["objective"], res.objective, rtol=1e-12)
    np.testing.assert_allclose(np.array(out["W"]), res.W, rtol=1e-12, atol=1e-14)
    assert out["certificate"]["passed"] is True


# -- the optimal face (non-unique optima) ---------------------------------------------------------
def test_spectral_face_of_a_single_row() -> None:
    # min ||W||_2 s.t. W_11 >= 1: OPT = 1, and every W = diag(1, w) with |w| <= 1 is optimal
    # (||W||_2 <= 1 with W_11 = 1 forces the rest of row and column 1 to 0). The compressed
    # solver returns e1 e1^T (correlation with I: 1/sqrt 2); the face holds I (correlation 1).
    cs = _single_row()
    res = _spectral(cs)
    assert res.success
    np.testing.assert_allclose(res.objective, 1.0, rtol=1e-9)
    face = optimal_face_alignment(res, np.eye(2))
    np.testing.assert_allclose(face.returned_correlation, 1 / np.sqrt(2), rtol=1e-8)
    np.testing.assert_allclose(face.correlation, 1.0, atol=1e-6)
    np.testing.assert_allclose(face.W, np.eye(2), atol=1e-5)
    assert face.value <= (1 + face.tol) * res.objective * (1 + 1e-9)
    flip = optimal_face_alignment(res, np.diag([1.0, -1.0]))
    np.testing.assert_allclose(flip.W, np.diag([1.0, -1.0]), atol=1e-5)
    verdict = optimum_uniqueness(res)
    assert not verdict.unique and verdict.width > verdict.threshold
    for W in (verdict.W_max, verdict.W_min):  # both extremes are optimal solutions (up to tol)
        assert cs.apply(W)[0] >= 1 - 1e-8
        assert np.linalg.norm(W, 2) <= (1 + verdict.tol) * (1 + 1e-8)


def test_linf_face_of_a_single_row() -> None:
    # min ||W||_inf s.t. W_11 >= 1: OPT = 1, face {W_11 = 1, |W_kl| <= 1}: the all-ones matrix
    # is optimal (correlation 1 with D = ones); the optimum is not unique
    cs = _single_row()
    res = sg.solve_svm(cs, norm=("lp", np.inf))
    assert res.success
    face = optimal_face_alignment(res, np.ones((2, 2)))
    np.testing.assert_allclose(face.W, np.ones((2, 2)), atol=1e-5)
    np.testing.assert_allclose(face.correlation, 1.0, atol=1e-6)
    assert face.correlation >= face.returned_correlation - 1e-9
    assert not optimum_uniqueness(res).unique


def test_frobenius_optimum_is_unique() -> None:
    # min ||W||_F s.t. W_11 >= 1 has the one optimum e1 e1^T; its tau-face has diameter
    # <= 2 sqrt(2 tau), so the best correlation with ones stays 1/2 up to O(sqrt tau)
    cs = _single_row()
    res = sg.solve_svm(cs)
    verdict = optimum_uniqueness(res)
    assert verdict.unique and verdict.width <= 2 * np.sqrt(2 * verdict.tol) * 1.01
    face = optimal_face_alignment(res, np.ones((2, 2)))
    np.testing.assert_allclose(face.returned_correlation, 0.5, rtol=1e-9)
    np.testing.assert_allclose(face.correlation, 0.5, atol=10 * np.sqrt(face.tol))


def test_random_spectral_optimum_is_a_face() -> None:
    # the spectral optimum of random rows leaves room off Lambda's singular subspaces
    res = _spectral(_rows(seed=0))
    verdict = optimum_uniqueness(res)
    assert not verdict.unique, verdict.width
    cs = res.constraints
    for W in (verdict.W_max, verdict.W_min):
        assert np.min(cs.apply(W) - cs.rhs) >= -1e-7
        assert np.linalg.norm(W, 2) <= (1 + verdict.tol) * res.objective * (1 + 1e-7)


@pytest.mark.parametrize("norm", ["spectral", ("lp", np.inf), "nuc", "fro"])
def test_best_correlation_beats_the_inner_product_maximiser(norm: object) -> None:
    # the face's points differ in ||W||_F: the correlation maximiser (Charnes-Cooper) is at
    # least as aligned as the inner-product maximiser and as the returned solution
    data = sg.random_data(6, 8, 10, seed=0)
    res = sg.att_svm(data, norm=norm)  # type: ignore[arg-type]
    D = sg.att_svm(data).W if norm != "fro" else sg.att_svm(data, norm="nuc").W
    face = optimal_face_alignment(res, D)
    geometry = _face._geometry(res, "test")
    W_lin, _ = _face._extreme(res, geometry, D, face.tol)
    assert face.correlation >= sg.correlation(D, W_lin) - 1e-7
    assert face.correlation >= face.returned_correlation - 1e-7
    cs = res.constraints
    assert np.min(cs.apply(face.W) - cs.rhs) >= -1e-7
    # within the face to Clarabel's accuracy; its status says when that is lower (nuc's SDP
    # on an AMD EPYC: 'optimal_inaccurate', 3.5e-6 above (1 + tol) OPT)
    slack = 1e-7 if face.status == "optimal" else 1e-5
    assert face.status in ("optimal", "optimal_inaccurate")
    assert face.value <= (1 + face.tol) * res.objective * (1 + slack)


def test_an_lp_optimum_above_two_is_unique() -> None:
    """Regression: the strictly convex l4 norm has one optimum, but its tau-face reaches
    (p tau)^(1/p) OPT along entries that are 0 at the optimum (every p-SVM has them), and
    the sqrt(tau) threshold called it a face of optima."""
    res = sg.att_svm(sg.random_data(3, 4, 4, seed=0), param="p", norm=("lp", 4.0))
    verdict = optimum_uniqueness(res)
    assert verdict.unique, verdict.width
    np.testing.assert_allclose(verdict.threshold, 10 * (4 * verdict.tol) ** 0.25, rtol=1e-15)
    assert verdict.width > 10 * np.sqrt(verdict.tol)  # above the quadratic-growth threshold


@pytest.mark.parametrize(("norm", "seed"), [("nuc", 0), ("nuc", 6), ("spectral", 2)])
def test_face_problems_where_clarabel_gives_up_fall_back_to_scs(norm: str, seed: int) -> None:
    """Regression: Clarabel failed on some thin SDP faces of small problems (these seeds, on
    the -R direction, on the AMD EPYC of session 42) and optimum_uniqueness raised
    SolverError; SCS now takes over where Clarabel gives up."""
    res = sg.att_svm(sg.random_data(5, 3, 4, seed=seed), norm=norm)
    verdict = optimum_uniqueness(res)
    cs = res.constraints
    order = "nuc" if norm == "nuc" else 2
    for W in (verdict.W_max, verdict.W_min):
        assert np.min(cs.apply(W) - cs.rhs) >= -1e-6
        assert np.linalg.norm(W, order) <= (1 + verdict.tol) * res.objective * (1 + 1e-6)


def test_a_rank_bound_that_does_not_bind_is_accepted() -> None:
    """Regression: a rank-2 solve whose answer is the convex optimum (objective above the
    lower bound by 1 ulp) was refused as a binding, nonconvex rank bound."""
    data = sg.random_data(5, 3, 4, seed=0)
    bounded = sg.att_svm(data, norm="nuc", rank=2, seed=0)
    assert bounded.objective <= bounded.lower_bound * (1 + 1e-12)
    assert optimum_uniqueness(bounded).unique


def test_face_functions_refuse_bad_input() -> None:
    cs = _single_row()
    res = _spectral(cs)
    with pytest.raises(sg.ProblemError, match="direction"):
        optimal_face_alignment(res, np.eye(3))
    with pytest.raises(sg.ProblemError, match="direction"):
        optimal_face_alignment(res, np.zeros((2, 2)))
    with pytest.raises(sg.ProblemError, match="tol"):
        optimal_face_alignment(res, np.eye(2), tol=0.0)
    with pytest.raises(sg.ProblemError, match="n_directions"):
        optimum_uniqueness(res, n_directions=0)
    infeasible = dataclasses.replace(res, W=None, objective=None, status=sg.Status.INFEASIBLE)
    with pytest.raises(sg.ProblemError, match="solution"):
        optimum_uniqueness(infeasible)


def test_prompt_svm_is_the_euclidean_one() -> None:
    # ||p e1^T||_2 = ||p||_2: the spectral p-SVM is the Frobenius (Euclidean) p-SVM
    data = sg.random_data(4, 5, 6, seed=0)
    spec = sg.att_svm(data, param="p", norm="spectral")  # type: ignore[arg-type]
    fro = sg.att_svm(data, param="p")
    assert spec.success and spec.p is not None and fro.p is not None
    np.testing.assert_allclose(spec.objective, fro.objective, rtol=1e-9)
    np.testing.assert_allclose(spec.p, fro.p, rtol=1e-6, atol=1e-8)
    assert "||p||_2" in spec.summary()
