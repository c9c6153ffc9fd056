# SPDX-License-Identifier: BSD-3-Clause
r"""The naive cvxpy formulation: the reference path and the oracle of the tests.

One cvxpy constraint object per token pair, :math:`W` a full :math:`d\times d` variable, as in
the paper's experiment code. Slow on purpose; svmgeo's fast paths are checked against it.
One model serves every norm: the norm enters as its :class:`~._certificates.NormGeometry`
(the objective of the table of norms' entry, ``_norms.py``).
"""

from __future__ import annotations

import time

import numpy as np

from ..constraints import MARGIN, ConstraintSet
from ._certificates import NormGeometry

__all__ = ["solve_reference"]


def solve_reference(
    cs: ConstraintSet,
    norm: NormGeometry,
    *,
    solver: str = "CLARABEL",
    **solver_options: object,
) -> tuple[np.ndarray | None, np.ndarray | None, str, float, float]:
    r"""Solve :math:`\min \|W\| \text{ s.t. rows of } cs` with a full cvxpy model.

    .. math::

        \min_W\ \phi(W) \quad\text{s.t.}\quad a_j^\top W b_j \ge c_j\ (\text{margin}),\
        a_j^\top W b_j = c_j\ (\text{equality}),

    with :math:`\phi` = ``norm.cvxpy_objective`` (:math:`\tfrac12\|W\|_F^2` for the
    Frobenius norm: the same minimiser, and Clarabel solves the QP to ~1e-11 in W, the
    second-order-cone form only to ~1e-6; :math:`\|W\|_*`; :math:`\|\mathrm{vec}\,W\|_p` with
    exact power cones).

    Parameters
    ----------
    cs : ConstraintSet
    norm : NormGeometry
        The norm (``_certificates.FRO``, ``NUC`` or ``lp_geometry(p)``).
    solver : str, default "CLARABEL"
        A cvxpy solver name.
    **solver_options
        Passed to ``problem.solve``.

    Returns
    -------
    W : ndarray of shape (d, d) or None
    dual : ndarray of shape (N,) or None
        The rows' multipliers in svmgeo's sign convention (:math:`\ge 0` on margin rows;
        cvxpy's opposite sign on equality rows is undone here, once). For the Frobenius QP
        they are :math:`\lambda` of :math:`W = \sum_j \lambda_j a_j b_j^\top` directly.
    status : str
        cvxpy's status string.
    value : float
        The norm at the optimum (``norm.from_cvxpy_value`` of cvxpy's value; ``inf`` when
        infeasible).
    solve_time : float
        Wall time in seconds, cvxpy's canonicalization included.
    """
    import cvxpy as cp  # lazily: the reference path, not needed by `import svmgeo`

    start = time.perf_counter()
    W = cp.Variable((cs.d, cs.d))
    constraints = []
    for j in range(cs.N):
        row = cs.A[j] @ W @ cs.B[j]
        if cs.kind[j] == MARGIN:
            constraints.append(row >= cs.rhs[j])
        else:
            constraints.append(row == cs.rhs[j])
    problem = cp.Problem(cp.Minimize(norm.cvxpy_objective(cp, W)), constraints)
    problem.solve(solver=solver, **solver_options)
    solve_time = time.perf_counter() - start
    value = None if W.value is None else np.asarray(W.value)
    duals = None
    if constraints and all(con.dual_value is not None for con in constraints):
        mu = np.array([float(np.asarray(con.dual_value)) for con in constraints])
        duals = np.where(cs.kind == MARGIN, mu, -mu)  # cvxpy's sign on equality rows
    elif not constraints:
        duals = np.zeros(0)
    optimum = norm.from_cvxpy_value(float(problem.value))
    return value, duals, str(problem.status), optimum, solve_time
