# SPDX-License-Identifier: BSD-3-Clause
r"""The spectral-norm Att-SVM: :math:`\min \|W\|_2` over token-pair rows, a compressed SDP.

.. math::

    \min_W \|W\|_2 = \sigma_1(W) \quad\text{s.t.}\quad
    a_j^\top W b_j \ge c_j\ (\text{margin}),\quad a_j^\top W b_j = c_j\ (\text{equality}),

the max-margin problem that spectral (steepest) descent, Muon without momentum, converges to
in direction for separable linear models (Fan, Schmidt, Thrampoulidis 2025; issue #23). For
softmax attention that implicit bias is not proved (MATH-NOTES §7): a conjecture, by analogy,
measured by ``svmgeo reproduce optimizers`` (docs/spectral.md). Its Lagrange dual (the dual norm of :math:`\|\cdot\|_2` is the nuclear norm) is

.. math::

    \max_\lambda\ c^\top\lambda \quad\text{s.t.}\quad
    \Big\|\sum_j \lambda_j a_j b_j^\top\Big\|_* \le 1,\quad \lambda_j \ge 0\ (\text{margin rows}),

since :math:`\min_W \|W\|_2 - \langle\Lambda, W\rangle = 0` when :math:`\|\Lambda\|_* \le 1`
and :math:`-\infty` otherwise; weak duality is :math:`c^\top\lambda \le \langle\Lambda, W\rangle
\le \|\Lambda\|_*\|W\|_2` for every feasible :math:`W`.

**Compression.** Let :math:`U \in \mathbb{R}^{d\times r_1}`, :math:`V \in \mathbb{R}^{d\times r_2}`
be orthonormal bases of :math:`\mathrm{span}\{a_j\}` and :math:`\mathrm{span}\{b_j\}`, and
:math:`P_U = UU^\top`, :math:`P_V = VV^\top`. For every :math:`W`:

* the rows are kept: :math:`a_j^\top P_U W P_V b_j = (P_U a_j)^\top W (P_V b_j) =
  a_j^\top W b_j`, because :math:`P_U a_j = a_j` and :math:`P_V b_j = b_j`;
* the norm never rises: :math:`\|P_U W P_V\|_2 \le \|P_U\|_2 \|W\|_2 \|P_V\|_2 \le \|W\|_2`
  (submultiplicativity; an orthogonal projector has norm at most 1).

So :math:`P_U W^\star P_V` is optimal whenever :math:`W^\star` is, and the search can be
restricted to :math:`W = U M V^\top`, :math:`M \in \mathbb{R}^{r_1\times r_2}`, where
:math:`\|UMV^\top\|_2 = \|M\|_2` (:math:`U, V` have orthonormal columns) and the rows read
:math:`\tilde a_j^\top M \tilde b_j` with :math:`\tilde a_j = U^\top a_j`,
:math:`\tilde b_j = V^\top b_j`. The SDP
:math:`\min t` s.t. :math:`\begin{bmatrix} tI & M \\ M^\top & tI\end{bmatrix} \succeq 0` then has
one cone of size :math:`r_1 + r_2` instead of :math:`2d`. The optimum need not be unique (a face
of optimal solutions, see :mod:`._face`): the compressed one is the optimum of least extent off
the rows' spans.

**Certificate.** Whatever the backend answered, svmgeo recomputes everything from the data
(:func:`~._certificates.spectral_certificate` through :func:`~._result.finish`): the multipliers
are normalized, :math:`\lambda \leftarrow \lambda / \|\Lambda(\lambda)\|_*` (nuclear norm by SVD),
so that the dual is feasible; :math:`W` is lifted onto its rows by a factor :math:`1 + O(\epsilon)`;
margins, complementarity and the duality gap :math:`|\|W\|_2 - c^\top\lambda|` are recomputed,
and the status is downgraded with a message when any exceeds ``tol``. Feasibility is decided
before (norm-independent, :func:`~._feasibility.check_feasibility`), so infeasible rows give the
Farkas certificate as for every norm.
"""

from __future__ import annotations

import time
import warnings
from typing import Any

import numpy as np

from .._linalg import orthonormal_basis
from ..constraints import MARGIN, ConstraintSet
from ._certificates import (
    SPECTRAL,
    adjoint_nuclear_norm,
    lift_onto_rows,
    zero_is_feasible,
)
from ._result import SVMResult, finish, no_solution, replaced
from ._status import Status

__all__ = ["GAP_TARGET", "SPECTRAL_BACKENDS", "quiet_solve", "solve_spectral"]

SPECTRAL_BACKENDS = ("auto", "clarabel", "scs")
"""The ``solver`` values of the compressed SDP (``"auto"``: Clarabel, then SCS)."""

GAP_TARGET = 1e-9
"""A certified answer whose worst residual is at most this ends the attempts at once."""

_ATTEMPTS: tuple[tuple[str, float], ...] = (("dual", 1e-12), ("primal", 1e-10))
r"""(form, tolerance) tried per backend, in order. The dual form
:math:`\max c^\top\lambda` s.t. :math:`\|L\|_* \le 1`, :math:`L = \sum_j \lambda_j \tilde a_j
\tilde b_j^\top` (W is the multiplier of the last equation) reaches certified gaps of 1.1e-11
to 2.6e-10 with Clarabel on the self-attention rows of ``random_data(6, 8, 10, seed,
query="all")``, seeds 0-4, where the primal form :math:`\min \sigma_{\max}(M)` stops at 1.5e-9
to 1.5e-8 and fails the 1e-8 certificate on two seeds (``benchmarks/spectral_forms.py``);
Clarabel may call either ``optimal_inaccurate`` at these tolerances: svmgeo's certificate
decides."""


def _options(backend: str, tol: float) -> dict[str, Any]:
    if backend == "scs":
        eps = max(tol, 1e-10)  # first-order: 1e-12 costs its whole iteration budget
        return {"eps_abs": eps, "eps_rel": eps, "max_iters": 20000}
    return {"tol_gap_abs": tol, "tol_gap_rel": tol, "tol_feas": tol, "max_iter": 400}


def quiet_solve(problem: Any, name: str, options: dict[str, Any]) -> None:
    """``problem.solve`` without cvxpy's "may be inaccurate" warning: svmgeo's certificate
    judges the answer (and warns, through the status, when it fails)."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Solution may be inaccurate")
        problem.solve(solver=name, **options)


def _compressed_sdp(
    cs: ConstraintSet, backend: str, form: str, tol: float
) -> tuple[np.ndarray | None, np.ndarray | None, str, int, tuple[int, int]]:
    r"""The compressed SDP in ``form`` ``"primal"`` (:math:`\min \|M\|_2` s.t.
    :math:`\tilde a_j^\top M \tilde b_j \ (\ge, =)\ c_j`) or ``"dual"``, by cvxpy and
    ``backend`` at ``tol``; returns :math:`W = UMV^\top`, :math:`\lambda` in svmgeo's sign
    convention (:math:`\ge 0` on margin rows), cvxpy's status, the iterations and
    :math:`(r_1, r_2)`."""
    import cvxpy as cp  # lazily: the SDP backends are only needed here

    U, V = orthonormal_basis(cs.A), orthonormal_basis(cs.B)
    shape = (U.shape[1], V.shape[1])
    F = np.einsum("jp,jq->jpq", cs.A @ U, cs.B @ V).reshape(cs.N, -1)
    margin = cs.kind == MARGIN
    name = cp.SCS if backend == "scs" else cp.CLARABEL
    if form == "dual":
        lam_var = cp.Variable(cs.N)
        L = cp.Variable(shape)
        link = cp.vec(L, order="C") == F.T @ lam_var
        cons = [link, cp.normNuc(L) <= 1]
        if np.any(margin):
            cons.append(lam_var[np.flatnonzero(margin)] >= 0)
        problem = cp.Problem(cp.Maximize(cs.rhs @ lam_var), cons)
        quiet_solve(problem, name, _options(backend, tol))
        n_iter = int(getattr(problem.solver_stats, "num_iters", 0) or 0)
        if lam_var.value is None or link.dual_value is None or L.value is None:
            return None, None, str(problem.status), n_iter, shape
        Y = np.asarray(link.dual_value, dtype=float).reshape(shape)
        # W is +-Y (cvxpy's sign convention): the sign with <W, L> > 0
        Y = Y if float(np.vdot(Y, np.asarray(L.value))) >= 0 else -Y
        return (
            U @ Y @ V.T,
            np.asarray(lam_var.value, dtype=float),
            str(problem.status),
            n_iter,
            shape,
        )
    M = cp.Variable(shape)
    rows = F @ cp.vec(M, order="C")
    constraints = []
    if np.any(margin):
        constraints.append(rows[np.flatnonzero(margin)] >= cs.rhs[margin])
    if np.any(~margin):
        constraints.append(rows[np.flatnonzero(~margin)] == cs.rhs[~margin])
    problem = cp.Problem(cp.Minimize(cp.sigma_max(M)), constraints)
    quiet_solve(problem, name, _options(backend, tol))
    n_iter = int(getattr(problem.solver_stats, "num_iters", 0) or 0)
    if M.value is None or any(con.dual_value is None for con in constraints):
        return None, None, str(problem.status), n_iter, shape
    lam = np.zeros(cs.N)
    k = 0
    if np.any(margin):
        lam[margin] = np.asarray(constraints[k].dual_value, dtype=float).ravel()
        k += 1
    if np.any(~margin):  # cvxpy's opposite sign on equality rows
        lam[~margin] = -np.asarray(constraints[k].dual_value, dtype=float).ravel()
    return U @ np.asarray(M.value, dtype=float) @ V.T, lam, str(problem.status), n_iter, shape


def solve_spectral(cs: ConstraintSet, *, solver: str = "auto", tol: float = 1e-8) -> SVMResult:
    r"""svmgeo's spectral Att-SVM: the compressed SDP, certified by svmgeo.

    .. math::

        \min_M \|M\|_2 \quad\text{s.t.}\quad \tilde a_j^\top M \tilde b_j \ge c_j\ (=c_j),
        \qquad W = U M V^\top

    (module docstring: the compression and its proof, the dual, the certificate). Each
    backend runs the forms of :data:`_ATTEMPTS` in order; the first answer whose certificate
    passes with worst residual at most :data:`GAP_TARGET` is returned, else the one with the
    smallest worst residual (the next backend runs only when no answer passed).

    Parameters
    ----------
    cs : ConstraintSet
        Rows already known to be feasible (:func:`~svmgeo.solve_svm` decides it first).
    solver : {"auto", "clarabel", "scs"}, default "auto"
        The SDP backend (through cvxpy); ``"auto"`` is Clarabel, then SCS when no Clarabel
        answer passes the certificate.
    tol : float, default 1e-8
        Tolerance of svmgeo's certificate.

    Returns
    -------
    SVMResult
        ``norm="spectral"``, ``objective`` :math:`\|W\|_2`, ``dual`` the normalized
        :math:`\lambda` (:math:`\|\Lambda\|_* = 1`), ``extras["compressed"]`` =
        :math:`(r_1, r_2)`, ``extras["form"]``; ``OPTIMAL_INACCURATE`` with the failed
        residuals named when the certificate fails, ``SOLVER_ERROR`` when no backend answered.
    """
    start = time.perf_counter()
    if zero_is_feasible(cs):  # W = 0 meets every row
        return finish(
            cs, np.zeros((cs.d, cs.d)), np.zeros(cs.N), norm=SPECTRAL, tol=tol,
            status=Status.OPTIMAL, message="W = 0 meets every row", solver="svmgeo-spectral",
            solve_time=time.perf_counter() - start,
        )  # fmt: skip
    backends = ("clarabel", "scs") if solver == "auto" else (solver,)
    tried: list[str] = []
    best: SVMResult | None = None
    for backend in backends:
        for form, backend_tol in _ATTEMPTS:
            label = f"svmgeo-spectral-sdp/{backend}"
            try:
                W, lam, native, n_iter, shape = _compressed_sdp(cs, backend, form, backend_tol)
            except Exception as exc:  # cvxpy raises SolverError and friends: try the next one
                tried.append(f"{backend} ({form}): {type(exc).__name__}: {exc}")
                continue
            if W is None or lam is None or native not in ("optimal", "optimal_inaccurate"):
                tried.append(f"{backend} ({form}): cvxpy status {native!r}")
                continue
            res = _certified(
                cs, W, lam, tol, label=label, native=native, n_iter=n_iter,
                extras={"cvxpy_status": native, "compressed": shape, "form": form},
            )  # fmt: skip
            assert res.certificate is not None  # finish always attaches one
            if best is None or res.certificate.worst < best.certificate.worst:  # type: ignore[union-attr]
                best = res
            if res.success and res.certificate.worst <= GAP_TARGET:
                return replaced(res, solve_time=time.perf_counter() - start)
        if best is not None and best.success:  # certified: the next backend is not needed
            break
    if best is not None:
        return replaced(best, solve_time=time.perf_counter() - start)
    return no_solution(
        cs, Status.SOLVER_ERROR, "the compressed spectral SDP failed: " + "; ".join(tried),
        norm="spectral", solver=f"svmgeo-spectral-sdp/{solver}",
        solve_time=time.perf_counter() - start,
    )  # fmt: skip


def _certified(
    cs: ConstraintSet,
    W: np.ndarray,
    lam: np.ndarray,
    tol: float,
    *,
    label: str,
    native: str,
    n_iter: int,
    extras: dict[str, Any],
) -> SVMResult:
    r"""Clip λ to :math:`\ge 0` on margin rows and normalize it (:math:`\|\Lambda\|_* = 1`),
    lift W onto its rows, certify (:func:`finish`)."""
    lam = np.where(cs.kind == MARGIN, np.maximum(lam, 0.0), lam)  # the IPM's -1e-12s
    size = adjoint_nuclear_norm(cs, lam)
    lam = lam / size if size > 0 else lam
    return finish(
        cs,
        lift_onto_rows(cs, W),
        lam,
        norm=SPECTRAL,
        tol=tol,
        status=Status.OPTIMAL,
        message=f"compressed SDP ({extras['form']} form, {label.rpartition('/')[2]}: "
        f"cvxpy status {native!r})",
        solver=label,
        n_iter=n_iter,
        extras=extras,
    )
