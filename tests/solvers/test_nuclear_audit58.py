# SPDX-License-Identifier: BSD-3-Clause
"""Att-SVM⋆ with ``solver="auto"``: Clarabel's split SDP first on small, redundant rows
(session 58, task N; issue 25).

Rows whose queries span a q-dimensional space (q = 1, 2, 3: :math:`\\min(r_1, r_2) = q`) and
that outnumber the compressed unknowns :math:`r_1 r_2`. Before, the factored path answered
them, 3-9x slower than Clarabel alone at (2000, 3, 2) (up to 150x on the wider grid).
Objectives are compared with the naive full-matrix model solved by cvxpy + Clarabel
(``test_nuclear_audit57._oracle``), an independent oracle, and the certificate is recomputed
from the definitions.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import svmgeo as sg
from svmgeo.solvers import Status, check_feasibility
from svmgeo.solvers._nuclear import solve_nuclear
from svmgeo.solvers._nuclear_factored import GAP_TOL

from .test_nuclear_audit56 import assert_certificate_from_definitions
from .test_nuclear_audit57 import _oracle


def _spanned_queries(n: int, T: int, d: int, q: int, seed: int) -> sg.ConstraintSet:
    """Random tokens and head, every query a positive combination of q random vectors
    (q = 1: the rows of ``bench_svm_nuclear.py --parallel-queries``), α the optimal tokens."""
    rng = np.random.default_rng(seed)
    v = rng.normal(size=d)
    X = rng.normal(size=(n, T, d))
    if q == 1:  # exactly the benchmark's draw
        Z = np.tile(rng.normal(size=d), (n, 1)) * rng.uniform(0.5, 2.0, size=(n, 1))
    else:
        Z = rng.uniform(0.5, 2.0, size=(n, q)) @ rng.normal(size=(q, d))
    data = sg.TokenData(X, v=v, Z=Z)
    return sg.att_svm_constraints(data, sg.optimal_tokens(data))


@pytest.fixture
def factored_must_not_run(monkeypatch: pytest.MonkeyPatch) -> None:
    import svmgeo.solvers._nuclear as nuclear_module

    def never(*args: Any, **kw: Any) -> None:
        raise AssertionError("the factored path ran before Clarabel")

    monkeypatch.setattr(nuclear_module, "solve_nuclear_factored", never)


@pytest.mark.usefixtures("factored_must_not_run")
@pytest.mark.parametrize(
    ("n", "T", "d", "q", "seed"),
    [(2000, 3, 2, 1, 0), (2000, 3, 2, 1, 2), (300, 3, 3, 2, 0), (300, 3, 3, 3, 0)],
)
def test_small_redundant_rows_are_answered_by_clarabel_first(
    n: int, T: int, d: int, q: int, seed: int
) -> None:
    cs = _spanned_queries(n, T, d, q, seed)
    res = solve_nuclear(cs)
    assert res.status is Status.OPTIMAL, res.message
    assert res.solver == "clarabel"
    assert min(res.extras["r1"], res.extras["r2"]) == q
    assert res.certificate.passed and res.certificate.duality_gap <= GAP_TOL
    np.testing.assert_allclose(res.objective, _oracle(cs), rtol=1e-7)
    assert_certificate_from_definitions(cs, res)


def test_infeasible_rows_inside_the_rule_keep_the_feasibility_verdict(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Clarabel runs first (once, the only backend), finds no solution, and the float
    feasibility check decides as before: the same status, solver and Farkas vector as the
    check alone gives."""
    import svmgeo.solvers._nuclear as nuclear_module

    data = sg.random_data(50, 3, 2, seed=0)  # 100 rows in d = 2: no W separates them
    cs = sg.att_svm_constraints(data, sg.optimal_tokens(data))
    backends: list[tuple[str, Status]] = []
    solve_with = nuclear_module._solve_with

    def spy(*args: Any) -> sg.SVMResult:
        res = solve_with(*args)
        backends.append((args[2], res.status))
        return res

    monkeypatch.setattr(nuclear_module, "_solve_with", spy)
    res = solve_nuclear(cs)
    assert len(backends) == 1 and backends[0][0] == "clarabel", backends
    assert not backends[0][1].has_solution, backends
    alone = check_feasibility(cs, exact=False)
    assert alone.status is Status.INFEASIBLE
    assert res.status is Status.INFEASIBLE and res.W is None, res.message
    assert res.solver == alone.solver
    np.testing.assert_allclose(res.farkas, alone.farkas, rtol=0, atol=0)
    np.testing.assert_allclose(cs.rhs @ res.farkas, 1.0)
    np.testing.assert_allclose(cs.adjoint(res.farkas), 0.0, atol=1e-10)


def test_rows_outside_the_rule_still_go_to_the_factored_path_first() -> None:
    # (10, 10, 20): 90 rows, r1 r2 = 200 compressed unknowns (fewer rows): factored first
    data = sg.random_data(10, 10, 20, seed=0)
    cs = sg.att_svm_constraints(data, sg.optimal_tokens(data))
    res = solve_nuclear(cs)
    assert res.status is Status.OPTIMAL and res.solver == "svmgeo-factored", res.message
