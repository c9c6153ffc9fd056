# SPDX-License-Identifier: BSD-3-Clause
r"""Batched Frobenius Att-SVM solves and LOT tests for the enumeration (compiled with numba).

Every selection of one dataset has the same number of rows per query, and the rows of query
:math:`u = (i, k)` under :math:`\alpha_u = a` are :math:`a_j = x_{ia} - x_{it}`,
:math:`b_j = z_{ik}` for the other visible tokens :math:`t`. So the row query vectors, hence
:math:`H = BB^\top`, are the same for every selection; only :math:`A` changes, one block of
rows per query. The dual of Att-SVM(α) is

.. math::

    \max_{\lambda \ge 0}\ \mathbf 1^\top\lambda - \tfrac12\lambda^\top G\lambda,\qquad
    G = (AA^\top)\circ H,\qquad W = \textstyle\sum_j \lambda_j a_j b_j^\top,

solved for a whole batch of selections by the primal-dual active-set method of
:func:`svmgeo.solve_svm`'s fast path (make the working set :math:`S` tight with a Cholesky
factor of :math:`G_{SS}`, drop rows with a negative multiplier, add violated rows, with the
same thresholds), in a compiled loop: :func:`svmgeo._active_set.active_set`. Selections come in lexicographic order, so neighbours
differ in the last queries only: each solve starts from the previous selection's final working
set (the last query's rows from the last selection with the same token there) and, when that
does not settle, from "every row tight".

A solve counts only when its answer is *certified* as :func:`~svmgeo.solve_svm` certifies its
own: :math:`W` is formed from :math:`\lambda \ge 0` (so stationarity holds by construction),
its margins :math:`m_j = a_j^\top W b_j` are recomputed from :math:`W` (not from
:math:`G\lambda`) and lifted by :math:`f = \max(1, \max_j 1/m_j)` when
:math:`f \le 1 + \max(10^{-9}, \mathrm{cert\_tol}/8)`; then primal infeasibility
:math:`\max_j (1 - m_j)_+`, complementarity
:math:`\max_j |\lambda_j (m_j - 1)| / \max(1, \max_j\lambda_j)` and the duality gap
:math:`|\tfrac12\|W\|^2 - (\mathbf 1^\top\lambda - \tfrac12\|W\|^2)| / \max(1, \tfrac12\|W\|^2)`
must be at most ``cert_tol``, and no row may have a positive multiplier (above ``dual_tol``
of the largest) without an active margin (:func:`~svmgeo.support_tokens` would flag the solve
as inaccurate). Support rows are :math:`|m_j - 1| \le \mathrm{tol}\max(1, |m_j|)`; the
selection is not a LOT when a support row with a positive multiplier has a competitor scoring
at least as high as the selected token, and a LOT when no support row has one; a selection
whose only such rows have a zero multiplier (weakly active: the verdict is undecided,
:func:`~svmgeo.is_locally_optimal`) is handed back, as is one that does not settle or
certify, to the caller, which solves it with :func:`~svmgeo.solve_svm` as the reference
search does.
"""

from __future__ import annotations

import numpy as np

from .._active_set import active_set, cholesky_solve
from .._jit import njit
from ..selection import at_least

__all__ = ["RowTable", "leaf_batch", "prefix_point"]

_EPS = float(np.finfo(float).eps)

# verdict codes of leaf_batch
UNSETTLED = 0
NOT_LOT = 1
LOT = 2


class RowTable:
    r"""The rows of every (query, selected token), in the arrays the compiled kernels read.

    Parameters
    ----------
    X : ndarray of shape (n, T, d)
    queries : ndarray of shape (n, K, d)
    scores : ndarray of shape (n, K, T)
    cand : list of ndarray of int
        Visible tokens of each query :math:`u = iK + k`.

    Attributes
    ----------
    A : ndarray of shape (n K, T, m, d)
        ``A[u, a, :sizes[u]]``: rows :math:`x_{ia} - x_{it}` for the competitors :math:`t` of
        :math:`a` (zero for an invisible :math:`a`).
    bad : ndarray of bool, shape (n K, T, m)
        The competitor of that row scores at least as high as :math:`a`, ties within
        round-off included (:func:`~svmgeo.selection.at_least` with ``score_size``, the
        scores' sizes; :math:`|\gamma|` when not given): a support token there violates
        local optimality.
    sizes, offsets : ndarray of int
        Rows per query and where each query's rows start.
    Z : ndarray of shape (n K, d)
        The query vector :math:`z_u` of each query, the :math:`b_j` of its rows.
    H : ndarray of shape (N, N)
        :math:`BB^\top` (the same for every selection).
    row_scale : ndarray of shape (n K, T)
        :math:`\max_j \|a_j\|\,\|b_j\|` over the rows of each (query, token).
    """

    def __init__(
        self,
        X: np.ndarray,
        queries: np.ndarray,
        scores: np.ndarray,
        cand: list[np.ndarray],
        score_size: np.ndarray | None = None,
    ) -> None:
        if score_size is None:  # given scores: their own size
            score_size = np.abs(scores)
        _, T, d = X.shape
        K = queries.shape[1]
        U = len(cand)
        self.sizes = np.array([max(c.size - 1, 0) for c in cand], dtype=np.int64)
        self.offsets = np.concatenate([[0], np.cumsum(self.sizes)]).astype(np.int64)
        m = int(self.sizes.max(initial=0))
        self.A = np.zeros((U, T, m, d))
        self.bad = np.zeros((U, T, m), dtype=bool)
        for u, c in enumerate(cand):
            i, k = divmod(u, K)
            for a in c:
                others = c[c != a]
                self.A[u, a, : others.size] = X[i, a] - X[i, others]
                self.bad[u, a, : others.size] = at_least(
                    scores[i, k, others],
                    scores[i, k, a],
                    score_size[i, k, others],
                    score_size[i, k, a],
                )  # ties within round-off count (selection.at_least)
        # a writable copy: one compiled signature whether or not the data arrays are frozen
        self.Z = np.array(queries.reshape(U, d), dtype=float)
        Bq = np.repeat(self.Z, self.sizes, axis=0)
        self.H = Bq @ Bq.T
        self.row_scale = (
            np.linalg.norm(self.A, axis=3).max(axis=2, initial=0.0)
            * (np.linalg.norm(self.Z, axis=1)[:, None])
        )


@njit()
def _assemble(A, sizes, offsets, sel, n_units, rows):  # pragma: no cover - compiled
    """Rows a_j of the first ``n_units`` queries of selection ``sel`` into ``rows``."""
    for u in range(n_units):
        a = sel[u]
        for r in range(sizes[u]):
            rows[offsets[u] + r, :] = A[u, a, r, :]


@njit()
def _gram(rows, H, start, N, G):  # pragma: no cover - compiled
    """G = (A Aᵀ) ∘ H on the first N rows, recomputing only the rows from ``start`` on
    (the others are unchanged since the previous call)."""
    d = rows.shape[1]
    for i in range(start, N):
        for j in range(i + 1):
            s = 0.0
            for p in range(d):
                s += rows[i, p] * rows[j, p]
            G[i, j] = s * H[i, j]
            G[j, i] = G[i, j]


@njit()
def _point(rows, Z, offsets, n_units, lam, W):  # pragma: no cover - compiled
    """W = Σ_j λ_j a_j b_jᵀ = Σ_u (Σ_{j of u} λ_j a_j) z_uᵀ over the first ``n_units`` queries."""
    d = rows.shape[1]
    W[:, :] = 0.0
    c = np.empty(d)
    for u in range(n_units):
        c[:] = 0.0
        for j in range(offsets[u], offsets[u + 1]):
            for p in range(d):
                c[p] += lam[j] * rows[j, p]
        for p in range(d):
            for q in range(d):
                W[p, q] += c[p] * Z[u, q]


@njit()
def _margins(rows, Z, offsets, n_units, W, out):  # pragma: no cover - compiled
    """out_j = a_jᵀ (W z_u) for the rows j of each of the first ``n_units`` queries u."""
    d = rows.shape[1]
    v = np.empty(d)
    for u in range(n_units):
        for p in range(d):
            t = 0.0
            for q in range(d):
                t += W[p, q] * Z[u, q]
            v[p] = t
        for j in range(offsets[u], offsets[u + 1]):
            s = 0.0
            for p in range(d):
                s += rows[j, p] * v[p]
            out[j] = s


@njit()
def prefix_point(A, sizes, offsets, Z, H, sel, row_scale, W):  # pragma: no cover - compiled
    r"""A point proving the rows of the partial selection ``sel`` feasible, or False.

    Solves :math:`G\lambda = \mathbf 1` by Cholesky (every row tight, possible when the rows
    are independent), forms :math:`W = \sum_j \lambda_j a_j b_j^\top` in ``W`` and accepts it
    only when every margin recomputed from :math:`W` is clearly positive (above
    :math:`10^{-9}\|W\|_F` times ``row_scale``); ``W`` is then scaled so that every margin is
    at least 1 (up to rounding; positivity is the proof).
    """
    D = sel.shape[0]
    N = offsets[D]
    d = A.shape[3]
    rows = np.empty((N, d))
    _assemble(A, sizes, offsets, sel, D, rows)
    G = np.empty((N, N))
    _gram(rows, H, 0, N, G)
    lam = np.empty(N)
    if not cholesky_solve(G, np.ones(N), lam):
        return False
    _point(rows, Z, offsets, D, lam, W)
    m = np.empty(N)
    _margins(rows, Z, offsets, D, W, m)
    if N == 0:
        return True
    low = np.inf
    for j in range(N):
        if not np.isfinite(m[j]):
            return False
        low = min(low, m[j])
    if not low > 1e-9 * np.sqrt(np.sum(W * W)) * row_scale:
        return False
    if low < 1.0:
        W *= 1.0 / low
    return True


@njit()
def leaf_batch(
    A, sizes, offsets, Z, H, bad, sel, max_rounds, cert_tol, tol, dual_tol, verdict
):  # pragma: no cover - compiled
    r"""Solve, certify and LOT-test every complete selection of ``sel`` (B, n K).

    ``verdict[b]``: :data:`LOT`, :data:`NOT_LOT`, or :data:`UNSETTLED` when the active set
    did not settle or its answer did not certify (the caller then solves it exactly).
    """
    B, D = sel.shape
    N = offsets[D]
    d = A.shape[3]
    rows = np.empty((N, d))
    flags = np.empty(N, dtype=np.bool_)
    G = np.empty((N, N))
    S = np.ones(N, dtype=np.bool_)
    warm = np.ones(N, dtype=np.bool_)
    memo = np.ones((A.shape[1], N), dtype=np.bool_)
    lam = np.empty(N)
    share = np.empty(N)
    m = np.empty(N)
    W = np.empty((d, d))
    first_last = offsets[D - 1]
    for b in range(B):
        s_b = sel[b]
        _assemble(A, sizes, offsets, s_b, D, rows)
        for u in range(D):
            for r in range(sizes[u]):
                flags[offsets[u] + r] = bad[u, s_b[u], r]
        start = 0  # rows of the queries before the first changed one keep their Gram entries
        if b > 0:
            u = 0
            while u < D and sel[b - 1, u] == s_b[u]:
                u += 1
            start = offsets[u] if u < D else N
        _gram(rows, H, start, N, G)
        last = s_b[D - 1]
        for j in range(N):
            S[j] = warm[j] if j < first_last else memo[last, j]
        ok = active_set(G, S, lam, max_rounds, False) > 0
        if not ok:
            S[:] = True
            ok = active_set(G, S, lam, max_rounds, False) > 0
        verdict[b] = UNSETTLED
        if not ok:
            continue
        warm[:] = S
        memo[last, :] = S
        # certificate, recomputed from W
        _point(rows, Z, offsets, D, lam, W)
        _margins(rows, Z, offsets, D, W, m)
        low = np.inf
        finite = True
        for j in range(N):
            low = min(low, m[j])
            finite = finite and np.isfinite(m[j]) and np.isfinite(lam[j])
        if not finite:
            continue
        g = 1.0
        if low > 0.0 and 1.0 / low > 1.0 and 1.0 / low <= 1.0 + max(1e-9, cert_tol / 8.0):
            g = (1.0 / low) * (1.0 + 4.0 * _EPS)
        half = 0.5 * g * g * np.sum(W * W)
        primal = 0.0
        comp = 0.0
        lam_sum = 0.0
        lam_max = 0.0
        for j in range(N):
            mj = g * m[j]
            lj = g * lam[j]
            m[j] = mj
            lam[j] = lj
            primal = max(primal, 1.0 - mj)
            comp = max(comp, abs(lj * (mj - 1.0)))
            lam_sum += lj
            lam_max = max(lam_max, lj)
        comp /= max(1.0, lam_max)
        gap = abs(half - (lam_sum - half)) / max(1.0, half)
        if not (primal <= cert_tol and comp <= cert_tol and gap <= cert_tol):
            continue
        # a multiplier's weight in W = sum_j lam_j a_j z_u^T: lam_j |a_j| |z_u| (support.py)
        share_max = 0.0
        for u in range(D):
            zn = np.sqrt(np.sum(Z[u] * Z[u]))
            for j in range(offsets[u], offsets[u + 1]):
                share[j] = lam[j] * np.sqrt(np.sum(rows[j] * rows[j])) * zn
                share_max = max(share_max, share[j])
        consistent = True
        violated = False
        weak = False
        for j in range(N):
            active = abs(m[j] - 1.0) <= tol * max(1.0, abs(m[j]))
            positive = share[j] > dual_tol * share_max
            if positive and not active:
                consistent = False
            if active and flags[j]:
                if positive:
                    violated = True
                else:
                    weak = True
        if consistent and (violated or not weak):
            verdict[b] = NOT_LOT if violated else LOT
