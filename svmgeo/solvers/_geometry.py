# SPDX-License-Identifier: BSD-3-Clause
r"""The rows' geometry: Gram matrix or compressed features, and the PSD solves built on them.

For rows :math:`a_j b_j^\top` the Gram matrix is

.. math::

    G = (AA^\top)\circ(BB^\top) = \Phi\Phi^\top, \qquad
    \phi_j = \mathrm{vec}(U^\top a_j b_j^\top V),

with U, V orthonormal bases of span{a_j}, span{b_j}. :class:`RowGeometry` holds whichever of
:math:`G` (N×N) or :math:`\Phi` (N×r₁r₂) is smaller, and the factorizations the Frobenius
solver and the feasibility check both use (an internal API of :mod:`svmgeo.solvers`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import scipy.linalg as sla

from .._linalg import orthonormal_basis
from ..constraints import MARGIN, ConstraintSet

__all__ = [
    "FEATURE_LIMIT",
    "RowGeometry",
    "Solve",
    "compressed_width",
    "dense_dimension",
    "features",
]

Solve = Callable[[np.ndarray], np.ndarray]
r"""A linear solve :math:`r \mapsto H^{-1} r` with a factorization held in its closure."""


def _outer_gram(A: np.ndarray) -> np.ndarray:
    """:math:`AA^\\top` through a symmetric rank-k update (half the flops of a product)."""
    if A.shape[0] < 256:
        return A @ A.T
    upper = sla.blas.dsyrk(1.0, A.T, trans=1)  # upper triangle filled, lower left at 0
    G = upper + upper.T
    G.flat[:: G.shape[0] + 1] *= 0.5
    return np.asarray(G)


def _query_gram(cs: ConstraintSet) -> np.ndarray:
    """:math:`BB^\\top`, computed from the distinct queries when rows share them."""
    groups = cs.query_groups
    if groups is None:
        return cs.B @ cs.B.T
    Q, inv = groups
    return (Q @ Q.T)[np.ix_(inv, inv)]


def compressed_width(cs: ConstraintSet) -> int:
    r"""The bound :math:`r_1 r_2 \le \min(d, N)\,\min(d, q)` on the compressed dimension, with
    :math:`q` the number of distinct query vectors :math:`b_j` (no factorization).

    Queries are counted by value: the p-SVM's rows all share :math:`b = e_1` although each
    input is its own query, so :math:`q = 1` and its features have width :math:`\le d`.
    """
    groups = cs.query_groups
    q = cs.n_queries if groups is None else int(np.unique(groups[0], axis=0).shape[0])
    return min(cs.d, cs.N) * min(cs.d, q)


def dense_dimension(cs: ConstraintSet) -> int:
    r"""Size of the dense problem :class:`RowGeometry` builds: :math:`\min(N, r_1 r_2)` with
    :math:`r_1 r_2` bounded by :func:`compressed_width`."""
    return min(cs.N, compressed_width(cs))


class RowGeometry:
    r"""Everything the solvers need about the rows :math:`a_j b_j^\top`, in the cheaper form.

    ``kind == "dual"``: the Gram matrix :math:`G` (N×N). ``kind == "primal"``: features
    :math:`\Phi` (N×r₁r₂) with :math:`G = \Phi\Phi^\top`, used when :math:`r_1 r_2 < N`.
    """

    def __init__(self, cs: ConstraintSet) -> None:
        self.cs = cs
        N = cs.N
        self.U: np.ndarray | None = None
        self.V: np.ndarray | None = None
        self.Phi: np.ndarray | None = None
        self.G: np.ndarray | None = None
        if dense_dimension(cs) < N:
            U, V = orthonormal_basis(cs.A), orthonormal_basis(cs.B)
            Ac, Bc = cs.A @ U, cs.B @ V
            self.U, self.V = U, V
            self.Phi = np.ascontiguousarray((Ac[:, :, None] * Bc[:, None, :]).reshape(N, -1))
            self.kind = "primal"
        else:
            self.G = _outer_gram(cs.A) * _query_gram(cs)
            self.kind = "dual"
        self.margin = cs.kind == MARGIN
        self.c = np.asarray(cs.rhs, dtype=float)

    # -- products with G ------------------------------------------------------------------
    def gram(self) -> np.ndarray:
        if self.G is None:
            assert self.Phi is not None
            self.G = self.Phi @ self.Phi.T
        return self.G

    @property
    def _gmax(self) -> float:
        if not hasattr(self, "_gmax_value"):
            self._gmax_value = float(np.abs(self.gram()).max())
        return self._gmax_value

    def matvec(self, lam: np.ndarray) -> np.ndarray:
        """:math:`G\\lambda`, i.e. the margins of :math:`W = \\sum_j \\lambda_j a_j b_j^\\top`."""
        if self.Phi is not None:
            return self.Phi @ (self.Phi.T @ lam)
        assert self.G is not None
        return self.G @ lam

    def factor(self, theta: np.ndarray, reg: float) -> Solve:
        r"""A solver for :math:`(G + \mathrm{diag}(\theta) + \mathrm{reg}\,[\theta = 0])\,x = r`.

        ``theta`` is positive on margin rows and 0 on equality rows.
        """
        eq = theta <= 0.0
        if self.Phi is None:
            H = self.gram() + np.diag(np.where(eq, reg, theta))
            return _psd_solver(H)
        Phi = self.Phi
        m = ~eq
        inv = 1.0 / theta[m]
        PM, PE = Phi[m], Phi[eq]
        K = np.eye(Phi.shape[1]) + (PM.T * inv) @ PM
        nE = PE.shape[0]
        if nE == 0:
            kinv = _psd_solver(K)

            def solve(r: np.ndarray) -> np.ndarray:
                u = kinv(PM.T @ (inv * r[m]))
                x = np.empty_like(r)
                x[m] = inv * (r[m] - PM @ u)
                return x

            return solve
        big = np.block([[K, PE.T], [PE, -reg * np.eye(nE)]])
        lu = sla.lu_factor(big, check_finite=False)

        def solve_aug(r: np.ndarray) -> np.ndarray:
            top = PM.T @ (inv * r[m])
            z = sla.lu_solve(lu, np.concatenate([top, r[eq]]), check_finite=False)
            u, xE = z[: K.shape[0]], -z[K.shape[0] :]
            x = np.empty_like(r)
            x[m] = inv * (r[m] - PM @ u)
            x[eq] = xE
            return x

        return solve_aug

    def full_factor(self) -> Any:
        """Cached Cholesky factor of the whole :math:`G` (None when G is not numerically PD)."""
        if not hasattr(self, "_full"):
            self._full = None
            if self.Phi is None:
                try:
                    self._full = sla.cho_factor(self.gram(), check_finite=False)
                except np.linalg.LinAlgError:
                    self._full = None
        return self._full

    def _schur_solve(self, S: np.ndarray, r: np.ndarray) -> np.ndarray | None:
        r"""Solve :math:`G_{SS}x = r` from the factor of the whole G (S = all rows but a few).

        With D the dropped rows: :math:`x = G^{-1}\tilde r - Z C^{-1} (G^{-1}\tilde r)_D`,
        :math:`Z = G^{-1}E_D`, :math:`C = (G^{-1})_{DD}`, which makes :math:`x_D = 0`.
        """
        cf = self.full_factor()
        N = self.cs.N
        if cf is None:
            return None
        D = np.setdiff1d(np.arange(N), S, assume_unique=True)
        if D.size and 2.0 * N * N * D.size > S.size**3 / 3.0:
            return None  # refactoring G_SS is cheaper
        rt = np.zeros(N)
        rt[S] = r
        x = sla.cho_solve(cf, rt, check_finite=False)
        if D.size:
            E = np.zeros((N, D.size))
            E[D, np.arange(D.size)] = 1.0
            Z = sla.cho_solve(cf, E, check_finite=False)
            C = Z[D]
            try:
                mu = sla.solve(C, x[D], assume_a="pos", check_finite=False)
            except (np.linalg.LinAlgError, ValueError):
                return None
            x = x - Z @ mu
        return np.asarray(x[S])

    def min_norm_solve(self, S: np.ndarray, r: np.ndarray) -> np.ndarray:
        r"""Minimum-norm :math:`\delta` with :math:`G_{SS}\,\delta = r` (least squares if inconsistent)."""
        if S.size == 0:
            return np.zeros(0)
        if self.Phi is not None:
            PS = self.Phi[S]
            y = sla.lstsq(PS, r, lapack_driver="gelsy", check_finite=False)[0]
            return np.asarray(sla.lstsq(PS.T, y, lapack_driver="gelsy", check_finite=False)[0])
        G = self.gram()
        full = S.size == self.cs.N
        GSS = G if full else G[np.ix_(S, S)]

        gmax = self._gmax if full else float(np.abs(GSS).max())

        def accurate(x: np.ndarray | None) -> bool:
            if x is None or not np.all(np.isfinite(x)):
                return False
            scale = gmax * max(np.abs(x).max(), 1.0) + np.abs(r).max()
            return bool(np.abs(GSS @ x - r).max() <= 1e-11 * scale)

        x = self._schur_solve(S, r)
        if accurate(x):
            return np.asarray(x)
        try:
            cf = self.full_factor() if full else sla.cho_factor(GSS, check_finite=False)
            if cf is not None:
                x = sla.cho_solve(cf, r, check_finite=False)
                if accurate(x):
                    return np.asarray(x)
        except (np.linalg.LinAlgError, ValueError):
            pass
        return np.asarray(sla.lstsq(GSS, r, lapack_driver="gelsy", check_finite=False)[0])

    def W(self, lam: np.ndarray) -> np.ndarray:
        """:math:`\\sum_j \\lambda_j a_j b_j^\\top` as a (d, d) matrix."""
        return self.cs.adjoint(lam)


def _psd_solver(H: np.ndarray) -> Solve:
    """Cholesky with growing diagonal regularization when ``H`` is numerically singular."""
    scale = max(float(np.abs(np.diag(H)).max()) if H.size else 1.0, 1e-300)
    shift = 0.0
    for _ in range(8):
        try:
            cf = sla.cho_factor(H + shift * np.eye(H.shape[0]), check_finite=False)
            return lambda r: sla.cho_solve(cf, r, check_finite=False)
        except np.linalg.LinAlgError:
            shift = 1e-14 * scale if shift == 0.0 else shift * 100.0
    lu = sla.lu_factor(H + shift * np.eye(H.shape[0]), check_finite=False)
    return lambda r: sla.lu_solve(lu, r, check_finite=False)


FEATURE_LIMIT = 4096
"""Largest compressed dimension :math:`r_1 r_2` for which the feature-space polish is tried."""


def features(geo: RowGeometry) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    r"""(U, V, Φ) with :math:`\phi_j = \mathrm{vec}(U^\top a_j b_j^\top V)`, or None when too large."""
    if geo.Phi is not None:
        assert geo.U is not None and geo.V is not None
        return geo.U, geo.V, geo.Phi
    cs = geo.cs
    if compressed_width(cs) > FEATURE_LIMIT:
        return None  # decided before any factorization: this is the rescue path only
    U, V = orthonormal_basis(cs.A), orthonormal_basis(cs.B)
    width = U.shape[1] * V.shape[1]
    if width > FEATURE_LIMIT or width * cs.N > 2e7:
        return None
    Ac, Bc = cs.A @ U, cs.B @ V
    return U, V, np.ascontiguousarray((Ac[:, :, None] * Bc[:, None, :]).reshape(cs.N, -1))
