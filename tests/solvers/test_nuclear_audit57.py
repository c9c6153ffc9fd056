# SPDX-License-Identifier: BSD-3-Clause
"""Att-SVM⋆ on parallel-query rows, seeds 1-3 (session 57, task N; issue 25).

The instances of ``benchmarks/bench_svm_nuclear.py --parallel-queries`` at (n, T, d) =
(2000, 3, 2): every query a positive multiple of one vector (:math:`r_2 = 1`), 4000 margin
rows. Before the fix the factored path's L-BFGS took a null step (Armijo met only because the
step vanished below the iterate's rounding) and repeated it unchanged until its cap, in three
or four subproblems of each seed: 6000-8000 iterations, 7-14 s, where the fixed run needs under 250.
Objectives are compared with the naive model :math:`\\min \\|W\\|_*` s.t.
:math:`a_j^\\top W b_j \\ge 1` on the full :math:`d \\times d` matrix, solved by cvxpy +
Clarabel, an independent oracle (the rows as one matrix product: ``solve_naive_cvxpy`` builds
4000 row expressions, about 7 s per instance, to the same optimum).
"""

from __future__ import annotations

import cvxpy as cp
import numpy as np
import pytest

import svmgeo as sg
from svmgeo.constraints import MARGIN
from svmgeo.solvers import Status
from svmgeo.solvers._nuclear import solve_nuclear
from svmgeo.solvers._nuclear_factored import _MAX_LBFGS, GAP_TOL, _lbfgs, solve_nuclear_factored

from .test_nuclear_audit56 import (  # the benchmark's --parallel-queries rows
    _parallel_queries,
    assert_certificate_from_definitions,
)

TIGHT = {"tol_gap_abs": 1e-10, "tol_gap_rel": 1e-10, "tol_feas": 1e-10}


def _oracle(cs: sg.ConstraintSet) -> float:
    """min ||W||_* s.t. a_j^T W b_j >= c_j (margin rows only) by cvxpy + Clarabel."""
    assert np.all(cs.kind == MARGIN)
    d = cs.A.shape[1]
    F = np.einsum("ja,jb->jab", cs.A, cs.B).reshape(cs.N, d * d)
    W = cp.Variable((d, d))
    rows = F @ cp.reshape(W, (d * d,), order="C") >= cs.rhs
    problem = cp.Problem(cp.Minimize(cp.normNuc(W)), [rows])
    problem.solve(solver="CLARABEL", **TIGHT)
    assert problem.status == "optimal"
    return float(problem.value)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_parallel_queries_no_subproblem_spins_to_its_cap(seed: int) -> None:
    """The factored path answers without an L-BFGS run to its cap: fewer iterations in all
    than one subproblem's cap (before: 6052 / 8045 / 6039, seeds 1-3). Run directly, with the
    arguments ``solve_nuclear`` passes it: since session 59 ``solver="auto"`` answers these
    rows by Clarabel first (``_sdp_first``), which must be certified too."""
    cs = _parallel_queries(2000, 3, 2, seed)
    auto = solve_nuclear(cs)
    assert auto.status is Status.OPTIMAL and auto.certificate.passed, auto.message
    assert_certificate_from_definitions(cs, auto)
    res = solve_nuclear_factored(cs, tol=1e-8)  # solve_nuclear's default tol
    assert res.status is Status.OPTIMAL, res.message
    assert res.solver == "svmgeo-factored"
    assert (res.extras["r1"], res.extras["r2"]) == (2, 1)
    assert res.extras["lbfgs_iterations"] < _MAX_LBFGS
    assert res.certificate.passed and res.certificate.duality_gap <= GAP_TOL
    np.testing.assert_allclose(res.objective, _oracle(cs), rtol=1e-6)
    assert_certificate_from_definitions(cs, res)


def test_lbfgs_still_steps_where_f_no_longer_resolves_the_decrease() -> None:
    """Steps that change :math:`z` but not :math:`f` (its rounding floor) are still taken:
    on :math:`f = 10^3 + \\tfrac12(z_1^2 + 10^8 z_2^2)` the gradient reaches 1e-12, far
    below :math:`\\sqrt{2\\cdot 10^8\\,\\epsilon f} \\approx 7\\cdot 10^{-3}`, the least
    gradient a decrease of :math:`f` can resolve along :math:`z_2`."""
    H = np.array([1.0, 1e8])

    def fun(z: np.ndarray) -> tuple[float, np.ndarray]:
        return 1e3 + 0.5 * float(z @ (H * z)), H * z

    z, g, its = _lbfgs(fun, np.array([1.0, 1.0]), gtol=1e-12, max_iter=100)
    assert its < 100
    assert np.abs(g).max() <= 1e-12
    np.testing.assert_allclose(z, 0.0, atol=1e-12)
