# SPDX-License-Identifier: BSD-3-Clause
r"""Frobenius Att-SVM without the Gram matrix: products with G only, for problems past memory.

.. math::

    \max_\lambda\ c^\top\lambda - \tfrac12\lambda^\top G\lambda,\qquad
    \lambda_j \ge 0\ (j \in \mathcal M),\qquad G = (AA^\top)\circ(BB^\top),

never forms :math:`G` (:math:`8N^2` bytes: 71.6 GiB at N = 98 000). A product is two
passes over the rows,

.. math::

    W = \sum_j x_j a_j b_j^\top = C^\top Z,\quad C_i = \sum_{j:\,b_j = z_i} x_j a_j,
    \qquad (Gx)_j = a_j^\top W b_j = a_j^\top (W z_{i(j)}),

:math:`O(N d + n_q d^2)` with :math:`n_q` distinct queries (rows sharing a query, as in
Att-SVM, are summed first), in memory :math:`O(n_q d + d^2)` beyond the rows themselves.

Method (svmgeo's): a working-set method from "every row tight". Each round solves
:math:`G_{SS}\lambda_S = c_S` by conjugate gradients preconditioned by the exact inverse of
:math:`G` on blocks of rows that share a query (a sequence's rows share :math:`b_j = z_i`,
so the block is :math:`|z_i|^2 A_iA_i^\top`, the dominant coupling); margin rows whose
multiplier is negative leave :math:`S`, violated rows join it. Rounds start at a loose CG
tolerance; once the working set is stable, the final solve runs to a residual of
``1e-12`` relative, so the certificate (recomputed from the data, as on the dense path:
:func:`~svmgeo.solvers._certificates.frobenius_certificate`) holds at round-off level. No
dense polish is possible at these sizes: the CG solve *is* the polish, and the certificate
judges it. The status is ``OPTIMAL`` only when that certificate passes.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from .._validation import available_bytes
from ..constraints import MARGIN, ConstraintSet
from ._certificates import FRO, lift_kkt_pair
from ._geometry import compressed_width
from ._result import SVMResult, finish, no_solution
from ._status import Status

__all__ = ["available_bytes", "dense_bytes", "solve_frobenius_matfree", "use_matrix_free"]

MEMORY_FRACTION = 0.5
"""The dense path is chosen while its estimate (:func:`dense_bytes`) is at most this share
of the available memory."""
_BLOCK = 256
"""Largest block of the block-Jacobi preconditioner (rows sharing a query)."""


def dense_bytes(cs: ConstraintSet) -> float:
    r"""Memory estimate of the dense Frobenius path (bytes).

    Compressed features (:math:`D` = :func:`~._geometry.compressed_width` :math:`< N`):
    :math:`\Phi` (N×D) and two D×D matrices. Otherwise the Gram :math:`G`, its Cholesky factor and one working copy:
    :math:`3 \cdot 8N^2`.
    """
    N = cs.N
    D = compressed_width(cs)
    if D < N:
        return 8.0 * (N * D + 2.0 * D * D)
    return 24.0 * N * N


def use_matrix_free(cs: ConstraintSet) -> bool:
    """True when the dense path's estimate exceeds ``MEMORY_FRACTION`` of available memory
    (:func:`dense_bytes` is at most :math:`24 N^2`: below the limit, not computed)."""
    limit = MEMORY_FRACTION * available_bytes()
    return 24.0 * cs.N * cs.N > limit and dense_bytes(cs) > limit


class _Products:
    r"""Products with :math:`G = (AA^\top)\circ(BB^\top)` through :math:`W`:
    :math:`Gx = \mathcal A(\mathcal A^*x)` with :meth:`~svmgeo.ConstraintSet.adjoint` and
    :meth:`~svmgeo.ConstraintSet.apply` (rows grouped by query there), counted."""

    def __init__(self, cs: ConstraintSet) -> None:
        self.cs = cs
        self.n_products = 0

    def matvec(self, x: np.ndarray) -> np.ndarray:
        """:math:`Gx`."""
        self.n_products += 1
        return self.cs.apply(self.cs.adjoint(x))


def _query_index(cs: ConstraintSet) -> np.ndarray:
    """The query group of each row (each row its own group when the rows share few)."""
    groups = cs.query_groups
    return np.arange(cs.N) if groups is None else groups[1]


class _BlockJacobi:
    r"""Exact inverse of :math:`G` on blocks of rows sharing a query (≤ ``_BLOCK`` rows each).

    The blocks of all rows are formed once (:math:`|z|^2 A_gA_g^\top`); :meth:`restrict`
    inverts their sub-blocks on a working set.
    """

    def __init__(self, cs: ConstraintSet) -> None:
        inv = _query_index(cs)
        order = np.argsort(inv, kind="stable")
        g = inv[order]
        new_group = np.r_[True, g[1:] != g[:-1]]
        starts = np.flatnonzero(new_group)
        pos = np.arange(g.size) - np.repeat(starts, np.diff(np.r_[starts, g.size]))
        new_block = new_group | (pos % _BLOCK == 0)
        self.block = np.cumsum(new_block) - 1  # block of order[i]
        self.slot = pos % _BLOCK
        self.rows = order
        nb, s = int(self.block[-1]) + 1, int(self.slot.max()) + 1
        self.index = np.full((nb, s), -1)
        self.index[self.block, self.slot] = order
        self.full = np.zeros((nb, s, s))
        step = max(1, (1 << 22) // max(s * cs.d, 1))
        for lo in range(0, nb, step):
            idx = self.index[lo : lo + step]
            Ab = np.where(idx[..., None] >= 0, cs.A[idx], 0.0)
            Bb = np.where(idx[..., None] >= 0, cs.B[idx], 0.0)
            self.full[lo : lo + step] = (Ab @ Ab.transpose(0, 2, 1)) * (Bb @ Bb.transpose(0, 2, 1))
        self.mask = self.index >= 0
        self.inverse = np.zeros_like(self.full)
        self.keep = self.mask

    def restrict(self, S: np.ndarray) -> None:
        """Invert the blocks on the rows in the boolean mask ``S`` (identity elsewhere)."""
        keep = self.mask & S[np.maximum(self.index, 0)]
        M = np.where(keep[:, :, None] & keep[:, None, :], self.full, 0.0)
        diag = np.einsum("bii->bi", M)
        ridge = 1e-13 * np.maximum(diag.max(axis=1, initial=0.0), 1e-300)
        M[:, np.arange(M.shape[1]), np.arange(M.shape[1])] = np.where(
            keep, diag + ridge[:, None], 1.0
        )
        # a pseudo-inverse: dependent rows of one query (Gen-SVM's equality row beside the two
        # margin rows it ties) make a block singular, where inv's ridge-sized pivots sent CG off
        self.inverse = np.linalg.pinv(M, rcond=1e-10, hermitian=True)
        self.keep = keep

    def apply(self, r: np.ndarray) -> np.ndarray:
        """:math:`P^{-1} r` for a full-length ``r`` (zero outside the working set)."""
        rb = np.where(self.keep, r[np.maximum(self.index, 0)], 0.0)
        yb = np.einsum("bst,bt->bs", self.inverse, rb)
        out = np.zeros_like(r)
        out[self.index[self.keep]] = yb[self.keep]
        return out


def _pcg(
    op: _Products,
    pre: _BlockJacobi,
    S: np.ndarray,
    b: np.ndarray,
    x: np.ndarray,
    *,
    rtol: float,
    max_iter: int,
) -> tuple[np.ndarray, np.ndarray, int, bool]:
    r"""Preconditioned CG for :math:`G_{SS}x_S = b_S` (vectors full length, zero off S).

    Returns ``(x, Gx, iterations, converged)``; :math:`Gx` is the full product (margins of
    every row), recomputed at the end so that round-off does not accumulate.
    """
    x = np.where(S, x, 0.0)
    bS = np.where(S, b, 0.0)
    Gx = op.matvec(x)
    r = np.where(S, bS - Gx, 0.0)
    target = rtol * max(float(np.linalg.norm(bS)), 1e-300)
    z = pre.apply(r)
    p = z.copy()
    rz = float(r @ z)
    its = 0
    converged = float(np.linalg.norm(r)) <= target
    while not converged and its < max_iter:
        its += 1
        Gp = op.matvec(p)
        Ap = np.where(S, Gp, 0.0)
        pAp = float(p @ Ap)
        if not (np.isfinite(pAp) and pAp > 0.0):
            break  # G_SS singular along p (dependent rows): no progress possible
        alpha = rz / pAp
        x += alpha * p
        r -= alpha * Ap
        norm_r = float(np.linalg.norm(r))
        converged = norm_r <= target
        if not norm_r <= 1e8 * max(float(np.linalg.norm(bS)), 1e-300):
            break  # diverging: G_SS x = c_S is inconsistent
        z = pre.apply(r)
        rz_new = float(r @ z)
        p = z + (rz_new / rz) * p
        rz = rz_new
    Gx = op.matvec(x)
    r = np.where(S, bS - Gx, 0.0)
    return x, Gx, its, float(np.linalg.norm(r)) <= 10.0 * target


def solve_frobenius_matfree(
    cs: ConstraintSet,
    *,
    tol: float = 1e-8,
    max_rounds: int = 30,
    max_cg: int = 2000,
    warm_start: np.ndarray | None = None,
) -> SVMResult:
    r"""Frobenius Att-SVM by the working-set method with block-preconditioned CG (no Gram).

    .. math::

        W^{\mathrm{mm}} = \arg\min_W \|W\|_F \quad\text{s.t.}\quad a_j^\top W b_j \ge c_j\
        (\text{margin}),\quad = c_j\ (\text{equality}),\qquad
        W = \sum_j \lambda_j a_j b_j^\top .

    Parameters
    ----------
    cs : ConstraintSet
        The rows (assumed feasible; otherwise the result is not ``OPTIMAL``, with a message).
    tol : float, default 1e-8
        Certificate tolerance (as :func:`~svmgeo.solvers._frobenius.solve_frobenius`).
    max_rounds : int, default 30
        Working-set rounds.
    max_cg : int, default 2000
        CG iterations per round.
    warm_start : ndarray of shape (N,), optional
        Approximate multipliers; their support (and the equality rows) is the first working
        set instead of "every row".

    Returns
    -------
    SVMResult
        ``solver="svmgeo-matfree"``; ``extras`` holds ``rounds``, ``cg_iterations`` and
        ``products`` (products with G).
    """
    start = time.perf_counter()
    N = cs.N
    margin = cs.kind == MARGIN
    c = np.asarray(cs.rhs, dtype=float)
    op = _Products(cs)
    pre = _BlockJacobi(cs)
    S = np.ones(N, dtype=bool)
    lam = np.zeros(N)
    if warm_start is not None and np.shape(warm_start) == (N,):
        lam = np.asarray(warm_start, dtype=float).copy()
        S = ~margin | (lam > 0)
    cg_total, settled, converged = 0, False, False
    rtol = 1e-6
    band = 1e-9 * np.maximum(1.0, np.abs(c))
    rounds = 0
    while rounds < max_rounds:
        rounds += 1
        pre.restrict(S)
        lam, Gx, its, converged = _pcg(op, pre, S, c, lam, rtol=rtol, max_iter=max_cg)
        cg_total += its
        if not (np.all(np.isfinite(lam)) and np.all(np.isfinite(Gx))):
            break
        # relative to the multipliers' own size (a floor of 1 kept every negative multiplier
        # once all were ~1e-12, i.e. for rows of size ~2^19, and clipping them gave a wrong W)
        lam_scale = float(np.abs(lam).max(initial=0.0))
        neg = S & margin & (lam < -1e-12 * lam_scale)
        viol = ~S & margin & (Gx < c - band)
        if not neg.any() and not viol.any():
            if rtol <= 1e-12 and converged:
                settled = True
                break
            rtol = 1e-12  # the working set is stable: solve it to round-off
            continue
        S = (S & ~neg) | viol
        lam = np.where(S, lam, 0.0)
    extras: dict[str, Any] = {
        "representation": "matrix-free",
        "rounds": rounds,
        "cg_iterations": cg_total,
        "products": op.n_products,
        "dense_bytes": dense_bytes(cs),
    }
    if not np.all(np.isfinite(lam)) or float(np.abs(lam).max(initial=0.0)) > 1e150:
        return no_solution(
            cs,
            Status.NUMERICAL_ERROR,
            "the matrix-free working-set method diverged: the rows are (nearly) dependent "
            "(G_SS singular); use the dense path (solve_frobenius with a RowGeometry) or "
            "check feasibility (check_feasibility)",
            norm="fro",
            solver="svmgeo-matfree",
            n_iter=cg_total,
            solve_time=time.perf_counter() - start,
            extras=extras,
        )
    lam = np.where(margin, np.maximum(lam, 0.0), lam)
    W = cs.adjoint(lam)
    W, lam, margins = lift_kkt_pair(cs, W, lam, tol)
    if settled:
        status, message = (
            Status.OPTIMAL,
            f"solved matrix-free: working set stable after {rounds} rounds",
        )
    else:
        status = Status.MAX_ITER
        message = (
            f"the matrix-free working-set method did not settle in max_rounds={max_rounds} "
            + (
                "rounds; increase max_rounds"
                if converged
                else "rounds, and its last CG solve did not converge: increase max_cg, unless "
                "the working set's rows are dependent (a row and a multiple of it, say: G_SS "
                "singular), where more iterations do not help and the dense path "
                "(solve_frobenius with a RowGeometry) factors the rows"
            )
        )
    return finish(
        cs,
        W,
        lam,
        norm=FRO,
        tol=tol,
        status=status,
        message=message,
        solver="svmgeo-matfree",
        margins=margins,
        n_iter=cg_total,
        solve_time=time.perf_counter() - start,
        extras=extras,
    )
