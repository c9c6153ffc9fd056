# SPDX-License-Identifier: BSD-3-Clause
"""Att-SVM⋆ on many rows and a tiny compressed W (session 56, task N; issue 25's
"att_svm(norm='nuc') takes 19-21 s where Clarabel takes 0.29 s").

The instance: (n, T, d) = (2000, 3, 2), every query a positive multiple of one vector, so
:math:`r_1 = 2`, :math:`r_2 = 1`; 4000 margin rows, barely separable (objective about 524,
multipliers in the hundreds whose terms in :math:`\\Lambda` cancel). Objectives are compared
with the naive model :math:`\\min \\|W\\|_*` s.t. :math:`a_j^\\top W b_j \\ge 1` solved by cvxpy +
Clarabel, an independent oracle.
"""

from __future__ import annotations

import numpy as np

import svmgeo as sg
from svmgeo.solvers import Status, solve_naive_cvxpy
from svmgeo.solvers._nuclear_factored import GAP_TOL, solve_nuclear_factored

TIGHT = {"tol_gap_abs": 1e-10, "tol_gap_rel": 1e-10, "tol_feas": 1e-10}


def _parallel_queries(n: int, T: int, d: int, seed: int) -> sg.ConstraintSet:
    """Random tokens and head, queries ``s_i z`` with one random ``z`` and ``s_i`` in [0.5, 2]
    (audit H's instance of session 55 at seed 0), α the optimal tokens."""
    rng = np.random.default_rng(seed)
    v = rng.normal(size=d)
    X = rng.normal(size=(n, T, d))
    Z = np.tile(rng.normal(size=d), (n, 1)) * rng.uniform(0.5, 2.0, size=(n, 1))
    data = sg.TokenData(X, v=v, Z=Z)
    return sg.att_svm_constraints(data, sg.optimal_tokens(data))


def assert_certificate_from_definitions(cs: sg.ConstraintSet, res: sg.SVMResult) -> None:
    """svmgeo's nuclear certificate recomputed here from the definitions (SPEC §6, nuclear) on
    margin rows with :math:`c_j = 1`: W feasible, λ ≥ 0 dual feasible, gap at most ``GAP_TOL``."""
    W, lam = res.W, res.dual
    assert np.einsum("ja,ab,jb->j", cs.A, W, cs.B).min() >= 1.0 - 1e-12
    assert lam.min() >= 0.0
    assert np.linalg.norm(np.einsum("j,ja,jb->ab", lam, cs.A, cs.B), 2) <= 1.0 + 1e-12
    nuc = np.linalg.svd(W, compute_uv=False).sum()
    np.testing.assert_allclose(lam.sum(), nuc, rtol=GAP_TOL)


def test_factored_path_certifies_where_the_kkt_residual_floor_is_above_1e_12() -> None:
    """Before: the reduced KKT Newton stalled at residuals 1e-11..2e-10 (the rounding of
    :math:`\\Lambda QQ^\\top` with cancelling multipliers) against a fixed 1e-12, the polish
    was refused and the first-order answer (gap 1.8e-9 > 1e-9) sent ``solve_nuclear`` to SCS
    (200000 iterations, not certified) and then Clarabel."""
    cs = _parallel_queries(2000, 3, 2, seed=0)
    res = solve_nuclear_factored(cs)
    assert res.status is Status.OPTIMAL, res.message
    assert res.extras["kkt_polish"] is True
    assert res.certificate.passed and res.certificate.duality_gap <= GAP_TOL
    _, status, value, _ = solve_naive_cvxpy(cs, "nuc", solver="CLARABEL", **TIGHT)
    assert status == "optimal"
    np.testing.assert_allclose(res.objective, value, rtol=1e-6)
    assert_certificate_from_definitions(cs, res)
