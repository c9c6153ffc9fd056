# SPDX-License-Identifier: BSD-3-Clause
r"""The :math:`\ell_p` Att-SVM: :math:`\min \|W\|_p` (entrywise) over token-pair rows.

.. math::

    \min_W \|W\|_p = \Big(\sum_{kl} |W_{kl}|^p\Big)^{1/p} \quad\text{s.t.}\quad
    a_j^\top W b_j \ge c_j\ (\text{margin}),\quad a_j^\top W b_j = c_j\ (\text{equality}),

the implicit bias of mirror descent with potential :math:`\psi(W) = \|W\|_p^p/p`
(Julistiono, Tarzanagh, Azizan, arXiv:2410.14581, the :math:`\ell_p`-AttSVM). Its dual is

.. math::

    \max_\lambda\ c^\top\lambda \quad\text{s.t.}\quad
    \Big\|\sum_j \lambda_j a_j b_j^\top\Big\|_q \le 1,\ \lambda_j \ge 0\ (\text{margin rows}),
    \qquad \tfrac1p + \tfrac1q = 1 .

Methods (``p`` in (1, ∞)):

* ``"fast"`` — the smooth dual of :math:`\min \tfrac1p\|W\|_p^p`,
  :math:`\min_\mu \tfrac1q\|\Lambda(\mu)\|_q^q - c^\top\mu` (:math:`\Lambda(\mu) = \sum_j \mu_j
  a_j b_j^\top`, :math:`W(\mu) = \mathrm{sign}(\Lambda)|\Lambda|^{q-1}`) by L-BFGS-B, then an
  active-set Newton polish of :math:`a_j^\top W(\mu) b_j = c_j` on the support rows;
* ``"cvxpy"`` — the naive model with Clarabel's power cones, polished the same way;
* ``"auto"`` — ``"fast"``, and ``"cvxpy"`` when its certificate fails.

``p = 1`` and ``p = ∞`` are linear programs (HiGHS through :func:`scipy.optimize.linprog`).
Whatever the method, the certificate is recomputed by svmgeo: the normalized dual
:math:`\lambda = \mu / \|\Lambda(\mu)\|_q` (so :math:`\|\Lambda(\lambda)\|_q = 1`), primal
margins, complementarity and the gap :math:`\|W\|_p - c^\top\lambda`.
"""

from __future__ import annotations

import dataclasses
import math
import time
from typing import Any

import numpy as np
import scipy.optimize as so

from .._errors import ProblemError
from .._linalg import entrywise_norm
from .._validation import check_option, check_real
from ..constraints import MARGIN, ConstraintSet
from ._backends import HiGHSBackend
from ._certificates import (
    DECADES,
    downgrade,
    lift_factor,
    norm_certificate,
)
from ._feasibility import check_feasibility
from ._result import Certificate, SVMResult, no_solution
from ._status import Status

__all__ = [
    "dual_exponent",
    "lp_certificate",
    "parse_lp_norm",
    "solve_lp",
    "solve_naive_cvxpy_lp",
]

LP_METHODS = ("auto", "fast", "cvxpy")


def parse_lp_norm(norm: Any, where: str = "att_svm") -> float:
    """Validate ``norm=("lp", p)`` and return ``p`` in [1, ∞]."""
    if not (isinstance(norm, tuple) and len(norm) == 2 and norm[0] == "lp"):
        raise ProblemError(
            f"The 'norm' parameter of {where} must be 'fro', 'nuc' or ('lp', p) with p >= 1; "
            f"got {norm!r}. Example: norm=('lp', 1.5)."
        )
    return check_real(norm[1], "p (of norm=('lp', p))", low=1.0, high=math.inf, where=where)


def dual_exponent(p: float) -> float:
    r"""The Hölder conjugate :math:`q = p/(p-1)` (1 ↔ ∞)."""
    if p == 1.0:
        return math.inf
    if math.isinf(p):
        return 1.0
    return p / (p - 1.0)


def lp_certificate(
    cs: ConstraintSet, W: np.ndarray, lam: np.ndarray, p: float, tol: float = 1e-8
) -> Certificate:
    r"""KKT certificate of the :math:`\ell_p` Att-SVM at ``(W, lam)``, recomputed from the data.

    With :math:`m_j = a_j^\top W b_j`, :math:`\Lambda = \sum_j \lambda_j a_j b_j^\top` and
    :math:`q` the dual exponent:

    .. math::

        \text{dual: } (\|\Lambda\|_q - 1)_+ + \max_{j\,\text{margin}} (-\lambda_j)_+,\quad
        \text{stationarity: } \frac{|\langle\Lambda, W\rangle - \|W\|_p|}{\max(1, \|W\|_p)},

        \text{complementarity: } \frac{\max_{j\,\text{margin}} |\lambda_j (m_j - c_j)|}
        {\max(1, \|W\|_p)},\quad
        \text{gap: } \frac{|\|W\|_p - c^\top\lambda|}{\max(1, \|W\|_p)} .

    Dual feasibility and a zero gap prove that no feasible W has a smaller
    :math:`\ell_p` norm (weak duality: :math:`c^\top\lambda \le \langle\Lambda, W'\rangle \le
    \|\Lambda\|_q\|W'\|_p`).

    Parameters
    ----------
    cs : ConstraintSet
    W : array of shape (d, d)
    lam : array of shape (N,)
    p : float
        In [1, ∞].
    tol : float, default 1e-8

    Returns
    -------
    Certificate
    """
    W = np.asarray(W, dtype=float)
    lam = np.asarray(lam, dtype=float)
    Lam = cs.adjoint(lam) if cs.N else np.zeros_like(W)
    dual = entrywise_norm(Lam, dual_exponent(p))
    return norm_certificate(cs, W, lam, entrywise_norm(W, p), dual, tol)


def _row_matrix(cs: ConstraintSet) -> np.ndarray:
    """Rows :math:`\\mathrm{vec}(a_j b_j^\\top)`, shape (N, d²)."""
    return np.einsum("ja,jb->jab", cs.A, cs.B).reshape(cs.N, -1)


def _mirror_inverse(Lam: np.ndarray, q: float) -> np.ndarray:
    r""":math:`\nabla\psi^*(\Lambda) = \mathrm{sign}(\Lambda)|\Lambda|^{q-1}`."""
    return np.sign(Lam) * np.abs(Lam) ** (q - 1.0)


def _normalize(cs: ConstraintSet, mu: np.ndarray, p: float) -> np.ndarray:
    r""":math:`\lambda = \mu / \|\Lambda(\mu)\|_q`, the dual of :math:`\min\|W\|_p` (norm-1 adjoint)."""
    size = entrywise_norm(cs.adjoint(mu), dual_exponent(p)) if cs.N else 0.0
    return mu / size if size > 0 else mu


def _lbfgs_dual(cs: ConstraintSet, M: np.ndarray, q: float, max_iter: int) -> np.ndarray:
    r"""Minimize :math:`\tfrac1q\|M^\top\mu\|_q^q - c^\top\mu` over :math:`\mu \ge 0` (margin rows)."""
    c = cs.rhs

    def fun(mu: np.ndarray) -> tuple[float, np.ndarray]:
        lam = mu @ M
        w = _mirror_inverse(lam, q)
        return float(np.sum(np.abs(lam) ** q) / q - c @ mu), M @ w - c

    bounds = [(0.0, None) if k == MARGIN else (None, None) for k in cs.kind]
    mu0 = np.full(cs.N, 1e-3)
    res = so.minimize(
        fun,
        mu0,
        jac=True,
        method="L-BFGS-B",
        bounds=bounds,
        options={"maxiter": max_iter, "ftol": 1e-16, "gtol": 1e-13, "maxcor": 30},
    )
    return np.asarray(res.x)


def _newton_polish(
    cs: ConstraintSet,
    M: np.ndarray,
    q: float,
    mu: np.ndarray,
    *,
    active: np.ndarray | None = None,
) -> tuple[np.ndarray, int]:
    r"""Active-set Newton on :math:`a_j^\top W(\mu) b_j = c_j` (:math:`j \in S`), :math:`\mu_j = 0`
    off :math:`S`; rows with :math:`\mu_j < 0` leave :math:`S`, the most violated row joins it.

    :math:`S` starts as ``active`` (default: equality rows and rows with
    :math:`\mu_j > 10^{-9}\max|\mu|`). Returns the polished :math:`\mu` and the number of
    Newton steps taken.
    """
    c = cs.rhs
    is_m = cs.kind == MARGIN
    mu = mu.copy()
    mu[is_m] = np.maximum(mu[is_m], 0.0)
    top = float(np.max(np.abs(mu), initial=0.0))
    active = ((~is_m) | (mu > 1e-9 * top)) if active is None else (active | ~is_m)
    steps = 0
    for _ in range(2 * cs.N + 10):
        S = np.flatnonzero(active)
        nu = mu[S].copy()
        MS = M[S]
        for _ in range(60):
            lam = nu @ MS
            F = MS @ _mirror_inverse(lam, q) - c[S]
            res = float(np.linalg.norm(F))
            if res <= 1e-15 * max(1.0, float(np.linalg.norm(c[S]))) * math.sqrt(S.size):
                break
            a = np.abs(lam)
            with np.errstate(divide="ignore"):  # |Λ|^(q-2) at Λ = 0 (q < 2): entry dropped
                curv = (q - 1.0) * np.where(a > 0, a ** (q - 2.0), 0.0)
            J = (MS * curv[None, :]) @ MS.T
            step = np.linalg.lstsq(J, -F, rcond=None)[0]
            t = 1.0
            while t > 1e-12:
                trial = nu + t * step
                Ft = MS @ _mirror_inverse(trial @ MS, q) - c[S]
                if np.linalg.norm(Ft) < res or np.linalg.norm(Ft) <= 1e-15:
                    break
                t *= 0.5
            steps += 1
            if t <= 1e-12:
                break
            nu = trial
        mu = np.zeros(cs.N)
        mu[S] = nu
        negative = is_m[S] & (nu < 0)
        if np.any(negative):
            active[S[negative]] = False
            continue
        m = M @ _mirror_inverse(mu @ M, q)
        viol = np.where(is_m & ~active, c - m, -np.inf)
        if viol.size and viol.max() > 1e-13 * max(1.0, float(np.abs(c).max())):
            active[int(np.argmax(viol))] = True
            continue
        break
    return mu, steps


def _lp_program(cs: ConstraintSet, p: float) -> tuple[np.ndarray | None, np.ndarray | None, str]:
    """p = 1 or ∞ by HiGHS: returns (W, λ, message)."""
    d2 = cs.d * cs.d
    M = _row_matrix(cs)
    is_m = cs.kind == MARGIN
    options = {"primal_feasibility_tolerance": 1e-10, "dual_feasibility_tolerance": 1e-10}
    if p == 1.0:  # W = U - V, U, V >= 0, min 1'(U + V)
        cost = np.ones(2 * d2)
        A = np.hstack([M, -M])
        bounds: Any = (0, None)
    else:  # variables (W, t): min t, -t <= W_kl <= t
        cost = np.zeros(d2 + 1)
        cost[-1] = 1.0
        A = np.hstack([M, np.zeros((cs.N, 1))])
        eye = np.eye(d2)
        box = np.vstack([np.hstack([eye, -np.ones((d2, 1))]), np.hstack([-eye, -np.ones((d2, 1))])])
        bounds = [(None, None)] * d2 + [(0, None)]
    A_ub = -A[is_m]
    b_ub = -cs.rhs[is_m]
    if p != 1.0:
        A_ub = np.vstack([A_ub, box])
        b_ub = np.concatenate([b_ub, np.zeros(2 * d2)])
    res = HiGHSBackend.linprog(
        cost,
        f"the l_{p:g} Att-SVM linear program",
        A_ub=A_ub,
        b_ub=b_ub,
        A_eq=A[~is_m] if np.any(~is_m) else None,
        b_eq=cs.rhs[~is_m] if np.any(~is_m) else None,
        bounds=bounds,
        options=options,
    )
    if res.status != 0:
        return None, None, f"HiGHS: {res.message}"
    x = np.asarray(res.x)
    W = (x[:d2] - x[d2:]) if p == 1.0 else x[:d2]
    lam = np.zeros(cs.N)
    lam[is_m] = -np.asarray(res.ineqlin.marginals)[: int(is_m.sum())]
    if np.any(~is_m):
        lam[~is_m] = np.asarray(res.eqlin.marginals)
    return W.reshape(cs.d, cs.d), lam, f"HiGHS: {res.message}"


def solve_naive_cvxpy_lp(
    cs: ConstraintSet, p: float, *, solver: str = "CLARABEL", **solver_options: object
) -> tuple[np.ndarray | None, np.ndarray | None, str, float]:
    r"""The naive cvxpy model :math:`\min \|\mathrm{vec}(W)\|_p` over the rows (power cones).

    Returns
    -------
    W : ndarray of shape (d, d) or None
    lam : ndarray of shape (N,) or None
        Row multipliers in svmgeo's sign convention (≥ 0 on margin rows).
    status : str
        cvxpy's status.
    seconds : float
        Wall time, canonicalization included.
    """
    import cvxpy as cp

    start = time.perf_counter()
    W = cp.Variable((cs.d, cs.d))
    cons = []
    for j in range(cs.N):
        row = cs.A[j] @ W @ cs.B[j]
        cons.append(row >= cs.rhs[j] if cs.kind[j] == MARGIN else row == cs.rhs[j])
    w = cp.vec(W, order="C")
    if p == 1.0 or math.isinf(p):
        objective = cp.norm1(w) if p == 1.0 else cp.norm_inf(w)
    else:  # exact power cones (cvxpy's default approximates rational p by SOCs)
        objective = cp.pnorm(w, p, approx=False)  # type: ignore[arg-type]
    problem = cp.Problem(cp.Minimize(objective), cons)
    problem.solve(solver=solver, **solver_options)
    seconds = time.perf_counter() - start
    value = None if W.value is None else np.asarray(W.value)
    lam = None
    if cons and all(con.dual_value is not None for con in cons):
        mu = np.array([float(np.asarray(con.dual_value)) for con in cons])
        lam = np.where(cs.kind == MARGIN, mu, -mu)
    return value, lam, str(problem.status), seconds


def solve_lp(
    cs: ConstraintSet,
    p: float,
    *,
    method: str = "auto",
    tol: float = 1e-8,
    solver: str | None = None,
    max_iter: int = 20000,
) -> SVMResult:
    r"""Solve the :math:`\ell_p` Att-SVM over a constraint set, with svmgeo's certificate.

    .. math::

        \min_W \|W\|_p \quad\text{s.t.}\quad a_j^\top W b_j \ge c_j\ (\text{margin}),\
        a_j^\top W b_j = c_j\ (\text{equality}),

    the norm entrywise, :math:`p \in [1, \infty]`. Feasibility is decided first (exact LP); an
    infeasible problem returns ``INFEASIBLE`` with the Farkas vector.

    Parameters
    ----------
    cs : ConstraintSet
    p : float
        The exponent, in [1, ∞]; 1 and ∞ are solved as LPs.
    method : {"auto", "fast", "cvxpy"}, default "auto"
        See the module docstring; ignored for p = 1, ∞.
    tol : float, default 1e-8
        Tolerance of the certificate (relative to :math:`\max(1, \|W\|_p)`).
    solver : str, optional
        cvxpy solver for ``method="cvxpy"`` (default Clarabel).
    max_iter : int, default 20000
        L-BFGS-B iteration limit of the fast method.

    Returns
    -------
    SVMResult
        ``norm="lp"``, ``objective`` :math:`\|W\|_p`, ``dual`` the normalized
        :math:`\lambda` (:math:`\|\sum_j\lambda_j a_j b_j^\top\|_q \le 1`), ``extras["p"]``.

    References
    ----------
    .. [1] A. K. Julistiono, D. A. Tarzanagh, N. Azizan, "Optimizing Attention with Mirror
       Descent: Generalized Max-Margin Token Selection", arXiv:2410.14581 (ℓp-AttSVM).
    """
    where = "solve_svm"
    p = check_real(p, "p", low=1.0, high=math.inf, where=where)
    method = check_option(method, "method", LP_METHODS, where=where)
    tol = check_real(tol, "tol", low=0.0, low_open=True, where=where)
    start = time.perf_counter()
    extras: dict[str, Any] = {"p": p}
    feas = check_feasibility(cs)
    extras["feasibility"] = feas
    if not feas.feasible:
        return no_solution(
            cs,
            feas.status if feas.status.is_infeasible else Status.INFEASIBLE_INACCURATE,
            f"the constraints admit no W: {feas.message}",
            norm="lp",
            solver=feas.solver,
            solve_time=time.perf_counter() - start,
            farkas=feas.farkas,
            extras=extras,
            proof=feas.proof,
        )
    if p == 1.0 or math.isinf(p):
        res = _finish_lp(cs, p, tol, extras, start)
    elif method == "cvxpy":
        res = _finish_cvxpy(cs, p, tol, solver, extras)
    else:
        res = _finish_fast(cs, p, tol, max_iter, extras)
        if method == "auto" and not res.success:
            ref = _finish_cvxpy(cs, p, tol, solver, extras)
            if ref.success:
                res = dataclasses.replace(
                    ref, message=f"{ref.message} (fast path: {res.status}: {res.message})"
                )
            else:
                res = dataclasses.replace(
                    res,
                    message=f"{res.message}; the cvxpy fallback did not certify either "
                    f"({ref.status}: {ref.message})",
                )
    return dataclasses.replace(res, solve_time=time.perf_counter() - start, proof=feas.proof)


def _result(
    cs: ConstraintSet,
    W: np.ndarray,
    lam: np.ndarray,
    p: float,
    tol: float,
    *,
    solver: str,
    message: str,
    n_iter: int,
    extras: dict[str, Any],
) -> SVMResult:
    """Lift W onto the rows exactly (a scaling by 1 + O(eps)), normalize λ, certify."""
    W0 = W
    lifted = lift_factor(
        cs,
        cs.apply(W0),
        max_factor=1.0 + 1e-9,
        increments=DECADES,
        recompute=lambda g: cs.apply(W0 * g),
        rows="all",
    )
    if lifted is not None:
        W = W0 * lifted[0]
    res = SVMResult(
        W=W,
        status=Status.OPTIMAL,
        message=message,
        objective=entrywise_norm(W, p),
        dual=lam,
        margins=cs.apply(W),
        constraints=cs,
        norm="lp",  # type: ignore[arg-type]
        solver=solver,
        n_iter=n_iter,
        extras=dict(extras),
    )
    return downgrade(res, lp_certificate(cs, W, lam, p, tol))


def _finish_lp(
    cs: ConstraintSet, p: float, tol: float, extras: dict[str, Any], start: float
) -> SVMResult:
    W, lam, message = _lp_program(cs, p)
    if W is None or lam is None:
        return no_solution(
            cs, Status.SOLVER_ERROR, message, norm="lp", solver="highs", extras=extras
        )
    lam = _normalize(cs, lam, p)
    return _result(cs, W, lam, p, tol, solver="highs", message=message, n_iter=0, extras=extras)


def _finish_fast(
    cs: ConstraintSet, p: float, tol: float, max_iter: int, extras: dict[str, Any]
) -> SVMResult:
    q = dual_exponent(p)
    M = _row_matrix(cs)
    mu = _lbfgs_dual(cs, M, q, max_iter)
    mu, steps = _newton_polish(cs, M, q, mu)
    W = _mirror_inverse(mu @ M, q).reshape(cs.d, cs.d)
    lam = _normalize(cs, mu, p)
    return _result(
        cs,
        W,
        lam,
        p,
        tol,
        solver="svmgeo-lp-dual",
        message="smooth dual by L-BFGS-B, active-set Newton polish",
        n_iter=steps,
        extras=extras,
    )


def _finish_cvxpy(
    cs: ConstraintSet, p: float, tol: float, solver: str | None, extras: dict[str, Any]
) -> SVMResult:
    name = "CLARABEL" if solver is None else solver
    try:
        W, lam, native, _ = solve_naive_cvxpy_lp(cs, p, solver=name)
    except Exception as exc:  # cvxpy raises SolverError and friends
        return no_solution(
            cs,
            Status.SOLVER_ERROR,
            f"cvxpy/{name} failed: {exc}",
            norm="lp",
            solver=f"cvxpy-{name.lower()}",
            extras=extras,
        )
    if W is None or lam is None or native not in ("optimal", "optimal_inaccurate"):
        return no_solution(
            cs,
            Status.SOLVER_ERROR,
            f"cvxpy status {native!r} without a primal-dual pair",
            norm="lp",
            solver=f"cvxpy-{name.lower()}",
            extras=extras,
        )
    # polish: the multipliers of min ||W||_p/p^p are mu = lambda ||W||_p^(p-1)
    q = dual_exponent(p)
    M = _row_matrix(cs)
    # start from the rows that are tight at cvxpy's W (its small interior-point duals of
    # inactive rows are not zeros)
    tight = cs.apply(W) - cs.rhs <= 1e-6 * max(1.0, float(np.abs(cs.rhs).max()))
    mu0 = lam * entrywise_norm(W, p) ** (p - 1.0)
    mu, steps = _newton_polish(cs, M, q, np.where(tight, mu0, 0.0), active=tight)
    Wp = _mirror_inverse(mu @ M, q).reshape(cs.d, cs.d)
    lam_p = _normalize(cs, mu, p)
    raw = lp_certificate(cs, W, _normalize(cs, lam, p), p, tol)
    polished = _result(
        cs,
        Wp,
        lam_p,
        p,
        tol,
        solver=f"cvxpy-{name.lower()}",
        message=f"cvxpy status {native!r}, Newton-polished",
        n_iter=steps,
        extras={**extras, "cvxpy_certificate": raw},
    )
    if polished.success or not raw.passed:
        return polished
    return _result(  # pragma: no cover - the polish only fails on degenerate rows
        cs, W, _normalize(cs, lam, p), p, tol, solver=f"cvxpy-{name.lower()}",
        message=f"cvxpy status {native!r}", n_iter=0, extras=extras,
    )  # fmt: skip
