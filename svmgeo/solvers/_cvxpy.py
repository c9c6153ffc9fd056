# SPDX-License-Identifier: BSD-3-Clause
r"""The naive cvxpy formulation: the reference path and the oracle of the tests.

One cvxpy constraint object per token pair, :math:`W` a full :math:`d\times d` variable, as in
the paper's experiment code. Slow on purpose; svmgeo's fast paths are checked against it.
"""

from __future__ import annotations

import time
from typing import Literal

import cvxpy as cp
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
    seconds : float
        Wall time including cvxpy's canonicalization.
    """
    W, _, status, value, seconds = solve_naive_cvxpy_duals(
        cs, norm, solver=solver, **solver_options
    )
    return W, status, value, seconds


def solve_naive_cvxpy_duals(
    cs: ConstraintSet,
    norm: Literal["fro", "nuc"] = "fro",
    *,
    solver: str = "CLARABEL",
    **solver_options: object,
) -> tuple[np.ndarray | None, np.ndarray | None, str, float, float]:
    r""":func:`solve_naive_cvxpy`, also returning the rows' dual values (shape (N,), or None).

    The duals are cvxpy's multipliers for :math:`\min \|W\|` (not :math:`\tfrac12\|W\|^2`).
    """
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
    objective = cp.norm(W, "fro") if norm == "fro" else cp.normNuc(W)
    problem = cp.Problem(cp.Minimize(objective), constraints)
    problem.solve(solver=solver, **solver_options)
    seconds = time.perf_counter() - start
    value = None if W.value is None else np.asarray(W.value)
    duals = None
    if constraints and all(con.dual_value is not None for con in constraints):
        duals = np.array([float(np.asarray(con.dual_value)) for con in constraints])
    elif not constraints:
        duals = np.zeros(0)
    return value, duals, str(problem.status), float(problem.value), seconds
