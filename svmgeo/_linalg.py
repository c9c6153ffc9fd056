# SPDX-License-Identifier: BSD-3-Clause
"""Small linear-algebra helpers shared across svmgeo."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ._errors import ProblemError
from ._validation import check_array

__all__ = ["correlation", "entrywise_norm", "orthonormal_basis", "query_projector"]


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
            f"correlation needs matrices of equal shape; got {A.shape} and {B.shape}."
        )
    # scale by the largest entry first so that huge norms (directional convergence) cannot overflow
    sa, sb = np.max(np.abs(A), initial=0.0), np.max(np.abs(B), initial=0.0)
    if sa == 0.0 or sb == 0.0:
        return 0.0
    A, B = A / sa, B / sb
    return float(np.vdot(A, B) / (np.linalg.norm(A) * np.linalg.norm(B)))


def orthonormal_basis(M: np.ndarray, rtol: float = 1e-12) -> np.ndarray:
    """Orthonormal basis (columns) of the row space of ``M`` (shape (N, d)) via SVD."""
    if M.size == 0:
        return np.zeros((M.shape[1], 0))
    _, s, Vt = np.linalg.svd(M, full_matrices=False)
    if s.size == 0 or s[0] == 0.0:
        return np.zeros((M.shape[1], 0))
    r = int(np.count_nonzero(s > rtol * s[0]))
    return Vt[:r].T


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
    Z = Q.reshape(-1, Q.shape[-1])
    U = orthonormal_basis(Z)
    return U @ U.T


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
