# SPDX-License-Identifier: BSD-3-Clause
r"""Rank-constrained Att-SVM⋆ in factored (Burer–Monteiro) form.

.. math::

    \min_{K, Q \in \mathbb{R}^{d\times m}} \tfrac12\bigl(\|K\|_F^2 + \|Q\|_F^2\bigr)
    \quad\text{s.t.}\quad a_j^\top K Q^\top b_j \ge c_j\ (\text{margin}),\quad
    a_j^\top K Q^\top b_j = c_j\ (\text{equality}).

For :math:`\operatorname{rank} W \le m`, :math:`\|W\|_* = \min_{KQ^\top = W} \frac12(\|K\|_F^2 +
\|Q\|_F^2)`, so this is :math:`\min \|W\|_*` over rank :math:`\le m`: nonconvex for
:math:`m < \min(r_1, r_2)` and bounded below by the convex optimum (:math:`m = d`), which
svmgeo solves first with :func:`~svmgeo.solvers._nuclear.solve_nuclear`.
"""

from __future__ import annotations

import time
import warnings
from typing import Any

import numpy as np

from .._linalg import balanced_factors
from .._validation import check_int, check_iterations, check_option, check_real
from ..constraints import MARGIN, ConstraintSet, check_constraint_set
from ._certificates import (
    DECADES,
    NUC,
    adjoint_spectral_norm,
    judge,
    lift_factor,
    negative_part,
    nuclear_certificate,
    primal_infeasibility,
    relative,
    restore_factor,
)
from ._factored import FactoredProblem, compress
from ._nuclear import solve_nuclear
from ._result import Certificate, SVMResult, finish, replaced
from ._status import Status
from ._threads import one_blas_thread_when_small

_SLSQP_ITERATION_LIMIT = 9
"""scipy's SLSQP status "Iteration limit reached"."""

__all__ = ["solve_lowrank"]


def _lower_bound(cs: ConstraintSet, convex: SVMResult) -> float:
    r"""A lower bound on the convex optimum :math:`\min\|W\|_*`: its objective when the convex
    solve is certified (``OPTIMAL``), else the weak-duality bound of its multipliers,

    .. math::

        \frac{c^\top\lambda_+}{\|\Lambda_+\|_2} \le \langle\Lambda_+, W\rangle / \|\Lambda_+\|_2
        \le \|W\|_*\quad\text{for every feasible } W,\qquad
        \Lambda_+ = \textstyle\sum_j \lambda_{+j} a_j b_j^\top,

    with :math:`\lambda_+` the multipliers clipped at 0 on margin rows (0 when that is not
    positive): an uncertified objective need not bound anything (a point that misses rows can
    have a smaller norm than the optimum)."""
    if convex.status is Status.OPTIMAL:
        return float(convex.objective or 0.0)
    if convex.dual is None:
        return 0.0
    lam = np.where(cs.kind == MARGIN, np.maximum(convex.dual, 0.0), convex.dual)
    value, size = float(cs.rhs @ lam), adjoint_spectral_norm(cs, lam)
    return value / size if value > 0.0 and size > 0.0 else 0.0


def _local_solve(
    prob: FactoredProblem, K0: np.ndarray, Q0: np.ndarray, max_iter: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray, int] | bool:
    """SLSQP from (K0, Q0), then a KKT Newton polish: (K, Q, λ, iterations), or, when no
    feasible point was reached, whether SLSQP stopped at its iteration limit ``max_iter``."""
    cs = prob.cs
    z0 = np.concatenate([K0.ravel(), Q0.ravel()])
    eq = np.flatnonzero(cs.kind != MARGIN)
    mg = np.flatnonzero(cs.kind == MARGIN)

    def g(z: np.ndarray) -> np.ndarray:
        return prob.margins(*prob.unpack(z)) - cs.rhs

    def dg(z: np.ndarray) -> np.ndarray:
        return prob.jacobian(*prob.unpack(z))

    constraints: list[dict[str, Any]] = []
    if mg.size:
        constraints.append({"type": "ineq", "fun": lambda z: g(z)[mg], "jac": lambda z: dg(z)[mg]})
    if eq.size:
        constraints.append({"type": "eq", "fun": lambda z: g(z)[eq], "jac": lambda z: dg(z)[eq]})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from scipy.optimize import minimize  # lazily: scipy.optimize is slow to import

        out = minimize(
            lambda z: (0.5 * float(z @ z), z),
            z0,
            jac=True,
            method="SLSQP",
            constraints=constraints,
            options={"ftol": 1e-11, "maxiter": max_iter},
        )
    K, Q = prob.unpack(np.asarray(out.x, dtype=float))
    margins = prob.margins(K, Q)
    if primal_infeasibility(cs, margins) > 1e-4:
        return int(out.status) == _SLSQP_ITERATION_LIMIT
    slack = margins - cs.rhs
    candidates = np.flatnonzero(
        (cs.kind != MARGIN) | (slack <= 1e-6 * max(1.0, np.abs(cs.rhs).max()))
    )
    lam = prob.multipliers(K, Q, candidates)
    active = np.flatnonzero((cs.kind != MARGIN) | (lam > 1e-9 * max(1.0, np.abs(lam).max())))
    try:
        Kn, Qn, lam_n = prob.newton(K, Q, lam, active)
    except np.linalg.LinAlgError:
        return K, Q, lam, int(out.nit)
    margins_n = prob.margins(Kn, Qn)
    ok = (
        np.all(np.isfinite(lam_n))
        and np.all(lam_n[cs.kind == MARGIN] >= 0.0)
        and primal_infeasibility(cs, margins_n) <= max(primal_infeasibility(cs, margins), 1e-12)
    )
    if ok:
        K, Q, lam = Kn, Qn, lam_n
    return K, Q, lam, int(out.nit)


def factored_certificate(
    cs: ConstraintSet,
    At: np.ndarray,
    Bt: np.ndarray,
    K: np.ndarray,
    Q: np.ndarray,
    lam: np.ndarray,
    margins: np.ndarray,
    tol: float,
) -> Certificate:
    r"""KKT residuals of the factored problem at :math:`(K, Q)` with multipliers :math:`\lambda`.

    Stationarity :math:`K = \Lambda Q`, :math:`Q = \Lambda^\top K` with
    :math:`\Lambda = \sum_j \lambda_j a_j b_j^\top` (relative to :math:`\|K\|_F+\|Q\|_F`);
    the "duality gap" is :math:`|c^\top\lambda - \frac12(\|K\|^2+\|Q\|^2)|`, relative, which is 0
    at any KKT point (the local Lagrangian value); complementarity is relative to the same
    value and the signs as :func:`~._certificates.negative_part`: every residual is
    scale-invariant (:func:`~._certificates.relative`).
    """
    Lam = At.T @ (lam[:, None] * Bt)
    value = float(0.5 * (np.sum(K**2) + np.sum(Q**2)))
    size = float(np.linalg.norm(K) + np.linalg.norm(Q))
    residual = float(np.linalg.norm(K - Lam @ Q) + np.linalg.norm(Q - Lam.T @ K))
    margin = cs.kind == MARGIN
    slack = np.abs(lam[margin] * (margins[margin] - cs.rhs[margin]))
    return judge(
        tol=tol,
        primal_infeasibility=primal_infeasibility(cs, margins),
        dual_infeasibility=negative_part(cs, lam),
        stationarity=relative(residual, size),
        complementarity=relative(float(np.max(slack, initial=0.0)), value),
        duality_gap=relative(abs(float(cs.rhs @ lam) - value), value),
    )


@one_blas_thread_when_small
def solve_lowrank(
    cs: ConstraintSet,
    rank: int,
    *,
    n_restarts: int = 5,
    seed: int | np.random.Generator | None = None,
    tol: float = 1e-8,
    max_iter: int = 300,
    solver: str = "auto",
) -> SVMResult:
    r"""Att-SVM⋆ with a rank bound: :math:`\min \|W\|_*` over :math:`\operatorname{rank} W \le m`.

    .. math::

        \min_{K, Q\in\mathbb{R}^{d\times m}} \tfrac12(\|K\|_F^2 + \|Q\|_F^2)
        \quad\text{s.t.}\quad a_j^\top K Q^\top b_j \ge c_j\ (\text{margin}),\ = c_j\ (\text{equality}).

    1. The convex problem (no rank bound) is solved first; its optimum is ``lower_bound``.
       When its solution has numerical rank :math:`\le m` (nuclear mass beyond the
       :math:`m`-th singular value :math:`\le` ``tol`` relative), or :math:`m \ge
       \min(\dim\mathrm{span}\{a_j\}, \dim\mathrm{span}\{b_j\})` (the bound is vacuous), it is
       returned with :math:`K = U_m\Sigma_m^{1/2}`, :math:`Q = V_m\Sigma_m^{1/2}`: exact, gap 0.
    2. Otherwise the factored problem is solved in compressed coordinates
       (:math:`K = U\tilde K`, :math:`Q = V\tilde Q`) by SLSQP (sequential quadratic
       programming) from the truncated SVD of the convex solution and from ``n_restarts``
       random seeded starts. Each local answer is polished by Gauss–Newton on its KKT system
       (:math:`K = \Lambda Q`, :math:`Q = \Lambda^\top K`, active rows held at :math:`c_j`,
       multipliers from a bounded least-squares fit) and rebalanced (same :math:`KQ^\top`,
       :math:`K^\top K = Q^\top Q`). The best feasible point is kept; margins are restored
       to :math:`\ge c_j` by a scaling of at most :math:`1 + 10^{-6}`.

    **Status policy** (``docs/statuses.md``). A nonconvex problem has no cheap global
    certificate, so ``OPTIMAL`` is returned only when global optimality is certified: the
    rank bound is not binding (step 1), or the rank-:math:`m` value reaches the convex lower
    bound within ``tol`` (relative). A verified KKT point of the factored problem
    (stationarity :math:`K = \Lambda Q`, :math:`Q = \Lambda^\top K`, :math:`\lambda \ge 0`,
    complementarity, all at ``tol``) above the bound is ``LOCALLY_OPTIMAL``: a solution
    (``has_solution``) but not a success (``success`` is False); its message gives the
    relative gap to the convex bound, also in ``relative_gap``. A point whose KKT check fails
    is ``OPTIMAL_INACCURATE`` with the failed residuals named. When no start reaches a
    feasible rank-:math:`m` point the status is ``INFEASIBLE_INACCURATE`` (not certified: the
    rank-:math:`m` problem may still be feasible).

    Parameters
    ----------
    cs : ConstraintSet
    rank : int
        The rank bound :math:`m \ge 1`.
    n_restarts : int, default 5
        Random starts in addition to the truncated-SVD start (0 runs that start alone).
    seed : int or Generator, optional
        Randomness of the restarts.
    tol : float in (0, 1], default 1e-8
        Tolerance of svmgeo's certificate (KKT residuals of the factored problem).
    max_iter : int, default 300
        SLSQP iterations per start, at most 2**31 - 1 (SLSQP counts in 32 bits).
    solver : {"clarabel", "scs", "auto"}, default "auto"
        Backend of the convex lower bound.

    Returns
    -------
    SVMResult
        With ``K``, ``Q`` (d × m), ``W = K Qᵀ``, ``rank = m``, ``objective`` =
        :math:`\frac12(\|K\|_F^2 + \|Q\|_F^2)` at the balanced point (:math:`= \|W\|_*`),
        ``lower_bound`` and ``dual`` (the factored multipliers :math:`\lambda`).

    Examples
    --------
    >>> import svmgeo as sg
    >>> from svmgeo.solvers._lowrank import solve_lowrank
    >>> data = sg.random_data(4, 3, 6, seed=1)
    >>> cs = sg.att_svm_constraints(data, sg.optimal_tokens(data))
    >>> res = solve_lowrank(cs, 1, seed=0)
    >>> res.objective >= res.lower_bound - 1e-8
    True
    """
    start = time.perf_counter()
    cs = check_constraint_set(cs, "solve_lowrank")
    m = check_int(rank, "rank", low=1, where="solve_lowrank")
    n_restarts = check_int(n_restarts, "n_restarts", low=0, where="solve_lowrank")
    tol = check_real(tol, "tol", low=0.0, high=1.0, low_open=True, where="solve_lowrank")
    max_iter = check_iterations(max_iter, "max_iter", where="solve_lowrank")
    solver = check_option(solver, "solver", ("clarabel", "scs", "auto"), where="solve_lowrank")
    rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)

    convex = solve_nuclear(cs, solver=solver, tol=tol)
    solver = convex.solver  # resolves "auto"
    if convex.W is None or not convex.status.has_solution:
        return replaced(convex, rank=m, message=f"convex relaxation: {convex.message}")
    lower = _lower_bound(cs, convex)
    comp = compress(cs)
    U, V = comp.U, comp.V
    At, Bt = cs.A @ U, cs.B @ V
    Mc = U.T @ convex.W @ V
    Uc, s, Vct = np.linalg.svd(Mc, full_matrices=False)
    tail = float(s[m:].sum())

    def assemble(
        K: np.ndarray,
        Q: np.ndarray,
        lam: np.ndarray,
        certificate: Certificate,
        status: Status,
        message: str,
        n_iter: int,
    ) -> SVMResult:
        Kd, Qd = U @ K, V @ Q
        W = Kd @ Qd.T
        return finish(
            cs,
            W,
            lam,
            norm=NUC,
            tol=tol,
            status=status,
            message=message,
            solver=solver,
            objective=0.5 * float(np.sum(Kd**2) + np.sum(Qd**2)),
            certificate=certificate,
            rank=m,
            n_iter=n_iter,
            solve_time=time.perf_counter() - start,
            K=Kd,
            Q=Qd,
            lower_bound=lower,
            extras={"convex": convex},
        )

    # 1. the convex optimum already has rank <= m
    if m >= min(U.shape[1], V.shape[1]) or tail <= tol * max(1.0, lower):
        K0, Q0 = np.zeros((U.shape[1], m)), np.zeros((V.shape[1], m))
        r = min(m, s.size)
        K0[:, :r] = Uc[:, :r] * np.sqrt(s[:r])
        Q0[:, :r] = Vct[:r].T * np.sqrt(s[:r])
        c = restore_factor(cs, cs.apply(U @ K0 @ Q0.T @ V.T))
        K0, Q0 = K0 * np.sqrt(c), Q0 * np.sqrt(c)
        W0 = U @ K0 @ Q0.T @ V.T
        lam0 = convex.dual if convex.dual is not None else np.zeros(cs.N)
        cert = nuclear_certificate(cs, W0, lam0, tol)
        text = f"the convex optimum has rank <= {m}: exact (gap 0); " + convex.message
        m0 = cs.apply(W0)
        # dropping a tail of relative size tol can still break a row of an ill-conditioned
        # problem (||W|| ~ 1e9): then the truncation is no answer; try the nonconvex path
        kept = cert.primal_infeasibility <= tol and not np.any(
            m0[(cs.kind == MARGIN) & (cs.rhs > 0)] <= 0
        )
        if m >= min(U.shape[1], V.shape[1]) or kept:
            return assemble(K0, Q0, lam0, cert, convex.status, text, convex.n_iter)

    # 2. nonconvex: alternating QPs from several starts
    root = np.sqrt(s[:m])
    starts = [(Uc[:, :m] * root, Vct[:m].T * root)]
    scale = np.sqrt(max(lower, 1e-12) / m)
    starts += [
        (
            rng.standard_normal((U.shape[1], m)) * scale / np.sqrt(U.shape[1]),
            rng.standard_normal((V.shape[1], m)) * scale / np.sqrt(V.shape[1]),
        )
        for _ in range(n_restarts)
    ]
    best: tuple[float, np.ndarray, np.ndarray, np.ndarray, int] | None = None
    total = 0
    prob = FactoredProblem(cs, At, Bt, m)
    at_limit = 0  # starts that stopped at max_iter without a feasible point
    for K_start, Q_start in starts:
        out = _local_solve(prob, K_start, Q_start, max_iter)
        if isinstance(out, bool):
            at_limit += out
            continue
        K, Q, lam, n_iter = out
        K, Q = balanced_factors(K @ Q.T, m)  # same product, smallest ½(‖K‖² + ‖Q‖²)
        total += n_iter
        c = restore_factor(cs, np.einsum("jp,pq,jq->j", At, K @ Q.T, Bt))
        K, Q = K * np.sqrt(c), Q * np.sqrt(c)
        value = 0.5 * float(np.sum(K**2) + np.sum(Q**2))
        if best is None or value < best[0]:
            best = (value, K, Q, lam, n_iter)
    if best is None:
        limited = at_limit == len(starts)  # every start cut short: nothing suggests infeasible
        return replaced(
            convex,
            W=None,
            status=Status.MAX_ITER if limited else Status.INFEASIBLE_INACCURATE,
            message=(
                f"no start reached a feasible rank-{m} point ({len(starts)} starts); "
                + (
                    f"each stopped at its limit of max_iter = {max_iter} SLSQP iterations: raise max_iter"
                    if limited
                    else f"the rank-{m} problem may be infeasible (not certified)"
                )
            ),
            objective=None,
            dual=None,
            margins=None,
            rank=m,
            lower_bound=lower,
            certificate=None,
            solve_time=time.perf_counter() - start,
            extras={"convex": convex},
        )
    value, K, Q, lam, n_iter = best
    margins = cs.apply(U @ K @ Q.T @ V.T)
    if primal_infeasibility(cs, margins) > tol:
        # a local solve that stopped short of a row: scale (K, Q) by sqrt(g), g <= 1 + 1e-3,
        # so the answer is at least feasible (its certificate still judges optimality)
        W_now = U @ K @ Q.T @ V.T
        lifted = lift_factor(
            cs,
            margins,
            max_factor=1.0 + 1e-3,
            increments=DECADES,
            recompute=lambda g: cs.apply(g * W_now),
            rows="all",
        )
        if lifted is not None:
            g = lifted[0]
            K, Q = K * np.sqrt(g), Q * np.sqrt(g)
            value *= g
            margins = cs.apply(U @ K @ Q.T @ V.T)
    cert = factored_certificate(cs, At, Bt, K, Q, lam, margins, tol)
    gap = (value - lower) / max(lower, 1e-300)
    if gap <= tol:
        status = Status.OPTIMAL
        text = f"rank-{m} solution reaches the convex bound (relative gap {gap:.2e}): global"
    else:
        status = Status.LOCALLY_OPTIMAL
        text = (
            f"local solution of the nonconvex rank-{m} problem, not certified globally optimal; "
            f"relative gap to the convex bound {gap:.3e}"
        )
    return assemble(K, Q, lam, cert, status, text, total)
