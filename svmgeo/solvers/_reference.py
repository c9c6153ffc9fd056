# SPDX-License-Identifier: BSD-3-Clause
r"""The naive cvxpy formulation: the reference path and the oracle of the tests.

One cvxpy constraint object per token pair, :math:`W` a full :math:`d\times d` variable, as in
the paper's experiment code. Slow on purpose; svmgeo's fast paths are checked against it.
"""

from __future__ import annotations

import time
from typing import Literal

import numpy as np

from ..constraints import MARGIN, ConstraintSet

__all__ = ["solve_naive_cvxpy", "solve_naive_cvxpy_duals"]


def solve_naive_cvxpy(
    cs: ConstraintSet,
    norm: Literal["fro", "nuc"] = "fro",
    *,
    solver: str = "CLARABEL",
    **solver_options: object,
) -> tuple[np.ndarray | None, str, float, float]:
    r"""Solve :math:`\min \|W\| \text{ s.t. rows of } cs` with a full cvxpy model.

    Returns
    -------
    W : ndarray of shape (d, d) or None
    status : str
        cvxpy's status string.
    objective : float
        cvxpy's optimal value (``inf`` when infeasible).
    solve_time : float
        Wall time in seconds, cvxpy's canonicalization included.
    """
    W, _, status, value, solve_time = solve_naive_cvxpy_duals(
        cs, norm, solver=solver, **solver_options
    )
    return W, status, value, solve_time


def solve_naive_cvxpy_duals(
    cs: ConstraintSet,
    norm: Literal["fro", "nuc"] = "fro",
    *,
    solver: str = "CLARABEL",
    **solver_options: object,
) -> tuple[np.ndarray | None, np.ndarray | None, str, float, float]:
    r""":func:`solve_naive_cvxpy`, also returning the rows' dual values (shape (N,), or None).

    For ``norm="fro"`` the model is the QP :math:`\min \tfrac12\|W\|_F^2` (same minimiser as
    :math:`\min \|W\|_F`; Clarabel solves it to ~1e-11 in W, the second-order-cone form only to
    ~1e-6), so the duals are the multipliers :math:`\lambda` of :math:`W = \sum_j \lambda_j a_j b_j^\top`
    directly (sign-flipped on equality rows by cvxpy's convention). For ``norm="nuc"`` they are the
    multipliers of :math:`\min \|W\|_*`. The returned value is always the norm itself.
    """
    import cvxpy as cp  # lazily: the reference path, not needed by `import svmgeo`

    from ._api import NORMS  # the norm's objective; _api imports this module

    spec = NORMS[norm]
    start = time.perf_counter()
    d = cs.d
    W = cp.Variable((d, d))
    constraints = []
    for j in range(cs.N):
        row = cs.A[j] @ W @ cs.B[j]
        if cs.kind[j] == MARGIN:
            constraints.append(row >= cs.rhs[j])
        else:
            constraints.append(row == cs.rhs[j])
    problem = cp.Problem(cp.Minimize(spec.cvxpy_objective(cp, W)), constraints)
    problem.solve(solver=solver, **solver_options)
    solve_time = time.perf_counter() - start
    value = None if W.value is None else np.asarray(W.value)
    duals = None
    if constraints and all(con.dual_value is not None for con in constraints):
        duals = np.array([float(np.asarray(con.dual_value)) for con in constraints])
    elif not constraints:
        duals = np.zeros(0)
    optimum = spec.from_cvxpy_value(float(problem.value))
    return value, duals, str(problem.status), optimum, solve_time
