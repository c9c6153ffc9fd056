# SPDX-License-Identifier: BSD-3-Clause
r"""Exact Frobenius-norm Att-SVM over a token-pair constraint set.

.. math::

    \min_W \tfrac12 \|W\|_F^2 \quad\text{s.t.}\quad a_j^\top W b_j \ge c_j\ (j \in \mathcal M),
    \qquad a_j^\top W b_j = c_j\ (j \in \mathcal E).

Its dual is the quadratic program

.. math::

    \max_\lambda\ c^\top \lambda - \tfrac12 \lambda^\top G \lambda, \qquad
    \lambda_j \ge 0\ (j \in \mathcal M), \qquad G = (AA^\top)\circ(BB^\top),

and :math:`W = \sum_j \lambda_j a_j b_j^\top`. svmgeo works either with :math:`G` (N×N) or with
compressed features :math:`\phi_j = \mathrm{vec}(U^\top a_j b_j^\top V)` of length
:math:`r_1 r_2` (U, V orthonormal bases of span{a_j}, span{b_j}), whichever is smaller.

Methods, in order, until one settles: a warm start (e.g. from the feasibility check); with
:math:`G`, a dense primal-dual active-set method started from "every row tight" (one Cholesky
factor of G serves every round through a Schur complement); a Mehrotra interior-point method on
the dual; Clarabel's direct API on the same QP. Every answer is *polished*: its active set is
solved exactly as an equality-constrained least-norm problem (margins equal :math:`c_j` up to
round-off), rows are dropped or added until the KKT conditions hold, and the certificate is
recomputed from the data.

On barely feasible problems (low d, :math:`\|W\|` of 1e3 and beyond) the multipliers are of
order :math:`\|W\|^2` and cancel, so margins computed as :math:`G\lambda` carry round-off far
above the certificate's tolerance. When the polish in :math:`G` does not settle or does not
certify, the active set is polished once more on the primal in compressed features
(:func:`polish_features`: :math:`w = \Phi_S^+ c_S`, margins :math:`\Phi w` accurate to
:math:`\epsilon\|\phi_j\|\|w\|`). What float64 can certify: margins of :math:`W` carry
round-off :math:`\sim\epsilon\|a_j\|\|W\|\|b_j\|` and the stationarity residual
:math:`\sim\epsilon\sum_j\lambda_j\|a_j\|\|b_j\|/\|W\| \approx \epsilon\|W\|` (for
:math:`c = 1`), so the 1e-8 certificate holds up to :math:`\|W\|\,\|a_j\|\|b_j\|` of about
1e7 (later when little cancels: the one-sequence wedge in the tests certifies at 8e8); an
uncertified answer is an honest ``OPTIMAL_INACCURATE``. Problems within 1e-9
(relative) of an infeasible one are reported ``INFEASIBLE`` with a Farkas vector verified to
that tolerance (:func:`check_feasibility`).
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import scipy.linalg as sla
import scipy.sparse as sp
from scipy.optimize import lsq_linear

from .._linalg import orthonormal_basis
from .._validation import check_int, check_real
from ..constraints import MARGIN, ConstraintSet
from ._certificates import (
    downgrade,
    frobenius_certificate,
    query_groups,
    row_adjoint,
    row_values,
)
from ._result import SVMResult
from ._status import Status

__all__ = ["solve_frobenius"]

_Solve = Callable[[np.ndarray], np.ndarray]
_EPS = float(np.finfo(float).eps)


def _outer_gram(A: np.ndarray) -> np.ndarray:
    """:math:`AA^\\top` through a symmetric rank-k update (half the flops of a product)."""
    if A.shape[0] < 256:
        return A @ A.T
    upper = sla.blas.dsyrk(1.0, A.T, trans=1)  # upper triangle filled, lower left at 0
    G = upper + upper.T
    G.flat[:: G.shape[0] + 1] *= 0.5
    return np.asarray(G)


def _query_gram(cs: ConstraintSet) -> np.ndarray:
    """:math:`BB^\\top`, computed from the distinct queries when rows share them."""
    groups = query_groups(cs)
    if groups is None:
        return cs.B @ cs.B.T
    Q, inv = groups
    return (Q @ Q.T)[np.ix_(inv, inv)]


class RowGeometry:
    r"""Everything the solvers need about the rows :math:`a_j b_j^\top`, in the cheaper form.

    ``kind == "dual"``: the Gram matrix :math:`G` (N×N). ``kind == "primal"``: features
    :math:`\Phi` (N×r₁r₂) with :math:`G = \Phi\Phi^\top`, used when :math:`r_1 r_2 < N`.
    """

    def __init__(self, cs: ConstraintSet) -> None:
        self.cs = cs
        N, d = cs.N, cs.d
        n_queries = np.unique(cs.seq * max(cs.K, 1) + cs.query).size if N else 0
        self.U: np.ndarray | None = None
        self.V: np.ndarray | None = None
        self.Phi: np.ndarray | None = None
        self.G: np.ndarray | None = None
        if min(d, N) * min(d, n_queries) < N:
            U, V = orthonormal_basis(cs.A), orthonormal_basis(cs.B)
            Ac, Bc = cs.A @ U, cs.B @ V
            self.U, self.V = U, V
            self.Phi = np.ascontiguousarray((Ac[:, :, None] * Bc[:, None, :]).reshape(N, -1))
            self.kind = "primal"
        else:
            self.G = _outer_gram(cs.A) * _query_gram(cs)
            self.kind = "dual"
        self.margin = cs.kind == MARGIN
        self.c = np.asarray(cs.rhs, dtype=float)

    # -- products with G ------------------------------------------------------------------
    def gram(self) -> np.ndarray:
        if self.G is None:
            assert self.Phi is not None
            self.G = self.Phi @ self.Phi.T
        return self.G

    @property
    def _gmax(self) -> float:
        if not hasattr(self, "_gmax_value"):
            self._gmax_value = float(np.abs(self.gram()).max())
        return self._gmax_value

    def matvec(self, lam: np.ndarray) -> np.ndarray:
        """:math:`G\\lambda`, i.e. the margins of :math:`W = \\sum_j \\lambda_j a_j b_j^\\top`."""
        if self.Phi is not None:
            return self.Phi @ (self.Phi.T @ lam)
        assert self.G is not None
        return self.G @ lam

    def factor(self, theta: np.ndarray, reg: float) -> _Solve:
        r"""A solver for :math:`(G + \mathrm{diag}(\theta) + \mathrm{reg}\,[\theta = 0])\,x = r`.

        ``theta`` is positive on margin rows and 0 on equality rows.
        """
        eq = theta <= 0.0
        if self.Phi is None:
            H = self.gram() + np.diag(np.where(eq, reg, theta))
            return _psd_solver(H)
        Phi = self.Phi
        m = ~eq
        inv = 1.0 / theta[m]
        PM, PE = Phi[m], Phi[eq]
        K = np.eye(Phi.shape[1]) + (PM.T * inv) @ PM
        nE = PE.shape[0]
        if nE == 0:
            kinv = _psd_solver(K)

            def solve(r: np.ndarray) -> np.ndarray:
                u = kinv(PM.T @ (inv * r[m]))
                x = np.empty_like(r)
                x[m] = inv * (r[m] - PM @ u)
                return x

            return solve
        big = np.block([[K, PE.T], [PE, -reg * np.eye(nE)]])
        lu = sla.lu_factor(big, check_finite=False)

        def solve_aug(r: np.ndarray) -> np.ndarray:
            top = PM.T @ (inv * r[m])
            z = sla.lu_solve(lu, np.concatenate([top, r[eq]]), check_finite=False)
            u, xE = z[: K.shape[0]], -z[K.shape[0] :]
            x = np.empty_like(r)
            x[m] = inv * (r[m] - PM @ u)
            x[eq] = xE
            return x

        return solve_aug

    def full_factor(self) -> Any:
        """Cached Cholesky factor of the whole :math:`G` (None when G is not numerically PD)."""
        if not hasattr(self, "_full"):
            self._full = None
            if self.Phi is None:
                try:
                    self._full = sla.cho_factor(self.gram(), check_finite=False)
                except np.linalg.LinAlgError:
                    self._full = None
        return self._full

    def _schur_solve(self, S: np.ndarray, r: np.ndarray) -> np.ndarray | None:
        r"""Solve :math:`G_{SS}x = r` from the factor of the whole G (S = all rows but a few).

        With D the dropped rows: :math:`x = G^{-1}\tilde r - Z C^{-1} (G^{-1}\tilde r)_D`,
        :math:`Z = G^{-1}E_D`, :math:`C = (G^{-1})_{DD}`, which makes :math:`x_D = 0`.
        """
        cf = self.full_factor()
        N = self.cs.N
        if cf is None:
            return None
        D = np.setdiff1d(np.arange(N), S, assume_unique=True)
        if D.size and 2.0 * N * N * D.size > S.size**3 / 3.0:
            return None  # refactoring G_SS is cheaper
        rt = np.zeros(N)
        rt[S] = r
        x = sla.cho_solve(cf, rt, check_finite=False)
        if D.size:
            E = np.zeros((N, D.size))
            E[D, np.arange(D.size)] = 1.0
            Z = sla.cho_solve(cf, E, check_finite=False)
            C = Z[D]
            try:
                mu = sla.solve(C, x[D], assume_a="pos", check_finite=False)
            except (np.linalg.LinAlgError, ValueError):
                return None
            x = x - Z @ mu
        return np.asarray(x[S])

    def min_norm_solve(self, S: np.ndarray, r: np.ndarray) -> np.ndarray:
        r"""Minimum-norm :math:`\delta` with :math:`G_{SS}\,\delta = r` (least squares if inconsistent)."""
        if S.size == 0:
            return np.zeros(0)
        if self.Phi is not None:
            PS = self.Phi[S]
            y = sla.lstsq(PS, r, lapack_driver="gelsy", check_finite=False)[0]
            return np.asarray(sla.lstsq(PS.T, y, lapack_driver="gelsy", check_finite=False)[0])
        G = self.gram()
        full = S.size == self.cs.N
        GSS = G if full else G[np.ix_(S, S)]

        gmax = self._gmax if full else float(np.abs(GSS).max())

        def accurate(x: np.ndarray | None) -> bool:
            if x is None or not np.all(np.isfinite(x)):
                return False
            scale = gmax * max(np.abs(x).max(), 1.0) + np.abs(r).max()
            return bool(np.abs(GSS @ x - r).max() <= 1e-11 * scale)

        x = self._schur_solve(S, r)
        if accurate(x):
            return np.asarray(x)
        try:
            cf = self.full_factor() if full else sla.cho_factor(GSS, check_finite=False)
            if cf is not None:
                x = sla.cho_solve(cf, r, check_finite=False)
                if accurate(x):
                    return np.asarray(x)
        except (np.linalg.LinAlgError, ValueError):
            pass
        return np.asarray(sla.lstsq(GSS, r, lapack_driver="gelsy", check_finite=False)[0])

    def W(self, lam: np.ndarray) -> np.ndarray:
        """:math:`\\sum_j \\lambda_j a_j b_j^\\top` as a (d, d) matrix."""
        return row_adjoint(self.cs, lam)


def _psd_solver(H: np.ndarray) -> _Solve:
    """Cholesky with growing diagonal regularization when ``H`` is numerically singular."""
    scale = max(float(np.abs(np.diag(H)).max()) if H.size else 1.0, 1e-300)
    shift = 0.0
    for _ in range(8):
        try:
            cf = sla.cho_factor(H + shift * np.eye(H.shape[0]), check_finite=False)
            return lambda r: sla.cho_solve(cf, r, check_finite=False)
        except np.linalg.LinAlgError:
            shift = 1e-14 * scale if shift == 0.0 else shift * 100.0
    lu = sla.lu_factor(H + shift * np.eye(H.shape[0]), check_finite=False)
    return lambda r: sla.lu_solve(lu, r, check_finite=False)


def no_solution(
    cs: ConstraintSet, status: Status, message: str, *, norm: str, solver: str, **fields: Any
) -> SVMResult:
    """An :class:`SVMResult` without a solution (W, dual, margins and objective None)."""
    return SVMResult(
        W=None,
        status=status,
        message=message,
        objective=None,
        dual=None,
        margins=None,
        constraints=cs,
        norm=norm,  # type: ignore[arg-type]
        solver=solver,
        **fields,
    )


def _max_step(x: np.ndarray, dx: np.ndarray) -> float:
    neg = dx < 0
    if not np.any(neg):
        return 1.0
    return float(min(1.0, np.min(-x[neg] / dx[neg])))


def _direction(
    solve: _Solve, m: np.ndarray, lam: np.ndarray, s: np.ndarray, r_d: np.ndarray, rc: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Newton direction of the dual QP's KKT system for complementarity residual ``rc``."""
    rhs = -r_d.copy()
    rhs[m] -= rc / lam[m]
    dlam = solve(rhs)
    ds = np.zeros_like(lam)
    ds[m] = (-rc - s[m] * dlam[m]) / lam[m]
    return dlam, ds


def _starting_point(geo: RowGeometry) -> tuple[np.ndarray, np.ndarray]:
    """Mehrotra-style start: a regularised least-squares λ, both sides shifted to be positive."""
    m = geo.margin
    N = geo.cs.N
    lam = geo.factor(np.ones(N), 1.0)(geo.c)  # (G + I) λ = c
    s = np.where(m, geo.matvec(lam) - geo.c, 0.0)
    if not np.any(m):
        return lam, s
    lam[m] += max(-1.5 * float(lam[m].min()), 0.0)
    s[m] += max(-1.5 * float(s[m].min()), 0.0)
    dot = float(lam[m] @ s[m])
    lam[m] += 0.5 * dot / max(float(s[m].sum()), 1e-300)
    s[m] += 0.5 * dot / max(float(lam[m].sum()), 1e-300)
    lam[m] = np.maximum(lam[m], 1e-8)
    s[m] = np.maximum(s[m], 1e-8)
    return lam, s


def interior_point(geo: RowGeometry, *, tol: float, max_iter: int) -> tuple[np.ndarray, int, bool]:
    r"""Mehrotra predictor-corrector on the dual QP; returns :math:`(\lambda, \text{iterations}, \text{ok})`.

    Slack :math:`s = G\lambda - c` is the primal margin excess; complementarity
    :math:`\lambda_j s_j = 0` on margin rows. The best iterate (merit: the larger of the
    relative residual and the relative complementarity) is returned; the method stops early when
    round-off makes the merit grow (degenerate problems), since the polish that follows makes
    the answer exact. ``ok`` means the merit reached ``max(tol, 1e-7)``.
    """
    N = geo.cs.N
    m = geo.margin
    c = geo.c
    nm = max(int(m.sum()), 1)
    lam, s = _starting_point(geo)
    best_lam, best_merit, stale = lam, np.inf, 0
    n_iter = 0
    for _ in range(max_iter):
        n_iter += 1
        Glam = geo.matvec(lam)
        r_d = Glam - c - s
        mu = float(lam[m] @ s[m]) / nm
        quad = float(lam @ Glam)
        scale = max(1.0, abs(quad), float(np.abs(c).max()) if N else 1.0)
        merit = max(float(np.abs(r_d).max()), mu * nm) / scale
        if merit < best_merit:
            best_lam, best_merit, stale = lam, merit, 0
        elif best_merit <= 1e-6:  # near the end, round-off may take over: stop on stagnation
            stale += 1
        if merit <= tol or stale >= 3 or (best_merit <= 1e-6 and merit > 1e3 * best_merit):
            break
        theta = np.zeros(N)
        theta[m] = s[m] / lam[m]
        reg = 1e-13 * max(1.0, float(np.abs(theta).max(initial=0.0)))
        solve = geo.factor(theta, reg)

        rc = lam[m] * s[m]
        dl_a, ds_a = _direction(solve, m, lam, s, r_d, rc)
        a_aff = min(_max_step(lam[m], dl_a[m]), _max_step(s[m], ds_a[m]))
        mu_aff = float((lam[m] + a_aff * dl_a[m]) @ (s[m] + a_aff * ds_a[m])) / nm
        sigma = (mu_aff / mu) ** 3 if mu > 0 else 0.0
        rc = lam[m] * s[m] + dl_a[m] * ds_a[m] - sigma * mu
        dl, ds = _direction(solve, m, lam, s, r_d, rc)
        alpha = min(1.0, 0.995 * min(_max_step(lam[m], dl[m]), _max_step(s[m], ds[m])))
        lam = lam + alpha * dl
        s = s + alpha * ds
        if not (np.all(np.isfinite(lam)) and np.all(np.isfinite(s))):
            break
    return best_lam, n_iter, bool(best_merit <= max(tol, 1e-7))


def _clarabel_qp(geo: RowGeometry, *, max_iter: int) -> tuple[np.ndarray, int, bool]:
    r"""The QP through Clarabel's direct API: compressed primal (``"primal"``) or the dual.

    Primal: :math:`\min \tfrac12\|w\|^2` s.t. :math:`\Phi_{\mathcal E} w = c_{\mathcal E}`,
    :math:`\Phi_{\mathcal M} w \ge c_{\mathcal M}`; λ are its multipliers. Dual:
    :math:`\min \tfrac12\lambda^\top G\lambda - c^\top\lambda` s.t. :math:`\lambda_{\mathcal M} \ge 0`.
    """
    import clarabel

    m = geo.margin
    N = geo.cs.N
    nM, nE = int(m.sum()), int((~m).sum())
    settings = clarabel.DefaultSettings()
    settings.verbose = False
    settings.max_iter = max_iter
    settings.tol_gap_abs = settings.tol_gap_rel = settings.tol_feas = 1e-10
    settings.tol_ktratio = 1e-8
    cones: list[Any] = []
    if geo.Phi is not None:
        Phi = geo.Phi
        D = Phi.shape[1]
        P = sp.identity(D, format="csc")
        q = np.zeros(D)
        A = sp.csc_matrix(np.vstack([Phi[~m], -Phi[m]]))
        b = np.concatenate([geo.c[~m], -geo.c[m]])
    else:
        P = sp.csc_matrix(np.triu(geo.gram()))
        q = -geo.c
        A = sp.csc_matrix((-np.ones(nM), (np.arange(nM), np.flatnonzero(m))), shape=(nM, N))
        b = np.zeros(nM)
        nE = 0
    if nE:
        cones.append(clarabel.ZeroConeT(nE))
    if nM:
        cones.append(clarabel.NonnegativeConeT(nM))
    try:
        sol = clarabel.DefaultSolver(P, q, A, b, cones, settings).solve()
    except Exception:  # a backend failure is a failed attempt, never a crash
        return np.full(N, np.nan), 0, False
    ok = str(sol.status) in ("Solved", "AlmostSolved")
    if geo.Phi is None:
        lam = np.asarray(sol.x, dtype=float)
    else:
        z = np.asarray(sol.z, dtype=float)
        lam = np.empty(N)
        lam[~m] = -z[:nE]
        lam[m] = z[nE:]
    return lam, int(sol.iterations), ok


def polish_active_set(
    geo: RowGeometry, lam0: np.ndarray, S0: np.ndarray, *, max_rounds: int
) -> tuple[np.ndarray, int, bool]:
    r"""Active-set refinement: solve the equality-constrained least-norm problem on ``S`` exactly.

    Starting from the working set ``S0`` and multipliers ``lam0``, each round sets
    :math:`\lambda_S \leftarrow \lambda_S + G_{SS}^+(c_S - G_{SS}\lambda_S)` (the smallest
    correction that makes every row of S tight), drops margin rows whose multiplier turned
    negative, and adds margin rows that are violated. Returns (λ, rounds, settled).
    """
    c, m = geo.c, geo.margin
    S = np.asarray(S0, dtype=bool) | ~m
    lam = np.where(S, lam0, 0.0)
    for rounds in range(1, max_rounds + 1):
        idx = np.flatnonzero(S)
        lam = np.where(S, lam, 0.0)
        if idx.size:
            r = c[idx] - geo.matvec(lam)[idx]
            lam[idx] += geo.min_norm_solve(idx, r)
        margins = geo.matvec(lam)
        lam_scale = max(1.0, float(np.abs(lam).max(initial=0.0)))
        band = 1e-10 * np.maximum(1.0, np.abs(c))
        if np.any(S & (np.abs(margins - c) > band)):
            return (
                lam,
                rounds,
                False,
            )  # the rows of S cannot all be tight: G_SS λ = c_S inconsistent
        neg = S & m & (lam < -1e-12 * lam_scale)
        viol = ~S & m & (margins < c - band)
        if not neg.any() and not viol.any():
            lam = np.where(m, np.maximum(lam, 0.0), lam)
            return lam, rounds, True
        S = (S & ~neg) | viol
        lam = np.where(neg, 0.0, lam)
    return lam, max_rounds, False


_FEATURE_LIMIT = 4096
"""Largest compressed dimension :math:`r_1 r_2` for which the feature-space polish is tried."""


def features(geo: RowGeometry) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    r"""(U, V, Φ) with :math:`\phi_j = \mathrm{vec}(U^\top a_j b_j^\top V)`, or None when too large."""
    if geo.Phi is not None:
        assert geo.U is not None and geo.V is not None
        return geo.U, geo.V, geo.Phi
    cs = geo.cs
    n_queries = np.unique(cs.seq * max(cs.K, 1) + cs.query).size
    if min(cs.d, cs.N) * min(cs.d, n_queries) > _FEATURE_LIMIT:
        return None  # decided before any factorization: this is the rescue path only
    U, V = orthonormal_basis(cs.A), orthonormal_basis(cs.B)
    width = U.shape[1] * V.shape[1]
    if width > _FEATURE_LIMIT or width * cs.N > 2e7:
        return None
    Ac, Bc = cs.A @ U, cs.B @ V
    return U, V, np.ascontiguousarray((Ac[:, :, None] * Bc[:, None, :]).reshape(cs.N, -1))


def _least_norm(P: np.ndarray, r: np.ndarray) -> np.ndarray:
    """Least-norm (least-squares) solution of ``P x = r`` with one step of iterative refinement."""
    x = sla.lstsq(P, r, lapack_driver="gelsd", check_finite=False)[0]
    x = x + sla.lstsq(P, r - P @ x, lapack_driver="gelsd", check_finite=False)[0]
    return np.asarray(x)


def _row_multipliers(PS: np.ndarray, w: np.ndarray, free: np.ndarray) -> np.ndarray:
    r"""Multipliers :math:`\lambda_S` with :math:`\Phi_S^\top\lambda_S = w`, nonnegative where possible.

    The least-norm solution first; when some non-free entry is negative and the rows are
    dependent (the multipliers are then not unique), a bounded least-squares solve looks for a
    nonnegative one.
    """
    lam = _least_norm(PS.T, w)
    if np.all(free | (lam >= 0.0)) or np.linalg.matrix_rank(PS) == PS.shape[0]:
        return lam

    lower = np.where(free, -np.inf, 0.0)
    try:
        sol = lsq_linear(PS.T, w, bounds=(lower, np.inf), method="bvls", tol=1e-14)
    except (ValueError, np.linalg.LinAlgError):
        return lam
    alt = np.asarray(sol.x)
    if np.linalg.norm(PS.T @ alt - w) <= np.linalg.norm(PS.T @ lam - w) + 1e-12 * np.linalg.norm(w):
        return alt
    return lam


def polish_features(
    geo: RowGeometry, S0: np.ndarray, *, max_rounds: int
) -> tuple[np.ndarray, np.ndarray, int, bool] | None:
    r"""Active-set polish on the primal in compressed features; returns (λ, W, rounds, settled).

    The primal optimum is unique, so on the right active set :math:`S` it is the least-norm
    point :math:`w = \Phi_S^+ c_S` (conditioning :math:`\mathrm{cond}(\Phi_S)`, not its square
    as in :math:`G_{SS}\lambda_S = c_S`), :math:`W = U\,\mathrm{mat}(w)\,V^\top` and the
    margins :math:`\Phi w` are accurate to :math:`\epsilon\|\phi_j\|\|w\|` however large and
    cancelling the multipliers are. The multipliers then solve :math:`\Phi_S^\top\lambda_S = w`.
    Rows with a negative multiplier are dropped (the most negative first), violated rows are
    added. None when the compressed features would be too large.
    """
    feats = features(geo)
    if feats is None:
        return None
    U, V, Phi = feats
    c, m = geo.c, geo.margin
    N = geo.cs.N
    row_norm = np.linalg.norm(Phi, axis=1)
    S = np.asarray(S0, dtype=bool) | ~m
    lam = np.zeros(N)
    w = np.zeros(Phi.shape[1])
    for rounds in range(1, max_rounds + 1):
        idx = np.flatnonzero(S)
        PS = Phi[idx]
        w = _least_norm(PS, c[idx]) if idx.size else np.zeros(Phi.shape[1])
        margins = Phi @ w
        wn = float(np.linalg.norm(w))
        band = 1e-12 * np.maximum(np.abs(c), 1.0) + 64.0 * _EPS * row_norm * wn
        lam = np.zeros(N)
        if idx.size:
            lam[idx] = _row_multipliers(PS, w, ~m[idx])
        dual_res = float(np.linalg.norm(PS.T @ lam[idx] - w)) if idx.size else wn
        lam_scale = max(1.0, float(np.abs(lam).max(initial=0.0)))
        inconsistent = S & (np.abs(margins - c) > 1e3 * band)
        neg = S & m & (lam < -1e-12 * lam_scale)
        viol = ~S & m & (margins < c - band)
        if inconsistent.any():
            # the rows of S cannot all be tight: drop the margin row that is most over-satisfied
            over = np.where(inconsistent & m, margins - c, -np.inf)
            if not np.isfinite(over.max()):
                break
            S[int(np.argmax(over))] = False
            continue
        # Φ_Sᵀλ_S carries round-off ε Σ|λ_j|‖φ_j‖, which exceeds ‖w‖ when λ cancels
        dual_tol = max(1e-10 * wn, 64.0 * _EPS * float(np.abs(lam) @ row_norm), 1e-300)
        if not neg.any() and not viol.any() and dual_res <= dual_tol:
            lam = np.where(m, np.maximum(lam, 0.0), lam)
            W = U @ w.reshape(U.shape[1], V.shape[1]) @ V.T
            return lam, np.asarray(W), rounds, True
        if neg.any():
            S[int(np.argmin(np.where(neg, lam / lam_scale, np.inf)))] = False
        S |= viol
    W = U @ w.reshape(U.shape[1], V.shape[1]) @ V.T
    return lam, np.asarray(W), max_rounds, False


def lift_margins(
    cs: ConstraintSet, W: np.ndarray, margins: np.ndarray, *, max_factor: float
) -> tuple[np.ndarray, np.ndarray, float]:
    r"""Scale ``W`` by the least :math:`f \in [1, \text{max\_factor}]` with every margin row met.

    Recomputes the margins after scaling (round-off) and adds a few ulps until
    :math:`a_j^\top (fW) b_j \ge c_j` holds exactly in floating point. Not applicable (f = 1)
    when an equality row has :math:`c_j \ne 0`, when a positive bound faces a nonpositive
    margin, or when the needed factor exceeds ``max_factor``.
    """
    rows = (cs.kind == MARGIN) & (cs.rhs > 0)
    if np.any(cs.rhs[cs.kind != MARGIN] != 0.0) or not np.any(rows):
        return W, margins, 1.0
    if np.any(margins[rows] <= 0):
        return W, margins, 1.0
    f = float(np.max(cs.rhs[rows] / margins[rows]))
    if f <= 1.0 and np.all(margins[rows] >= cs.rhs[rows]):
        return W, margins, 1.0
    if f > max_factor:
        return W, margins, 1.0
    eps = float(np.finfo(float).eps)
    for k in range(1, 6):
        g = max(f, 1.0) * (1.0 + 4.0 * k * eps)
        new = row_values(cs, W * g)
        if np.all(new[rows] >= cs.rhs[rows]):
            return W * g, new, g
    return W, margins, 1.0


def solve_frobenius(
    cs: ConstraintSet,
    *,
    tol: float = 1e-8,
    max_iter: int = 100,
    max_rounds: int = 30,
    geometry: RowGeometry | None = None,
    warm_start: np.ndarray | None = None,
) -> SVMResult:
    r"""Solve the Frobenius-norm Att-SVM over ``cs`` exactly.

    .. math::

        W^{\mathrm{mm}} = \arg\min_W \|W\|_F \quad\text{s.t.}\quad
        a_j^\top W b_j \ge c_j\ (\text{margin rows}),\quad a_j^\top W b_j = c_j\
        (\text{equality rows}),

    through its dual :math:`\max_\lambda c^\top\lambda - \tfrac12\lambda^\top G\lambda`,
    :math:`\lambda \ge 0` on margin rows, :math:`W = \sum_j \lambda_j a_j b_j^\top`.

    Parameters
    ----------
    cs : ConstraintSet
        The rows. The problem is assumed feasible (:func:`solve_svm` checks first); when it is
        not, a non-success status is returned, never an exception.
    tol : float, default 1e-8
        Tolerance of the certificate check (relative residuals, SPEC §6).
    max_iter : int, default 100
        Interior-point iterations.
    max_rounds : int, default 30
        Active-set rounds of the fast path and of the polish.
    geometry : RowGeometry, optional
        The rows' Gram matrix / features (and its cached factor) when already computed for
        ``cs`` (e.g. by :func:`check_feasibility`); built here otherwise.
    warm_start : ndarray of shape (N,), optional
        Approximate multipliers λ; their active set is polished first.

    Returns
    -------
    SVMResult
        ``objective`` = :math:`\|W\|_F`, ``dual`` = λ, ``margins`` = :math:`a_j^\top W b_j`,
        ``solver`` = ``"svmgeo-active-set"``, ``"svmgeo-ipm"`` or ``"svmgeo-clarabel"`` (the
        method whose answer was polished), certificate attached.

    References
    ----------
    .. [1] D. A. Tarzanagh, Y. Li, C. Thrampoulidis, S. Oymak, "Transformers as Support Vector
       Machines", arXiv:2308.16898, Section 2 (Att-SVM) and Lemma 1.
    """
    tol = check_real(tol, "tol", low=0.0, low_open=True, where="solve_frobenius")
    max_iter = check_int(max_iter, "max_iter", low=1, where="solve_frobenius")
    max_rounds = check_int(max_rounds, "max_rounds", low=1, where="solve_frobenius")
    start = time.perf_counter()
    N, d = cs.N, cs.d
    if N == 0:
        W = np.zeros((d, d))
        res = SVMResult(
            W=W,
            status=Status.OPTIMAL,
            message="no constraints: W = 0",
            objective=0.0,
            dual=np.zeros(0),
            margins=np.zeros(0),
            constraints=cs,
            norm="fro",
            solver="svmgeo-active-set",
            solve_time=time.perf_counter() - start,
        )
        return downgrade(res, frobenius_certificate(cs, W, np.zeros(0), tol))

    # -- issue 16: no Gram when it would not fit in memory (decided by an estimate)
    from ._frobenius_matfree import solve_frobenius_matfree, use_matrix_free

    if geometry is None and use_matrix_free(cs):
        return solve_frobenius_matfree(cs, tol=tol, max_rounds=max_rounds, warm_start=warm_start)
    # -- end issue 16
    geo = RowGeometry(cs) if geometry is None or geometry.cs is not cs else geometry
    extras: dict[str, Any] = {"representation": geo.kind}
    if geo.kind == "primal":
        extras["compressed_dim"] = int(geo.Phi.shape[1]) if geo.Phi is not None else 0
    n_iter = 0
    settled = converged = False
    solver = "svmgeo-active-set"
    lam = np.zeros(N)
    if warm_start is not None and np.shape(warm_start) == (N,):
        lam0 = np.asarray(warm_start, dtype=float)
        S0 = ~geo.margin | (lam0 > geo.matvec(lam0) - geo.c)
        lam, rounds, settled = polish_active_set(geo, lam0, S0, max_rounds=max_rounds)
        extras["warm_start_rounds"] = rounds
        n_iter += rounds
        solver = "svmgeo-warm-start"
    if geo.kind == "dual" and not settled:
        # fast path: primal-dual active set from "every row tight"
        lam, rounds, settled = polish_active_set(geo, np.zeros(N), np.ones(N, bool), max_rounds=8)
        extras["active_set_rounds"] = rounds
        n_iter += rounds
    methods = ("ipm", "clarabel")
    starts: list[np.ndarray] = []  # working sets suggested by the raw solutions
    for method in methods:
        if settled:
            break
        if method == "ipm":
            lam_raw, its, ok = interior_point(geo, tol=1e-10, max_iter=max_iter)
        else:
            lam_raw, its, ok = _clarabel_qp(geo, max_iter=max_iter)
        solver = f"svmgeo-{method}"
        extras[f"{method}_iterations"] = its
        extras[f"{method}_converged"] = ok
        n_iter += its
        if not np.all(np.isfinite(lam_raw)):
            continue
        slack = geo.matvec(lam_raw) - geo.c
        S0 = ~geo.margin | (lam_raw > slack)
        starts.append(S0)
        lam_pol, rounds, settled = polish_active_set(geo, lam_raw, S0, max_rounds=max_rounds)
        extras[f"{method}_polish_rounds"] = rounds
        n_iter += rounds
        if settled:
            lam = lam_pol
        elif ok and not converged:
            lam, converged = np.where(geo.margin, np.maximum(lam_raw, 0.0), lam_raw), True
    extras["polished"] = settled
    if not np.all(np.isfinite(lam)) and not starts:
        res = no_solution(
            cs,
            Status.NUMERICAL_ERROR,
            "the dual diverged (is the problem infeasible? see check_feasibility)",
            norm="fro",
            solver=solver,
            n_iter=n_iter,
            solve_time=time.perf_counter() - start,
            extras=extras,
        )
        return res
    status = Status.OPTIMAL if (settled or converged) else Status.MAX_ITER
    if settled:
        message = "solved: active set polished exactly"
    elif converged:
        message = "solved by the interior-point method; the active-set polish did not settle"
    else:
        message = (
            f"the interior-point method did not converge in max_iter={max_iter} iterations "
            "(is the problem infeasible? see check_feasibility)"
        )
    out: SVMResult | None = None
    if np.all(np.isfinite(lam)):
        out = _finish(geo, lam, None, tol, status, message, solver, n_iter, extras)
        if settled and out.certificate is not None and out.certificate.passed:
            return _with_time(out, time.perf_counter() - start)
        # the Gram-space polish did not settle or its answer does not certify (round-off
        # with large, cancelling multipliers): polish the primal itself in compressed features
        if settled:  # the polished working set: rows with a positive multiplier or tight
            starts.insert(0, ~geo.margin | (lam > 0) | (geo.matvec(lam) <= geo.c * (1 + 1e-9)))
    rescue = _feature_rescue(geo, starts, tol, max_rounds, solver, n_iter, extras)
    if rescue is not None and (out is None or rescue.success or not out.success):
        # a polished, certified answer is preferred to an unpolished interior-point one
        out = rescue
    if out is None:
        out = no_solution(
            cs,
            Status.NUMERICAL_ERROR,
            "the dual diverged and the feature-space polish did not settle",
            norm="fro",
            solver=solver,
            n_iter=n_iter,
            extras=extras,
        )
    return _with_time(out, time.perf_counter() - start)


def _finish(
    geo: RowGeometry,
    lam: np.ndarray,
    W: np.ndarray | None,
    tol: float,
    status: Status,
    message: str,
    solver: str,
    n_iter: int,
    extras: dict[str, Any],
) -> SVMResult:
    r"""The result for multipliers ``lam`` (and ``W``, else :math:`\sum_j\lambda_j a_j b_j^\top`).

    Margins short of their bound by round-off are met by scaling W by at most 1 + tol/8,
    which moves the duality gap by about tol/4 and keeps the certificate honest.
    """
    cs = geo.cs
    if W is None:
        W = geo.W(lam)
    W, margins, f = lift_margins(cs, W, row_values(cs, W), max_factor=1.0 + max(1e-9, tol / 8))
    lam = lam * f
    res = SVMResult(
        W=W,
        status=status,
        message=message,
        objective=float(np.linalg.norm(W)),
        dual=lam,
        margins=margins,
        constraints=cs,
        norm="fro",
        solver=solver,
        n_iter=n_iter,
        solve_time=0.0,
        extras=extras,
    )
    return downgrade(res, frobenius_certificate(cs, W, lam, tol, margins=margins))


def _feature_rescue(
    geo: RowGeometry,
    starts: list[np.ndarray],
    tol: float,
    max_rounds: int,
    solver: str,
    n_iter: int,
    extras: dict[str, Any],
) -> SVMResult | None:
    """:func:`polish_features` from each working set in ``starts``; the first certified answer."""
    best = None
    for S0 in starts:
        out = polish_features(geo, S0, max_rounds=max(max_rounds, 2 * geo.cs.N))
        if out is None:
            return None
        lam, W, rounds, settled = out
        ext = dict(extras)
        ext["feature_polish_rounds"] = rounds
        ext["polished"] = settled
        if not settled:
            continue
        res = _finish(
            geo,
            lam,
            W,
            tol,
            Status.OPTIMAL,
            "solved: active set polished exactly on the primal in compressed features "
            "(the Gram-space polish did not certify)",
            f"{solver}+features",
            n_iter + rounds,
            ext,
        )
        if res.success:
            return res
        best = best or res
    return best


def _with_time(res: SVMResult, seconds: float) -> SVMResult:
    return dataclasses.replace(res, solve_time=seconds)
