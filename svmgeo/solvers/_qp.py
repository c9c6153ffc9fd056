# SPDX-License-Identifier: BSD-3-Clause
r"""Methods for the Frobenius Att-SVM's quadratic program, on a :class:`~._geometry.RowGeometry`.

.. math::

    \max_\lambda\ c^\top \lambda - \tfrac12 \lambda^\top G \lambda, \qquad
    \lambda_j \ge 0\ (j \in \mathcal M),

with :math:`W = \sum_j \lambda_j a_j b_j^\top`: a Mehrotra interior-point method
(:func:`interior_point`), the same QP through Clarabel (:func:`clarabel_qp`), and the two exact
active-set polishes, in :math:`G` (:func:`polish_active_set`) and on the primal in compressed
features (:func:`polish_features`).
"""

from __future__ import annotations

import numpy as np
import scipy.linalg as sla
import scipy.sparse as sp

from ._backends import ClarabelBackend
from ._geometry import RowGeometry, Solve, features

__all__ = [
    "clarabel_qp",
    "gradient_start",
    "interior_point",
    "polish_active_set",
    "polish_features",
]

_EPS = float(np.finfo(float).eps)


def _max_step(x: np.ndarray, dx: np.ndarray) -> float:
    neg = dx < 0
    if not np.any(neg):
        return 1.0
    return float(min(1.0, np.min(-x[neg] / dx[neg])))


def _direction(
    solve: Solve, m: np.ndarray, lam: np.ndarray, s: np.ndarray, r_d: np.ndarray, rc: np.ndarray
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


def interior_point(
    geo: RowGeometry, *, solver_tol: float, max_iter: int
) -> tuple[np.ndarray, int, bool]:
    r"""Mehrotra predictor-corrector on the dual QP; returns :math:`(\lambda, \text{iterations}, \text{ok})`.

    Slack :math:`s = G\lambda - c` is the primal margin excess; complementarity
    :math:`\lambda_j s_j = 0` on margin rows. The best iterate (merit: the larger of the
    relative residual and the relative complementarity) is returned; the method stops early when
    round-off makes the merit grow (degenerate problems), since the polish that follows makes
    the answer exact. ``ok`` means the merit reached ``max(solver_tol, 1e-7)``; ``solver_tol`` is
    the method's own stopping tolerance, not svmgeo's certificate ``tol``.
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
        if merit <= solver_tol or stale >= 3 or (best_merit <= 1e-6 and merit > 1e3 * best_merit):
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
    return best_lam, n_iter, bool(best_merit <= max(solver_tol, 1e-7))


def clarabel_qp(geo: RowGeometry, *, max_iter: int) -> tuple[np.ndarray, int, bool]:
    r"""The QP through Clarabel's direct API: compressed primal (``"primal"``) or the dual.

    Primal: :math:`\min \tfrac12\|w\|^2` s.t. :math:`\Phi_{\mathcal E} w = c_{\mathcal E}`,
    :math:`\Phi_{\mathcal M} w \ge c_{\mathcal M}`; λ are its multipliers. Dual:
    :math:`\min \tfrac12\lambda^\top G\lambda - c^\top\lambda` s.t. :math:`\lambda_{\mathcal M} \ge 0`.
    Returns (λ, iterations, whether Clarabel reports a solution); raises
    :class:`~svmgeo.SolverError` when Clarabel fails.
    """
    m = geo.margin
    N = geo.cs.N
    nM, nE = int(m.sum()), int((~m).sum())
    settings = {
        "max_iter": max_iter,
        "tol_gap_abs": 1e-10,
        "tol_gap_rel": 1e-10,
        "tol_feas": 1e-10,
        "tol_ktratio": 1e-8,
    }
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
    cones = [("zero", nE), ("nonneg", nM)]
    sol = ClarabelBackend.run(P, q, A, b, cones, settings, "the Frobenius QP")
    ok = ClarabelBackend.status(str(sol.status)).has_solution
    if geo.Phi is None:
        lam = np.asarray(sol.x, dtype=float)
    else:
        z = np.asarray(sol.z, dtype=float)
        lam = np.empty(N)
        lam[~m] = -z[:nE]
        lam[m] = z[nE:]
    return lam, int(sol.iterations), ok


def gradient_start(geo: RowGeometry, *, max_iter: int = 100, lag: int = 3) -> np.ndarray:
    r"""Approximate multipliers of the dual QP from products with :math:`G` only (L-BFGS-B).

    .. math::

        \min_\lambda\ \tfrac12\lambda^\top G\lambda - c^\top\lambda \quad\text{s.t.}\quad
        \lambda_{\mathcal M} \ge 0,

    stopped as soon as the working set it suggests, :math:`S = \{j : \lambda_j > s_j\}` with
    the slack :math:`s = G\lambda - c` (the gradient), differs in at most
    :math:`\max(2, N/500)` rows from the set ``lag`` iterations before (or after
    ``max_iter``): only that set matters, since :func:`polish_active_set` then solves it
    exactly and corrects the few rows left. A product with G per iteration and no
    factorization, where the active-set rounds from "every row tight" factor large blocks.
    """
    from scipy.optimize import Bounds, minimize  # lazily: scipy.optimize is slow to import

    c, m = geo.c, geo.margin
    N = geo.cs.N
    last: list[np.ndarray] = []  # the last point evaluated and its gradient

    def value(lam: np.ndarray) -> tuple[float, np.ndarray]:
        g = geo.matvec(lam) - c
        last[:] = [lam.copy(), g]
        return 0.5 * float(lam @ (g - c)), g

    sets: list[np.ndarray] = []
    settled = max(2, N // 500)

    def callback(lam: np.ndarray) -> None:
        grad = last[1] if np.array_equal(lam, last[0]) else geo.matvec(lam) - c
        sets.append(~m | (lam > grad))
        if len(sets) > lag and np.count_nonzero(sets[-1] != sets[-1 - lag]) <= settled:
            raise StopIteration

    res = minimize(
        value,
        np.zeros(N),
        jac=True,
        method="L-BFGS-B",
        bounds=Bounds(np.where(m, 0.0, -np.inf), np.full(N, np.inf)),
        callback=callback,
        options={"ftol": 0.0, "gtol": 0.0, "maxiter": max_iter, "maxfun": 4 * max_iter},
    )
    return np.asarray(res.x, dtype=float)


def _tight_round(geo: RowGeometry) -> tuple[np.ndarray, np.ndarray] | None:
    r"""The polish's first round from :math:`\lambda = 0` with every row in S: :math:`\lambda =
    0 + G^{-1}c` (:meth:`~._geometry.RowGeometry.tight`, the same solve :meth:`min_norm_solve`
    makes for it) and its margins :math:`G\lambda`, which are also the solve's accuracy product
    :math:`Gx`; None when that solve is not accurate (the round then solves as any other)."""
    x = geo.tight()
    if x is None:
        return None
    lam = x + 0.0  # 0 + x, as the round adds the correction to λ = 0
    margins = geo.matvec(lam)
    if not geo.accurate(None, geo.c, x, geo._gmax, float(np.abs(geo.c).max()), margins):
        return None
    return lam, margins


def polish_active_set(
    geo: RowGeometry, lam0: np.ndarray | None, S0: np.ndarray | None, *, max_rounds: int
) -> tuple[np.ndarray, int, bool]:
    r"""Active-set refinement: solve the equality-constrained least-norm problem on ``S`` exactly.

    Starting from the working set ``S0`` and multipliers ``lam0``, each round sets
    :math:`\lambda_S \leftarrow \lambda_S + G_{SS}^+(c_S - G_{SS}\lambda_S)` (the smallest
    correction that makes every row of S tight), drops margin rows whose multiplier turned
    negative, and adds margin rows that are violated. ``lam0 = S0 = None`` starts from
    :math:`\lambda = 0` with every row in S, whose first round is :func:`_tight_round`.
    Returns (λ, rounds, settled).
    """
    c, m = geo.c, geo.margin
    band = 1e-10 * np.maximum(1.0, np.abs(c))
    low = c - band
    first = _tight_round(geo) if lam0 is None else None
    if lam0 is None or S0 is None:
        lam0, S0 = np.zeros(c.size), np.ones(c.size, bool)
    S = np.asarray(S0, dtype=bool) | ~m
    if first is None:
        lam = np.where(S, lam0, 0.0)
        Glam = geo.matvec(lam) if lam.any() else np.zeros_like(c)  # G λ, kept up to date
    for rounds in range(1, max_rounds + 1):
        if first is not None:
            (lam, margins), first = first, None
        else:
            idx = np.flatnonzero(S)
            if idx.size:
                r = (c - Glam)[idx]  # c_j - (G λ)_j on the rows of S, as one gather
                lam[idx] += geo.min_norm_solve(idx, r)
            margins = geo.matvec(lam)
        lam_scale = max(1.0, float(np.abs(lam).max(initial=0.0)))
        if (S & (np.abs(margins - c) > band)).any():
            return (
                lam,
                rounds,
                False,
            )  # the rows of S cannot all be tight: G_SS λ = c_S inconsistent
        Sm = S & m
        neg = Sm & (lam < -1e-12 * lam_scale)
        viol = (m ^ Sm) & (margins < low)  # m ^ (S & m): the margin rows outside S
        drop = np.flatnonzero(neg)
        if not drop.size and not viol.any():
            lam = np.where(m, np.maximum(lam, 0.0), lam)
            return lam, rounds, True
        S = (S ^ neg) | viol  # neg lies in S: S ^ neg drops it
        # G λ after the dropped multipliers are zeroed: a product with their columns only
        Glam = margins - geo.matvec_columns(drop, lam[drop]) if drop.size else margins
        lam = np.where(neg, 0.0, lam)
    return lam, max_rounds, False


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
        from scipy.optimize import lsq_linear  # lazily: scipy.optimize is slow to import

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
    added. A round depends on :math:`S` alone, so a working set met before (e.g. a round that
    neither drops nor adds a row while :math:`\Phi_S^\top\lambda_S = w` stays unsolved) would
    repeat forever: the polish stops there, unsettled. None when the compressed features would
    be too large.
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
    seen: set[bytes] = set()  # the working sets already solved
    rounds = 0
    for rounds in range(1, max_rounds + 1):
        key = np.packbits(S).tobytes()
        if key in seen:  # the rounds would cycle: none of them settles
            rounds -= 1
            break
        seen.add(key)
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
    return lam, np.asarray(W), rounds, False
