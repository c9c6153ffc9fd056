# SPDX-License-Identifier: BSD-3-Clause
r"""The rows in compressed coordinates and the factored (Burer–Monteiro) problem on them.

Every solution of a nuclear-norm Att-SVM can be taken as :math:`W = U M V^\top` with
orthonormal bases :math:`U, V` of :math:`\mathrm{span}\{a_j\}, \mathrm{span}\{b_j\}`
(Lemma 1 of Tarzanagh et al., applied on both sides); with :math:`M = KQ^\top` of width
:math:`m` the row :math:`j` reads

.. math::

    g_j(K, Q) = \tilde a_j^\top K Q^\top \tilde b_j - c_j, \qquad
    \tilde a_j = U^\top a_j,\ \tilde b_j = V^\top b_j .

Shared by the convex SDP's Newton polish (:mod:`._nuclear`) and the rank-constrained solver
(:mod:`._lowrank`): an internal API of :mod:`svmgeo.solvers`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .._linalg import orthonormal_basis
from ..constraints import MARGIN, ConstraintSet

__all__ = ["Compressed", "FactoredProblem", "cached_compress", "compress"]


@dataclass(frozen=True)
class Compressed:
    """The rows in compressed coordinates: ``a_j = U @ L[j]`` (or ``V``), see ``swapped``.

    ``long`` (N, r_long) and ``short`` (N, k) hold the coordinates of the rows on the longer
    and the shorter side; the SDP variable ``X`` (r_long, k) is ``M`` or ``M.T``.
    """

    U: np.ndarray
    V: np.ndarray
    long: np.ndarray
    short: np.ndarray
    swapped: bool

    def to_W(self, X: np.ndarray) -> np.ndarray:
        M = X.T if self.swapped else X
        return self.U @ M @ self.V.T


_COMPRESSED_KEY = "_svmgeo_compressed"
"""Where :func:`compress` caches its answer on a ConstraintSet (as ``compressed_width`` does)."""


def compress(cs: ConstraintSet) -> Compressed:
    """The rows on orthonormal bases of their spans, the longer side first.

    Computed once per ConstraintSet (whose arrays are read-only) and cached on it, with
    read-only arrays: ``solve_nuclear`` and the factored path it calls share the two SVDs.
    """
    cached = cs.__dict__.get(_COMPRESSED_KEY)
    if cached is not None:
        return cached
    U = orthonormal_basis(cs.A)
    V = orthonormal_basis(cs.B)
    At, Bt = cs.A @ U, cs.B @ V
    for array in (U, V, At, Bt):
        array.flags.writeable = False
    if U.shape[1] >= V.shape[1]:
        comp = Compressed(U=U, V=V, long=At, short=Bt, swapped=False)
    else:
        comp = Compressed(U=U, V=V, long=Bt, short=At, swapped=True)
    cs.__dict__[_COMPRESSED_KEY] = comp
    return comp


def cached_compress(cs: ConstraintSet) -> Compressed | None:
    """:func:`compress` of ``cs`` when it was already computed (cached on it), else None."""
    return cs.__dict__.get(_COMPRESSED_KEY)


class FactoredProblem:
    r"""The factored problem in compressed coordinates, :math:`z = (\mathrm{vec}\,K, \mathrm{vec}\,Q)`.

    Row :math:`j`: :math:`g_j(K, Q) = \tilde a_j^\top K Q^\top \tilde b_j - c_j`, with gradients
    :math:`\tilde a_j (Q^\top \tilde b_j)^\top` in :math:`K` and :math:`\tilde b_j (K^\top
    \tilde a_j)^\top` in :math:`Q`.
    """

    def __init__(self, cs: ConstraintSet, At: np.ndarray, Bt: np.ndarray, m: int) -> None:
        self.cs, self.At, self.Bt, self.m = cs, At, Bt, m
        self.r1, self.r2 = At.shape[1], Bt.shape[1]
        self.nK = self.r1 * m

    def unpack(self, z: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return z[: self.nK].reshape(self.r1, self.m), z[self.nK :].reshape(self.r2, self.m)

    def margins(self, K: np.ndarray, Q: np.ndarray) -> np.ndarray:
        return np.einsum("jm,jm->j", self.At @ K, self.Bt @ Q)

    def jacobian(self, K: np.ndarray, Q: np.ndarray) -> np.ndarray:
        """Rows ∇g_j, shape (N, nK + nQ)."""
        N = self.cs.N
        dK = self.At[:, :, None] * (self.Bt @ Q)[:, None, :]
        dQ = self.Bt[:, :, None] * (self.At @ K)[:, None, :]
        return np.hstack([dK.reshape(N, -1), dQ.reshape(N, -1)])

    def multipliers(self, K: np.ndarray, Q: np.ndarray, rows: np.ndarray) -> np.ndarray:
        r"""Least-squares :math:`\lambda` (:math:`\ge 0` on margin rows) on ``rows`` for
        :math:`z = \sum_j \lambda_j \nabla g_j`, the stationarity of the Lagrangian."""
        lam = np.zeros(self.cs.N)
        if rows.size == 0:
            return lam
        J = self.jacobian(K, Q)[rows]
        z = np.concatenate([K.ravel(), Q.ravel()])
        lower = np.where(self.cs.kind[rows] == MARGIN, 0.0, -np.inf)
        from scipy.optimize import lsq_linear  # lazily: scipy.optimize is slow to import

        fit = lsq_linear(J.T, z, bounds=(lower, np.inf), method="bvls", tol=1e-14)
        lam[rows] = fit.x
        return lam

    def newton(
        self, K: np.ndarray, Q: np.ndarray, lam: np.ndarray, rows: np.ndarray, steps: int = 20
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        r"""Gauss–Newton on the KKT system with the active ``rows`` held as equalities.

        Unknowns :math:`(K, Q, \lambda_S)`; equations :math:`K = \Lambda Q`,
        :math:`Q = \Lambda^\top K`, :math:`g_S = 0`. Minimum-norm steps (the solution set is
        invariant under :math:`(K, Q) \mapsto (KO, QO)`, :math:`O` orthogonal).
        """
        At, Bt, m, nK = self.At, self.Bt, self.m, self.nK
        z = np.concatenate([K.ravel(), Q.ravel(), lam[rows]])
        c = self.cs.rhs[rows]

        def residual(z: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
            K, Q = self.unpack(z[: nK + self.r2 * m])
            ls = z[nK + self.r2 * m :]
            Lam = At[rows].T @ (ls[:, None] * Bt[rows])
            F = np.concatenate(
                [
                    (K - Lam @ Q).ravel(),
                    (Q - Lam.T @ K).ravel(),
                    self.margins(K, Q)[rows] - c,
                ]
            )
            G = self.jacobian(K, Q)[rows]  # (S, nK + nQ)
            eye_m = np.eye(m)
            top = np.hstack([np.eye(nK), -np.kron(Lam, eye_m), -G[:, :nK].T])
            mid = np.hstack([-np.kron(Lam.T, eye_m), np.eye(self.r2 * m), -G[:, nK:].T])
            bottom = np.hstack([G, np.zeros((rows.size, rows.size))])
            return F, np.vstack([top, mid, bottom])

        F, Jac = residual(z)
        for _ in range(steps):
            if np.linalg.norm(F) <= 1e-14 * max(1.0, float(np.linalg.norm(z))):
                break
            # truncated SVD: the directions (K, Q) -> (KO, QO) are (nearly) singular
            step = np.linalg.lstsq(Jac, -F, rcond=1e-9)[0]
            F_new, Jac_new = residual(z + step)
            if np.linalg.norm(F_new) >= np.linalg.norm(F):
                break
            z, F, Jac = z + step, F_new, Jac_new
        K, Q = self.unpack(z[: nK + self.r2 * m])
        lam = lam.copy()
        lam[rows] = z[nK + self.r2 * m :]
        return K, Q, lam
