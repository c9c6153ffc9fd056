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
(:mod:`svmgeo.analysis._enumerate_fast`, with svmgeo's own factor) and by the compiled small
Frobenius solve (:mod:`svmgeo.solvers._frobenius_small`, with LAPACK's, as the Python polish);
imported only where it runs: ``import svmgeo`` does not import numba.
"""

from __future__ import annotations

from typing import Any

import llvmlite.binding
import numpy as np
from numba import types
from numba.extending import get_cython_function_address

from ._jit import njit

__all__ = [
    "accurate",
    "active_set",
    "cholesky_solve",
    "lapack_factor",
    "lapack_solve",
    "scipy_routine",
    "update_working_set",
]


def scipy_routine(library: str, name: str, n_args: int) -> Any:
    """Routine ``name`` of scipy's BLAS or LAPACK (``library``: ``"blas"`` or ``"lapack"``,
    i.e. ``scipy.linalg.cython_blas`` / ``cython_lapack``: the library of ``scipy.linalg``'s
    own calls, so ``dpotrf`` gives the bits of the Python path's ``cho_factor`` on the same
    matrix), as a symbol of its own that kernels call, and cache, by name; every argument a
    pointer (Fortran's calling convention)."""
    symbol = f"svmgeo_{name}"
    llvmlite.binding.add_symbol(
        symbol, get_cython_function_address(f"scipy.linalg.cython_{library}", name)
    )
    return types.ExternalFunction(symbol, types.void(*([types.voidptr] * n_args)))


_DPOTRF = scipy_routine("lapack", "dpotrf", 5)
_DPOTRS = scipy_routine("lapack", "dpotrs", 8)
_UPPER = 85  # "U" of LAPACK's Fortran view: the lower triangle of a C-ordered array


@njit()
def lapack_factor(L, k):  # pragma: no cover - compiled
    r"""LAPACK ``dpotrf`` on the leading k×k block of the C-ordered ``L`` (its lower triangle
    read, as ``scipy.linalg.cho_factor(M, lower=False)`` reads a symmetric M), in place:
    afterwards :math:`M_{kk} = LL^\top` with L the block's lower triangle. False when LAPACK
    meets a pivot that is not positive (``cho_factor``'s ``LinAlgError``)."""
    ints = np.empty(3, dtype=np.int32)
    ints[0] = k
    ints[1] = max(L.strides[0] // 8, 1)  # the leading dimension: L's row stride
    ints[2] = 0
    uplo = np.empty(1, dtype=np.int8)
    uplo[0] = _UPPER
    _DPOTRF(uplo.ctypes, ints[0:].ctypes, L.ctypes, ints[1:].ctypes, ints[2:].ctypes)
    return ints[2] == 0


@njit()
def lapack_solve(L, k, x):  # pragma: no cover - compiled
    r"""``x[:k]`` :math:`\leftarrow (LL^\top)^{-1}` ``x[:k]`` by LAPACK ``dpotrs`` with the
    factor of :func:`lapack_factor` in the leading k×k block of ``L``."""
    ints = np.empty(5, dtype=np.int32)
    ints[0] = k
    ints[1] = 1
    ints[2] = max(L.strides[0] // 8, 1)
    ints[3] = max(k, 1)
    ints[4] = 0
    uplo = np.empty(1, dtype=np.int8)
    uplo[0] = _UPPER
    _DPOTRS(
        uplo.ctypes,
        ints[0:].ctypes,
        ints[1:].ctypes,
        L.ctypes,
        ints[2:].ctypes,
        x.ctypes,
        ints[3:].ctypes,
        ints[4:].ctypes,
    )


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
def active_set(G, S, lam, max_rounds, lapack):  # pragma: no cover - compiled
    r"""The active set from working set S (updated) on the dual with Gram ``G`` (exactly
    symmetric); the rounds it took to settle, with the clipped multipliers in ``lam``, or 0
    when it did not settle in ``max_rounds`` (or a factor failed, or the rows of S cannot all
    be tight).

    ``lapack``: :math:`G_{SS}` factored by LAPACK (:func:`lapack_factor`, the Python polish's
    ``cho_factor``), and a round kept only when its solve is accurate by the Python polish's
    test (:meth:`svmgeo.solvers._geometry.RowGeometry.accurate`): :math:`\max_{j \in S}|m_j -
    1| \le 10^{-11}(g\max(\|\lambda_S\|_\infty, 1) + 1)`, :math:`g = \max_{j \in S}
    G_{jj}` (else 0: the caller falls back to the Python path). Otherwise svmgeo's own factor
    (:func:`cholesky_solve`, the LOT search's).
    """
    N = G.shape[0]
    idx = np.empty(N, dtype=np.int64)
    M = np.empty((N, N))
    ones = np.ones(N)
    x = np.empty(N)
    m = np.empty(N)
    for rounds in range(1, max_rounds + 1):
        k = np.int64(0)  # not a literal: one compiled signature of the callees
        for j in range(N):
            if S[j]:
                idx[k] = j
                k += 1
        for a in range(k):  # the lower triangle of G_SS, the one the factor reads
            for b in range(a + 1):
                M[a, b] = G[idx[a], idx[b]]
        if lapack:
            if not lapack_factor(M, k):
                return 0
            x[:k] = 1.0
            lapack_solve(M, k, x)
        elif not cholesky_solve(M[:k, :k], ones[:k], x[:k]):
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
        if lapack and not accurate(G, idx, k, x, m):
            return 0
        verdict = update_working_set(S, lam, m)
        if verdict == INCONSISTENT:
            return 0
        if verdict == SETTLED:
            return rounds
    return 0


@njit()
def accurate(G, idx, k, x, m):  # pragma: no cover - compiled
    r"""Whether :math:`x` solves :math:`G_{SS}x = \mathbf 1` (S = ``idx[:k]``, ``m`` =
    :math:`G\lambda`) to the Python polish's accuracy (see :func:`active_set`); NaN and
    infinite entries fail."""
    gmax = 0.0
    xmax = 0.0
    err = 0.0
    for a in range(k):
        if not (abs(x[a]) < np.inf and abs(m[idx[a]]) < np.inf):
            return False
        gmax = max(gmax, G[idx[a], idx[a]])
        xmax = max(xmax, abs(x[a]))
        err = max(err, abs(m[idx[a]] - 1.0))
    return err <= 1e-11 * (gmax * max(xmax, 1.0) + 1.0)
