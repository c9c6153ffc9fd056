# SPDX-License-Identifier: BSD-3-Clause
"""Att-SVM⋆ (nuclear norm, no rank bound): svmgeo's compressed SDP against the naive cvxpy model."""

from __future__ import annotations

import dataclasses
from functools import cache
from typing import Any

import numpy as np
import pytest

import svmgeo as sg
from svmgeo._linalg import query_projector
from svmgeo.solvers import Status, solve_naive_cvxpy
from svmgeo.solvers._backends import ClarabelBackend
from svmgeo.solvers._certificates import nuclear_certificate
from svmgeo.solvers._nuclear import solve_nuclear
from svmgeo.solvers._result import downgrade

TIGHT = {"tol_gap_abs": 1e-10, "tol_gap_rel": 1e-10, "tol_feas": 1e-10}

# objectives are compared with the oracle at rtol 1e-9: the oracle is solved to 1e-10 (TIGHT) and
# svmgeo agreed to 8.5e-11 at worst over the 52 cases (its own recomputed gap is ~1e-15)
# (n, T, d, attention kwargs); d >= max(T - 1, n * K) keeps Att-SVM(opt) feasible (Theorem 1)
SHAPES: list[tuple[int, int, int, dict[str, Any]]] = [
    (2, 3, 3, {}),
    (3, 4, 4, {}),
    (4, 3, 5, {}),
    (5, 5, 6, {}),
    (6, 4, 8, {}),
    (3, 6, 8, {}),
    (3, 3, 4, {"query": 0}),
    (4, 5, 6, {"query": 0}),
    (6, 4, 8, {"query": 0}),
    (2, 3, 6, {"n_queries": 3}),
    (3, 4, 9, {"n_queries": 3}),
    (2, 3, 6, {"query": "all", "mask": "causal"}),
    (2, 4, 8, {"query": "all", "mask": "causal"}),
]
CASES = [(n, T, d, kw, seed) for (n, T, d, kw) in SHAPES for seed in range(4)]  # 52


def _case_id(case: tuple[int, int, int, dict[str, Any], int]) -> str:
    n, T, d, kw, seed = case
    tag = "-".join(f"{k}={v}" for k, v in kw.items()) or "cross"
    return f"n{n}T{T}d{d}-{tag}-s{seed}"


@cache
def _instance(index: int) -> tuple[sg.TokenData, sg.ConstraintSet]:
    n, T, d, kw, seed = CASES[index]
    data = sg.random_data(n, T, d, seed=100 + seed, **kw)
    return data, sg.att_svm_constraints(data, sg.optimal_tokens(data))


@cache
def _solved(index: int) -> Any:
    return solve_nuclear(_instance(index)[1])


@cache
def _naive(index: int, norm: str) -> tuple[np.ndarray | None, str, float, float]:
    options = TIGHT if norm == "nuc" else {}
    return solve_naive_cvxpy(_instance(index)[1], norm, solver="CLARABEL", **options)  # type: ignore[arg-type]


def _nuc(W: np.ndarray) -> float:
    return float(np.linalg.svd(W, compute_uv=False).sum())


IDS = [_case_id(c) for c in CASES]
INDICES = pytest.mark.parametrize("index", range(len(CASES)), ids=IDS)


@INDICES
def test_objective_matches_naive_cvxpy(index: int) -> None:
    res = _solved(index)
    _, status, reference, _ = _naive(index, "nuc")
    assert status == "optimal"
    assert res.status is Status.OPTIMAL, res.message
    assert res.norm == "nuc"
    np.testing.assert_allclose(res.objective, reference, rtol=1e-9)
    # objective is the nuclear norm of the returned W, recomputed here
    np.testing.assert_allclose(res.objective, _nuc(res.W), rtol=1e-12)


@INDICES
def test_certificate_holds_and_is_consistent(index: int) -> None:
    res = _solved(index)
    cs = _instance(index)[1]
    assert res.certificate is not None and res.certificate.passed, res.certificate
    # independent re-check of the dual: λ ≥ 0, ‖Σ λ_j a_j b_jᵀ‖₂ ≤ 1, cᵀλ = ‖W‖_*
    lam = res.dual
    assert np.all(lam[cs.is_margin] >= 0.0)
    assert np.linalg.norm(cs.adjoint(lam), 2) <= 1.0 + 1e-8
    np.testing.assert_allclose(cs.rhs @ lam, _nuc(res.W), rtol=1e-7)
    # feasibility and reported margins
    np.testing.assert_allclose(res.margins, cs.apply(res.W), rtol=1e-12, atol=1e-12)
    assert np.min(res.margins - cs.rhs) >= -1e-8


@INDICES
def test_lemma1_and_norm_sandwich(index: int) -> None:
    data, _ = _instance(index)
    W = _solved(index).W
    P = query_projector(data.queries)
    np.testing.assert_allclose(W @ P, W, rtol=0, atol=1e-9 * max(1.0, np.linalg.norm(W)))
    s = np.linalg.svd(W, compute_uv=False)
    rank = int(np.count_nonzero(s > 1e-9 * s[0]))
    assert rank <= data.n * data.K  # Lemma 1: rank ≤ number of queries
    fro, nuc = float(np.linalg.norm(W)), float(s.sum())
    assert fro <= nuc * (1 + 1e-12)
    assert nuc <= np.sqrt(rank) * fro * (1 + 1e-9)


@INDICES
def test_nuclear_optimum_below_frobenius_solution(index: int) -> None:
    W_fro, status, _, _ = _naive(index, "fro")
    assert status == "optimal" and W_fro is not None
    assert _solved(index).objective <= _nuc(W_fro) * (1 + 1e-7)


@pytest.mark.parametrize("index", [0, 13, 26, 40, 47])
def test_scs_agrees_with_clarabel(index: int) -> None:
    res = solve_nuclear(_instance(index)[1], solver="scs")
    assert res.status.has_solution
    assert res.solver == "scs"
    np.testing.assert_allclose(res.objective, _solved(index).objective, rtol=1e-9)


def test_equality_rows_against_naive() -> None:
    data = sg.random_data(3, 4, 7, seed=5)
    alpha = sg.optimal_tokens(data)
    cs = sg.att_svm_constraints(data, alpha)
    kind = np.where(np.arange(cs.N) % 4 == 0, sg.EQUALITY, sg.MARGIN)
    rhs = np.where(kind == sg.EQUALITY, 0.3, 1.0)
    cs_eq = sg.pair_constraints(data, cs.seq, cs.query, cs.pref, cs.comp, kind=kind, rhs=rhs)
    res = solve_nuclear(cs_eq)
    _, status, reference, _ = solve_naive_cvxpy(cs_eq, "nuc", solver="CLARABEL", **TIGHT)
    assert status == "optimal"
    assert res.status is Status.OPTIMAL, res.message
    np.testing.assert_allclose(res.objective, reference, rtol=1e-9)
    eq = kind == sg.EQUALITY
    np.testing.assert_allclose(res.margins[eq], 0.3, atol=1e-8)
    # multipliers of equality rows are free: the certificate must not require a sign
    assert res.certificate.passed


def test_d_much_larger_than_rows_compresses() -> None:
    data = sg.random_data(3, 3, 60, seed=7)
    cs = sg.att_svm_constraints(data, sg.optimal_tokens(data))
    res = solve_nuclear(cs)
    assert res.status is Status.OPTIMAL
    assert res.extras["r1"] == cs.N and res.extras["r2"] == data.n
    # same value after an orthogonal change of basis of R^d (the problem is invariant)
    Qr, _ = np.linalg.qr(np.random.default_rng(0).standard_normal((60, 60)))
    rotated = dataclasses.replace(cs, A=cs.A @ Qr, B=cs.B @ Qr)
    np.testing.assert_allclose(solve_nuclear(rotated).objective, res.objective, rtol=1e-7)


def test_perturbed_dual_fails_certificate_and_downgrades() -> None:
    res = _solved(5)
    cs = _instance(5)[1]
    lam = res.dual.copy()
    lam[np.argmax(lam)] *= 1.5
    cert = nuclear_certificate(cs, res.W, lam, 1e-8)
    assert not cert.passed
    assert any("duality gap" in f or "dual infeasibility" in f for f in cert.failures)
    bad = downgrade(res, cert)
    assert bad.status is Status.OPTIMAL_INACCURATE
    assert not bad.success
    assert "certificate check failed" in bad.message


def test_infeasible_point_is_reported_by_certificate() -> None:
    res = _solved(3)
    cs = _instance(3)[1]
    cert = nuclear_certificate(cs, 0.5 * res.W, res.dual, 1e-8)
    expected = np.max(cs.rhs - 0.5 * cs.apply(res.W))
    np.testing.assert_allclose(cert.primal_infeasibility, expected, rtol=1e-12)
    assert expected >= 0.5 - 1e-8  # margin rows have c_j = 1 and m_j >= 1
    assert not cert.passed


def test_infeasible_rows_give_status_not_exception() -> None:
    data = sg.random_data(1, 3, 4, seed=1)
    # (x0 - x1)ᵀ W z >= 1 and (x1 - x0)ᵀ W z >= 1 cannot both hold
    cs = sg.pair_constraints(data, [0, 0], [0, 0], [0, 1], [1, 0])
    for solver in ("clarabel", "scs"):
        res = solve_nuclear(cs, solver=solver)
        assert res.status is Status.INFEASIBLE, res.message
        assert res.W is None and not res.success
        assert res.farkas is not None  # the backend's ray, normalized and verified
        np.testing.assert_allclose(cs.rhs @ res.farkas, 1.0)
        assert np.all(res.farkas >= 0)
        np.testing.assert_allclose(cs.adjoint(res.farkas), 0.0, atol=1e-6)


def test_zero_rows_are_handled_without_solver() -> None:
    data = sg.random_data(1, 3, 4, seed=2)
    X = data.X.copy()
    X[0, 1] = X[0, 0]  # the competing token equals the selected one: a_j = 0
    dup = sg.TokenData(X, v=data.v, Z=data.Z)
    infeasible = solve_nuclear(sg.pair_constraints(dup, [0], [0], [0], [1]))
    assert infeasible.status is Status.INFEASIBLE
    np.testing.assert_allclose(infeasible.farkas, [1.0])
    cs = sg.pair_constraints(dup, [0], [0], [0], [1], kind=sg.EQUALITY, rhs=0.0)
    trivial = solve_nuclear(cs)
    assert trivial.status is Status.OPTIMAL
    np.testing.assert_allclose(trivial.W, 0.0)
    assert infeasible.solver == trivial.solver == "svmgeo"  # no backend ran (it named one)
    empty = _instance(0)[1].subset(np.zeros(_instance(0)[1].N, dtype=bool))
    assert solve_nuclear(empty).objective == 0.0


def test_unknown_native_status_is_solver_error(monkeypatch: pytest.MonkeyPatch) -> None:
    import clarabel

    real = clarabel.DefaultSolver

    class Fake:
        def __init__(self, *args: Any) -> None:
            self.inner = real(*args)

        def solve(self) -> Any:
            sol = self.inner.solve()
            return type(
                "Sol",
                (),
                {
                    "x": sol.x,
                    "z": sol.z,
                    "status": "BrandNewStatus",
                    "iterations": sol.iterations,
                    "obj_val": sol.obj_val,
                    "solve_time": sol.solve_time,
                },
            )()

    monkeypatch.setattr(clarabel, "DefaultSolver", Fake)
    res = solve_nuclear(_instance(0)[1], solver="clarabel")
    assert "BrandNewStatus" not in ClarabelBackend.STATUS_MAP
    assert res.status is Status.SOLVER_ERROR
    assert not res.success and res.W is None
    assert "BrandNewStatus" in res.message


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"solver": "mosek"}, "'solver' parameter"),
        ({"tol": 0.0}, "'tol' parameter"),
        ({"tol": "small"}, "'tol' parameter"),
        ({"solver": "clarabel", "not_an_option": 1}, "Unknown Clarabel option"),
    ],
)
def test_bad_arguments_raise_problem_error(kwargs: dict[str, Any], match: str) -> None:
    with pytest.raises(sg.ProblemError, match=match):
        solve_nuclear(_instance(0)[1], **kwargs)


def test_not_a_constraint_set() -> None:
    with pytest.raises(sg.ProblemError, match="ConstraintSet"):
        solve_nuclear(np.zeros((3, 3)))  # type: ignore[arg-type]


def test_auto_runs_scs_then_clarabel_only_if_needed(monkeypatch) -> None:
    data = sg.random_data(16, 2, 20, seed=4)
    cs = sg.att_svm_constraints(data, sg.optimal_tokens(data))
    # the SDP order behind the factored path (issue 16): make the factored path decline
    import svmgeo.solvers._nuclear as nuclear_module
    import svmgeo.solvers._nuclear_factored as factored

    declined = dataclasses.replace(factored.solve_nuclear_factored(cs), status=Status.MAX_ITER)
    monkeypatch.setattr(nuclear_module, "solve_nuclear_factored", lambda cs, tol: declined)
    res = solve_nuclear(cs, solver="auto")
    assert res.solver == "scs" and res.status is Status.OPTIMAL, res.message
    assert res.certificate.passed
    _, status, reference, _ = solve_naive_cvxpy(cs, "nuc", solver="CLARABEL", **TIGHT)
    assert status.startswith("optimal")
    np.testing.assert_allclose(res.objective, reference, rtol=1e-9)
    # an SCS answer that fails (here: stopped after one iteration, polish disabled by tiny
    # max) hands over to Clarabel, and the message says so
    import svmgeo.solvers._nuclear as nuclear

    real = nuclear._solve_with

    def scs_fails(cs, comp, solver, tol, options, start):
        opts = {"max_iters": 1} if solver == "scs" else {}
        out = real(cs, comp, solver, tol, opts, start)
        return dataclasses.replace(out, status=Status.MAX_ITER) if solver == "scs" else out

    monkeypatch.setattr(nuclear, "_solve_with", scs_fails)
    res = solve_nuclear(cs, solver="auto")
    assert res.solver == "clarabel" and res.status is Status.OPTIMAL
    assert "after scs: max_iter" in res.message
    np.testing.assert_allclose(res.objective, reference, rtol=1e-9)


@pytest.mark.parametrize("kwargs", [{"not_an_option": 1}, {"solver": "scs", "not_an_option": 1}])
def test_option_unknown_to_every_backend_raises(kwargs: dict[str, Any]) -> None:
    with pytest.raises(sg.ProblemError, match="not_an_option"):
        solve_nuclear(_instance(0)[1], **kwargs)


@pytest.fixture
def factored_declines(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make the factored path of solver="auto" decline, so that the SDP chain runs."""
    import svmgeo.solvers._nuclear as nuclear_module
    import svmgeo.solvers._nuclear_factored as factored

    real = factored.solve_nuclear_factored

    def declined(cs: sg.ConstraintSet, tol: float) -> sg.SVMResult:
        return dataclasses.replace(real(cs, tol=tol), status=Status.MAX_ITER)

    monkeypatch.setattr(nuclear_module, "solve_nuclear_factored", declined)


def test_backend_options_go_to_the_sdp_fallback_and_the_factored_path_runs_first(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import svmgeo.solvers._nuclear as nuclear

    cs = _instance(5)[1]
    seen: list[tuple[str, dict[str, Any]]] = []
    real = nuclear._solve_with

    def spy(cs, comp, solver, tol, options, start):
        seen.append((solver, dict(options)))
        return real(cs, comp, solver, tol, options, start)

    monkeypatch.setattr(nuclear, "_solve_with", spy)
    plain = solve_nuclear(cs)
    res = solve_nuclear(cs, max_iters=100_000, verbose=False)
    # the options do not switch the factored path off: no SDP runs, same answer
    assert res.solver == "svmgeo-factored" and res.status is Status.OPTIMAL, res.message
    assert seen == []
    np.testing.assert_allclose(res.W, plain.W, rtol=0, atol=0)
    # when the factored path declines, the SDP fallback runs with exactly these options
    import svmgeo.solvers._nuclear as nuclear_module

    declined = dataclasses.replace(res, status=Status.MAX_ITER)
    monkeypatch.setattr(nuclear_module, "solve_nuclear_factored", lambda cs, tol: declined)
    res = solve_nuclear(cs, max_iters=100_000, verbose=False)
    assert res.solver == "scs" and res.status is Status.OPTIMAL, res.message
    assert seen == [("scs", {"max_iters": 100_000, "verbose": False})]
    np.testing.assert_allclose(res.objective, plain.objective, rtol=1e-8)


def test_infeasible_rows_return_at_once_under_auto(monkeypatch: pytest.MonkeyPatch) -> None:
    import svmgeo.solvers._nuclear as nuclear_module

    def never(*args: Any, **kw: Any) -> None:
        raise AssertionError("the factored path ran on infeasible rows")

    monkeypatch.setattr(nuclear_module, "solve_nuclear_factored", never)
    data = sg.random_data(3, 4, 5, seed=1)
    # (x0 - x1)ᵀ W z >= 1 and (x1 - x0)ᵀ W z >= 1 cannot both hold; more rows around them
    cs = sg.pair_constraints(data, [0, 0, 1, 2], [0, 0, 0, 0], [0, 1, 0, 3], [1, 0, 2, 1])
    res = solve_nuclear(cs)
    assert res.status is Status.INFEASIBLE and res.W is None, res.message
    assert res.farkas is not None
    np.testing.assert_allclose(cs.rhs @ res.farkas, 1.0)
    assert np.all(res.farkas >= 0)
    np.testing.assert_allclose(cs.adjoint(res.farkas), 0.0, atol=1e-12)


@pytest.mark.usefixtures("factored_declines")
def test_option_rejected_by_one_backend_does_not_abort_the_auto_chain() -> None:
    # 'max_iter' is a Clarabel setting and no SCS keyword: SCS rejects it, Clarabel solves
    cs = _instance(0)[1]
    res = solve_nuclear(cs, solver="auto", max_iter=500)
    assert res.solver == "clarabel" and res.status is Status.OPTIMAL, res.message
    assert "scs: solver_error" in res.message and "max_iter" in res.message
    np.testing.assert_allclose(res.objective, solve_nuclear(cs).objective, rtol=1e-8)
    # and 'max_iters' is an SCS keyword and no Clarabel setting: SCS alone solves
    res = solve_nuclear(cs, solver="auto", max_iters=100_000)
    assert res.solver == "scs" and res.status is Status.OPTIMAL, res.message


@pytest.mark.usefixtures("factored_declines")
def test_monkeypatched_backend_raising_on_an_option_is_skipped(monkeypatch) -> None:
    from svmgeo.solvers._backends import SCSBackend

    def picky(cls, conic, solver_tol, options, where):
        raise sg.ProblemError(f"SCS does not know the option {sorted(options)} ({where})")

    monkeypatch.setattr(SCSBackend, "solve_conic", classmethod(picky))
    cs = _instance(0)[1]
    res = solve_nuclear(cs, solver="auto", verbose=False)
    assert res.solver == "clarabel" and res.success, res.message
    assert "SCS does not know the option ['verbose']" in res.message
    # an explicitly chosen backend that rejects an option is an error, not a skipped link
    with pytest.raises(sg.ProblemError, match="SCS does not know"):
        solve_nuclear(cs, solver="scs", verbose=False)
