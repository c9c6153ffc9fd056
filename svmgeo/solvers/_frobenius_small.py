# SPDX-License-Identifier: BSD-3-Clause
r"""The small dense Frobenius Att-SVM, compiled: the feasibility check's route of every row
tight with its exact proof, and the active-set polish with its certificate, in numba kernels.

.. math::

    \min_W \tfrac12\|W\|_F^2 \quad\text{s.t.}\quad a_j^\top W b_j \ge 1\ (j = 1..N),
    \qquad
    \max_{\lambda \ge 0}\ \mathbf 1^\top\lambda - \tfrac12\lambda^\top G\lambda,\quad
    G = (AA^\top)\circ(BB^\top),\quad W = \textstyle\sum_j \lambda_j a_j b_j^\top .

For N of a few hundred rows, most of the Python path's time is per-call overhead (about a
thousand Python calls and sixty numpy reductions per solve at N = 108), not arithmetic. Here
the steps of its common case run compiled, each a transcription of the Python step named
beside it, with the same decisions and thresholds, called from inside the Python functions
(:attr:`~._geometry.RowGeometry.compiled`: a Gram representation of at most
:data:`~._geometry.COMPILED_UP_TO` rows):

* :func:`tight_verdict`, the first route of :func:`~._feasibility.check_feasibility`:
  :func:`feasible_point` forms G (the BLAS call of numpy's ``A @ A.T``), its Cholesky factor
  (LAPACK ``dpotrf``, as :meth:`~._geometry.RowGeometry.full_factor`), every row tight
  (:math:`\lambda_0 = G^{-1}\mathbf 1`, :meth:`~._geometry.RowGeometry.tight`) and the point
  :math:`W_0 = \sum_j \lambda_{0j} a_j b_j^\top` lifted onto the rows and verified
  (:func:`~._feasibility._rescale_point`); :func:`margins_beyond_rounding` is the exact proof's
  float screen (:func:`~._exact._margins_beyond_rounding`);
* :func:`polished`, the fast path of :func:`~._frobenius.solve_frobenius`:
  :func:`polish_and_certify` runs the active set from every row tight
  (:func:`~._qp.polish_active_set`: its first round is :math:`\lambda_0`, the later ones
  :func:`svmgeo._active_set.active_set` with LAPACK's factor and the polish's accuracy test),
  the lifted KKT pair (:func:`~._certificates.lift_kkt_pair`) and the residuals of
  :func:`~._certificates.frobenius_certificate`.

The steps run in one compiled call, :func:`tight_route` (each call from Python pays numba's
dispatch and the boxing of its results, several times over when the caches are cold, as
between other work): the check's point,
its screen, and, when :func:`~svmgeo.solve_svm` will solve on the same rows next
(:attr:`~._geometry.RowGeometry.polish_tol`), the polish, which :func:`polished` then takes
from the geometry. The call times its steps with a compiled clock (:func:`svmgeo._jit.seconds`),
so the check's ``solve_time`` and ``extras["exact_seconds"]`` keep their meaning.

Whenever a step would leave the Python path's common case — rows that are not all float64
margin rows with :math:`c_j = 1`, a zero or round-off row, G not positive definite, a point
that does not verify, a margin the screen cannot decide, a round that is inconsistent,
inaccurate or does not settle in 8, a certificate that fails — the route returns None and the
Python code after it decides, on the G, factor and :math:`\lambda_0` the route handed to the
geometry (the same bits: the same BLAS and LAPACK calls). Where a route answers, every status,
message, proof, solver, round count and certificate verdict is the Python path's, and W, λ, the
margins and the residuals agree to round-off (some sums are taken in another order).
"""

from __future__ import annotations

import math
import time
from typing import Any

import numpy as np

from .._active_set import (
    INCONSISTENT,
    SETTLED,
    accurate,
    active_set,
    lapack_factor,
    lapack_solve,
    scipy_routine,
    update_working_set,
)
from .._jit import njit, seconds
from .._validation import read_only_view
from ..constraints import ConstraintSet
from ._certificates import DECADES, FRO, SMALLEST_SUBNORMAL, ULPS, UNIT_ROUNDOFF, judge
from ._exact import SCREEN_PROOF, ExactRows
from ._geometry import RowGeometry
from ._result import EVERY_ROW_TIGHT, POLISHED, FeasibilityResult, SVMResult, finish
from ._status import Status

__all__ = [
    "feasible_point",
    "margins_beyond_rounding",
    "polish_and_certify",
    "polished",
    "route_arguments",
    "tight_route",
    "tight_verdict",
]

_ULPS = np.array(ULPS)
_DECADES = np.array(DECADES)
_MAX_ROUNDS = 8
"""Active-set rounds of the Python path's fast path (``polish_active_set(..., max_rounds=8)``)."""

# feasible_point's verdicts (OK: a verified point; else the Python path decides)
OK = 0
NOT_ATT_SVM = 1  # a row that is not a margin row with c_j = 1
ROUNDOFF_ROW = 2  # a zero row, or one at the round-off level of the others
NOT_DEFINITE = 3  # G is not numerically positive definite (no Cholesky factor)
NO_POINT = 4  # the point of every row tight does not verify


_DSYRK = scipy_routine("blas", "dsyrk", 10)
_DGEMM = scipy_routine("blas", "dgemm", 13)


@njit()
def _syrk(X):  # pragma: no cover - compiled
    r""":math:`XX^\top` by BLAS ``dsyrk``, its upper triangle only (C order; the lower one is
    left unset): the call numpy's ``X @ X.T`` makes (row-major, upper), so the same bits."""
    n, d = X.shape
    out = np.empty((n, n))  # beta = 0: dsyrk sets the triangle it writes
    ints = np.empty(3, dtype=np.int32)
    ints[0] = n
    ints[1] = d
    ints[2] = max(d, 1)
    chars = np.empty(2, dtype=np.int8)
    chars[0] = 76  # "L" of the Fortran view: the upper triangle of the C array
    chars[1] = 84  # "T": the Fortran view of X is X^T (d x n), and X X^T = (X^T)^T X^T
    scalars = np.empty(2)
    scalars[0] = 1.0
    scalars[1] = 0.0
    _DSYRK(
        chars[0:].ctypes,
        chars[1:].ctypes,
        ints[0:].ctypes,
        ints[1:].ctypes,
        scalars[0:].ctypes,
        X.ctypes,
        ints[2:].ctypes,
        scalars[1:].ctypes,
        out.ctypes,
        ints[0:].ctypes,
    )
    return out


@njit()
def _gram(A, Q, inv):  # pragma: no cover - compiled
    r""":math:`G = (AA^\top)\circ(BB^\top)` with :math:`b_j = Q_{\mathrm{inv}_j}`: both Gram
    matrices by :func:`_syrk`, multiplied entry by entry and mirrored, i.e. the products of
    :func:`~._geometry._gram` on the same bits (exactly symmetric)."""
    N = A.shape[0]
    G = _syrk(A)
    QQ = _syrk(Q)
    for j in range(N):
        s = inv[j]
        for k in range(j, N):
            r = inv[k]
            v = G[j, k] * (QQ[s, r] if s <= r else QQ[r, s])
            G[j, k] = v
            G[k, j] = v
    return G


@njit()
def _frobenius_distance(W, V, scale):  # pragma: no cover - compiled
    r""":math:`\|W - \mathrm{scale}\,V\|_F` (the norm of W itself with scale 0)."""
    total = 0.0
    for a in range(W.shape[0]):
        for b in range(W.shape[1]):
            e = W[a, b] - scale * V[a, b]
            total += e * e
    return np.sqrt(total)


@njit()
def _matvec(G, x, out):  # pragma: no cover - compiled
    r"""``out`` :math:`\leftarrow Gx = \sum_k x_k G_{:,k}` for a symmetric G (rows of G as its
    columns: contiguous, vectorized)."""
    out[:] = 0.0
    for k in range(G.shape[0]):
        xk = x[k]
        Gk = G[k]
        for j in range(G.shape[0]):
            out[j] += xk * Gk[j]


@njit()
def _gemm_tn(L, R):  # pragma: no cover - compiled
    r""":math:`L^\top R` (L, R of shape (n, d)) by BLAS ``dgemm``: the call numpy's ``L.T @ R``
    makes (so the same bits)."""
    n, d = L.shape
    out = np.zeros((d, d))
    ints = np.empty(3, dtype=np.int32)
    ints[0] = d
    ints[1] = n
    ints[2] = max(d, 1)
    chars = np.empty(2, dtype=np.int8)
    chars[0] = 78  # "N"
    chars[1] = 84  # "T"
    scalars = np.empty(2)
    scalars[0] = 1.0
    scalars[1] = 0.0
    # Fortran: out^T = R^T (L^T)^T, with the C arrays R, L read as R^T, L^T (d x n)
    _DGEMM(
        chars[0:].ctypes,
        chars[1:].ctypes,
        ints[0:].ctypes,
        ints[0:].ctypes,
        ints[1:].ctypes,
        scalars[0:].ctypes,
        R.ctypes,
        ints[2:].ctypes,
        L.ctypes,
        ints[2:].ctypes,
        scalars[1:].ctypes,
        out.ctypes,
        ints[2:].ctypes,
    )
    return out


@njit()
def _adjoint(A, Q, inv, lam, grouped):  # pragma: no cover - compiled
    r""":math:`\sum_j \lambda_j a_j b_j^\top` as ``ConstraintSet.adjoint`` forms it: with shared
    queries (``grouped``) :math:`C^\top Q`, :math:`C_s = \sum_{j:\,\mathrm{inv}_j = s}
    \lambda_j a_j` summed in the order of j; else :math:`A^\top(\lambda \circ B)` (Q = B)."""
    N, d = A.shape
    if not grouped:
        X = np.empty((N, d))
        for j in range(N):
            for t in range(d):
                X[j, t] = lam[j] * Q[j, t]
        return _gemm_tn(A.copy(), X)  # writable operands, as below: one compiled signature
    C = np.zeros((Q.shape[0], d))
    for j in range(N):
        row = C[inv[j]]
        lj = lam[j]
        for t in range(d):
            row[t] += lj * A[j, t]
    return _gemm_tn(C, Q.copy())


@njit()
def _apply(A, Q, inv, W, m):  # pragma: no cover - compiled
    r"""``m`` :math:`\leftarrow a_j^\top W b_j` (``ConstraintSet.apply``: :math:`a_j \cdot (Wq_s)`).

    Every sum is taken in the order of its index (b, then t), as a dot product would; the loops
    only run several sums at once: all entries of :math:`Wq_s` (over the columns of W), and
    four rows' dot products."""
    N, d = A.shape
    WQ = _times_queries(W, Q)
    j = 0
    while j + 4 <= N:  # four independent sums at a time, each in the order of t
        a0, a1, a2, a3 = A[j], A[j + 1], A[j + 2], A[j + 3]
        u0, u1, u2, u3 = WQ[inv[j]], WQ[inv[j + 1]], WQ[inv[j + 2]], WQ[inv[j + 3]]
        s0 = s1 = s2 = s3 = 0.0
        for t in range(d):
            s0 += a0[t] * u0[t]
            s1 += a1[t] * u1[t]
            s2 += a2[t] * u2[t]
            s3 += a3[t] * u3[t]
        m[j], m[j + 1], m[j + 2], m[j + 3] = s0, s1, s2, s3
        j += 4
    for i in range(j, N):
        u = WQ[inv[i]]
        acc = 0.0
        for t in range(d):
            acc += A[i, t] * u[t]
        m[i] = acc


@njit()
def _times_queries(W, Q):  # pragma: no cover - compiled
    r"""Row s: :math:`(Wq_s)^\top`, each entry :math:`\sum_b W_{ab}Q_{sb}` summed in the order
    of b, all entries of a row at once (over the contiguous rows of :math:`W^\top`)."""
    d = W.shape[0]
    WT = np.ascontiguousarray(W.T)
    out = np.zeros((Q.shape[0], d))
    for s in range(Q.shape[0]):
        row = out[s]
        for b in range(d):
            q = Q[s, b]
            col = WT[b]
            for a in range(d):
                row[a] += col[a] * q
    return out


@njit()
def _all_met(m):  # pragma: no cover - compiled
    for j in range(m.shape[0]):
        if not m[j] >= 1.0:
            return False
    return True


@njit()
def _lift(A, Q, inv, W, m, increments, max_factor, out_W, out_m):  # pragma: no cover - compiled
    r"""``lift_factor`` for rows with :math:`c_j = 1`: the least tried :math:`g = f(1 + \delta)`,
    :math:`f = \max(1, \max_j 1/m_j)`, :math:`\delta \in` ``increments``, :math:`g \le`
    ``max_factor``, with every margin of :math:`gW` (recomputed) at least 1: returns g with
    ``out_W`` = gW and ``out_m`` its margins (g = 1: W already meets the rows), or 0.0 when
    none does (or a margin is not positive)."""
    if _all_met(m):
        for a in range(W.shape[0]):
            for b in range(W.shape[1]):
                out_W[a, b] = W[a, b]
        for j in range(m.shape[0]):
            out_m[j] = m[j]
        return 1.0
    f = 1.0
    for j in range(m.shape[0]):
        if not m[j] > 0.0:
            return 0.0
        f = max(f, 1.0 / m[j])
    for delta in increments:
        g = f * (1.0 + delta)
        if g > max_factor:
            break
        for a in range(W.shape[0]):
            for b in range(W.shape[1]):
                out_W[a, b] = W[a, b] * g
        _apply(A, Q, inv, out_W, out_m)
        if _all_met(out_m):
            return g
    return 0.0


@njit()
def feasible_point(
    A, Q, inv, grouped, margin, rhs, na, nb, ulps, decades
):  # pragma: no cover - compiled
    r"""The feasibility check's fast path: (verdict, G, its Cholesky factor, :math:`\lambda_0`,
    the point, its residual).

    .. math::

        \lambda_0 = G^{-1}\mathbf 1,\qquad W_0 = \sum_j \lambda_{0j} a_j b_j^\top,\qquad
        W = gW_0 \ \text{with every}\ a_j^\top W b_j \ge 1 ,

    as :func:`~._feasibility.check_feasibility` decides it: the rows must all be margin rows
    with :math:`c_j = 1` and none at the round-off level (:math:`\|a_j\| \le
    10^{-13}\max_k\|a_k\|`, the same for b; zero rows included: those the Python path decides,
    :func:`~._feasibility.with_roundoff_note`); G must have a Cholesky factor;
    every margin of :math:`W_0` must be positive, the lift is :func:`_lift` with
    :data:`~._certificates.ULPS` and then :data:`~._certificates.DECADES`, and every row must
    hold up to :math:`10^{-9}\|a_j\|\|W\|_F\|b_j\|` (``_rescale_point``). The verdict is
    :data:`OK` or the first step that fails.
    """
    N, d = A.shape
    empty = np.zeros((0, 0))
    for j in range(N):
        if not (margin[j] and rhs[j] == 1.0):
            return NOT_ATT_SVM, empty, empty, np.zeros(0), empty, 0.0
    top_a = 0.0
    top_b = 0.0
    for j in range(N):
        top_a = max(top_a, na[j])
        top_b = max(top_b, nb[j])
    for j in range(N):
        if na[j] <= 1e-13 * top_a or nb[j] <= 1e-13 * top_b:
            return ROUNDOFF_ROW, empty, empty, np.zeros(0), empty, 0.0
    G = _gram(A, Q, inv)
    F = G.copy()
    if not lapack_factor(F, N):
        return NOT_DEFINITE, G, F, np.zeros(0), empty, 0.0
    lam0 = np.ones(N)
    lapack_solve(F, N, lam0)
    for j in range(N):
        if not abs(lam0[j]) < np.inf:
            return NO_POINT, G, F, lam0, empty, 0.0
    W0 = _adjoint(A, Q, inv, lam0, grouped)
    for a in range(d):
        for b in range(d):
            if not abs(W0[a, b]) < np.inf:
                return NO_POINT, G, F, lam0, empty, 0.0
    m0 = np.empty(N)
    _apply(A, Q, inv, W0, m0)
    for j in range(N):
        if not m0[j] > 0.0:
            return NO_POINT, G, F, lam0, empty, 0.0
    W = np.empty((d, d))
    m = np.empty(N)
    if _lift(A, Q, inv, W0, m0, ulps, np.inf, W, m) == 0.0:
        if _lift(A, Q, inv, W0, m0, decades, np.inf, W, m) == 0.0:
            W, m = W0, m0
    size = max(_frobenius_distance(W, W, 0.0), 1e-300)
    residual = 0.0
    for j in range(N):
        viol = max(1.0 - m[j], 0.0)
        if viol > 1e-9 * (na[j] * nb[j]) * size:
            return NO_POINT, G, F, lam0, empty, 0.0
        residual = max(residual, viol)
    return OK, G, F, lam0, W, residual


@njit()
def margins_beyond_rounding(W, P, Q, pref, comp, query):  # pragma: no cover - compiled
    r"""True when every float margin :math:`\hat m_j = \mathrm{fl}(P_{p_j}^\top v_s) -
    \mathrm{fl}(P_{q_j}^\top v_s)`, :math:`v_s = \mathrm{fl}(WQ_s)`, exceeds the rigorous bound
    :math:`8(d + 2)(u\,\hat b_j + \eta\,(1 + \|P_{p_j}\|_1 + \|P_{q_j}\|_1))`,
    :math:`\hat b_j = |P_{p_j}|^\top r_s + |P_{q_j}|^\top r_s`, :math:`r_s = |W||Q_s|`: the float
    screen of the exact proof, :func:`~._exact._margins_beyond_rounding` (its bound holds for
    any summation order, so these sums prove what its own do), on the exact rows of
    :class:`~._exact.ExactRows` (tokens P, queries Q, row j = (``pref``, ``comp``,
    ``query``))."""
    d = W.shape[0]
    V = _times_queries(W, Q)  # row s: W q_s and |W| |q_s|
    R = _times_queries(np.abs(W), np.abs(Q))
    for j in range(pref.shape[0]):
        Pp = P[pref[j]]
        Pq = P[comp[j]]
        v = V[query[j]]
        r = R[query[j]]
        sp = sq = bp = bq = 0.0
        size = 1.0
        for t in range(d):  # one pass: the five sums at once
            sp += Pp[t] * v[t]
            sq += Pq[t] * v[t]
            ap = abs(Pp[t])
            aq = abs(Pq[t])
            bp += ap * r[t]
            bq += aq * r[t]
            size += ap + aq
        m = sp - sq
        bound = 8.0 * (d + 2) * (UNIT_ROUNDOFF * (bp + bq) + SMALLEST_SUBNORMAL * size)
        if not (abs(m) < np.inf and abs(bound) < np.inf and m > bound):
            return False
    return True


@njit()
def _unsettled():  # pragma: no cover - compiled
    """:func:`polish_and_certify`'s answer when it does not settle here (rounds 0)."""
    return 0, np.zeros((0, 0)), np.zeros(0), np.zeros(0), np.zeros(6)


@njit()
def polish_and_certify(
    A, Q, inv, grouped, margin, rhs, G, lam0, tol, ulps
):  # pragma: no cover - compiled
    r"""The active set from every row tight, its KKT pair and certificate residuals.

    Returns (rounds, W, λ, margins, residuals): ``rounds`` is 0 when the rows are not all
    margin rows with :math:`c_j = 1`, or the Python path would not settle here (the first
    round inaccurate or inconsistent, or no settled set in 8 rounds);
    residuals = (primal infeasibility, dual infeasibility, stationarity, complementarity,
    duality gap, :math:`\|W\|_F`) of :func:`~._certificates.frobenius_certificate`.

    Round 1 is :math:`\lambda_0` (``_tight_round``: kept when :math:`\max_j|(G\lambda_0)_j - 1|
    \le 10^{-11}(g\max(\|\lambda_0\|_\infty, 1) + 1)`, :math:`g = \max_j G_{jj}`), judged by
    :func:`svmgeo._active_set.update_working_set`; the later rounds are
    :func:`svmgeo._active_set.active_set` with LAPACK's factor and the polish's accuracy test.
    W is lifted by
    :func:`_lift` with :data:`~._certificates.ULPS` up to :math:`1 + \max(10^{-9},
    \mathrm{tol}/8)` (``lift_kkt_pair``), λ with it.
    """
    N = G.shape[0]
    d = A.shape[1]
    none = _unsettled()
    for j in range(N):
        if not (margin[j] and rhs[j] == 1.0):
            return none
    lam = lam0.copy()
    m = np.empty(N)
    _matvec(G, lam, m)
    if not accurate(G, np.arange(N), N, lam, m):
        return none
    S = np.ones(N, dtype=np.bool_)
    verdict = update_working_set(S, lam, m)
    if verdict == INCONSISTENT:
        return none
    rounds = 1
    if verdict != SETTLED:
        later = active_set(G, S, lam, _MAX_ROUNDS - 1, True)
        if later == 0:
            return none
        rounds += later
    W0 = _adjoint(A, Q, inv, lam, grouped)
    m0 = np.empty(N)
    _apply(A, Q, inv, W0, m0)
    W = np.empty((d, d))
    margins = np.empty(N)
    f = _lift(A, Q, inv, W0, m0, ulps, 1.0 + max(1e-9, tol / 8), W, margins)
    if f == 0.0:
        W, margins = W0, m0
    elif f != 1.0:
        for j in range(N):
            lam[j] *= f
    return rounds, W, lam, margins, _residuals(A, Q, inv, grouped, W, lam, margins)


@njit()
def _relative(residual, scale):  # pragma: no cover - compiled
    """``_certificates.relative``: 0 for no residual, else residual / scale (inf when scale = 0)."""
    if residual == 0.0:
        return 0.0
    if scale > 0.0:
        return residual / scale
    return residual if math.isnan(residual) else np.inf


@njit()
def _residuals(A, Q, inv, grouped, W, lam, m):  # pragma: no cover - compiled
    r"""The residuals of :func:`~._certificates.frobenius_certificate` for margin rows with
    :math:`c_j = 1`, and :math:`\|W\|_F`: (primal, dual, stationarity, complementarity, gap,
    norm)."""
    norm_w = _frobenius_distance(W, W, 0.0)
    Lam = _adjoint(A, Q, inv, lam, grouped)
    norm_lam = _frobenius_distance(Lam, Lam, 0.0)
    stat = _relative(_frobenius_distance(W, Lam, 1.0), max(norm_w, norm_lam))
    lam_max = 0.0
    neg = 0.0
    comp = 0.0
    primal = 0.0
    total = 0.0
    for j in range(lam.shape[0]):
        lam_max = max(lam_max, abs(lam[j]))
        neg = max(neg, -lam[j])
        comp = max(comp, abs(lam[j] * (m[j] - 1.0)))
        primal = max(primal, 1.0 - m[j])
        total += lam[j]
    half = 0.5 * norm_w**2
    out = np.empty(6)
    out[0] = primal
    out[1] = _relative(neg, lam_max)
    out[2] = stat
    out[3] = _relative(comp, lam_max)
    out[4] = _relative(abs(half - (total - half)), half)
    out[5] = norm_w
    return out


def _rows(cs: ConstraintSet) -> tuple[np.ndarray, np.ndarray, np.ndarray, bool] | None:
    """(A, Q, each row's index into Q, whether rows share queries) of ``cs``, C-ordered
    float64 (the BLAS calls read them so): ``cs.query_groups``, or every row its own query
    (Q = B); None for rows of another dtype, which the Python path computes in their own
    precision. Formed once per set (the rows are immutable): the feasibility route, the
    polish and every later solve of the set share them."""
    if _ROWS_KEY in cs.__dict__:
        return cs.__dict__[_ROWS_KEY]
    rows = None
    if cs.A.dtype == np.float64 and cs.B.dtype == np.float64:
        groups = cs.query_groups
        Q, inv = (cs.B, np.arange(cs.N)) if groups is None else groups
        # read-only views, as A is: one compiled signature for every set, an unpickled one
        # (whose cached arrays come back read-only) included
        A, Q, inv = (read_only_view(np.ascontiguousarray(x)) for x in (cs.A, Q, inv))
        rows = (A, Q, inv, groups is not None)
    cs.__dict__[_ROWS_KEY] = rows
    return rows


_ROWS_KEY = "_svmgeo_compiled_rows"
"""Where :func:`_rows` keeps the rows on a :class:`~svmgeo.ConstraintSet`."""


@njit()
def tight_route(
    A, Q, inv, grouped, margin, rhs, na, nb, ulps, decades, P, Qx, pref, comp, query, screen, tol
):  # pragma: no cover - compiled
    r"""The compiled route of every row tight in one call: :func:`feasible_point`; with
    ``screen``, :func:`margins_beyond_rounding` of its point on the exact rows (P, Qx, ``pref``,
    ``comp``, ``query``) when the verdict is :data:`OK` with no residual; with ``tol`` > 0, the
    polish of the solve that follows, :func:`polish_and_certify` at ``tol`` on the same G and
    :math:`\lambda_0` (when the verdict is :data:`OK`).

    Returns (verdict, G, F, :math:`\lambda_0`, point, residual, screened, (decision seconds,
    screen seconds), (rounds, W, λ, margins, residuals)); ``rounds`` is 0 when the polish did
    not run or would not settle. One call instead of three (see the module docstring)."""
    start = seconds()
    verdict, G, F, lam0, point, residual = feasible_point(
        A, Q, inv, grouped, margin, rhs, na, nb, ulps, decades
    )
    decided = seconds()
    screened = False
    if screen and verdict == OK and residual == 0.0:
        screened = margins_beyond_rounding(point, P, Qx, pref, comp, query)
    times = (decided - start, seconds() - decided)
    if tol > 0.0 and verdict == OK:
        polish = polish_and_certify(A, Q, inv, grouped, margin, rhs, G, lam0, tol, ulps)
    else:
        polish = _unsettled()
    return verdict, G, F, lam0, point, residual, screened, times, polish


_NO_EXACT_ROWS = (
    read_only_view(np.zeros((0, 0))),
    read_only_view(np.zeros(0, dtype=np.int64)),
)
"""Placeholders for :func:`tight_route`'s exact rows when no proof is asked for (tokens and
indices, read-only as :class:`~._exact.ExactRows` holds them: the signature of the proof's)."""
_POLISH_KEY = "_svmgeo_compiled_polish"
"""Where :func:`tight_verdict` keeps the polish of the solve that follows (tol, answer) on a
:class:`~._geometry.RowGeometry` for :func:`polished`."""


def route_arguments(
    cs: ConstraintSet,
    arrays: tuple[np.ndarray, np.ndarray, np.ndarray, bool],
    rows: ExactRows | None,
    tol: float | None,
) -> tuple[Any, ...]:
    """:func:`tight_route`'s arguments for ``cs``: its compiled rows (:func:`_rows`), the
    exact rows of the proof's screen (None: no proof) and the tolerance of the polish (None: no
    polish)."""
    A, Q, inv, grouped = arrays
    na, nb = cs._row_norms
    P, Qx, pref, comp, query = (
        (rows.P, rows.Q, rows.pref, rows.comp, rows.query)
        if rows is not None
        else (_NO_EXACT_ROWS[0], _NO_EXACT_ROWS[0], *(_NO_EXACT_ROWS[1],) * 3)
    )
    screen = rows is not None
    polish_tol = 0.0 if tol is None else tol
    return (
        A,
        Q,
        inv,
        grouped,
        cs._margin_rows,
        cs.rhs,
        na,
        nb,
        _ULPS,
        _DECADES,
        P,
        Qx,
        pref,
        comp,
        query,
        screen,
        polish_tol,
    )


def tight_verdict(geo: RowGeometry, exact: bool, start: float) -> FeasibilityResult | None:
    r""":func:`~._feasibility.check_feasibility`'s verdict "feasible: every row tight" through
    :func:`tight_route` (with ``exact``, its proof through the screen): the same
    :class:`~svmgeo.FeasibilityResult`, or None when the Python path decides otherwise or by
    other means (it then runs as before, on the G, factor and :math:`\lambda_0` adopted by
    ``geo``: the same bits). When ``geo.polish_tol`` is set (:func:`~svmgeo.solve_svm`, whose
    Frobenius solve follows on these rows), the same call polishes, and :func:`polished` takes
    the answer from ``geo``. ``start`` is the check's ``perf_counter`` start."""
    cs = geo.cs
    arrays = _rows(geo.cs)
    if arrays is None:
        return None
    built = time.perf_counter()
    rows = ExactRows.build(cs) if exact else None
    build_seconds = time.perf_counter() - built
    tol = geo.polish_tol
    verdict, G, F, lam0, point, residual, screened, times, polish = tight_route(
        *route_arguments(cs, arrays, rows, tol)
    )
    if verdict == NOT_DEFINITE:
        geo.adopt(G)
    elif G.size:
        geo.adopt(G, (F.T, False), lam0)  # F.T: cho_factor's Fortran-ordered upper factor
    if tol is not None and verdict == OK:
        geo.__dict__[_POLISH_KEY] = (tol, polish)
    if verdict != OK:
        return None
    elapsed = built - start + times[0]  # the decision: Python before the call, and the kernel
    if rows is None:
        return FeasibilityResult(
            feasible=True,
            status=Status.OPTIMAL,
            message=EVERY_ROW_TIGHT,
            constraints=cs,
            point=point,
            residual=residual,
            solver="svmgeo-cholesky",
            solve_time=elapsed,
            proof="float",
        )
    # a residual: the point's margins fall short, and meet_margins' power of two is the
    # Python path's business
    if not screened:
        return None
    return FeasibilityResult(
        feasible=True,
        status=Status.OPTIMAL,
        message=f"{EVERY_ROW_TIGHT}; proved: {SCREEN_PROOF}",
        constraints=cs,
        point=point,
        residual=residual,
        solver="svmgeo-cholesky",
        solve_time=elapsed,
        extras={"exact_seconds": build_seconds + times[1], "exact_rows": rows.source},
        proof="exact",
    )


def polished(
    geo: RowGeometry, tol: float, start: float, extras: dict[str, Any]
) -> SVMResult | None:
    r""":func:`~._frobenius.solve_frobenius`'s answer from every row tight through
    :func:`polish_and_certify`: the same :class:`~svmgeo.SVMResult` (``extras`` completed
    with the rounds), or None when the Python polish would not settle or certify here (it then
    runs as before). The answer :func:`tight_verdict` computed at ``tol`` on ``geo`` is taken
    (once); otherwise :func:`polish_and_certify` runs here. ``start`` is the solve's
    ``perf_counter`` start."""
    cs = geo.cs
    kept = geo.__dict__.pop(_POLISH_KEY, None)
    if kept is not None and kept[0] == tol:
        rounds, W, lam, margins, res = kept[1]
    else:
        lam0 = geo.tight()
        arrays = _rows(geo.cs)
        if lam0 is None or arrays is None:
            return None
        A, Q, inv, grouped = arrays
        rounds, W, lam, margins, res = polish_and_certify(
            A, Q, inv, grouped, cs._margin_rows, cs.rhs, geo.G, lam0, tol, _ULPS
        )
    if rounds == 0:
        return None
    certificate = judge(
        tol=tol,
        primal_infeasibility=res[0],
        dual_infeasibility=res[1],
        stationarity=res[2],
        complementarity=res[3],
        duality_gap=res[4],
    )
    if not certificate.passed:
        return None  # the Python path's feature-space rescue
    extras["active_set_rounds"] = rounds
    extras["polished"] = True
    return finish(
        cs,
        W,
        lam,
        norm=FRO,
        tol=tol,
        status=Status.OPTIMAL,
        message=POLISHED,
        solver="svmgeo-active-set",
        margins=margins,
        objective=float(res[5]),
        certificate=certificate,
        n_iter=rounds,
        solve_time=time.perf_counter() - start,
        extras=extras,
    )
