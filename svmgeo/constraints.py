# SPDX-License-Identifier: BSD-3-Clause
r"""Token-pair constraints: the one representation every SVM in svmgeo is built from.

Each row :math:`j` is a bilinear constraint on :math:`W \in \mathbb{R}^{d\times d}`:

.. math::

    \langle W, a_j b_j^\top\rangle = a_j^\top W b_j \;\ge\; c_j \quad\text{(margin row)}
    \qquad\text{or}\qquad a_j^\top W b_j = c_j \quad\text{(equality row)},

with :math:`a_j = x_{i,p} - x_{i,q}` (preferred minus competing token of sequence :math:`i`),
:math:`b_j = z_{ik}` (the query that sees them) and :math:`c_j` = 1 for margin rows
(0 or a log-probability ratio for equality rows). Att-SVM, sequence, causal and masked
variants, and the directional part of Gen-SVM differ only in which rows they generate.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np
import scipy.sparse as sp

from ._errors import ProblemError
from .data import TokenData
from .selection import check_selection

__all__ = ["EQUALITY", "MARGIN", "ConstraintSet", "att_svm_constraints", "pair_constraints"]

MARGIN = 0
"""Row kind of an inequality :math:`a^\\top W b \\ge c`."""
EQUALITY = 1
"""Row kind of an equality :math:`a^\\top W b = c`."""


_CHUNK = 8192
"""Rows per chunk of :meth:`ConstraintSet.apply` (bounds its temporaries at ``_CHUNK * d``)."""


@dataclass(frozen=True, eq=False)
class ConstraintSet:
    r"""A set of token-pair rows :math:`(a_j, b_j, \mathrm{kind}_j, c_j)`.

    Attributes
    ----------
    A, B : ndarray of shape (N, d)
        Row vectors :math:`a_j` and :math:`b_j`.
    kind : ndarray of int8, shape (N,)
        :data:`MARGIN` or :data:`EQUALITY`.
    rhs : ndarray of shape (N,)
        Right-hand sides :math:`c_j`.
    seq, query, pref, comp : ndarray of int, shape (N,)
        For each row: sequence :math:`i`, query :math:`k`, preferred token :math:`p` and
        competing token :math:`q`, so results map back to tokens.
    n, K, T : int
        Sizes of the dataset the rows came from.
    tokens : TokenData or None
        The dataset the rows came from, when known: exact proofs form :math:`a_j` from its
        tokens (the float difference in ``A`` may round).
    """

    A: np.ndarray
    B: np.ndarray
    kind: np.ndarray
    rhs: np.ndarray
    seq: np.ndarray
    query: np.ndarray
    pref: np.ndarray
    comp: np.ndarray
    n: int
    K: int
    T: int
    tokens: TokenData | None = None

    def __post_init__(self) -> None:
        for name in ("A", "B", "kind", "rhs", "seq", "query", "pref", "comp"):
            getattr(self, name).flags.writeable = False

    @property
    def N(self) -> int:
        """Number of rows."""
        return int(self.A.shape[0])

    @property
    def d(self) -> int:
        return int(self.A.shape[1])

    @property
    def is_margin(self) -> np.ndarray:
        """Boolean mask of margin (inequality) rows."""
        return self.kind == MARGIN

    @property
    def n_margin(self) -> int:
        return int(np.count_nonzero(self.kind == MARGIN))

    def gram(self) -> np.ndarray:
        r"""Gram matrix :math:`G_{jk} = \langle a_j b_j^\top, a_k b_k^\top\rangle = (AA^\top)_{jk}(BB^\top)_{jk}`."""
        return (self.A @ self.A.T) * (self.B @ self.B.T)

    @cached_property
    def n_queries(self) -> int:
        """Number of distinct queries :math:`(i, k)` among the rows."""
        return int(np.unique(self._query_keys).size)

    @cached_property
    def query_groups(self) -> tuple[np.ndarray, np.ndarray] | None:
        """(distinct b rows Q, index of each row's b in Q) when the rows share few queries
        (at most N/4 distinct), else None; :meth:`apply` and :meth:`adjoint` use them."""
        if self.N == 0:
            return None
        _, first, inverse = np.unique(self._query_keys, return_index=True, return_inverse=True)
        Q = self.B[first]
        if 4 * first.size <= self.N and np.array_equal(Q[inverse], self.B):
            return Q, inverse.reshape(-1)
        return None

    @property
    def _query_keys(self) -> np.ndarray:
        return self.seq * max(self.K, 1) + self.query

    def apply(self, W: np.ndarray) -> np.ndarray:
        r"""Row values :math:`a_j^\top W b_j`, shape (N,) (through the distinct queries when
        the rows share them, in chunks of ``_CHUNK`` rows: the temporaries stay at
        :math:`O(\texttt{\_CHUNK}\cdot d)` floats, so the matrix-free solver uses it too)."""
        groups = self.query_groups
        if groups is None:
            return np.einsum("jd,jd->j", self.A @ W, self.B)
        Q, inv = groups
        WQ = (np.asarray(W) @ Q.T).T  # (n_queries, d): row i is (W q_i)^T
        out = np.empty(self.N)
        for lo in range(0, self.N, _CHUNK):
            hi = min(lo + _CHUNK, self.N)
            out[lo:hi] = np.einsum("jd,jd->j", self.A[lo:hi], WQ[inv[lo:hi]])
        return out

    def adjoint(self, lam: np.ndarray) -> np.ndarray:
        r"""The matrix :math:`\sum_j \lambda_j a_j b_j^\top`, shape (d, d) (through the
        distinct queries when the rows share them)."""
        groups = self.query_groups
        if groups is None:
            return self.A.T @ (np.asarray(lam)[:, None] * self.B)
        Q, inv = groups
        lam = np.asarray(lam, dtype=float)
        group_sum = sp.csr_matrix((lam, (inv, np.arange(self.N))), shape=(Q.shape[0], self.N))
        C = np.asarray(group_sum @ self.A)  # (n_queries, d): sum of lambda_j a_j per query
        return C.T @ Q

    def subset(self, rows: Any) -> ConstraintSet:
        """The rows selected by a boolean mask or index array."""
        idx = np.asarray(rows)
        return ConstraintSet(
            A=self.A[idx],
            B=self.B[idx],
            kind=self.kind[idx],
            rhs=self.rhs[idx],
            seq=self.seq[idx],
            query=self.query[idx],
            pref=self.pref[idx],
            comp=self.comp[idx],
            n=self.n,
            K=self.K,
            T=self.T,
            tokens=self.tokens,
        )

    def __repr__(self) -> str:
        return (
            f"ConstraintSet(N={self.N}, d={self.d}, margin={self.n_margin}, "
            f"equality={self.N - self.n_margin}, n={self.n}, K={self.K}, T={self.T})"
        )

    def _repr_html_(self) -> str:  # Jupyter: the field table (svmgeo._summary)
        from ._summary import html_summary

        return html_summary(self)


def check_constraint_set(cs: Any, where: str) -> ConstraintSet:
    """``cs`` itself when it is a :class:`ConstraintSet`, else a :class:`ProblemError` naming
    ``where`` (an internal helper of svmgeo, not in ``__all__``)."""
    if not isinstance(cs, ConstraintSet):
        raise ProblemError(
            f"{where} expects a ConstraintSet as 'cs'; got {type(cs).__name__}. Build one with "
            "svmgeo.att_svm_constraints(data, alpha) or svmgeo.pair_constraints(...)."
        )
    return cs


def pair_constraints(
    data: TokenData,
    seq: np.ndarray,
    query: np.ndarray,
    pref: np.ndarray,
    comp: np.ndarray,
    kind: np.ndarray | int = MARGIN,
    rhs: np.ndarray | float | None = None,
) -> ConstraintSet:
    r"""Rows :math:`a = x_{i,p} - x_{i,q}`, :math:`b = z_{ik}` for given index arrays.

    The low-level builder behind every SVM: callers choose which (sequence, query,
    preferred, competing) tuples become rows.

    Parameters
    ----------
    data : TokenData
    seq, query, pref, comp : array of int, shape (N,)
        Sequence, query, preferred token and competing token of each row.
    kind : int or array of int, shape (N,), default MARGIN
        :data:`MARGIN` or :data:`EQUALITY` per row.
    rhs : float or array of shape (N,), optional
        Right-hand sides; default 1 on margin rows and 0 on equality rows.

    Returns
    -------
    ConstraintSet
    """
    seq, query, pref, comp = (
        np.ascontiguousarray(a, dtype=np.int64) for a in (seq, query, pref, comp)
    )
    N = seq.shape[0]
    kinds = np.broadcast_to(np.asarray(kind, dtype=np.int8), (N,)).copy()
    if rhs is None:
        c = np.where(kinds == MARGIN, 1.0, 0.0)
    else:
        c = np.broadcast_to(np.asarray(rhs, dtype=float), (N,)).copy()
    A = data.X[seq, pref] - data.X[seq, comp]
    B = data.queries[seq, query]
    return ConstraintSet(
        A=np.ascontiguousarray(A, dtype=float).reshape(N, data.d),
        B=np.ascontiguousarray(B, dtype=float).reshape(N, data.d),
        kind=kinds,
        rhs=c,
        seq=seq,
        query=query,
        pref=pref,
        comp=comp,
        n=data.n,
        K=data.K,
        T=data.T,
        tokens=data,
    )


def att_svm_constraints(data: TokenData, alpha: Any) -> ConstraintSet:
    r"""Rows of Att-SVM(:math:`\alpha`): :math:`(x_{i\alpha_{ik}} - x_{it})^\top W z_{ik} \ge 1`.

    One margin row for every query :math:`k` of every sequence :math:`i` and every visible
    token :math:`t \ne \alpha_{ik}`. Covers cross- and self-attention, several queries per
    sequence, and causal or general masks.

    Parameters
    ----------
    data : TokenData
    alpha : array of int, shape (n,) or (n, K)
        The selected token of each query (must be visible).

    Returns
    -------
    ConstraintSet
    """
    a = check_selection(data, alpha)
    competing = data.visible.copy()
    np.put_along_axis(competing, a[:, :, None], False, axis=2)
    i, k, t = np.nonzero(competing)
    return pair_constraints(data, i, k, a[i, k], t)


def check_selected(
    data: TokenData, selected: Any, name: str = "selected", *, allow_full: bool = False
) -> np.ndarray:
    r"""Validate selected sets :math:`O_{ik}` and return them as a bool array of shape (n, K, T).

    Accepts shape ``(n, T)`` when ``K == 1`` and ``(n, K, T)`` always. Each :math:`O_{ik}` must
    be nonempty, hold visible tokens only, and leave at least one visible token out (unless
    the query sees a single token, e.g. the first query under a causal mask, as in Att-SVM;
    or with ``allow_full``: such a query then contributes equality rows only).
    """
    S = np.asarray(selected)
    if S.dtype != bool:
        raise ProblemError(
            f"{name} must be a boolean array of shape (n, T) or (n, K, T) (True = selected "
            f"token); got dtype {S.dtype}. Use svmgeo.selected_sets(probs).selected."
        )
    n, K, T = data.n, data.K, data.T
    if S.ndim == 2 and K == 1 and S.shape == (n, T):
        S = S[:, None, :]
    elif S.shape != (n, K, T):
        want = f"({n}, {T})" if K == 1 else f"({n}, {K}, {T})"
        raise ProblemError(f"{name} must have shape {want}; got {S.shape}.")
    vis = data.visible
    hidden = S & ~vis
    if np.any(hidden):
        i, k, t = (int(x) for x in np.argwhere(hidden)[0])
        raise ProblemError(
            f"{name} selects token {t} for query {k} of sequence {i}, but the mask hides it."
        )
    empty = ~S.any(axis=2)
    if np.any(empty):
        i, k = (int(x) for x in np.argwhere(empty)[0])
        raise ProblemError(
            f"{name} is empty for query {k} of sequence {i}; every selected set O_ik needs at "
            "least one token."
        )
    full = ~(vis & ~S).any(axis=2) & (vis.sum(axis=2) > 1)
    if np.any(full) and not allow_full:
        i, k = (int(x) for x in np.argwhere(full)[0])
        raise ProblemError(
            f"{name} holds every visible token of query {k} of sequence {i}; the masked set "
            "must be nonempty (Gen-SVM separates O_ik from the rest). gen_svm accepts it "
            "(equality rows only for that query)."
        )
    return np.ascontiguousarray(S)


def selected_set_constraints(
    data: TokenData, selected: Any, *, allow_full: bool = False
) -> ConstraintSet:
    r"""Rows of Gen-SVM's directional problem for selected sets :math:`O_{ik}`.

    .. math::

        (x_{it_0} - x_{it})^\top W z_{ik} = 0 \quad (t \in O_{ik}\setminus\{t_0\}),
        \qquad (x_{it} - x_{i\tau})^\top W z_{ik} \ge 1 \quad (t \in O_{ik},\ \tau \in \bar O_{ik}),

    with :math:`t_0 = \min O_{ik}` and :math:`\bar O_{ik}` the visible tokens outside
    :math:`O_{ik}`. The equalities against :math:`t_0` span all pairwise equalities
    :math:`(x_{it} - x_{i\tau})^\top W z_{ik} = 0,\ t, \tau \in O_{ik}` (each is a difference
    of two of them), so the feasible set is the SPEC's. Equality rows come first, per query.
    With :math:`|O_{ik}| = 1` these are exactly the rows of Att-SVM.

    Parameters
    ----------
    data : TokenData
    selected : array of bool, shape (n, T) or (n, K, T)
        The selected sets :math:`O_{ik}` (nonempty, not every visible token unless the query
        sees a single token).
    allow_full : bool, default False
        Accept sets holding every visible token (equality rows only for that query).

    Returns
    -------
    ConstraintSet
    """
    S = check_selected(data, selected, allow_full=allow_full)
    masked = data.visible & ~S
    rows: list[tuple[int, int, int, int, int]] = []  # (seq, query, pref, comp, kind)
    for i in range(data.n):
        for k in range(data.K):
            O = np.flatnonzero(S[i, k]).tolist()
            Ob = np.flatnonzero(masked[i, k]).tolist()
            rows += [(i, k, O[0], t, EQUALITY) for t in O[1:]]
            rows += [(i, k, t, tau, MARGIN) for t in O for tau in Ob]
    r = np.asarray(rows, dtype=np.int64).reshape(-1, 5)
    return pair_constraints(data, r[:, 0], r[:, 1], r[:, 2], r[:, 3], kind=r[:, 4])
