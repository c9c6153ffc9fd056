# SPDX-License-Identifier: BSD-3-Clause
r"""Independent oracles: the attention SVMs written naively from the token arrays.

Nothing here uses svmgeo's constraint builders or solvers. The rows are enumerated with plain
loops over sequences, queries and visible tokens, exactly as SPEC §2 writes them,

.. math::

    (x_{i\alpha_{ik}} - x_{it})^\top W z_{ik} \ge 1
    \qquad \text{for every query } (i, k) \text{ and visible } t \ne \alpha_{ik},

and handed to cvxpy (Clarabel) or scipy's HiGHS LP. They are slow and exist to be compared with.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

import svmgeo as sg
from svmgeo.solvers import parse_norm

from ._checks import signed_margin


def naive_rows(data: sg.TokenData, alpha: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    r"""The Att-SVM rows :math:`(a_j, b_j)` of selection ``alpha``, by explicit loops.

    Returns arrays of shape (N, d): :math:`a_j = x_{i\alpha_{ik}} - x_{it}` and
    :math:`b_j = z_{ik}`, over every query and every visible token other than the selected one.
    """
    A, B, _ = naive_rows_rhs(data, alpha)
    return A, B


def naive_rows_rhs(
    data: sg.TokenData, alpha: np.ndarray, margin: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    r""":func:`naive_rows` and the right-hand side :math:`c_j` of each row: ``margin[i, k]``
    of its query (``margin`` of shape (n,) or (n, K); default 1 for every query)."""
    X, Zq, vis = np.asarray(data.X), np.asarray(data.queries), np.asarray(data.visible)
    a = np.asarray(alpha).reshape(data.n, data.K)
    c_q = np.ones((data.n, data.K)) if margin is None else np.asarray(margin, dtype=float)
    c_q = c_q.reshape(data.n, data.K)
    A, B, c = [], [], []
    for i in range(data.n):
        for k in range(data.K):
            for t in range(data.T):
                if vis[i, k, t] and t != a[i, k]:
                    A.append(X[i, a[i, k]] - X[i, t])
                    B.append(Zq[i, k])
                    c.append(c_q[i, k])
    if not A:
        return np.zeros((0, data.d)), np.zeros((0, data.d)), np.zeros(0)
    return np.array(A), np.array(B), np.array(c)


@dataclass(frozen=True)
class OracleResult:
    r"""What a naive oracle found.

    Attributes
    ----------
    feasible : bool or None
        The oracle's verdict (None when the backend did not decide).
    W : ndarray of shape (d, d) or None
        Its solution (``oracle_att_svm``) or a feasible point (``oracle_feasibility``).
    objective : float or None
        :math:`\|W\|_F` or :math:`\|W\|_*` at the solution (``oracle_att_svm`` only).
    status : str
        The backend's own status string.
    """

    feasible: bool | None
    W: np.ndarray | None
    objective: float | None
    status: str

    def _repr_html_(self) -> str:  # Jupyter: the field table (svmgeo._summary)
        from .._summary import html_summary

        return html_summary(self)


def oracle_att_svm(
    data: sg.TokenData,
    alpha: np.ndarray,
    norm: str = "fro",
    *,
    tol: float = 1e-10,
    margin: np.ndarray | None = None,
) -> OracleResult:
    r"""Att-SVM (``norm="fro"``: :math:`\min \tfrac12\|W\|_F^2`) or Att-SVM⋆ (``norm="nuc"``:
    :math:`\min \|W\|_*`) of ``alpha`` as one cvxpy problem, solved by Clarabel at ``tol``.

    Parameters
    ----------
    data : TokenData
    alpha : array of shape (n,) or (n, K)
        The selection.
    norm : {"fro", "nuc"}
    tol : float
        Clarabel's feasibility and gap tolerances.
    margin : array of shape (n,) or (n, K), optional
        Right-hand side of each query's rows (default 1; the relaxed SVM of joint training
        has 0 on the queries off the head's margin).

    Returns
    -------
    OracleResult
        ``objective`` is :math:`\|W\|_F` or :math:`\|W\|_*` (not the squared form).
    """
    import cvxpy as cp

    if norm not in ("fro", "nuc"):
        raise sg.ProblemError(f"norm must be 'fro' or 'nuc'; got {norm!r}.")
    geometry = _geometry(norm)
    A, B, c = naive_rows_rhs(data, alpha, margin)
    if A.shape[0] == 0:
        return OracleResult(True, np.zeros((data.d, data.d)), 0.0, "no rows")
    W = cp.Variable((data.d, data.d))
    margins = cp.sum(cp.multiply(A @ W, B), axis=1)
    problem = cp.Problem(cp.Minimize(geometry.cvxpy_objective(cp, W)), [margins >= c])
    return _clarabel(problem, W, tol, geometry.value)


def _geometry(norm: str) -> Any:
    """The norm's objective and value, from the table of norms (:data:`svmgeo.solvers.NORMS`)."""
    entry, parameter = parse_norm(norm, "oracle_svm")
    return entry.geometry(parameter)


def _clarabel(problem: Any, x: Any, tol: float, value_of: Any) -> OracleResult:
    """Solve ``problem`` with Clarabel at ``tol``; ``objective`` is the norm of ``x``."""
    import cvxpy as cp

    options = {"tol_feas": tol, "tol_gap_abs": tol, "tol_gap_rel": tol, "max_iter": 500}
    problem.solve(solver=cp.CLARABEL, **options)
    if problem.status in ("optimal", "optimal_inaccurate") and x.value is not None:
        xv = np.asarray(x.value)
        value = float(value_of(xv))
        return OracleResult(True, xv, value, str(problem.status))
    if problem.status in ("infeasible", "infeasible_inaccurate"):
        return OracleResult(False, None, None, str(problem.status))
    return OracleResult(None, None, None, str(problem.status))


def oracle_prompt_svm(
    data: sg.TokenData,
    alpha: np.ndarray,
    margin: np.ndarray | None = None,
    *,
    tol: float = 1e-10,
) -> OracleResult:
    r"""The p-SVM :math:`\min \tfrac12\|p\|^2` s.t. :math:`(x_{i\alpha_{ik}} - x_{it})^\top p
    \ge c_{ik}` as one cvxpy problem in :math:`p \in \mathbb{R}^d` (Clarabel at ``tol``).

    ``margin`` (shape (n,) or (n, K), default all 1) gives :math:`c_{ik}`: the relaxed SVM of
    joint training has 1 on the head's support vectors and 0 elsewhere. ``W`` of the result
    is :math:`p` (shape (d,)), ``objective`` :math:`\|p\|_2`.
    """
    import cvxpy as cp

    A, _, c = naive_rows_rhs(data, alpha, margin)
    if A.shape[0] == 0:
        return OracleResult(True, np.zeros(data.d), 0.0, "no rows")
    p = cp.Variable(data.d)
    problem = cp.Problem(cp.Minimize(0.5 * cp.sum_squares(p)), [A @ p >= c])
    return _clarabel(problem, p, tol, _geometry("fro").value)


def oracle_head_svm(data: sg.TokenData, alpha: np.ndarray, *, tol: float = 1e-10) -> OracleResult:
    r"""The head SVM :math:`\min \tfrac12\|v\|^2` s.t. :math:`Y_{ik}\, v^\top u_{i\alpha_{ik}}
    \ge 1` over the head features ``data.values`` (Clarabel at ``tol``; ``W`` of the result is
    :math:`v`, shape (d_u,), ``objective`` :math:`\|v\|_2`)."""
    import cvxpy as cp

    U, Y = np.asarray(data.values), np.asarray(data.labels)
    a = np.asarray(alpha).reshape(data.n, data.K)
    rows = [Y[i, k] * U[i, a[i, k]] for i in range(data.n) for k in range(data.K)]
    v = cp.Variable(U.shape[2])
    problem = cp.Problem(cp.Minimize(0.5 * cp.sum_squares(v)), [np.array(rows) @ v >= 1.0])
    return _clarabel(problem, v, tol, _geometry("fro").value)


def oracle_feasibility(data: sg.TokenData, alpha: np.ndarray) -> OracleResult:
    r"""Is Att-SVM of ``alpha`` feasible? The signed max-min margin
    :math:`t^\star = \max_{\|W\|_{\max} = 1} \min_j a_j^\top W b_j` of the vectorized rows
    (:func:`~svmgeo.testing.signed_margin`: scipy HiGHS LPs).

    Feasible iff :math:`t^\star > 0` (rows with :math:`a_j b_j^\top = 0` make it infeasible),
    infeasible iff :math:`t^\star < 0`. ``W`` is the LP's point scaled to margin 1 when
    feasible. Decisions within 1e-9 of zero, relative to the largest row, are reported as
    undecided (None).
    """
    A, B = naive_rows(data, alpha)
    d = data.d
    if A.shape[0] == 0:
        return OracleResult(True, np.zeros((d, d)), None, "no rows")
    G = np.einsum("ja,jb->jab", A, B).reshape(A.shape[0], -1)
    if np.any(np.all(G == 0.0, axis=1)):  # a_j b_j^T = 0 cannot reach a margin of 1
        return OracleResult(False, None, None, "a zero row")
    t, w = signed_margin(G / float(np.abs(G).max()))
    if abs(t) <= 1e-9:
        return OracleResult(None, None, None, f"max-min margin {t:.3g} is within round-off of 0")
    if t < 0:
        return OracleResult(False, None, None, f"optimal: max-min margin {t:.3g} < 0")
    W = w.reshape(d, d)
    W = W / float(np.min(G @ W.ravel()))
    return OracleResult(True, W, None, "optimal")
