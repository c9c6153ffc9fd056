# SPDX-License-Identifier: BSD-3-Clause
r"""The compiled primal-dual active set on the Frobenius Att-SVM's dual (numba).

.. math::

    \max_{\lambda \ge 0}\ \mathbf 1^\top\lambda - \tfrac12\lambda^\top G\lambda,
    \qquad G = (AA^\top)\circ(BB^\top),

for margin rows with :math:`c_j = 1`: each round makes every row of the working set S tight
(:math:`G_{SS}\lambda_S = \mathbf 1` by a Cholesky factor, :math:`\lambda = 0` off S), drops
rows with :math:`\lambda_j < -10^{-12}\max(1, \max_j|\lambda_j|)`, adds rows with
:math:`(G\lambda)_j < 1 - 10^{-10}`, and stops when nothing changes; the rules and thresholds
of :func:`svmgeo.solvers._qp.polish_active_set`. Used by the batched LOT search
(:mod:`svmgeo.analysis._enumerate_fast`); imported only where it runs: ``import svmgeo`` does
not import numba.
"""

from __future__ import annotations

import numpy as np

from ._jit import njit

__all__ = ["active_set", "cholesky_solve", "update_working_set"]

# update_working_set's codes
INCONSISTENT = -1
SETTLED = 0
CHANGED = 1


@njit()
def cholesky_solve(M, r, x):  # pragma: no cover - compiled
    r"""Solve :math:`Mx = r` by Cholesky, :math:`M = LL^\top` overwritten by L (lower
    triangle, the only one read); False when a pivot is not clearly positive (below
    :math:`10^{-12}` of its diagonal entry: singular to working precision).

    Right-looking: column p of L updates the rows below it, so each entry receives
    :math:`-\ell_{ip}\ell_{jp}` for p = 0, 1, ... in turn (the dot-product form's terms in its
    order, the same bits) through an inner loop over contiguous entries.
    """
    k = M.shape[0]
    diag = np.empty(k)
    col = np.empty(k)
    for j in range(k):
        diag[j] = M[j, j]
    for p in range(k):
        s = M[p, p]
        if not s > 1e-12 * diag[p]:
            return False
        piv = np.sqrt(s)
        M[p, p] = piv
        for i in range(p + 1, k):
            v = M[i, p] / piv
            M[i, p] = v
            col[i] = v
        for i in range(p + 1, k):
            li = col[i]
            row = M[i, p + 1 : i + 1]  # views, over which LLVM vectorizes the loop
            lp = col[p + 1 : i + 1]
            for j in range(i - p):
                row[j] -= li * lp[j]
    for i in range(k):  # L y = r
        t = r[i]
        for p in range(i):
            t -= M[i, p] * x[p]
        x[i] = t / M[i, i]
    for i in range(k - 1, -1, -1):  # Lᵀ x = y
        t = x[i]
        for p in range(i + 1, k):
            t -= M[p, i] * x[p]
        x[i] = t / M[i, i]
    return True


@njit()
def update_working_set(S, lam, m):  # pragma: no cover - compiled
    r"""One round's verdict on multipliers ``lam`` (zero off S) with margins ``m`` = :math:`G\lambda`.

    :data:`INCONSISTENT` when some row of S is not tight (:math:`|m_j - 1| > 10^{-10}`: the
    rows of S cannot all be tight); :data:`SETTLED` when no row of S has
    :math:`\lambda_j < -10^{-12}\max(1, \max|\lambda|)` and no row outside S has
    :math:`m_j < 1 - 10^{-10}` (then ``lam`` is clipped at 0); else :data:`CHANGED`, with
    those rows dropped from and added to S.
    """
    N = S.shape[0]
    scale = 1.0
    for j in range(N):
        scale = max(scale, abs(lam[j]))
    changed = False
    for j in range(N):
        if S[j]:
            if abs(m[j] - 1.0) > 1e-10:
                return INCONSISTENT
            if lam[j] < -1e-12 * scale:
                S[j] = False
                changed = True
        elif m[j] < 1.0 - 1e-10:
            S[j] = True
            changed = True
    if changed:
        return CHANGED
    for j in range(N):
        lam[j] = max(lam[j], 0.0)
    return SETTLED


@njit()
def active_set(G, S, lam, max_rounds):  # pragma: no cover - compiled
    r"""The active set from working set S (updated) on the dual with Gram ``G`` (exactly
    symmetric); the rounds it
    took to settle, with the clipped multipliers in ``lam``, or 0 when it did not settle in
    ``max_rounds`` (or a factor failed, or the rows of S cannot all be tight)."""
    N = G.shape[0]
    idx = np.empty(N, dtype=np.int64)
    M = np.empty((N, N))
    ones = np.ones(N)
    x = np.empty(N)
    m = np.empty(N)
    for rounds in range(1, max_rounds + 1):
        k = 0
        for j in range(N):
            if S[j]:
                idx[k] = j
                k += 1
        for a in range(k):  # the lower triangle of G_SS, the one the factor reads
            for b in range(a + 1):
                M[a, b] = G[idx[a], idx[b]]
        if not cholesky_solve(M[:k, :k], ones[:k], x[:k]):
            return 0
        lam[:] = 0.0
        for a in range(k):
            lam[idx[a]] = x[a]
        # m = G λ = Σ_p x_p G[:, idx_p], as rows of the symmetric G (each m_j adds its terms
        # in the order of p, as a dot product would), over contiguous entries
        m[:] = 0.0
        for p in range(k):
            xp = x[p]
            Gp = G[idx[p]]
            for j in range(N):
                m[j] += xp * Gp[j]
        verdict = update_working_set(S, lam, m)
        if verdict == INCONSISTENT:
            return 0
        if verdict == SETTLED:
            return rounds
    return 0
