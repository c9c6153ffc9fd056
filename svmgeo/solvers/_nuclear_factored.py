# SPDX-License-Identifier: BSD-3-Clause
r"""Att-SVM⋆ (nuclear norm) in factored form, certified by its dual — no SDP.

.. math::

    \min_{X \in \mathbb{R}^{p\times q}} \|X\|_* \quad\text{s.t.}\quad
    \tilde a_j^\top X \tilde b_j \ge c_j\ (\text{margin}),\qquad
    \tilde a_j^\top X \tilde b_j = c_j\ (\text{equality}),

on the compressed rows :math:`\tilde a_j \in \mathbb{R}^p`, :math:`\tilde b_j \in
\mathbb{R}^q` (the longer and the shorter side of ``_nuclear._compress``, :math:`q \le p`).
With :math:`\|X\|_* = \min_{KQ^\top = X} \tfrac12(\|K\|_F^2 + \|Q\|_F^2)` (for width
:math:`m \ge \mathrm{rank}\,X`; Burer–Monteiro), the problem becomes the smooth

.. math::

    \min_{K \in \mathbb{R}^{p\times m},\, Q \in \mathbb{R}^{q\times m}}
    \tfrac12(\|K\|_F^2 + \|Q\|_F^2) \quad\text{s.t.}\quad
    g_j(K, Q) = \tilde a_j^\top K Q^\top \tilde b_j \ \ge\ (=)\ c_j .

Two phases:

1. **Augmented Lagrangian + L-BFGS** (:func:`_augmented_lagrangian`) on :math:`(K, Q)` to
   about 1e-5: it identifies the active rows :math:`S` and the rank :math:`k`. The width
   :math:`m` adapts to the dual certificate (the Burer–Monteiro escape): a spare column takes
   Λ's top singular pair when :math:`\|\Lambda\|_2 > 1` (:func:`_escape`); when every column
   is used, one column is added per singular value above 1 of Λ off :math:`X`'s range
   (:func:`_widen`), and none when there is no such value (the width then suffices).
   After every subproblem the second phase is tried cheaply (a few rounds and steps); once
   its recomputed certificate closes the gap the first phase stops there — on small
   problems usually after the first of its four or five subproblems.
2. **Newton on the reduced KKT system** (:func:`_kkt_newton`). Stationarity of the
   Lagrangian gives :math:`K = \Lambda Q`, :math:`Q = \Lambda^\top K` with
   :math:`\Lambda = \sum_j \lambda_j \tilde a_j \tilde b_j^\top`, so the KKT point is the
   root of

   .. math::

       (\Lambda^\top\Lambda - I)\,Q = 0, \qquad
       \tilde a_j^\top \Lambda Q Q^\top \tilde b_j = c_j \ (j \in S)

   in the unknowns :math:`(Q, \lambda_S)` — :math:`qk + |S|` of them, independent of the
   longer side :math:`p` — whose Jacobian is symmetric. Minimum-norm Gauss–Newton steps
   (the roots form orbits :math:`Q \mapsto QO`) converge quadratically; rows whose
   multiplier turns negative leave :math:`S`, violated rows join it.

The answer :math:`X = \Lambda QQ^\top` is *proved* optimal by svmgeo's certificate
(:func:`~svmgeo.solvers._certificates.nuclear_certificate`): :math:`\lambda` is divided by
:math:`\|\sum_j \lambda_j a_j b_j^\top\|_2` (then dual feasible, so :math:`c^\top\lambda`
is a lower bound by weak duality), :math:`W` is feasible, and the recomputed gap
:math:`\|W\|_* - c^\top\lambda` must be at most ``min(tol, 1e-9)`` relative. Otherwise the
result is not ``OPTIMAL`` and :func:`~svmgeo.solvers._nuclear.solve_nuclear` falls back to
the SDP. (svmgeo's extension; the identity :math:`\|X\|_* = \min \tfrac12(\|K\|^2 +
\|Q\|^2)` is the one behind Theorem 2 of Tarzanagh et al., arXiv:2308.16898.)
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np
import scipy.linalg as sla

# ---- helpers shared with the other solver modules ------------------------------------------
from ..constraints import MARGIN, ConstraintSet
from ._certificates import (
    NUC,
    adjoint_spectral_norm,
    nuclear_certificate,
    nuclear_norm_on_rows,
    restore_factor,
    zero_is_feasible,
    zero_row_farkas,
)
from ._factored import Compressed, compress
from ._result import Certificate, SVMResult, finish, no_solution
from ._status import Status

# ---------------------------------------------------------------------------------------------

__all__ = ["polish_nuclear", "solve_nuclear_factored", "trivial_nuclear"]

GAP_TOL = 1e-9
"""Largest recomputed relative duality gap of an ``OPTIMAL`` factored answer."""
_MAX_KKT = 12_000
"""Largest reduced KKT system (unknowns qk + |S|) the dense Newton polish takes on."""
_PHASE1_TOL = 1e-5
"""Accuracy of the first phase (enough to identify the active rows and the rank)."""
_MAX_LBFGS = 2000
"""Most L-BFGS iterations of one augmented-Lagrangian subproblem."""
_MAX_RHO = 1e6
"""Largest penalty of the augmented Lagrangian."""
_EARLY_ROUNDS = 3
"""Active-set rounds of the KKT polish tried at a phase-1 checkpoint (a cheap try: phase 1
goes on when it does not settle, and the full polish runs at its end)."""
_EARLY_STEPS = 10
"""Gauss–Newton steps per round of that try (a right active set converges in 2-7)."""
_EARLY_MAX_KKT = 500
"""Largest reduced KKT system (qk + |S| unknowns) tried at a checkpoint. Measured: a try that
does not settle costs 0.2x a subproblem at (n, T, d) = (25, 10, 200) (346 unknowns) but 2x at
(50, 10, 200) (~950), where phase 1 is left to run as before."""


class _Rows:
    r"""Compressed rows :math:`\tilde a_j` (``P``, N×p) and :math:`\tilde b_j` (``R``, N×q)."""

    def __init__(self, P: np.ndarray, R: np.ndarray, c: np.ndarray, margin: np.ndarray) -> None:
        self.P, self.R, self.c, self.margin = P, R, c, margin

    def values(self, K: np.ndarray, Q: np.ndarray) -> np.ndarray:
        """:math:`g_j = \\tilde a_j^\\top K Q^\\top \\tilde b_j`."""
        return np.einsum("jm,jm->j", self.P @ K, self.R @ Q)

    def adjoint(self, lam: np.ndarray) -> np.ndarray:
        """:math:`\\Lambda = \\sum_j \\lambda_j \\tilde a_j \\tilde b_j^\\top` (p×q)."""
        return np.asarray(self.P.T @ (lam[:, None] * self.R))

    def violation(self, g: np.ndarray) -> float:
        diff = g - self.c
        return float(np.max(np.where(self.margin, -diff, np.abs(diff)), initial=0.0))


_TRTRS = sla.get_lapack_funcs("trtrs", (np.zeros(1),))


def _svd(M: np.ndarray, **options: Any) -> Any:
    """``numpy.linalg.svd`` of an iterate, refusing a non-finite one with the ``LinAlgError``
    that :func:`~._nuclear.solve_nuclear` catches (LAPACK would also print "illegal value"
    lines to stderr before failing)."""
    if not np.all(np.isfinite(M)):
        raise np.linalg.LinAlgError("a non-finite iterate (the factored path diverged)")
    return np.linalg.svd(M, **options)


def _inverse_hessian_times(g: np.ndarray, S: np.ndarray, Y: np.ndarray, gamma: float) -> np.ndarray:
    r"""The L-BFGS product :math:`H g` in compact form (Byrd, Nocedal & Schnabel, Math.
    Programming 63, 1994, Eq. (3.1)): the same :math:`H` as the two-loop recursion.

    With the pairs as rows of ``S``, ``Y`` (oldest first), :math:`R` the upper triangle of
    :math:`S Y^\top`, :math:`D` its diagonal and :math:`H_0 = \gamma I`:
    :math:`w = R^{-1} S g`, :math:`H g = \gamma g - \gamma Y^\top w + S^\top R^{-\top}
    ((D + \gamma Y Y^\top) w - \gamma Y g)` — a few matrix products instead of a loop over
    the pairs.
    """
    SY = S @ Y.T
    R = SY  # trtrs reads the upper triangle only
    w, info = _TRTRS(R, S @ g)
    if info != 0:  # pragma: no cover - R has the positive s_i^T y_i on its diagonal
        raise np.linalg.LinAlgError("singular L-BFGS matrix R")
    t = np.diagonal(SY) * w + gamma * (Y @ (Y.T @ w)) - gamma * (Y @ g)
    u, info = _TRTRS(R, t, trans=1)
    if info != 0:  # pragma: no cover
        raise np.linalg.LinAlgError("singular L-BFGS matrix R")
    return np.asarray(gamma * (g - Y.T @ w) + S.T @ u)


def _lbfgs(
    fun: Callable[[np.ndarray], tuple[float, np.ndarray]],
    z: np.ndarray,
    *,
    gtol: float,
    max_iter: int,
    memory: int = 10,
) -> tuple[np.ndarray, np.ndarray, int]:
    r"""L-BFGS (compact form, Armijo backtracking) until :math:`\|\nabla f\|_\infty \le` ``gtol``.

    A plain implementation: scipy's L-BFGS-B spends as long in its bound-handling bookkeeping
    as in these cheap function evaluations, and the product with the inverse Hessian is taken
    in compact form (:func:`_inverse_hessian_times`), a few matrix products per step.
    Curvature pairs with :math:`s^\top y \le 0` (the factored problem is nonconvex) are
    skipped. A step that leaves :math:`z` unchanged (Armijo met only because the step fell
    below :math:`z`'s rounding) is not taken: the pairs are dropped and the next step is
    along :math:`-\nabla f`; when that step fails so too, :math:`f` is at its rounding floor
    along :math:`-\nabla f` as well and the run ends there, short of ``gtol``. A step that
    raises :math:`f` by its rounding (the backtracking's last resort) is taken as before:
    refusing it too changed the answer's last bits and cost thousands of iterations on
    ordinary instances (review, ad hoc). A step that moves :math:`z` where :math:`f` shows no
    decrease (its rounding) is taken: its pair still informs the model, and on a stiff
    quadratic such steps take the gradient far below what :math:`f` resolves (see
    ``tests/solvers/test_nuclear_audit57.py``). (Before, the null step was taken and
    repeated unchanged until ``max_iter``: measured in three or four subproblems of 2000
    iterations each, 7-14 s, on the parallel-query rows of ``benchmarks/bench_svm_nuclear.py
    --parallel-queries`` at (2000, 3, 2), seeds 1-3, where the subproblems' Hessians reach
    condition numbers 1e7-5e8 as the penalty grows, so that a decrease
    :math:`\|\nabla f\|^2 / (2\lambda_{\max})` along the stiff direction falls below the
    rounding of :math:`f` while :math:`\|\nabla f\|_\infty` is still 1e-5-0.1.) Returns
    ``(z, gradient, iterations)``.
    """
    f, g = fun(z)
    n = z.size
    S = np.empty((memory, n))  # the pairs, oldest first, in rows [0, used)
    Y = np.empty((memory, n))
    used = 0
    its = 0
    while its < max_iter and float(np.abs(g).max()) > gtol:
        its += 1
        if used:
            gamma = float(S[used - 1] @ Y[used - 1]) / float(Y[used - 1] @ Y[used - 1])
            d = -_inverse_hessian_times(g, S[:used], Y[:used], gamma)
        else:
            d = g / -max(math.sqrt(float(g @ g)), 1.0)
        slope = float(g @ d)
        if not slope < 0.0:
            used = 0
            d, slope = -g, -float(g @ g)
        t = 1.0
        while True:
            z_new = z + t * d
            f_new, g_new = fun(z_new)
            if f_new <= f + 1e-4 * t * slope or t < 1e-12:
                break
            t *= 0.5
        s, y = z_new - z, g_new - g
        if not s.any():  # a null step: the pairs' model is stale, or f is at its rounding
            if not used:  # floor along -g too: nothing left to gain
                break
            used = 0
            continue
        sy = float(s @ y)
        if sy > 1e-12 * math.sqrt(float(s @ s) * float(y @ y)):
            if used == memory:  # drop the oldest pair
                S[:-1] = S[1:]
                Y[:-1] = Y[1:]
                used -= 1
            S[used], Y[used] = s, y
            used += 1
        z, f, g = z_new, f_new, g_new
    return z, g, its


def _augmented_lagrangian(
    rows: _Rows,
    K: np.ndarray,
    Q: np.ndarray,
    y: np.ndarray,
    *,
    tol: float,
    max_outer: int = 30,
    settle: Callable[[np.ndarray, np.ndarray, np.ndarray], bool] | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    r"""Augmented Lagrangian on :math:`(K, Q)`, each subproblem by L-BFGS.

    .. math::

        L_\rho = \tfrac12(\|K\|^2 + \|Q\|^2) + \frac1{2\rho}\sum_j (t_j^2 - y_j^2),\qquad
        t_j = y_j - \rho(g_j - c_j)\ (\text{clipped at } 0 \text{ on margin rows}),

    multipliers :math:`y \leftarrow t`; :math:`\rho` grows tenfold when the violation did
    not shrink fourfold. After each subproblem that is not yet accurate to ``tol``,
    ``settle(K, Q, y)`` may end the loop early by returning True (before a saddle's escape,
    :func:`_escape`, which a polish that settles makes unnecessary): :func:`solve_nuclear_factored` tries its KKT polish there and stops once the
    recomputed certificate closes the gap, usually after the first subproblem instead of
    the four or five that reach ``tol``. Returns ``(K, Q, y, L-BFGS iterations)``.
    """
    p, m = K.shape
    q = Q.shape[0]
    P, R, c, margin = rows.P, rows.R, rows.c, rows.margin
    PT, RT = np.ascontiguousarray(P.T), np.ascontiguousarray(R.T)
    all_margin = bool(margin.all())
    nK = p * m
    rho = 10.0
    prev = np.inf
    its = 0
    z = np.concatenate([K.ravel(), Q.ravel()])
    for _ in range(max_outer):
        shifted = y + rho * c  # t = y - rho (g - c) = shifted - rho g
        yy = float(y @ y)

        def fun(
            z: np.ndarray, shifted: np.ndarray = shifted, yy: float = yy, rho: float = rho
        ) -> tuple[float, np.ndarray]:
            K, Q = z[:nK].reshape(p, m), z[nK:].reshape(q, m)
            PK, RQ = P @ K, R @ Q
            t = shifted - rho * np.einsum("jm,jm->j", PK, RQ)
            if all_margin:
                np.maximum(t, 0.0, out=t)
            else:
                t = np.where(margin, np.maximum(t, 0.0), t)
            f = 0.5 * float(z @ z) + (float(t @ t) - yy) / (2.0 * rho)
            grad = np.empty_like(z)  # (K - Pᵀ diag(t) RQ, Q - Rᵀ diag(t) PK)
            np.matmul(PT, t[:, None] * RQ, out=grad[:nK].reshape(p, m))
            np.matmul(RT, t[:, None] * PK, out=grad[nK:].reshape(q, m))
            np.subtract(z, grad, out=grad)
            return f, grad

        z, grad, nit = _lbfgs(fun, z, gtol=0.1 * tol, max_iter=_MAX_LBFGS)
        its += nit
        K, Q = z[: p * m].reshape(p, m), z[p * m :].reshape(q, m)
        g = rows.values(K, Q)
        t = y - rho * (g - c)
        y = np.where(margin, np.maximum(t, 0.0), t)
        viol = rows.violation(g)
        done = viol <= tol and float(np.abs(grad).max()) <= tol * max(1.0, float(np.abs(z).max()))
        if not done and settle is not None and settle(K, Q, y):
            break
        grown = _escape(rows, K, Q, y)
        if grown is not None:  # a saddle of the factored problem: step along Λ's top pair
            K, Q = grown
            z = np.concatenate([K.ravel(), Q.ravel()])
        elif done:
            break
        if viol > 0.25 * prev:
            rho *= 10.0
            if rho > _MAX_RHO:  # the rows are (nearly) infeasible: leave it to the SDP
                break
        prev = viol
    return K, Q, y, its


def _escape(
    rows: _Rows, K: np.ndarray, Q: np.ndarray, y: np.ndarray
) -> tuple[np.ndarray, np.ndarray] | None:
    r"""Balanced factors of :math:`X = KQ^\top` with Λ's top singular pair in a spare column.

    When :math:`\sigma_1(\Lambda) > 1` the convex problem is not solved: :math:`X + \epsilon
    u_1v_1^\top` lowers the Lagrangian (:math:`\|X\|_*` grows by :math:`\epsilon`, the rows'
    term falls by :math:`\epsilon\sigma_1`), a direction of negative curvature of the
    factored problem when a column is spare (rank X < m). None when :math:`\sigma_1 \le 1 +
    10^{-6}` or no column is spare.
    """
    Lam = rows.adjoint(y)
    U, s, Vt = _svd(Lam, full_matrices=False)
    if s[0] <= 1.0 + 1e-6:
        return None
    m = K.shape[1]
    Ux, sx, Vxt = _svd(K @ Q.T, full_matrices=False)
    if m > sx.size or sx[m - 1] > 1e-6 * sx[0]:
        return None
    root = np.sqrt(sx[:m])
    K, Q = Ux[:, :m] * root, Vxt[:m].T * root
    size = np.sqrt(1e-2 * sx[0])
    K[:, m - 1], Q[:, m - 1] = size * U[:, 0], size * Vt[0]
    return K, Q


def _widen(
    rows: _Rows, K: np.ndarray, Q: np.ndarray, y: np.ndarray, *, band: float = 1e-4
) -> tuple[np.ndarray, np.ndarray] | None:
    r"""Wider balanced factors of :math:`X = KQ^\top`, a column per escape direction of Λ.

    With every column of :math:`X` used (rank :math:`m`), a KKT point of the factored
    problem is globally optimal when :math:`\Lambda = \sum_j y_j\tilde a_j\tilde b_j^\top`
    has no singular value above 1 off :math:`X`'s range, i.e. :math:`\|P_U^\perp\Lambda
    P_V^\perp\|_2 \le 1` (on the range the values are 1 at a KKT point, so then
    :math:`\|\Lambda\|_2 \le 1` and weak duality closes the gap; the known Burer–Monteiro
    argument, used here only to choose the width: the recomputed certificate decides
    ``OPTIMAL``). Each singular pair
    :math:`(u_i, \sigma_i, v_i)` of :math:`P_U^\perp\Lambda P_V^\perp` with :math:`\sigma_i > 1
    +` ``band`` (the first phase is accurate to about 1e-5) is a descent direction
    :math:`X + \epsilon u_iv_i^\top` of the convex problem and gets a new column (size as in
    :func:`_escape`). None when there is none, or a column is spare (:func:`_escape` then
    acts inside the first phase).

    Widening only along these directions matters: surplus columns where Λ's singular values
    sit just below 1 have curvature :math:`1 - \sigma_i` in the factored problem, and L-BFGS
    then crawls (the old doubling stalled so at (n, T, d) = (100, 20, 1000), seed 2).
    """
    m = K.shape[1]
    Ux, sx, Vxt = _svd(K @ Q.T, full_matrices=False)
    if m > sx.size or sx[m - 1] <= 1e-6 * sx[0]:
        return None
    Ux, Vx = Ux[:, :m], Vxt[:m].T
    Lam = rows.adjoint(y)
    Lam = Lam - Ux @ (Ux.T @ Lam)
    Lam = Lam - (Lam @ Vx) @ Vx.T
    U, s, Vt = _svd(Lam, full_matrices=False)
    extra = min(int(np.count_nonzero(s > 1.0 + band)), Q.shape[0] - m)
    if extra == 0:
        return None
    root = np.sqrt(sx[:m])
    size = np.sqrt(1e-2 * sx[0])
    K = np.hstack([Ux * root, size * U[:, :extra]])
    Q = np.hstack([Vx * root, size * Vt[:extra].T])
    return K, Q


def _rounding_level(PS: np.ndarray, RS: np.ndarray, lamS: np.ndarray, Q: np.ndarray) -> float:
    r"""Largest rounding error of :func:`_kkt_newton`'s residual :math:`F` at :math:`(Q,
    \lambda_S)`: the standard bound :math:`\gamma_n\,|A||B|` of a product evaluated in
    floating point, over the chain of products behind :math:`F`,

    .. math::

        \gamma_n \max\Bigl(\max_j |\tilde a_j|^\top\bar\Lambda\,|Q||Q|^\top|\tilde b_j|
        ,\ \max\,(\bar\Lambda^\top\bar\Lambda + I)|Q|\Bigr),\qquad
        \bar\Lambda = \sum_{j\in S}|\lambda_j||\tilde a_j||\tilde b_j|^\top,

    with :math:`\gamma_n = nu/(1 - nu)`, :math:`u` the unit roundoff and :math:`n = |S| + p
    + q + k` (after Higham, *Accuracy and Stability of Numerical Algorithms*, 2nd ed., §3.5; a
    first-order level, not a rigorous bound: :math:`\Lambda` enters twice, so the factor can
    be up to twice this; it only decides when Newton may stop, the certificate still judges
    the answer). A non-finite level (diverged iterates) reads 0. On
    well-scaled rows it is far below 1e-12; where the terms of :math:`\Lambda` cancel it is
    not: measured on the (n, T, d) = (2000, 3, 2) instance of ``test_nuclear_audit56.py``
    (objective 524, multipliers 449 and 75, :math:`c_j = 1`) it is 6.5e-9 and Newton's
    residual stalls between 1e-11 and 2e-10, so a fixed 1e-12 cannot be met there.
    """
    absP, absR, absQ = np.abs(PS), np.abs(RS), np.abs(Q)
    with np.errstate(over="ignore", invalid="ignore"):  # diverged iterates: level 0 below
        lam_bar = absP.T @ (np.abs(lamS)[:, None] * absR)
        block = float(((lam_bar.T @ lam_bar) @ absQ + absQ).max(initial=0.0))
        row = np.einsum("jk,jk->j", absP @ lam_bar @ absQ, absR @ absQ)
    n = PS.shape[0] + PS.shape[1] + Q.shape[0] + Q.shape[1]
    u = 0.5 * float(np.finfo(float).eps)
    level = n * u / (1.0 - n * u) * max(block, float(row.max(initial=0.0)))
    return level if math.isfinite(level) else 0.0  # no level: the fixed 1e-12 alone decides


def _kkt_newton(
    rows: _Rows, lam: np.ndarray, Q: np.ndarray, S: np.ndarray, *, steps: int = 30
) -> tuple[np.ndarray, np.ndarray, float, float]:
    r"""Gauss–Newton on :math:`F(Q, \lambda_S) = ((\Lambda^\top\Lambda - I)Q,\ g_S - c_S) = 0`.

    With :math:`u_j = \Lambda^\top\tilde a_j`, :math:`v_j = Q^\top\tilde b_j`,
    :math:`w_j = Q^\top u_j`, the Jacobian is the symmetric

    .. math::

        J = \begin{bmatrix} (\Lambda^\top\Lambda - I)\otimes I_k & M \\ M^\top &
        (\tilde A_S\tilde A_S^\top)\circ(V_S V_S^\top) \end{bmatrix},\qquad
        M_{:,j} = \mathrm{vec}(\tilde b_j w_j^\top + u_j v_j^\top).

    Minimum-norm steps (``gelsy``). Returns ``(λ, Q, final residual, its rounding level)``
    (:func:`_rounding_level`), both relative to :math:`\max(1, \|c\|_\infty)`.
    """
    P, R, c = rows.P, rows.R, rows.c
    q, k = Q.shape
    PS, RS, cS = P[S], R[S], c[S]
    lamS = lam[S].copy()
    scale = max(1.0, float(np.abs(cS).max(initial=0.0)))

    def residual(Q: np.ndarray, lamS: np.ndarray) -> tuple[np.ndarray, tuple[Any, ...]]:
        Lam = PS.T @ (lamS[:, None] * RS)
        H = Lam.T @ Lam - np.eye(q)
        U = PS @ Lam  # rows u_j (|S| × q)
        V = RS @ Q  # rows v_j (|S| × k)
        Wr = U @ Q  # rows w_j (|S| × k)
        F = np.concatenate([(H @ Q).ravel(), np.einsum("jk,jk->j", Wr, V) - cS])
        return F, (H, U, V, Wr)

    F, parts = residual(Q, lamS)
    best = float(np.abs(F).max()) / scale
    for _ in range(steps):
        if best <= 1e-14:
            break
        H, U, V, Wr = parts
        M = (np.einsum("jq,jk->jqk", RS, Wr) + np.einsum("jq,jk->jqk", U, V)).reshape(S.size, -1)
        J = np.block(
            [
                [np.kron(H, np.eye(k)), M.T],
                [M, (PS @ PS.T) * (V @ V.T)],
            ]
        )
        step = sla.lstsq(J, -F, cond=1e-11, lapack_driver="gelsy", check_finite=False)[0]
        norm = float(np.linalg.norm(F))
        for alpha in 0.5 ** np.arange(8):
            Q_new = Q + alpha * step[: q * k].reshape(q, k)
            lam_new = lamS + alpha * step[q * k :]
            F_new, parts_new = residual(Q_new, lam_new)
            if np.linalg.norm(F_new) < norm:
                break
        value = float(np.abs(F_new).max()) / scale
        if not np.isfinite(value) or not np.linalg.norm(F_new) < norm:
            break
        Q, lamS, F, parts, best = Q_new, lam_new, F_new, parts_new, value
    out = np.zeros(rows.c.size)
    out[S] = lamS
    return out, Q, best, _rounding_level(PS, RS, lamS, Q) / scale


def _rank(Lam: np.ndarray, *, band: float = 1e-4) -> int:
    r"""Rank of the optimum: the singular values of :math:`\Lambda` at 1 (within ``band``).

    At a nondegenerate optimum :math:`\Lambda = U_kV_k^\top + U_\perp T V_\perp^\top`
    with :math:`\|T\|_2 < 1`, and :math:`W` lives on :math:`(U_k, V_k)`.
    """
    return int(np.count_nonzero(_svd(Lam, compute_uv=False) > 1.0 - band))


def _start_factor(X: np.ndarray, Lam: np.ndarray, k: int) -> np.ndarray:
    r""":math:`Q` (q×k) with :math:`\Lambda QQ^\top \approx X` on the top-k singular pairs of Λ.

    :math:`X` is projected on :math:`(U_k, V_k)`, its symmetric part floored at
    :math:`10^{-3}` of its largest eigenvalue (a direction the first phase had not yet
    grown still gets a column), and :math:`Q = V_k S^{1/2}`.
    """
    U, _, Vt = _svd(Lam, full_matrices=False)
    Uk, Vk = U[:, :k], Vt[:k].T
    Sm = Uk.T @ X @ Vk
    ev, E = np.linalg.eigh(0.5 * (Sm + Sm.T))
    ev = np.maximum(ev, 1e-3 * max(float(ev.max()), 1e-300))
    return np.asarray(Vk @ (E * np.sqrt(ev)) @ E.T)


def _polish_active_set(
    rows: _Rows,
    K: np.ndarray,
    Q: np.ndarray,
    y: np.ndarray,
    *,
    max_rounds: int = 10,
    steps: int = 30,
    max_kkt: int = _MAX_KKT,
) -> tuple[np.ndarray, np.ndarray, int] | None:
    r"""Identify :math:`(S, k)` from the first phase and solve the reduced KKT system exactly.

    Rounds: Newton on :math:`(Q, \lambda_S)`; a margin row with a negative multiplier leaves
    :math:`S`, a violated row joins it, and a singular value of :math:`\Lambda` above 1
    raises :math:`k`. At most ``max_rounds`` rounds of at most ``steps`` Gauss–Newton steps
    each, on systems of at most ``max_kkt`` unknowns. Returns ``(X, λ, rounds)`` with :math:`X = \Lambda QQ^\top` (p×q), or None when the
    system is too large or does not settle.
    """
    X = K @ Q.T
    Lam = rows.adjoint(y)
    k = _rank(Lam)
    g = rows.values(K, Q)
    S = (~rows.margin) | (y > g - rows.c)
    lam = np.where(S, y, 0.0)
    for rounds in range(1, max_rounds + 1):
        idx = np.flatnonzero(S)
        if k == 0 or idx.size == 0 or k * Q.shape[0] + idx.size > max_kkt:
            return None  # no support to polish on (its Newton system is empty), or too large
        Qk = _start_factor(X, Lam, k)
        lam, Qk, res, floor = _kkt_newton(rows, lam, Qk, idx, steps=steps)
        Lam = rows.adjoint(lam)
        X = Lam @ Qk @ Qk.T
        g = np.einsum("jp,pq,jq->j", rows.P, X, rows.R)
        lam_scale = max(1.0, float(np.abs(lam).max()))
        band = 1e-10 * np.maximum(1.0, np.abs(rows.c))
        neg = S & rows.margin & (lam < -1e-12 * lam_scale)
        viol = ~S & rows.margin & (g < rows.c - band)
        k_new = _rank(Lam, band=-1e-10)  # singular values of Λ above 1 + 1e-10
        if res > max(1e-12, floor):  # not converged, or not to the rounding of F itself
            return None
        if not neg.any() and not viol.any() and k_new <= k:
            return X, np.where(rows.margin, np.maximum(lam, 0.0), lam), rounds
        if neg.any():
            S[int(np.argmin(np.where(neg, lam, np.inf)))] = False
        S |= viol
        k = max(k, k_new)
    return None


class _Certified(NamedTuple):
    """A factored answer in full coordinates with its recomputed certificate."""

    W: np.ndarray
    lam: np.ndarray
    objective: float
    certificate: Certificate


def _certify(
    cs: ConstraintSet, comp: Compressed, X: np.ndarray, lam: np.ndarray, tol: float
) -> _Certified:
    r""":math:`W = UXV^\top` (or its transpose), repaired by :func:`polish_nuclear`, its
    :math:`\|W\|_*` (:func:`~svmgeo.solvers._certificates.nuclear_norm_on_rows`, computed
    once: the objective is the value the certificate judges) and
    :func:`~svmgeo.solvers._certificates.nuclear_certificate`."""
    W, lam, _ = polish_nuclear(cs, comp.to_W(X), lam)
    nuc = nuclear_norm_on_rows(cs, W)
    return _Certified(W, lam, nuc, nuclear_certificate(cs, W, lam, tol, nuc=nuc))


def _closes_gap(rows: _Rows, X: np.ndarray, lam: np.ndarray, gap_tol: float) -> bool:
    r"""A cheap screen in compressed coordinates before the certificate on the data:
    :math:`\|X\|_*` against :math:`c^\top\lambda_+ / \max(1, \|\tilde\Lambda\|_2)`
    (the same quantities as the certificate's gap, up to rounding; ten times ``gap_tol`` of
    slack, since only :func:`~svmgeo.solvers._certificates.nuclear_certificate` decides)."""
    lam = np.where(rows.margin, np.maximum(lam, 0.0), lam)
    spectral = float(np.linalg.norm(rows.adjoint(lam), 2))
    lower = float(rows.c @ lam) / max(1.0, spectral)
    nuc = float(_svd(X, compute_uv=False).sum())
    return abs(nuc - lower) <= 10.0 * gap_tol * max(nuc, 1e-300)


def polish_nuclear(
    cs: ConstraintSet, W: np.ndarray, lam: np.ndarray
) -> tuple[np.ndarray, np.ndarray, float]:
    r"""Cheap exact repairs of an interior-point answer.

    Margin multipliers are clipped at 0 and :math:`\lambda` is divided by
    :math:`\max(1, \|\sum_j\lambda_j a_j b_j^\top\|_2)` (dual feasibility at a relative cost of
    the excess). When every equality row has :math:`c_j = 0`, :math:`W` is scaled up by
    :math:`\max_j c_j / m_j \le 1 + 10^{-6}` so no margin row is violated.
    """
    lam = lam.copy()
    lam[cs.kind == MARGIN] = np.maximum(lam[cs.kind == MARGIN], 0.0)
    norm = adjoint_spectral_norm(cs, lam)
    if norm > 1.0:
        lam /= norm
    scale = restore_factor(cs, cs.apply(W))
    return W * scale, lam, scale


def trivial_nuclear(cs: ConstraintSet, solver: str, tol: float, start: float) -> SVMResult:
    """Rows with a_j b_jᵀ = 0 only, or rows W = 0 meets: W = 0 is optimal iff it is
    feasible."""
    farkas = zero_row_farkas(cs)  # a row a_j b_j^T = 0 that still asks for something
    if farkas is not None:
        j = int(np.flatnonzero(farkas)[0])
        return no_solution(
            cs,
            Status.INFEASIBLE,
            f"infeasible: row {j} has a_j b_jᵀ = 0 but needs {cs.rhs[j]:g} "
            "(a token equal to the selected one, or a zero query)",
            norm="nuc",
            solver=solver,
            solve_time=time.perf_counter() - start,
            farkas=farkas,
        )
    W = np.zeros((cs.d, cs.d))
    lam = np.zeros(cs.N)
    return finish(
        cs,
        W,
        lam,
        norm=NUC,
        tol=tol,
        status=Status.OPTIMAL,
        message="W = 0 meets every row (or every row is a_j b_jᵀ = 0): W = 0 is optimal",
        solver=solver,
        margins=np.zeros(cs.N),
        objective=0.0,
        solve_time=time.perf_counter() - start,
    )


def solve_nuclear_factored(
    cs: ConstraintSet, *, tol: float = 1e-8, width: int | None = None
) -> SVMResult:
    r"""Att-SVM⋆ by the factored primal and a certifying dual (see the module docstring).

    .. math::

        \min_W \|W\|_* = \min_{KQ^\top = W}\tfrac12(\|K\|_F^2 + \|Q\|_F^2)
        \quad\text{s.t.}\quad a_j^\top W b_j \ge c_j\ (\text{margin}),\ = c_j\ (\text{equality}).

    Parameters
    ----------
    cs : ConstraintSet
        The rows (assumed feasible: infeasible rows end not ``OPTIMAL``). Rows that are all
        :math:`a_j b_j^\top = 0` are decided as in ``solve_nuclear``.
    tol : float, default 1e-8
        Certificate tolerance; ``OPTIMAL`` also needs a recomputed relative gap at most
        ``min(tol, GAP_TOL)``.
    width : int, optional
        Starting width :math:`m` of the factors (default ``min(q, 16)``); widened along the
        dual certificate's escape directions (:func:`_widen`), up to :math:`q = \min(r_1,
        r_2)`. ``extras`` reports the final ``width`` and the number of ``widenings``.

    Returns
    -------
    SVMResult
        ``norm="nuc"``, ``solver="svmgeo-factored"``, ``dual`` the certifying :math:`\lambda`
        (with :math:`\|\sum_j\lambda_j a_j b_j^\top\|_2 \le 1`), ``certificate`` attached.
        Not ``OPTIMAL`` (``OPTIMAL_INACCURATE`` or ``NUMERICAL_ERROR``, with a message) when
        the certificate or the gap bound fails: the caller then runs the SDP.
    """
    start = time.perf_counter()
    comp = compress(cs)
    if cs.N == 0 or comp.short.shape[1] == 0 or zero_is_feasible(cs):
        return trivial_nuclear(cs, "svmgeo-factored", tol, start)
    rows = _Rows(comp.long, comp.short, np.asarray(cs.rhs, dtype=float), cs.kind == MARGIN)
    p, q = comp.long.shape[1], comp.short.shape[1]
    extras: dict[str, Any] = {"r1": comp.U.shape[1], "r2": comp.V.shape[1]}

    # start: the Frobenius-like W0 = Σ c_j ã_j b̃_jᵀ scaled to mean margin c, balanced factors
    X0 = rows.adjoint(rows.c)
    g0 = np.einsum("jp,pq,jq->j", rows.P, X0, rows.R)
    X0 *= float(rows.c @ g0) / max(float(g0 @ g0), 1e-300)
    U0, s0, V0t = _svd(X0, full_matrices=False)
    m = min(q, 16 if width is None else max(1, int(width)))
    rng = np.random.default_rng(0)
    K = U0[:, :m] * np.sqrt(s0[:m]) + 1e-3 * rng.standard_normal((p, m))
    Q = V0t[:m].T * np.sqrt(s0[:m]) + 1e-3 * rng.standard_normal((q, m))
    y = np.zeros(cs.N)
    n_iter = widenings = 0
    gap_tol = min(tol, GAP_TOL)
    early: list[tuple[_Certified, int]] = []

    def settle(K: np.ndarray, Q: np.ndarray, y: np.ndarray) -> bool:
        """The KKT polish at a phase-1 checkpoint, kept when its certificate closes the gap."""
        if K.shape[1] < q and _widen(rows, K, Q, y) is not None:
            return False  # too narrow yet: phase 1 goes on and widens, as without the check
        polished = _polish_active_set(
            rows, K, Q, y, max_rounds=_EARLY_ROUNDS, steps=_EARLY_STEPS, max_kkt=_EARLY_MAX_KKT
        )
        if polished is None or not _closes_gap(rows, polished[0], polished[1], gap_tol):
            return False
        answer = _certify(cs, comp, polished[0], polished[1], tol)
        if not (answer.certificate.passed and answer.certificate.duality_gap <= gap_tol):
            return False
        early.append((answer, polished[2]))
        extras["rank"] = _rank(rows.adjoint(polished[1]), band=1e-9)
        return True

    while True:
        K, Q, y, its = _augmented_lagrangian(rows, K, Q, y, tol=_PHASE1_TOL, settle=settle)
        n_iter += its
        if early:
            break
        # every column used and the dual certificate still has a singular value above 1 off
        # X's range: the optimum needs more columns; widen along those singular pairs
        wider = _widen(rows, K, Q, y) if m < q else None
        if wider is None:
            break
        K, Q = wider
        m = K.shape[1]
        widenings += 1
    extras["width"] = m
    extras["widenings"] = widenings
    extras["lbfgs_iterations"] = n_iter

    if early:
        answer, rounds = early[0]
        note = (
            f"factored solve, KKT polish settled in {rounds} round(s) at a phase-1 checkpoint "
            "(its certificate closed the gap)"
        )
        extras["kkt_polish"] = True
    else:
        polished = _polish_active_set(rows, K, Q, y)
        if polished is None:
            X, lam = K @ Q.T, y
            note = "factored solve; the KKT polish did not settle (first-order answer)"
            extras["kkt_polish"] = False
        else:
            X, lam, rounds = polished
            note = f"factored solve, KKT polish settled in {rounds} round(s)"
            extras["kkt_polish"] = True
            extras["rank"] = _rank(rows.adjoint(lam), band=1e-9)
        answer = _certify(cs, comp, X, lam, tol)
    W, lam, objective, certificate = answer
    status = Status.OPTIMAL
    if certificate.passed and not certificate.duality_gap <= gap_tol:
        status = Status.OPTIMAL_INACCURATE
        note += f"; recomputed gap {certificate.duality_gap:.2e} > {gap_tol:.0e}"
    return finish(
        cs,
        W,
        lam,
        norm=NUC,
        tol=tol,
        status=status,
        message=note,
        solver="svmgeo-factored",
        objective=objective,
        certificate=certificate,
        n_iter=n_iter,
        solve_time=time.perf_counter() - start,
        extras=extras,
    )
