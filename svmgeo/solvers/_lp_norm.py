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
  active-set Newton polish of :math:`a_j^\top W(\mu) b_j = c_j` on the support rows; when
  that answer fails its certificate, the nearer linear program's (p = 1 or ∞) certified at
  p, if it does better (:func:`_nearer_linear_program`: the answer for p near 1 or very
  large, where the smooth dual cannot go in float64);
* ``"cvxpy"`` — the naive model with Clarabel's power cones, polished the same way;
* ``"auto"`` — ``"fast"``, and ``"cvxpy"`` when its certificate fails (the fallback of the
  table of norms, ``_norms.py``).

``p = 1`` and ``p = ∞`` are linear programs (HiGHS through :func:`scipy.optimize.linprog`);
``"cvxpy"`` solves them with the reference model, unpolished.

Scale: :func:`~svmgeo.solve_svm` hands these solvers rows of unit size (powers of two,
exactly; :func:`~._norms.on_unit_rows`, for every norm), so that the L-BFGS-B, Newton and
HiGHS tolerances see O(1) data; the answer is mapped back and certified on the caller's rows
(data from 1e-150 to 1e150).
Whatever the method, the certificate is recomputed by svmgeo: the normalized dual
:math:`\lambda = \mu / \|\Lambda(\mu)\|_q` (so :math:`\|\Lambda(\lambda)\|_q = 1`), primal
margins, complementarity and the gap :math:`\|W\|_p - c^\top\lambda`.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .._linalg import entrywise_norm
from ..constraints import MARGIN, ConstraintSet
from ._backends import HiGHSBackend
from ._certificates import (
    dual_exponent,
    lift_onto_rows,
    lp_certificate,
    lp_geometry,
    zero_is_feasible,
)
from ._reference import solve_reference
from ._result import SVMResult, better_answer, finish, no_solution, replaced
from ._status import Status

__all__ = ["dual_exponent", "lp_certificate", "lp_fast", "lp_reference"]

LP_MAX_ITER = 20000
"""L-BFGS-B iteration limit of the fast method."""


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
    import scipy.optimize as so  # imported here: it costs 0.3 s of `import svmgeo.solvers`

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
            if not (np.all(np.isfinite(J)) and np.all(np.isfinite(F))):
                break  # |Λ|^(q-2) over- or underflowed (p near 1 or very large): no Newton step
            try:
                step = np.linalg.lstsq(J, -F, rcond=None)[0]
            except np.linalg.LinAlgError:  # LAPACK's SVD did not converge: no Newton step
                break
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


def _certified(
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
    """Lift W onto the rows exactly (a scaling by 1 + O(eps)), certify (:func:`finish`)."""
    return finish(
        cs,
        lift_onto_rows(cs, W),
        lam,
        norm=lp_geometry(p),
        tol=tol,
        status=Status.OPTIMAL,
        message=message,
        solver=solver,
        n_iter=n_iter,
        extras=dict(extras),
    )


def _zero_when_feasible(
    cs: ConstraintSet, p: float, tol: float, extras: dict[str, Any]
) -> SVMResult | None:
    """W = 0 with λ = 0 when W = 0 meets every row (no rows, c_j <= 0 on margin rows and
    c_j = 0 on equality rows): the optimum of every norm, certified; else None."""
    if not zero_is_feasible(cs):
        return None
    return _certified(
        cs, np.zeros((cs.d, cs.d)), np.zeros(cs.N), p, tol, solver="svmgeo-lp",
        message="W = 0 meets every row", n_iter=0, extras=extras,
    )  # fmt: skip


def lp_fast(
    cs: ConstraintSet, p: float, tol: float, extras: dict[str, Any], *, max_iter: int = LP_MAX_ITER
) -> SVMResult:
    r"""svmgeo's :math:`\ell_p` solver: HiGHS for p = 1, ∞; the smooth dual by L-BFGS-B and an
    active-set Newton polish for p in (1, ∞). Certified on ``cs`` (rows rescaled inside)."""
    zero = _zero_when_feasible(cs, p, tol, extras)
    if zero is not None:
        return zero
    if p == 1.0 or math.isinf(p):

        def program(rows: ConstraintSet) -> tuple[Any, Any, dict[str, Any]]:
            W, lam, message = _lp_program(rows, p)
            return W, None if lam is None else _normalize(rows, lam, p), {"message": message}

        W, lam, info = program(cs)
        if W is None or lam is None:
            return no_solution(
                cs, Status.SOLVER_ERROR, info["message"], norm="lp", solver="highs",
                extras=extras,
            )  # fmt: skip
        return _certified(
            cs, W, lam, p, tol, solver="highs", message=info["message"], n_iter=0,
            extras=extras,
        )  # fmt: skip
    q = dual_exponent(p)

    def smooth(rows: ConstraintSet) -> tuple[Any, Any, dict[str, Any]]:
        M = _row_matrix(rows)
        mu = _lbfgs_dual(rows, M, q, max_iter)
        mu, steps = _newton_polish(rows, M, q, mu)
        W = _mirror_inverse(mu @ M, q).reshape(rows.d, rows.d)
        return W, _normalize(rows, mu, p), {"steps": steps}

    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        W, lam, info = smooth(cs)
    if not (np.all(np.isfinite(W)) and np.all(np.isfinite(lam))):
        res = no_solution(
            cs, Status.SOLVER_ERROR,
            f"the smooth dual of p = {p:g} (q = {q:g}) left float64's range: |Λ|^(q-1) over- "
            "or underflows for p this close to 1 or this large",
            norm="lp", solver="svmgeo-lp-dual", extras=extras,
        )  # fmt: skip
    else:
        res = _certified(
            cs,
            W,
            lam,
            p,
            tol,
            solver="svmgeo-lp-dual",
            message="smooth dual by L-BFGS-B, active-set Newton polish",
            n_iter=info["steps"],
            extras=extras,
        )
    if res.success:
        return res
    return _nearer_linear_program(cs, p, tol, extras, res)


def _nearer_linear_program(
    cs: ConstraintSet, p: float, tol: float, extras: dict[str, Any], smooth: SVMResult
) -> SVMResult:
    r"""The answer of the nearer linear program, :math:`e = 1` (p < 2) or :math:`e = \infty`,
    certified at ``p``, when it beats ``smooth`` (the smooth dual's failed answer).

    .. math::

        \|W_e\|_p \;\ge\; \min_{\text{rows}} \|W\|_p \;\ge\;
        \frac{c^\top \lambda_e}{\|\Lambda(\lambda_e)\|_q} \;\ge\;
        D^{-|1/p - 1/e|}\, \|W_e\|_p \qquad (D = d^2\ \text{entries}):

    :math:`W_e` meets every row, :math:`\lambda_e` scaled to :math:`\|\Lambda\|_q = 1` is dual
    feasible, and with the program's :math:`\|W_e\|_e = c^\top\lambda_e`,
    :math:`\|\Lambda(\lambda_e)\|_{e^*} = 1` the entrywise norm bounds
    :math:`\|\cdot\|_p \le D^{1/p}\|\cdot\|_\infty`, :math:`\|\cdot\|_q \le \|\cdot\|_1`
    (:math:`e = \infty`) and :math:`\|\cdot\|_p \le \|\cdot\|_1`,
    :math:`\|\cdot\|_q \le D^{1/q}\|\cdot\|_\infty` (:math:`e = 1`) give the last inequality
    (svmgeo's derivation). The relative gap, about :math:`|1/p - 1/e| \ln D`, is within
    ``tol`` for p this close to 1 or this large: where the smooth dual cannot go in float64
    (at its optimum :math:`|\Lambda_{kl}| / \max|\Lambda| = (|W_{kl}| / \max|W|)^{p-1}`,
    :math:`2^{-(p-1)}` for an entry half the largest; near p = 1, :math:`|\Lambda|^{q-1}`
    over- or underflows). Elsewhere the certificate reports the gap: an
    ``OPTIMAL_INACCURATE`` upper bound. Of the two answers, the one whose certificate's
    largest residual is smaller is returned (``smooth`` when the program fails).
    """
    end = 1.0 if p < 2.0 else math.inf
    label = "l_1" if end == 1.0 else "l_inf"
    W, lam, message = _lp_program(cs, end)
    if W is None or lam is None:
        return replaced(smooth, message=f"{smooth.message}; the {label} program failed: {message}")
    res = _certified(
        cs, W, _normalize(cs, lam, p), p, tol, solver="highs",
        message=f"the {label} linear program's answer, certified at p = {p:g}, in place of "
        f"the smooth dual's ({smooth.message})",
        n_iter=0, extras=extras,
    )  # fmt: skip
    return better_answer(smooth, res)


def lp_reference(
    cs: ConstraintSet, p: float, tol: float, solver: str | None, extras: dict[str, Any]
) -> SVMResult:
    r"""The cvxpy reference model of the :math:`\ell_p` Att-SVM (power cones), Newton-polished
    for p in (1, ∞); certified by svmgeo on ``cs`` (rows rescaled inside)."""
    zero = _zero_when_feasible(cs, p, tol, extras)
    if zero is not None:
        return zero
    name = "CLARABEL" if solver is None else solver
    label = f"cvxpy-{name.lower()}"
    geometry = lp_geometry(p)

    def model(rows: ConstraintSet) -> tuple[Any, Any, dict[str, Any]]:
        W, lam, native, _, _ = solve_reference(rows, geometry, solver=name)
        return W, lam, {"native": native, "rows": rows}

    try:
        W, lam, info = model(cs)
    except Exception as exc:  # cvxpy raises SolverError and friends
        return no_solution(
            cs, Status.SOLVER_ERROR, f"cvxpy/{name} failed: {exc}", norm="lp", solver=label,
            extras=extras,
        )  # fmt: skip
    native = info["native"]
    if W is None or lam is None or native not in ("optimal", "optimal_inaccurate"):
        return no_solution(
            cs,
            Status.SOLVER_ERROR,
            f"cvxpy status {native!r} without a primal-dual pair",
            norm="lp",
            solver=label,
            extras=extras,
        )
    raw = lp_certificate(cs, W, _normalize(cs, lam, p), p, tol)

    def as_solved(W: np.ndarray = W, lam: np.ndarray = lam) -> SVMResult:
        return _certified(
            cs, W, _normalize(cs, lam, p), p, tol, solver=label,
            message=f"cvxpy status {native!r}", n_iter=0, extras=extras,
        )  # fmt: skip

    if p == 1.0 or math.isinf(p):  # a linear program: nothing to polish
        return as_solved()
    # polish: the multipliers of min ||W||_p/p^p are mu = lambda ||W||_p^(p-1), starting
    # from the rows that are tight at cvxpy's W (its small interior-point duals of inactive
    # rows are not zeros)
    q = dual_exponent(p)
    M = _row_matrix(cs)
    tight = cs.apply(W) - cs.rhs <= 1e-6 * max(1.0, float(np.abs(cs.rhs).max()))
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        mu0 = lam * np.float64(lp_geometry(p).value(W)) ** (p - 1.0)  # inf, not OverflowError
        mu, steps = _newton_polish(cs, M, q, np.where(tight, mu0, 0.0), active=tight)
        Wp = _mirror_inverse(mu @ M, q).reshape(cs.d, cs.d)
    if not (np.all(np.isfinite(Wp)) and np.all(np.isfinite(mu))):
        return as_solved()  # |Λ|^(q-1) left float64 (p near 1 or very large): cvxpy's answer
    polished = _certified(
        cs,
        Wp,
        _normalize(cs, mu, p),
        p,
        tol,
        solver=label,
        message=f"cvxpy status {native!r}, Newton-polished",
        n_iter=steps,
        extras={**extras, "cvxpy_certificate": raw},
    )
    # of two failed answers the better certified: a polish can break cvxpy's nearly certified W
    return polished if polished.success else better_answer(polished, as_solved())
