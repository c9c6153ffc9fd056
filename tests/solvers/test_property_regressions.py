# SPDX-License-Identifier: BSD-3-Clause
"""Regression tests for the solver findings of the property suite (docs/properties.md).

Each test rebuilds a counterexample and checks the answer against facts computed here from
the data (margins, Farkas sums, norms), never against svmgeo's own certificate.
"""

from __future__ import annotations

import numpy as np
import pytest

import svmgeo as sg
from svmgeo.constraints import MARGIN
from svmgeo.solvers import Status, check_feasibility, solve_svm
from svmgeo.solvers._feasibility import _rescale_point
from svmgeo.testing import assert_farkas, exact_margins, margin_rows


def _tiny_row_data() -> sg.TokenData:
    # one row with a_j = 1e-10: feasible, W^mm = 1e10 (d = 1: both norms agree)
    X = np.array([[[1.0], [1.0 - 1e-10]]])
    return sg.TokenData(X, Z=np.array([[1.0]]), v=np.ones(1))


def _assert_proof_point(cs: sg.ConstraintSet, W: np.ndarray) -> None:
    """Every positive-rhs margin row strictly positive and ≥ c_j (to its own rounding)."""
    m = np.einsum("ja,ab,jb->j", cs.A, W, cs.B)
    size = np.linalg.norm(cs.A, axis=1) * np.linalg.norm(cs.B, axis=1) * np.linalg.norm(W)
    margin = cs.kind == MARGIN
    assert np.all(m[margin & (cs.rhs > 0)] > 0.0)
    assert np.all((cs.rhs - m)[margin] <= 1e-9 * np.maximum(size, 1.0)[margin])


# -- finding 2: nuclear INFEASIBLE with a Farkas vector that does not verify ---------------


def test_nuclear_solves_a_tiny_row_instead_of_a_false_infeasible():
    data = _tiny_row_data()
    cs = sg.att_svm_constraints(data, [0])
    assert sg.feasibility(data, [0]).feasible
    res = sg.att_svm(data, [0], norm="nuc")
    assert res.status is Status.OPTIMAL, res.message
    # d = 1: the optimum is |W| = 1 / a with a = x_0 - x_1, computed here from the data
    a = float(cs.A[0, 0])
    np.testing.assert_allclose(res.objective, 1.0 / a, rtol=1e-9)
    np.testing.assert_allclose(float(res.W[0, 0]), 1.0 / a, rtol=1e-9)
    _assert_proof_point(cs, res.W)


def test_nuclear_never_reports_infeasible_on_verified_feasible_rows():
    # an ill-conditioned near-tie (from the property suite): feasible, the SDP backends fail
    from svmgeo.testing import build_case

    data = build_case("self", "near_tie", n=3, T=3, d=2, seed=987).data
    alpha = sg.optimal_tokens(data)
    feas = sg.feasibility(data, alpha)
    assert feas.feasible
    res = sg.att_svm(data, alpha, norm="nuc")
    assert not res.status.is_infeasible, res.message
    if res.farkas is not None:  # pragma: no cover - a Farkas vector would contradict feas
        raise AssertionError("a feasible problem must not carry a Farkas vector")
    if res.W is not None:
        _assert_proof_point(res.constraints, res.W)


def test_nuclear_farkas_vector_is_checked_relative_to_the_rows():
    # infeasible rows of very different sizes: a certified INFEASIBLE must verify relatively
    A = np.array([[1e-8, 0.0], [-1e-8, 0.0], [1.0, 1.0]])
    B = np.array([[1.0, 0.0], [1.0, 0.0], [0.0, 1.0]])
    cs = margin_rows(A, B)
    res = solve_svm(cs, norm="nuc")
    assert res.status is Status.INFEASIBLE
    assert_farkas(cs, res.farkas)


# -- finding 3: a feasibility "point" with a negative margin ------------------------------


def test_rescale_point_rejects_a_huge_margin_hiding_a_negative_one():
    A = np.eye(2)
    cs = margin_rows(A, A)  # rows e_i^T W e_i >= 1
    W = np.diag([1.8e13, -8.7])
    assert _rescale_point(cs, W) is None
    ok = _rescale_point(cs, np.diag([1.8e13, 1e-3]))
    assert ok is not None
    _assert_proof_point(cs, ok[0])
    np.testing.assert_allclose(np.einsum("ja,ab,jb->j", A, ok[0], A).min(), 1.0, rtol=1e-12)


def test_boundary_instance_is_never_called_feasible_with_a_violated_row():
    from svmgeo.testing import build_case

    data = build_case("causal", "collinear", n=2, T=5, d=5, K=2, seed=0).data
    alpha = np.zeros((2, 5), dtype=int)
    res = sg.feasibility(data, alpha)
    if res.feasible:
        _assert_proof_point(res.constraints, res.point)
    else:
        assert res.farkas is not None
        if res.status is Status.INFEASIBLE:
            assert_farkas(res.constraints, res.farkas)


# -- finding 4: Frobenius on problems with more rows than d² ------------------------------


def test_frobenius_multi_query_with_more_rows_than_features():
    from svmgeo.testing import build_case

    data = build_case("multi", "generic", n=3, T=2, d=2, K=2, seed=0).data
    alpha = np.array([[0, 1], [0, 0], [1, 0]])
    res = sg.att_svm(data, alpha)
    ref = sg.att_svm(data, alpha, method="cvxpy")
    assert res.status is Status.OPTIMAL, res.message
    np.testing.assert_allclose(res.objective, ref.objective, rtol=1e-6)
    _assert_proof_point(res.constraints, res.W)


def test_frobenius_scaled_causal_collinear_is_solved():
    from svmgeo.testing import build_case

    base = build_case("causal", "collinear", n=4, T=5, d=6, K=2, seed=0).data
    alpha = np.zeros((4, 5), dtype=int)
    alpha[2, 1] = 1
    res1 = sg.att_svm(base, alpha)
    scaled = sg.TokenData(2.0 * np.asarray(base.X), Y=base.Y, v=base.v, query="all", mask=base.mask)
    res2 = sg.att_svm(scaled, alpha)
    assert res1.status is Status.OPTIMAL and res2.status is Status.OPTIMAL, res2.message
    # self-attention: X -> 2X gives W^mm / 4
    np.testing.assert_allclose(res2.W, res1.W / 4.0, rtol=1e-7, atol=1e-9 * res1.objective)


# -- finding 5: the feasibility LP is scale-dependent -------------------------------------


def test_feasibility_lp_is_invariant_to_each_rows_scale():
    X = np.array([[[1.0], [-1.0]], [[0.1], [0.1 + 1e-9]]])
    data = sg.TokenData(X, Z=np.array([[1.0], [1.0]]), v=np.ones(1))
    res = sg.feasibility(data, [0, 1])
    assert res.feasible and res.status is Status.OPTIMAL, res.message
    _assert_proof_point(res.constraints, res.point)
    fro = sg.att_svm(data, [0, 1])
    assert fro.success
    # d = 1: W^mm = max_j 1 / a_j over the rows (both a_j > 0 here)
    np.testing.assert_allclose(fro.objective, 1.0 / res.constraints.A[:, 0].min(), rtol=1e-6)


def test_feasibility_lp_normalized_farkas_maps_back_to_the_original_rows():
    # infeasible: rows +a and -a of very different sizes (1 and 1e-9) on the same query
    A = np.array([[1.0, 0.0], [-1e-9, 0.0], [0.0, 3.0], [0.0, -2e-7]])
    B = np.array([[1.0, 1.0], [1.0, 1.0], [0.0, 1.0], [0.0, 1.0]])
    cs = margin_rows(A, B)
    res = check_feasibility(cs)
    assert res.status is Status.INFEASIBLE, res.message
    assert_farkas(cs, res.farkas)


# -- finding 7: K, Q with a vacuous rank bound --------------------------------------------


def test_vacuous_rank_bound_returns_balanced_factors():
    data = sg.random_data(3, 4, 6, seed=0)
    res = sg.att_svm(data, norm="nuc", rank=5)
    assert res.success and res.K is not None and res.Q is not None
    assert res.K.shape == (6, 5) and res.Q.shape == (6, 5)
    np.testing.assert_allclose(res.K @ res.Q.T, res.W, atol=1e-10 * np.linalg.norm(res.W))
    nuc = np.linalg.svd(res.W, compute_uv=False).sum()
    half = 0.5 * (np.linalg.norm(res.K) ** 2 + np.linalg.norm(res.Q) ** 2)
    np.testing.assert_allclose(half, nuc, rtol=1e-10)
    # the convex optimum is the rank-5 optimum: the lower bound is the objective
    convex = sg.att_svm(data, norm="nuc")
    np.testing.assert_allclose(res.lower_bound, convex.objective, rtol=1e-9)
    assert res.relative_gap is not None and abs(res.relative_gap) <= 1e-9
    # W has rank <= n = 3 < 5 (Lemma 1): the extra columns carry only round-off of W
    assert np.linalg.norm(res.K[:, 3:]) ** 2 <= 1e-12 * nuc
    assert np.linalg.norm(res.Q[:, 3:]) ** 2 <= 1e-12 * nuc


def test_vacuous_rank_bound_pads_factors_with_zero_columns():
    # d = 2 with rank bound 5 >= d: the factors have width 5, the last 3 columns exactly 0
    X = np.array([[[1.0, 0.0], [0.0, 1.0]], [[0.0, 1.0], [1.0, 1.0]]])
    data = sg.TokenData(X, Z=np.array([[1.0, 0.5], [0.2, 1.0]]), v=np.ones(2))
    res = sg.att_svm(data, [0, 1], norm="nuc", rank=5)
    assert res.success and res.K is not None and res.Q is not None
    assert res.K.shape == (2, 5) and res.Q.shape == (2, 5)
    assert not np.any(res.K[:, 2:]) and not np.any(res.Q[:, 2:])
    np.testing.assert_allclose(res.K @ res.Q.T, res.W, atol=1e-12 * np.linalg.norm(res.W))


# -- thorough-profile counterexamples of this round ---------------------------------------


def test_theorem1_subspace_data_perturbed_by_1e6_is_decided_feasible():
    # tokens in a line, perturbed by 1e-6: feasible (Theorem 1) with ||W|| ~ 1e12; the LP
    # used to lose the 1e-6 directions in its tolerances and certify INFEASIBLE
    from svmgeo.testing import build_case

    data = build_case("cross", "subspace", n=4, T=5, d=5, K=2, seed=3, sigma=1e-6).data
    res = sg.feasibility(data, np.array([0, 0, 0, 4]))
    assert res.feasible and res.status is Status.OPTIMAL, res.message
    _assert_proof_point(res.constraints, res.point)


def test_duplicate_token_after_rotation_is_decided_or_undecided_never_wrong():
    # an exact duplicate gives a zero row (INFEASIBLE, proved); rotated, the duplicate differs
    # from its twin by round-off (or not at all, depending on the BLAS): whatever the verdict,
    # a proved one must hold in exact arithmetic, and the verdict must not flip on the exact
    # duplicate
    from svmgeo.testing import build_case

    data = build_case("cross", "duplicate", n=1, T=3, d=8, K=2, seed=0).data
    alpha = np.array([0])
    exact_dup = sg.feasibility(data, alpha)
    assert exact_dup.status is Status.INFEASIBLE and exact_dup.proof == "exact"
    R = np.linalg.qr(np.random.default_rng(0).normal(size=(8, 8)))[0]
    rotated = sg.TokenData(
        np.asarray(data.X) @ R, Y=data.Y, v=R.T @ data.v, Z=np.asarray(data.Z) @ R
    )
    X = np.asarray(rotated.X)
    dup = [t for t in range(1, 3) if np.linalg.norm(X[0, 0] - X[0, t]) <= 1e-13]
    for variant in (rotated, _nudged(rotated, dup)):
        res = sg.feasibility(variant, alpha)
        if res.proof != "exact":
            assert res.status not in (Status.OPTIMAL, Status.INFEASIBLE), res.message
        elif res.feasible:
            assert min(exact_margins(res.constraints, res.point, variant)) > 0
        else:
            assert res.status is Status.INFEASIBLE
            assert_farkas(res.constraints, res.farkas)
        sol = sg.att_svm(variant, alpha)
        assert sol.status is not Status.INFEASIBLE or res.status is Status.INFEASIBLE


def _nudged(data: sg.TokenData, tokens: list[int]) -> sg.TokenData:
    """The dataset with each listed token of sequence 0 moved by one ulp in every coordinate
    (a round-off-level, nonzero difference from its twin)."""
    X = np.array(data.X)
    for t in tokens:
        X[0, t] = np.nextafter(X[0, t], np.inf)
    return sg.TokenData(X, Y=data.Y, v=data.v, Z=data.Z)


def test_feasibility_of_a_near_tie_multi_query_problem_is_certified():
    from svmgeo.testing import build_case

    data = build_case("multi", "near_tie", n=5, T=2, d=3, K=3, seed=5).data
    alpha = np.array([[0, 0, 0], [0, 0, 1], [0, 0, 0], [0, 0, 1], [0, 0, 0]])
    for c in (1.0, 4.0):
        scaled = sg.TokenData(c * np.asarray(data.X), Y=data.Y, v=data.v, Z=data.Z)
        res = sg.feasibility(scaled, alpha)
        assert res.feasible and res.status is Status.OPTIMAL, res.message
        _assert_proof_point(res.constraints, res.point)


def test_nuclear_falls_back_to_frobenius_bounds_when_both_backends_fail():
    # ill-conditioned (||W|| ~ 5e9, k = 2): SCS and Clarabel both fail; the answer is the
    # Frobenius optimum with an explicit, valid bracket on the nuclear optimum
    from svmgeo.testing import build_case

    data = build_case("cross", "near_tie", n=4, T=2, d=2, K=2, seed=1).data
    alpha = np.zeros(4, dtype=int)
    res = sg.att_svm(data, alpha, norm="nuc")
    assert res.status.has_solution, res.message
    cs = res.constraints
    _assert_proof_point(cs, res.W)
    nuc = np.linalg.svd(res.W, compute_uv=False).sum()
    np.testing.assert_allclose(res.objective, nuc, rtol=1e-12)
    # weak duality, recomputed here: lam >= 0 with ||sum lam_j a_j b_j^T||_2 <= 1 bounds below
    lam = res.dual
    assert np.all(lam >= 0)
    spectral = np.linalg.norm(np.einsum("j,ja,jb->ab", lam, cs.A, cs.B), 2)
    lower = float(cs.rhs @ lam) / max(1.0, spectral)
    assert lower <= nuc * (1 + 1e-9)
    assert lower >= 0.5 * nuc  # the bracket is informative


def test_is_locally_optimal_raises_the_documented_solver_error_on_a_failed_solve(monkeypatch):
    from svmgeo.analysis import _local
    from svmgeo.solvers._result import no_solution

    def failing(cs, **kw):
        return no_solution(cs, Status.MAX_ITER, "iteration limit", norm="fro", solver="test")

    monkeypatch.setattr(_local, "solve_for", failing)
    X = np.array([[[1.0, 0.0], [0.0, 1.0], [-2.0, 0.0]]])
    data = sg.TokenData(X, Z=np.array([[1.0, 0.0]]), scores=np.array([[3.0, 2.0, 1.0]]))
    with pytest.raises(sg.SolverError, match="max_iter"):
        sg.is_locally_optimal(data, [0])
    assert "SolverError" in (sg.is_locally_optimal.__doc__ or "")


def test_gen_svm_nuclear_on_an_ill_conditioned_feasible_problem_returns_a_feasible_w():
    # the SDP backends answer "infeasible"; the rows have a verified point, so Gen-SVM must get
    # a feasible W (the Frobenius bracket), not a SolverError
    from svmgeo.testing import build_case

    data = build_case("cross", "near_tie", n=5, T=2, d=2, K=2, seed=0).data
    S = np.zeros((5, 2), dtype=bool)
    S[:, 0] = True
    probs = np.full((5, 2), 1e-9)
    probs[:, 0] = 1.0 - 1e-9
    gen = sg.gen_svm(data, S, probs=probs, norm="nuc")
    assert gen.feasible and gen.svm.status.has_solution, gen.svm.message
    _assert_proof_point(gen.svm.constraints, gen.svm.W)


def test_vacuous_rank_bound_without_rows_gives_zero_factors():
    X = np.random.default_rng(0).normal(size=(1, 2, 2))
    mask = np.array([[False, True], [True, False]])
    data = sg.TokenData(X, v=np.ones(2), query="all", mask=mask)
    res = sg.att_svm(data, np.array([[1, 0]]), norm="nuc", rank=1)
    assert res.status is Status.OPTIMAL and res.constraints.N == 0
    assert res.K is not None and res.Q is not None
    np.testing.assert_array_equal(res.K, np.zeros((2, 1)))
    np.testing.assert_array_equal(res.Q, np.zeros((2, 1)))


def test_solver_infeasible_against_a_verified_point_returns_that_point_as_inaccurate():
    # t* ~ 0: the nuclear SDP and the Frobenius solver fail; the verified feasibility point is
    # returned as an honest upper bound (OPTIMAL_INACCURATE, failing certificate), never
    # INFEASIBLE
    from svmgeo.testing import build_case

    data = build_case("self", "near_tie", n=5, T=3, d=2, K=2, seed=221).data
    alpha = np.array([1, 0, 2, 0, 1])
    feas = sg.feasibility(data, alpha)
    assert feas.feasible
    res = sg.att_svm(data, alpha, norm="nuc")
    assert res.status is Status.OPTIMAL_INACCURATE and res.farkas is None, res.message
    _assert_proof_point(res.constraints, res.W)
    np.testing.assert_allclose(
        res.objective, np.linalg.svd(res.W, compute_uv=False).sum(), rtol=1e-12
    )


def test_lowrank_truncation_that_breaks_a_row_is_not_returned():
    # the convex optimum is rank one up to a 1e-9 tail that an ill-conditioned row needs:
    # the truncated W has a negative margin and must not come back as a solution
    from svmgeo.testing import build_case

    data = build_case("self", "near_tie", n=5, T=2, d=2, K=2, seed=2).data
    alpha = sg.optimal_tokens(data, ties="first")
    res = sg.att_svm(data, alpha, norm="nuc", rank=1, seed=0, n_restarts=3)
    if res.status.has_solution:
        _assert_proof_point(res.constraints, res.W)
    else:
        assert res.status is Status.INFEASIBLE_INACCURATE


@pytest.mark.parametrize(
    ("args", "alpha"),
    [
        (("cross", "subspace", dict(n=2, T=5, d=5, K=2, seed=1, sigma=1e-6)), [1, 1]),
        (("cross", "collinear", dict(n=5, T=2, d=2, K=2, seed=1306)), [0, 1, 0, 1, 0]),
    ],
)
def test_lp_point_with_cancelling_rows_is_lifted_and_verified(args, alpha):
    # the Phase-1 LP says feasible and its point has positive margins, but the few-ulp exact
    # lift failed on rows with cancellation: the verdict was NUMERICAL_ERROR
    from svmgeo.testing import build_case

    kind, variant, kw = args
    data = build_case(kind, variant, **kw).data
    res = sg.feasibility(data, np.array(alpha))
    assert res.feasible and res.status is Status.OPTIMAL, res.message
    _assert_proof_point(res.constraints, res.point)
    # the point meets every row exactly (rational arithmetic on the user's tokens: a float
    # evaluation of a_j^T W b_j may round a row that holds exactly to 1 - 1e-12)
    assert res.proof == "exact"
    assert min(exact_margins(res.constraints, res.point, data)) >= 1


def test_lowrank_local_solution_is_returned_feasible():
    # a well-conditioned problem (t* = 0.24) whose rank-1 local solve stopped 1e-5 short of a
    # row: the answer must still meet every row (scaled by at most 1 + 1e-3)
    from svmgeo.testing import build_case

    data = build_case("cross", "generic", n=5, T=5, d=6, K=2, seed=758).data
    alpha = sg.optimal_tokens(data, ties="first")
    res = sg.att_svm(data, alpha, norm="nuc", rank=1, seed=2, n_restarts=3)
    assert res.status.has_solution, res.message
    cs = res.constraints
    m = np.einsum("ja,ab,jb->j", cs.A, res.W, cs.B)
    assert m.min() >= 1.0 - 1e-12
    np.testing.assert_allclose(res.K @ res.Q.T, res.W, atol=1e-12 * np.linalg.norm(res.W))
    half = 0.5 * (np.linalg.norm(res.K) ** 2 + np.linalg.norm(res.Q) ** 2)
    np.testing.assert_allclose(res.objective, half, rtol=1e-9)
    assert res.objective >= res.lower_bound
