# SPDX-License-Identifier: BSD-3-Clause
"""Small linear-algebra helpers shared across svmgeo."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ._errors import ProblemError
from ._validation import check_array

__all__ = [
    "balanced_factors",
    "correlation",
    "entrywise_norm",
    "frobenius_norm",
    "numerical_rank",
    "orthonormal_basis",
    "query_projector",
    "row_norms",
    "singular_value_rank",
]


def logistic(u: Any) -> Any:
    r""":math:`\sigma(u) = 1/(1 + e^{-u}) = e^{-\log(1 + e^{-u})}`, to a few ulps relative for
    every u (the form :math:`\tfrac12(1 + \tanh(u/2))` is exactly 0 from :math:`u \approx
    -38.1` on, where :math:`\sigma(u) \approx e^{u}`; write :math:`\sigma'(u) =
    \sigma(u)\sigma(-u)`, not :math:`\sigma(1 - \sigma)`, for the same accuracy)."""
    return np.exp(-np.logaddexp(0.0, -u))


def correlation(W1: Any, W2: Any) -> float:
    r"""Correlation of two matrices, :math:`\langle W_1, W_2\rangle / (\|W_1\|_F \|W_2\|_F)`.

    Parameters
    ----------
    W1, W2 : array of equal shape
        Finite (a :class:`~svmgeo.ProblemError` otherwise).

    Returns
    -------
    float
        In :math:`[-1, 1]`; 0 when either matrix is zero (the direction is undefined). Safe at
        huge norms (scaled before the inner product).
    """
    A = check_array(W1, "W1", ndim=(1, 2, 3), finite=False)
    B = check_array(W2, "W2", ndim=(1, 2, 3), finite=False)
    for name, M in (("W1", A), ("W2", B)):
        if not np.all(np.isfinite(M)):
            raise ProblemError(
                f"correlation needs finite matrices; {name} holds NaN or inf. A diverged "
                "iterate has no direction: check the run's status (e.g. StopStatus.OVERFLOW)."
            )
    if A.shape != B.shape:
        raise ProblemError(
            f"correlation needs matrices of equal shape; got W1 of shape {A.shape} and W2 of "
            f"shape {B.shape}. Compare matrices of one model (e.g. both d x d)."
        )
    # scale by the largest entry first so that huge norms (directional convergence) cannot overflow
    sa, sb = np.max(np.abs(A), initial=0.0), np.max(np.abs(B), initial=0.0)
    if sa == 0.0 or sb == 0.0:
        return 0.0
    A, B = A / sa, B / sb
    # rounding can take the quotient a few ulps past +-1 (e.g. B = 3.7 A): clipped to [-1, 1]
    return float(np.clip(np.vdot(A, B) / (np.linalg.norm(A) * np.linalg.norm(B)), -1.0, 1.0))


def orthonormal_basis(M: np.ndarray, rtol: float = 1e-12) -> np.ndarray:
    """Orthonormal basis (columns) of the row space of ``M`` (shape (N, d)) via SVD."""
    if M.size == 0:
        return np.zeros((M.shape[1], 0))
    _, s, Vt = np.linalg.svd(M, full_matrices=False)
    return Vt[: singular_value_rank(s, rtol)].T


def singular_value_rank(s: np.ndarray, rtol: float) -> int:
    r"""Numerical rank from singular values :math:`\sigma_1 \ge \sigma_2 \ge \dots`:
    :math:`\#\{k : \sigma_k > \mathrm{rtol}\,\sigma_1\}` (0 when :math:`\sigma_1 = 0` or there
    are none)."""
    return int(np.count_nonzero(s > rtol * s[0])) if s.size and s[0] > 0 else 0


def numerical_rank(M: np.ndarray, rtol: float) -> int:
    r"""Numerical rank :math:`\#\{k : \sigma_k(M) > \mathrm{rtol}\,\sigma_1(M)\}` of a matrix.

    Parameters
    ----------
    M : ndarray of shape (m, n)
    rtol : float
        The relative singular-value threshold; each caller passes its own (there is no
        default: a rank is only meaningful with its threshold).

    Returns
    -------
    int
        0 for a zero or empty matrix.
    """
    M = np.asarray(M, dtype=float)
    if M.size == 0:
        return 0
    return singular_value_rank(np.linalg.svd(M, compute_uv=False), rtol)


def balanced_factors(W: np.ndarray, width: int) -> tuple[np.ndarray, np.ndarray]:
    r"""Balanced factors :math:`K = U_m\Sigma_m^{1/2}`, :math:`Q = V_m\Sigma_m^{1/2}` of ``W``.

    .. math::

        W = KQ^\top,\qquad \tfrac12(\|K\|_F^2 + \|Q\|_F^2) = \|W\|_*,

    when :math:`\mathrm{rank}\,W \le m` (``width``); otherwise :math:`KQ^\top` is the best
    rank-m approximation of W. Columns beyond :math:`\min(m, d)` are zero.

    Parameters
    ----------
    W : ndarray of shape (d1, d2)
    width : int
        The number m of columns of K and Q.

    Returns
    -------
    K : ndarray of shape (d1, m)
    Q : ndarray of shape (d2, m)
    """
    U, s, Vt = np.linalg.svd(np.asarray(W, dtype=float), full_matrices=False)
    r = min(width, s.size)
    root = np.sqrt(s[:r])
    K = np.zeros((W.shape[0], width))
    Q = np.zeros((W.shape[1], width))
    K[:, :r] = U[:, :r] * root
    Q[:, :r] = Vt[:r].T * root
    return K, Q


def query_projector(queries: np.ndarray) -> np.ndarray:
    r"""Orthogonal projector :math:`P_Z` onto :math:`\mathrm{span}\{z_{ik}\}` (Lemma 1).

    Parameters
    ----------
    queries : array of shape (..., d)
        The query vectors, e.g. ``data.queries``.

    Returns
    -------
    ndarray of shape (d, d)
        Every Att-SVM solution satisfies :math:`W = W P_Z`.
    """
    Q = check_array(queries, "queries", ndim=(1, 2, 3, 4))
    if Q.shape[-1] == 0:
        raise ProblemError(
            f"The 'queries' parameter of query_projector must have at least one coordinate "
            f"(last axis d >= 1); got shape {Q.shape}. Pass the query vectors as rows, e.g. "
            "data.queries."
        )
    Z = Q.reshape(-1, Q.shape[-1])
    top = float(np.max(np.abs(Z), initial=0.0))
    if top > 1e150 or 0.0 < top < 1e-150:  # the singular values overflow (or underflow):
        Z = np.ldexp(Z, -math.frexp(top)[1])  # scale by a power of 2, same row space
    U = orthonormal_basis(Z)
    return U @ U.T


def _unscaled(norm: Any) -> Any:
    """Where numpy's plain norm (a sum of squares) neither overflowed nor underflowed."""
    return (norm > 1e-140) & (norm < 1e140)


def frobenius_norm(W: Any) -> float:
    r""":math:`\|W\|_F`, numpy's where its sum of squares neither overflows nor underflows,
    else :func:`entrywise_norm` (scaled by :math:`\max|W_{kl}|` first): finite for every finite
    W, so scale-invariant statements stay so at :math:`10^{200}\,W`."""
    with np.errstate(over="ignore", under="ignore"):
        value = float(np.linalg.norm(W))
    return value if _unscaled(value) else entrywise_norm(W, 2.0)


def row_norms(M: np.ndarray, axis: int) -> np.ndarray:
    """Euclidean norms along ``axis``: numpy's, and where those overflow or underflow, norms
    scaled by each slice's largest entry first (as :func:`frobenius_norm`)."""
    with np.errstate(over="ignore", under="ignore"):
        plain = np.linalg.norm(M, axis=axis)
    kept = _unscaled(plain)
    if np.all(kept):
        return plain
    top = np.max(np.abs(M), axis=axis, keepdims=True)
    with np.errstate(invalid="ignore"):
        scaled = np.squeeze(top, axis=axis) * np.linalg.norm(
            M / np.where(top > 0, top, 1.0), axis=axis
        )
    return np.where(kept, plain, scaled)


def entrywise_norm(W: np.ndarray, p: float) -> float:
    r"""The entrywise norm :math:`\|W\|_p = (\sum_{kl}|W_{kl}|^p)^{1/p}` (max for p = ∞)."""
    w = np.abs(np.asarray(W, dtype=float)).ravel()
    if w.size == 0:
        return 0.0
    if math.isinf(p):
        return float(w.max())
    top = float(w.max())
    if top == 0.0:
        return 0.0
    return top * float(np.sum((w / top) ** p)) ** (1.0 / p)  # scaled: no overflow for p large
