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

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import scipy.linalg as sla
import scipy.sparse as sp

from .._linalg import orthonormal_basis
from ..constraints import ConstraintSet

__all__ = [
    "COMPILED_UP_TO",
    "FEATURE_LIMIT",
    "RowGeometry",
    "Solve",
    "compressed_width",
    "dense_dimension",
    "features",
]

Solve = Callable[[np.ndarray], np.ndarray]
r"""A linear solve :math:`r \mapsto H^{-1} r` with a factorization held in its closure."""


_POTRF, _POTRS = sla.get_lapack_funcs(("potrf", "potrs"), (np.zeros(1),))
_DSYMV = sla.get_blas_funcs("symv", (np.zeros(1),))


def cho_factor(H: np.ndarray) -> tuple[np.ndarray, bool]:
    """``scipy.linalg.cho_factor(H, check_finite=False)`` (upper factor, the same LAPACK call),
    without its Python overhead: the small solves call it thousands of times."""
    c, info = _POTRF(H, lower=False, overwrite_a=False, clean=False)
    if info > 0:
        raise np.linalg.LinAlgError(f"{info}-th leading minor not positive definite")
    if info < 0:  # pragma: no cover - a LAPACK argument error
        raise ValueError(f"illegal value in argument {-info} of potrf")
    return c, False


def cho_solve(cf: tuple[np.ndarray, bool], b: np.ndarray) -> np.ndarray:
    """``scipy.linalg.cho_solve(cf, b, check_finite=False)`` for a factor of :func:`cho_factor`."""
    x, info = _POTRS(cf[0], b, lower=cf[1])
    if info != 0:  # pragma: no cover - a LAPACK argument error
        raise ValueError(f"illegal value in argument {-info} of potrs")
    return np.asarray(x)


def _block(G: np.ndarray, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
    r""":math:`G_{RC}` (R = ``rows``, C = ``cols``, integer indices): ``G[np.ix_(rows, cols)]``,
    the same C-ordered copy, gathered as rows then columns (``take``), 2-3x faster than the
    fancy index on the small solves' blocks (40 us -> 14 us at 120 of N = 180)."""
    return G.take(rows, axis=0).take(cols, axis=1)


def _outer_gram(A: np.ndarray) -> np.ndarray:
    """:math:`AA^\\top`: numpy's ``A @ A.T`` is a symmetric rank-k update (BLAS syrk) with the
    other triangle filled in C (bit for bit what a hand-made ``dsyrk`` and symmetrization give,
    in half their time)."""
    return np.asarray(A @ A.T)


def _query_gram(cs: ConstraintSet) -> np.ndarray:
    """:math:`BB^\\top`, computed from the distinct queries when rows share them (copied by
    blocks when the rows come grouped by query, as the builders make them)."""
    groups = cs.query_groups
    if groups is None:
        return np.asarray(cs.B @ cs.B.T)
    Q, inv = groups
    QQ = Q @ Q.T
    if inv.size and np.all(inv[1:] >= inv[:-1]):  # sorted: blocks of equal entries
        counts = np.bincount(inv, minlength=Q.shape[0])
        return np.repeat(np.repeat(QQ, counts, axis=0), counts, axis=1)
    return np.asarray(QQ[inv][:, inv])


def _gram(cs: ConstraintSet) -> np.ndarray:
    r""":math:`G = (AA^\top)\circ(BB^\top)`, multiplied into :math:`AA^\top` in place (the same
    products as ``AAᵀ * BBᵀ``, without two more N×N arrays). When the rows come in query
    blocks of one size k (``cs._query_block_size``), :math:`BB^\top` is never formed: block (p, q)
    of :math:`AA^\top` is scaled by :math:`b_p^\top b_q` through a broadcast."""
    G = _outer_gram(cs.A)
    k = cs._query_block_size
    if k is not None:
        assert cs.query_groups is not None
        Q = cs.query_groups[0]
        nq = Q.shape[0]
        QQ = Q @ Q.T
        G.reshape(nq, k, nq, k)[...] *= QQ[:, None, :, None]
        return G
    G *= _query_gram(cs)
    return G


def compressed_width(cs: ConstraintSet) -> int:
    r"""The bound :math:`r_1 r_2 \le \min(d, N)\,\min(d, q)` on the compressed dimension, with
    :math:`q` the number of distinct query vectors :math:`b_j` (no factorization).

    Queries are counted by value: the p-SVM's rows all share :math:`b = e_1` although each
    input is its own query, so :math:`q = 1` and its features have width :math:`\le d`.
    """
    cached = cs.__dict__.get(_WIDTH_KEY)  # the rows are immutable: count once per set
    if cached is not None:
        return int(cached)
    groups = cs.query_groups
    q = cs.n_queries if groups is None else _distinct_rows(groups[0])
    width = min(cs.d, cs.N) * min(cs.d, q)
    cs.__dict__[_WIDTH_KEY] = width
    return width


def _distinct_rows(M: np.ndarray) -> int:
    """The number of distinct rows of the finite float array ``M``, by value (as
    ``np.unique(M, axis=0)`` counts them): rows compared as bytes once -0.0 is +0.0, a 1-D
    ``np.unique`` (several times faster than the axis form on a few rows)."""
    rows = np.ascontiguousarray(M + 0.0, dtype=np.float64)
    if rows.shape[1] == 0:
        return min(rows.shape[0], 1)
    return int(np.unique(rows.view(np.dtype((np.void, 8 * rows.shape[1]))).ravel()).size)


_WIDTH_KEY = "_svmgeo_compressed_width"
"""Where :func:`compressed_width` caches its count on a ConstraintSet (as cached_property does)."""


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
        self._G: np.ndarray | None = None
        if dense_dimension(cs) < N:
            U, V = orthonormal_basis(cs.A), orthonormal_basis(cs.B)
            Ac, Bc = cs.A @ U, cs.B @ V
            self.U, self.V = U, V
            self.Phi = np.ascontiguousarray((Ac[:, :, None] * Bc[:, None, :]).reshape(N, -1))
            self.kind = "primal"
        else:  # G itself on first use (:attr:`G`), or from the compiled small path (adopt)
            self.kind = "dual"
        self.margin = cs._margin_rows
        self.c = np.asarray(cs.rhs, dtype=float)
        self._last: tuple[np.ndarray, Any] | None = None  # the last G_SS factored (S, factor)
        self._cg_block: tuple[np.ndarray, np.ndarray] | None = None  # CG's gathered (S, G_SS)
        self.polish_tol: float | None = None
        """The tolerance of a Frobenius solve that will follow on these rows, when the caller
        knows one will (:func:`~svmgeo.solve_svm`): the compiled feasibility route then
        polishes in the same call (:func:`~._frobenius_small.tight_verdict`)."""

    # -- products with G ------------------------------------------------------------------
    @property
    def G(self) -> np.ndarray | None:
        r"""The Gram matrix :math:`G` (``"dual"``: formed on first use, :func:`_gram`; ``"primal"``:
        None until :meth:`gram` forms :math:`\Phi\Phi^\top`)."""
        if self._G is None and self.kind == "dual":
            self._G = _gram(self.cs)
        return self._G

    def gram(self) -> np.ndarray:
        if self.G is None:
            assert self.Phi is not None
            self._G = self.Phi @ self.Phi.T
        assert self._G is not None
        return self._G

    @property
    def compiled(self) -> bool:
        """Whether the compiled small path (:mod:`~._frobenius_small`) takes these rows first:
        a Gram representation of at most :data:`COMPILED_UP_TO` rows."""
        return self.kind == "dual" and 0 < self.cs.N <= COMPILED_UP_TO

    def adopt(self, G: np.ndarray, factor: Any = None, tight: np.ndarray | None = None) -> None:
        r"""Take :math:`G`, the Cholesky factor of all of G (``cho_factor``'s ``(c, lower)``,
        None: G is not numerically positive definite) and :math:`\lambda = G^{-1}c` computed
        elsewhere with the same bits (the compiled small path, :mod:`~._frobenius_small`: the
        same BLAS and LAPACK calls): what :attr:`G`, :meth:`full_factor` and :meth:`tight`
        return from then on."""
        self._G = G
        self._full = factor
        if tight is not None:
            tight.flags.writeable = False
        self._tight = tight

    @property
    def _gmax(self) -> float:
        r""":math:`\max_{jk}|G_{jk}|`, the largest diagonal entry: G is a Gram matrix, so
        :math:`|G_{jk}| \le (G_{jj}G_{kk})^{1/2}` (up to the rounding of its entries)."""
        if not hasattr(self, "_gmax_value"):
            self._gmax_value = float(np.diagonal(self.gram()).max(initial=0.0))
        return self._gmax_value

    def matvec(self, lam: np.ndarray) -> np.ndarray:
        """:math:`G\\lambda`, i.e. the margins of :math:`W = \\sum_j \\lambda_j a_j b_j^\\top`."""
        if self.Phi is not None:
            return self.Phi @ (self.Phi.T @ lam)
        assert self.G is not None
        if self.cs.N >= SYMV_FROM:  # one triangle of the symmetric G read: half the memory
            return np.asarray(_DSYMV(1.0, self.G.T, lam, lower=1))
        return self.G @ lam

    def matvec_columns(self, cols: np.ndarray, x: np.ndarray) -> np.ndarray:
        """:math:`G_{:,C}\\,x` (C = ``cols``): the margins of :math:`\\sum_{k \\in C} x_k a_k b_k^\\top`."""
        if self.Phi is not None:
            return self.Phi @ (self.Phi[cols].T @ x)
        assert self.G is not None
        if 4 * cols.size >= self.cs.N:
            full = np.zeros(self.cs.N)
            full[cols] = x
            return self.matvec(full)
        return self.G[:, cols] @ x

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
                    self._full = cho_factor(self.gram())
                except np.linalg.LinAlgError:
                    self._full = None
        return self._full

    def tight(self) -> np.ndarray | None:
        r""":math:`\lambda` with every row tight, :math:`G\lambda = c`, from the Cholesky factor
        of all of G (:meth:`full_factor`; None when G is not numerically PD), solved once and
        read-only: the feasibility check's point and the active-set polish's first round from
        every row tight (:func:`~._qp.polish_active_set`) share it; :meth:`min_norm_solve` on
        every row with :math:`r = c` gives the same bits (the same ``potrs`` on the same
        factor)."""
        if not hasattr(self, "_tight"):
            cf = self.full_factor()
            self._tight = None if cf is None else cho_solve(cf, self.c)
            if self._tight is not None:
                self._tight.flags.writeable = False
        return self._tight

    def _bases(self) -> list[tuple[np.ndarray, Any]]:
        """Row sets with a Cholesky factor of their :math:`G_{BB}`: the whole G (when PD and
        already factored) and the last :math:`G_{SS}` factored by :meth:`min_norm_solve`."""
        out = []
        if self._last is not None and self._last[0].size >= _BORDER_FROM:
            out.append(self._last)
        cf = self.__dict__.get("_full")  # only when already computed: never a full factor here
        if cf is not None:
            if not hasattr(self, "_all_rows"):
                self._all_rows = np.arange(self.cs.N)
            out.append((self._all_rows, cf))
        return out

    def _schur_solve(self, S: np.ndarray, r: np.ndarray) -> np.ndarray | None:
        r"""Solve :math:`G_{SS}x = r` from the factor of some :math:`G_{BB}` (:meth:`_bases`)
        when S differs from B by a few rows, instead of factoring :math:`G_{SS}`.

        With :math:`\mathcal A = S \setminus B` added and :math:`D = B \setminus S` dropped:
        :math:`M = G_{TT}`, :math:`T = B \cup \mathcal A`, is solved by block elimination
        (Schur complement :math:`G_{\mathcal A\mathcal A} - G_{\mathcal A B}G_{BB}^{-1}G_{B\mathcal A}`),
        and :math:`x = M^{-1}\tilde r - Z C^{-1}(M^{-1}\tilde r)_D`, :math:`Z = M^{-1}E_D`,
        :math:`C = (M^{-1})_{DD}`, which makes :math:`x_D = 0`. None when refactoring
        :math:`G_{SS}` is cheaper or a factor fails.
        """
        G = self.gram()
        N = self.cs.N
        for B, cf in self._bases():
            nb = B.size
            if nb == N == S.size:  # all of G: its own factor (what the bordered solve gives)
                return cho_solve(cf, r)
            if nb == N:  # the whole G: nothing to add
                n_add, n_drop = 0, N - S.size
            else:
                inB = np.isin(S, B, assume_unique=True)
                add = S[~inB]
                n_add, n_drop = add.size, nb - (S.size - add.size)
            if n_drop and 2.0 * nb * nb * (n_add + n_drop) > S.size**3 / 3.0:
                continue  # refactoring G_SS is cheaper
            if nb == N:
                inB, add = np.ones(S.size, dtype=bool), S[:0]
            drop = np.setdiff1d(B, S, assume_unique=True) if n_drop else S[:0]
            try:
                return self._bordered_solve(G, B, cf, S, inB, add, drop, r)
            except (np.linalg.LinAlgError, ValueError):
                continue
        return None

    @staticmethod
    def _bordered_solve(
        G: np.ndarray,
        B: np.ndarray,
        cf: Any,
        S: np.ndarray,
        inB: np.ndarray,
        add: np.ndarray,
        drop: np.ndarray,
        r: np.ndarray,
    ) -> np.ndarray:
        """:meth:`_schur_solve` for one base (B, its factor); raises when a factor fails."""
        nb = B.size
        pos = np.searchsorted(B, S[inB]) if B.size != G.shape[0] else S
        if add.size:
            GBA = _block(G, B, add)
            F = cho_solve(cf, GBA)
            cfa = cho_factor(_block(G, add, add) - GBA.T @ F)

        def solve(P: np.ndarray, Q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
            U = cho_solve(cf, P)
            if not add.size:
                return U, Q
            V = cho_solve(cfa, Q - GBA.T @ U)
            return U - F @ V, V

        p = np.zeros(nb)
        p[pos] = r[inB]
        u, v = solve(p, r[~inB])
        if drop.size:
            dpos = np.searchsorted(B, drop)
            E = np.zeros((nb, drop.size))
            E[dpos, np.arange(drop.size)] = 1.0
            ZU, ZV = solve(E, np.zeros((add.size, drop.size)))
            mu = sla.solve(ZU[dpos], u[dpos], assume_a="pos", check_finite=False)
            u = u - ZU @ mu
            v = v - ZV @ mu
        x = np.empty(S.size)
        x[inB] = u[pos]
        x[~inB] = v
        return x

    def _jacobi_cg(self, S: np.ndarray, r: np.ndarray, gmax: float) -> np.ndarray | None:
        r"""Approximate :math:`x` with :math:`G_{SS}x = r` by Jacobi-preconditioned conjugate
        gradients, :math:`x_{k+1} = x_k + \alpha_k p_k`, :math:`p_{k+1} = D^{-1}s_{k+1} +
        \beta_k p_k` (:math:`D = \mathrm{diag}(G_{SS})`, :math:`s_k = r - G_{SS}x_k`), each
        product :math:`G_{SS}p` taken by BLAS ``dsymv``, which reads one triangle of a
        symmetric matrix: with :math:`G_{SS}`, gathered before the first product, when S is a
        small enough part of the rows (:func:`_gather_pays`; kept in ``self._cg_block`` for
        the caller's factor, should CG fail), else with all of G (no gather).

        Stops once the recurrence residual is 100 times inside :meth:`min_norm_solve`'s
        accuracy bound, or after ``_CG_PRODUCTS`` products, or on a breakdown (None); the
        caller then checks the answer with a true product and falls back to a factor.
        """
        G = self.gram()
        GT = G.T  # Fortran order, as BLAS reads it: no copy
        N = self.cs.N
        diag = np.diagonal(G)[S]
        if not np.all(diag > 0.0):
            return None
        x = np.zeros(S.size)
        res = np.array(r, dtype=float)
        rmax = float(np.abs(r).max(initial=0.0))
        z = res / diag
        p = z.copy()
        rz = float(res @ z)
        pf = np.zeros(N)
        GSS_T: np.ndarray | None = None
        for k in range(_CG_PRODUCTS):
            if np.abs(res).max() <= 1e-13 * (gmax * max(float(np.abs(x).max()), 1.0) + rmax):
                return x
            if k == 0 and _gather_pays(S.size, N):
                GSS = _block(G, S, S)
                self._cg_block = (S, GSS)
                GSS_T = GSS.T  # Fortran order, as BLAS reads it
            if GSS_T is None:
                pf[S] = p
                q = _DSYMV(1.0, GT, pf, lower=1)[S]  # one triangle of the symmetric G read
            else:
                q = _DSYMV(1.0, GSS_T, p, lower=1)
            pq = float(p @ q)
            if not pq > 0.0 or not np.isfinite(pq):
                return None
            alpha = rz / pq
            x += alpha * p
            res -= alpha * q
            z = res / diag
            rz_next = float(res @ z)
            p = z + (rz_next / rz) * p
            rz = rz_next
        return x

    def accurate(
        self,
        S: np.ndarray | None,
        r: np.ndarray,
        x: np.ndarray | None,
        gmax: float,
        rmax: float,
        Gx: np.ndarray | None = None,
    ) -> bool:
        r"""Whether :math:`x` solves :math:`G_{SS}x = r` to :meth:`min_norm_solve`'s accuracy:
        every entry finite and :math:`\max_j|(G_{SS}x - r)_j| \le 10^{-11}(g\max(\|x\|_\infty, 1)
        + \|r\|_\infty)`, :math:`g = \max_{j \in S} G_{jj}` (``gmax``), ``rmax`` :math:`= \|r\|_\infty`.

        ``Gx`` is :math:`G_{SS}x` when the caller has it already (the same product), else it is
        formed here.
        """
        if x is None:
            return False
        xmax = float(np.abs(x).max())
        if not math.isfinite(xmax):  # a NaN or infinite entry
            return False
        scale = gmax * max(xmax, 1.0) + rmax
        if Gx is None:
            N = self.cs.N
            if S is None or S.size == N:
                Gx = self.matvec(x)
            else:  # a product with all of G is cheaper than gathering G_SS
                xf = np.zeros(N)
                xf[S] = x
                Gx = self.matvec(xf)[S]
        return bool(np.abs(Gx - r).max() <= 1e-11 * scale)

    def min_norm_solve(self, S: np.ndarray, r: np.ndarray) -> np.ndarray:
        r"""Minimum-norm :math:`\delta` with :math:`G_{SS}\,\delta = r` (least squares if inconsistent)."""
        if S.size == 0:
            return np.zeros(0)
        if self.Phi is not None:
            PS = self.Phi[S]
            y = sla.lstsq(PS, r, lapack_driver="gelsy", check_finite=False)[0]
            return np.asarray(sla.lstsq(PS.T, y, lapack_driver="gelsy", check_finite=False)[0])
        G = self.gram()
        N = self.cs.N
        full = S.size == N
        gmax = self._gmax if full else float(np.diagonal(G)[S].max())

        rmax = float(np.abs(r).max())
        last = self._last
        if last is not None and last[0].size == S.size and np.array_equal(last[0], S):
            # the same rows: the same factor
            x_last = cho_solve(last[1], r)
            if self.accurate(S, r, x_last, gmax, rmax):
                return x_last
        x = self._schur_solve(S, r)
        if self.accurate(S, r, x, gmax, rmax):
            return np.asarray(x)
        gathered = None
        if not full and _cg_first(S.size, N):
            self._cg_block = None
            x = self._jacobi_cg(S, r, gmax)  # bounded products with G: cheaper than a factor
            gathered, self._cg_block = self._cg_block, None
            if self.accurate(S, r, x, gmax, rmax):
                return np.asarray(x)
        if full:
            GSS = G
        elif gathered is not None and gathered[0] is S:  # CG's gather of these rows
            GSS = gathered[1]
        else:
            GSS = _block(G, S, S)
        try:
            cf = self.full_factor() if full else cho_factor(GSS)
            if cf is not None:
                if not full:
                    self._last = (S.copy(), cf)
                x = cho_solve(cf, r)
                if self.accurate(S, r, x, gmax, rmax):
                    return np.asarray(x)
        except (np.linalg.LinAlgError, ValueError):
            pass
        return np.asarray(sla.lstsq(GSS, r, lapack_driver="gelsy", check_finite=False)[0])

    def W(self, lam: np.ndarray) -> np.ndarray:
        """:math:`\\sum_j \\lambda_j a_j b_j^\\top` as a (d, d) matrix: ``cs.adjoint(lam)``, the
        same sums in the same order, with the query-grouping matrix built once."""
        cs = self.cs
        groups = cs.query_groups
        if groups is None:
            return cs.adjoint(lam)
        Q, inv = groups
        if cs._query_block_size is not None:  # consecutive blocks: no sparse matrix
            return cs.adjoint(lam)
        if not hasattr(self, "_group_order"):  # the CSR pattern of (inv, arange(N)), once
            order = np.argsort(inv, kind="stable")
            self._group_order = order
            self._group_ptr = np.searchsorted(inv[order], np.arange(Q.shape[0] + 1))
        order = self._group_order
        lam = np.asarray(lam, dtype=float)
        group_sum = sp.csr_matrix(
            (lam[order], order, self._group_ptr), shape=(Q.shape[0], cs.N), copy=False
        )
        C = np.asarray(group_sum @ cs.A)  # (n_queries, d): sum of lambda_j a_j per query
        return np.asarray(C.T @ Q)


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


COMPILED_UP_TO = 400
"""Most rows of a Gram-represented set that the compiled small path takes first
(:attr:`RowGeometry.compiled`; its CPU time is 0.3-0.55x the Python path's at N = 180-360).
Below :data:`~._feasibility.GRADIENT_FROM`, from where the feasibility check takes another
route first."""

SYMV_FROM = 450
"""Fewest rows for which :meth:`RowGeometry.matvec` multiplies by the symmetric G with BLAS
``dsymv`` (one triangle read, 2.5x faster than ``dgemv`` at N = 3,800 on one thread; the
large-N path, whose products are memory-bound) instead of ``G @ λ``; below it the small
solves keep their products bit for bit."""

_BORDER_FROM = 256
"""Smallest factored row set reused by :meth:`RowGeometry._schur_solve` (below it a fresh
Cholesky factor costs less than the bookkeeping)."""

_CG_PRODUCTS = 64
"""Most products with G that Jacobi-preconditioned CG spends on a :math:`G_{SS}` solve before
:meth:`RowGeometry.min_norm_solve` factors :math:`G_{SS}` instead."""


def _gather_pays(size: int, N: int) -> bool:
    r"""Whether CG's products are taken with :math:`G_{SS}` gathered once rather than with all
    of G: when S holds at most 2/3 of the rows, a product with :math:`G_{SS}` reads at most
    4/9 of G's triangle. The gather itself costs about as much as 8 products with G (measured
    at :math:`|S| = 2{,}270` of N = 3,800), so it pays from about a dozen products on; CG on
    the supports that reach it (:func:`_cg_first`) takes about 50 there."""
    return 3 * size <= 2 * N


def _cg_first(size: int, N: int) -> bool:
    r"""Whether :meth:`RowGeometry.min_norm_solve` tries CG before factoring a
    :math:`G_{SS}` of ``size`` rows: when ``_CG_PRODUCTS`` products with the N×N G
    (:math:`2kN^2` flops each, memory-bound) cost at most about half the factor's
    :math:`|S|^3/3` flops, :math:`|S|^3 \ge 6kN^2`."""
    return _CG_PRODUCTS * 6.0 * N * N <= float(size) ** 3


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
