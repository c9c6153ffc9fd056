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
from ._linalg import row_norms
from ._validation import check_array, check_bool, check_int, read_only_state
from .data import TokenData
from .selection import bilinear_logits, check_data, check_selection, scores_full

__all__ = [
    "EQUALITY",
    "MARGIN",
    "ConstraintSet",
    "att_svm_constraints",
    "attention_pattern",
    "map_svm_constraints",
    "pair_constraints",
]

MARGIN = 0
"""Row kind of an inequality :math:`a^\\top W b \\ge c`."""
EQUALITY = 1
"""Row kind of an equality :math:`a^\\top W b = c`."""
NO_TOKEN = -1
r"""``pref`` / ``comp`` of a row that is not a token difference: the zero vector (a sigmoid or
ReLU row :math:`\pm x_{it}`), or both for a linear-attention row :math:`\sum_t \gamma_t x_t`."""


_CHUNK = 8192
"""Rows per chunk of :meth:`ConstraintSet.apply` (bounds its temporaries at ``_CHUNK * d``)."""
_REAL_KINDS = "biuf"
"""numpy dtype kinds :meth:`ConstraintSet.apply` and :meth:`ConstraintSet.adjoint` take
(boolean, integer, float)."""


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

    Raises
    ------
    ProblemError
        When the arrays are not what the attributes above say: A and B real, finite, of one
        shape (N, d) (converted to float64, e.g. from float32), rhs finite of shape (N,), kind
        MARGIN or EQUALITY, the four index arrays integers of shape (N,) within [0, n), [0, K)
        and [0, T) (``pref``, ``comp`` also :data:`NO_TOKEN`), n, K, T non-negative ints. The
        arrays are made read-only.
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

    def __setstate__(self, state: dict[str, Any]) -> None:  # pickle: read-only again
        read_only_state(self, state)

    def __post_init__(self) -> None:
        where = "ConstraintSet"
        A = _array(self.A, f"'A' of {where}", 2, np.float64, finite=True)
        N, d = A.shape
        for name in ("n", "K", "T"):
            object.__setattr__(self, name, check_int(getattr(self, name), name, low=0, where=where))
        checked = {
            "A": A,
            "B": _array(self.B, f"'B' of {where}", 2, np.float64, (N, d), finite=True),
            "kind": check_row_kinds(self.kind, N, where),
            "rhs": _array(self.rhs, f"'rhs' of {where}", 1, np.float64, (N,), finite=True),
            **_row_indices(
                self.seq,
                self.query,
                self.pref,
                self.comp,
                (self.n, self.K, self.T),
                where,
                no_token=True,  # rows that are not token differences (map_svm_constraints)
            ),
        }
        if self.tokens is not None and not isinstance(self.tokens, TokenData):
            raise ProblemError(
                f"'tokens' of {where} must be the svmgeo.TokenData the rows were built from, or "
                f"None; got {type(self.tokens).__name__}."
            )
        if checked["seq"].shape[0] != N:
            raise ProblemError(
                f"'seq', 'query', 'pref' and 'comp' of {where} must have one entry per row of A "
                f"({N}); got {checked['seq'].shape[0]}."
            )
        for name, value in checked.items():
            if value is getattr(self, name) and value.flags.writeable:
                value = value.copy()  # the caller's own array: it stays theirs, and writeable
            object.__setattr__(self, name, value)
            value.flags.writeable = False

    @classmethod
    def _from_checked(cls, **fields: Any) -> ConstraintSet:
        """A set of ``fields`` (every attribute) that its builder has checked and made what the
        attributes say, in arrays of its own (:func:`pair_constraints`): the checks of
        ``__post_init__`` are not run twice. The arrays are made read-only."""
        self = cls.__new__(cls)
        for name, value in fields.items():
            if isinstance(value, np.ndarray):
                value.flags.writeable = False
            object.__setattr__(self, name, value)
        return self

    @cached_property
    def N(self) -> int:
        """Number of rows (read once per set: the rows are immutable)."""
        return int(self.A.shape[0])

    @cached_property
    def d(self) -> int:
        """Dimension of the tokens (once per set)."""
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
        (at most N/4 distinct), else None; :meth:`apply` and :meth:`adjoint` use them. Q is
        read-only, as B is."""
        if self.N == 0:
            return None
        _, first, inverse = np.unique(self._query_keys, return_index=True, return_inverse=True)
        Q = self.B[first]
        if 4 * first.size <= self.N and np.array_equal(Q[inverse], self.B):
            return _read_only(Q), inverse.reshape(-1)
        return None

    @cached_property
    def _query_block_size(self) -> int | None:
        """k when :attr:`query_groups` come as consecutive blocks of one size k (as the
        builders make them: then sums over a query's rows are sums over a block); else None."""
        groups = self.query_groups
        if groups is None:
            return None
        nq, inv = groups[0].shape[0], groups[1]
        if inv.size % nq or not np.array_equal(inv, np.repeat(np.arange(nq), inv.size // nq)):
            return None
        return inv.size // nq

    @cached_property
    def _margin_rows(self) -> np.ndarray:
        """:attr:`is_margin`, computed once per set (the rows are immutable), read-only."""
        return _read_only(self.kind == MARGIN)

    @cached_property
    def _bound_scales(self) -> np.ndarray | None:
        r""":math:`s_j = |c_j|`, and :math:`\max_k|c_k|` where :math:`c_j = 0` (the problem's
        scale: W scales with the bounds; 1 when every bound is 0): the scale of each row's
        violation in the certificates, so that scaling every bound and W together changes no
        residual. None when every :math:`s_j` is that one scale, :attr:`_bound_unit`."""
        size = np.abs(self.rhs)
        scales = np.where(size > 0.0, size, self._bound_unit)
        if np.all(scales == self._bound_unit):
            return None
        return _read_only(scales)

    @cached_property
    def _bound_unit(self) -> float:
        r""":math:`\max_j|c_j|`, or 1 when every bound is 0 (or there is no row): the one scale
        of the rows' violations when all are alike (:attr:`_bound_scales`)."""
        return self._largest_bound or 1.0

    @cached_property
    def _positive_rows(self) -> np.ndarray:
        r"""Margin rows with :math:`c_j > 0` (the rows a feasible :math:`W` must meet with a
        positive margin), once per set, read-only."""
        return _read_only(self._margin_rows & (self.rhs > 0))

    @cached_property
    def _zero_rows(self) -> np.ndarray:
        r"""Rows with :math:`a_j b_j^\top = 0` (:math:`a_j = 0` or :math:`b_j = 0` exactly), once
        per set, read-only."""
        return _read_only(~np.any(self.A != 0, axis=1) | ~np.any(self.B != 0, axis=1))

    @cached_property
    def _largest_entries(self) -> tuple[float, float]:
        r"""(:math:`\max|A|`, :math:`\max|B|`), 0 for no rows, once per set."""
        top_a = float(np.max(np.abs(self.A), initial=0.0))
        return top_a, float(np.max(np.abs(self.B), initial=0.0))

    @cached_property
    def _largest_bound(self) -> float:
        r""":math:`\max_j|c_j|`, 0 for no rows, once per set."""
        return float(np.max(np.abs(self.rhs), initial=0.0))

    @cached_property
    def _row_norms(self) -> tuple[np.ndarray, np.ndarray]:
        r"""(:math:`\|a_j\|`, :math:`\|b_j\|`) of every row, shape (N,) each: computed once per set
        (the rows are immutable), read-only; scaled where numpy's sum of squares would overflow
        or underflow (:func:`~svmgeo._linalg.row_norms`: rows of 1e-200 have a norm)."""
        return _read_only(row_norms(self.A, axis=1)), _read_only(row_norms(self.B, axis=1))

    @property
    def _query_keys(self) -> np.ndarray:
        return self.seq * max(self.K, 1) + self.query

    def apply(self, W: np.ndarray) -> np.ndarray:
        r"""Row values :math:`a_j^\top W b_j`, shape (N,) (through the distinct queries when
        the rows share them, in chunks of ``_CHUNK`` rows: the temporaries stay at
        :math:`O(\texttt{\_CHUNK}\cdot d)` floats, so the matrix-free solver uses it too)."""
        W = np.asarray(W)
        if W.shape != (self.d, self.d) or W.dtype.kind not in _REAL_KINDS:
            raise ProblemError(
                f"ConstraintSet.apply takes a real W of shape ({self.d}, {self.d}); got "
                f"{W.dtype} of shape {W.shape} (prompt rows: pass p e1^T, the W of "
                "att_svm(param='p'))."
            )
        groups = self.query_groups
        if groups is None:
            return np.einsum("jd,jd->j", self.A @ W, self.B)
        Q, inv = groups
        WQ = (np.asarray(W) @ Q.T).T  # (n_queries, d): row i is (W q_i)^T
        if self.N <= _CHUNK:  # one chunk: the loop's einsum on all rows
            return np.einsum("jd,jd->j", self.A, WQ[inv])
        out = np.empty(self.N)
        for lo in range(0, self.N, _CHUNK):
            hi = min(lo + _CHUNK, self.N)
            out[lo:hi] = np.einsum("jd,jd->j", self.A[lo:hi], WQ[inv[lo:hi]])
        return out

    def adjoint(self, lam: np.ndarray) -> np.ndarray:
        r"""The matrix :math:`\sum_j \lambda_j a_j b_j^\top`, shape (d, d) (through the
        distinct queries when the rows share them)."""
        lam = np.asarray(lam)
        if lam.shape != (self.N,) or lam.dtype.kind not in _REAL_KINDS:
            raise ProblemError(
                f"ConstraintSet.adjoint takes one real multiplier per row, shape ({self.N},); "
                f"got {lam.dtype} of shape {lam.shape}."
            )
        groups = self.query_groups
        if groups is None:
            return self.A.T @ (np.asarray(lam)[:, None] * self.B)
        Q, inv = groups
        lam = np.asarray(lam, dtype=float)
        k = self._query_block_size
        if k is not None:  # the same sums, in the same order, as the sparse product below
            return (lam[:, None] * self.A).reshape(Q.shape[0], k, self.d).sum(axis=1).T @ Q
        group_sum = sp.csr_matrix((lam, (inv, np.arange(self.N))), shape=(Q.shape[0], self.N))
        C = np.asarray(group_sum @ self.A)  # (n_queries, d): sum of lambda_j a_j per query
        return C.T @ Q

    def subset(self, rows: Any) -> ConstraintSet:
        """The rows selected by a boolean mask of shape (N,) or an index array in [0, N)."""
        idx = np.asarray(rows)
        if idx.size == 0 and idx.dtype != bool:
            idx = idx.astype(np.int64).reshape(0)  # [] selects no row
        if idx.dtype == bool:
            if idx.shape != (self.N,):
                raise ProblemError(
                    f"ConstraintSet.subset takes a boolean mask of shape ({self.N},); got shape "
                    f"{idx.shape}."
                )
        elif (
            not np.issubdtype(idx.dtype, np.integer)
            or idx.ndim != 1
            or (idx.size and not (idx.min() >= 0 and idx.max() < self.N))
        ):
            raise ProblemError(
                f"ConstraintSet.subset takes a boolean mask or a 1-D array of row indices in "
                f"[0, {self.N}); got {idx.dtype} of shape {idx.shape}"
                + (
                    f", indices {idx.min()} to {idx.max()}."
                    if idx.size and idx.ndim and np.issubdtype(idx.dtype, np.integer)
                    else "."
                )
            )
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


def _read_only(x: np.ndarray) -> np.ndarray:
    """``x``, no longer writeable (a value cached on an immutable set)."""
    x.flags.writeable = False
    return x


_ROWS_HINT = (
    "A and B hold the rows a_j, b_j (shape (N, d), finite), rhs the right-hand sides c_j "
    "(shape (N,), finite); build rows from data with svmgeo.pair_constraints."
)


def _array(
    value: Any,
    name: str,
    ndim: int,
    dtype: type,
    shape: tuple[int, ...] | None = None,
    *,
    finite: bool = False,
) -> np.ndarray:
    """:func:`~svmgeo._validation.check_array`, with a fast path for an array that already is
    what it asks (a set is built per trial in sweeps and LOT searches): of ``dtype``, rank and
    ``shape`` (made C-contiguous), and finite (``np.isfinite`` of every entry, which cannot
    overflow: the sum it took before session 52 warned "overflow encountered in reduce" at
    bounds of 1.7e308, and ``np.errstate`` around it cost 12 % of a set's construction)."""
    if (
        type(value) is np.ndarray
        and value.dtype == dtype
        and value.ndim == ndim
        and (shape is None or value.shape == shape)
        and (not finite or np.isfinite(value).all())
    ):
        return np.ascontiguousarray(value)  # the array itself when it is contiguous
    return check_array(value, name, ndim=ndim, shape=shape, dtype=dtype, finite=finite,
                       hint=_ROWS_HINT)  # fmt: skip


def _one_or_per_row(
    value: Any, name: str, N: int, where: str, *, dtype: type = np.float64, hint: str = ""
) -> np.ndarray:
    """``value``, one entry or one per row, as a read-only view of shape (N,), checked by
    :func:`check_array` (finite, of ``dtype``); else a :class:`ProblemError` naming ``where``."""
    given = check_array(value, f"'{name}' of {where}", ndim=(0, 1), dtype=dtype, hint=hint)
    if given.ndim == 1 and given.shape[0] not in (1, N):
        raise ProblemError(
            f"'{name}' of {where} must be one entry or one per row, shape ({N},); got shape "
            f"{given.shape}."
        )
    return np.broadcast_to(given, (N,))


def check_row_kinds(kind: Any, N: int, where: str) -> np.ndarray:
    """``kind`` as int8 of shape (N,) (a scalar is broadcast), every entry :data:`MARGIN` or
    :data:`EQUALITY`; else a :class:`ProblemError` naming ``where``."""
    if isinstance(kind, np.ndarray) and kind.dtype == np.int8 and kind.shape == (N,):
        kinds = kind
    elif isinstance(kind, (int, np.integer)) and not isinstance(kind, bool) and kind in (0, 1):
        kinds = np.full(N, kind, dtype=np.int8)  # MARGIN or EQUALITY for every row
    else:  # int64: checked before the cast to int8
        kinds = _one_or_per_row(kind, "kind", N, where, dtype=np.int64)
    if N and not (kinds.min() >= MARGIN and kinds.max() <= EQUALITY):  # the kinds are 0 and 1
        bad = kinds[(kinds != MARGIN) & (kinds != EQUALITY)][0]
        raise ProblemError(
            f"'kind' of {where} must hold svmgeo.MARGIN ({MARGIN}) or svmgeo.EQUALITY ({EQUALITY}) "
            f"per row; got {int(bad)}."
        )
    return kinds if kinds.dtype == np.int8 else kinds.astype(np.int8)


def _row_indices(
    seq: Any,
    query: Any,
    pref: Any,
    comp: Any,
    sizes: tuple[int, int, int],
    where: str,
    *,
    no_token: bool = False,
) -> dict[str, np.ndarray]:
    """The rows' (sequence, query, preferred, competing) indices as int64 arrays of one length,
    each within its range (``sizes`` = (n, K, T): sequences, queries, tokens; with
    ``no_token``, ``pref`` and ``comp`` may also be :data:`NO_TOKEN`); else a
    :class:`ProblemError` naming the argument and ``where``."""
    n, K, T = sizes
    named = {
        "seq": (seq, n, "n"),
        "query": (query, K, "K"),
        "pref": (pref, T, "T"),
        "comp": (comp, T, "T"),
    }
    out: dict[str, np.ndarray] = {}
    for name, (value, size, label) in named.items():
        idx = _array(value, f"{name!r} of {where}", 1, np.int64)
        if out and idx.shape[0] != out["seq"].shape[0]:
            raise ProblemError(
                f"'seq', 'query', 'pref' and 'comp' of {where} must have one entry per row (equal "
                f"lengths); got {name} of length {idx.shape[0]} against seq's "
                f"{out['seq'].shape[0]}."
            )
        low = NO_TOKEN if no_token and name in ("pref", "comp") else 0
        if idx.size and not (idx.min() >= low and idx.max() < size):
            bad = idx[(idx < low) | (idx >= size)][0]
            raise ProblemError(
                f"{name!r} of {where} must index [0, {label}) = [0, {size}); got {int(bad)}."
                + (" Negative indices do not count from the end here." if bad < 0 else "")
            )
        out[name] = idx
    return out


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
    where = "pair_constraints"
    data = check_data(data, where)
    given = {"seq": seq, "query": query, "pref": pref, "comp": comp}
    indices = {  # arrays of the set's own: the caller's stay theirs, and writeable
        name: idx.copy() if idx is given[name] else idx
        for name, idx in _row_indices(seq, query, pref, comp, (data.n, data.K, data.T),
                                      where).items()
    }  # fmt: skip
    seq, query, pref, comp = indices["seq"], indices["query"], indices["pref"], indices["comp"]
    N = seq.shape[0]
    kinds = check_row_kinds(kind, N, where).copy()
    if rhs is None:
        c = np.where(kinds == MARGIN, 1.0, 0.0)
    else:
        c = _one_or_per_row(rhs, "rhs", N, where, hint=_ROWS_HINT).copy()
    A = data.X[seq, pref] - data.X[seq, comp]
    B = data.queries[seq, query]
    # finite: TokenData keeps ||x|| and ||z|| <= 1e151, so no difference of tokens overflows
    return ConstraintSet._from_checked(
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
    a = check_selection(check_data(data, "att_svm_constraints"), alpha)
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
            "must be nonempty (Gen-SVM separates O_ik from the rest). Pass allow_full=True "
            "to take such a query with equality rows only (as gen_svm does)."
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
    allow_full = check_bool(allow_full, "allow_full", where="selected_set_constraints")
    S = check_selected(
        check_data(data, "selected_set_constraints"), selected, allow_full=allow_full
    )
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


# -- the SVMs of other attention maps (issue #22) -------------------------------------------
MAP_SVMS = ("linear", "sigmoid", "relu")
"""The attention maps other than softmax with an SVM of their own (:func:`map_svm_constraints`)."""


def _logits(data: TokenData, W: Any) -> np.ndarray:
    r""":math:`u_{ikt} = x_{it}^\top W z_{ik}` of shape (n, K, T) (an array W of shape (d, d))."""
    Wa = np.asarray(W, dtype=float)
    if Wa.shape != (data.d, data.d) or not np.all(np.isfinite(Wa)):
        got = (
            f"shape {Wa.shape}"
            if Wa.shape != (data.d, data.d)
            else f"{np.count_nonzero(~np.isfinite(Wa))} non-finite entries (NaN or inf)"
        )
        raise ProblemError(
            f"pattern= given as W must be a finite array of shape ({data.d}, {data.d}); got "
            f"{got}. Pass the W of a run (run.W), the run itself, or a sign array."
        )
    return bilinear_logits(data, Wa)


def check_map_svm(attention: Any, where: str, *, softmax: bool = False) -> None:
    """A ProblemError unless ``attention`` names a map with an SVM (:data:`MAP_SVMS`, and
    ``"softmax"`` where ``softmax``), saying why the others have none."""
    maps = ("softmax", *MAP_SVMS) if softmax else MAP_SVMS
    if isinstance(attention, str) and attention in maps:
        return
    hint = (
        "softmax's SVM is Att-SVM: att_svm_constraints(data, alpha)"
        if attention == "softmax"
        else "normalized linear attention u / 1^T u is scale-invariant in W, so no margin "
        "grows and there is no SVM limit"
        if attention == "normalized_linear"
        else "unknown map"
    )
    raise ProblemError(
        f"The 'attention' parameter of {where} must be one of {', '.join(map(repr, maps))}; "
        f"got {attention!r} ({hint})."
    )


def attention_pattern(data: TokenData, attention: str, pattern: Any = None) -> np.ndarray:
    r"""The sign pattern an attention map's SVM is built on, shape (n, K, T), entries in
    {-1, 0, +1} (0: no row for that key).

    * ``"sigmoid"``: :math:`\pi_{ikt}`; ``pattern=None`` takes the pull
      :math:`\pi = \mathrm{sign}\,\gamma_{ikt}` (the sign :math:`\partial(Y f)/\partial u_{ikt}`
      has), a W (or a run with ``.W``) the signs :math:`\mathrm{sign}(x_{it}^\top W z_{ik})`
      reached, an array of shape (n, T) or (n, K, T) the signs themselves.
    * ``"relu"``: +1 on the active keys :math:`u_{ikt} > 0`, -1 on the others; it needs a W,
      a run or a boolean / sign array (there is no default: the active set is where training
      ended).

    Keys hidden from the query and keys with :math:`\gamma_{ikt} = 0` (no pull: the risk does
    not depend on them) get 0.
    """
    gamma = scores_full(data)
    live = data.visible & (gamma != 0.0)
    if pattern is None:
        if attention == "relu":
            raise ProblemError(
                "attention='relu' needs the active pattern where training ended: pass "
                "pattern=run (a GDRun of train(..., attention='relu')), pattern=run.W, or a "
                "boolean array of shape (n, T) / (n, K, T) (True = active key)."
            )
        return np.where(live, np.sign(gamma), 0.0)
    W = getattr(pattern, "W", pattern)
    arr = np.asarray(W)
    signs_shape = arr.shape in ((data.n, data.T), (data.n, data.K, data.T))
    as_signs = arr.dtype == bool or (
        W is pattern and signs_shape and bool(np.all(np.isin(arr, (-1, 0, 1))))
    )  # a run's W is a W
    if as_signs and arr.dtype != bool and arr.shape == (data.d, data.d):
        raise ProblemError(
            f"pattern of shape {arr.shape} with entries in {{-1, 0, 1}} reads both as a W "
            f"(d, d) and as signs (n, T) here. Pass the run itself (pattern=run) for its W, or "
            f"the signs with shape ({data.n}, {data.K}, {data.T}) or as booleans."
        )
    if attention == "relu" and as_signs and arr.dtype != bool and np.all(np.isin(arr, (0, 1))):
        arr = arr.astype(bool)  # (u > 0).astype(int): 1 active, 0 inactive (ReLU has no "no row")
    if arr.ndim == 2 and arr.shape == (data.d, data.d) and not as_signs:
        u = _logits(data, arr)
        if np.any(live & (u == 0.0)):
            i, k, t = (int(j) for j in np.argwhere(live & (u == 0.0))[0])
            raise ProblemError(
                f"pattern: at the given W key {t} of query {k} of sequence {i} has logit 0, so "
                "its sign is undefined. Pass a sign array instead."
            )
        signs = np.sign(u)
    else:
        if arr.dtype == bool:
            arr = np.where(arr, 1.0, -1.0)
        arr = np.asarray(arr, dtype=float)
        if arr.ndim == 2 and arr.shape == (data.n, data.T):  # shared by the K queries
            arr = np.broadcast_to(arr[:, None, :], (data.n, data.K, data.T))
        want = f"({data.n}, {data.T})" if data.K == 1 else f"({data.n}, {data.K}, {data.T})"
        if arr.shape != (data.n, data.K, data.T) or not np.all(np.isin(arr, (-1.0, 0.0, 1.0))):
            other = np.unique(arr[~np.isin(arr, (-1.0, 0.0, 1.0))])[:5].tolist()
            got = (
                f"an array of shape {np.shape(pattern)}"
                if arr.shape != (data.n, data.K, data.T)
                else f"the shape {np.shape(pattern)}, with entries other than -1, 0 and 1: {other}"
            )
            raise ProblemError(
                f"pattern must be a W of shape ({data.d}, {data.d}), a run, or an array of "
                f"signs (+1, -1; 0: no row) or booleans of shape {want}; got {got}."
            )
        signs = arr
        if attention == "relu" and np.any(live & (signs == 0.0)):
            raise ProblemError(
                "pattern for attention='relu' has 0 on a key that pulls (a visible key with "
                "gamma != 0): ReLU's SVM has a row for every such key, +1 active, -1 inactive. "
                "Pass a boolean array (True = active) or signs +1 / -1."
            )
    return np.where(live, signs, 0.0)


def rows_without_tokens(
    A: np.ndarray, B: np.ndarray, kind: np.ndarray, rhs: np.ndarray
) -> ConstraintSet:
    r"""Rows :math:`a_j^\top W b_j \ge c_j` (or :math:`= c_j`, by ``kind``) from raw arrays A, B
    of shape (N, d), one sequence of two tokens per row (compared token 1 against token 0):
    hand-built rows, or vector rows :math:`u_j^\top w` with :math:`b_j = e_1`, that come from
    no attention data."""
    A = np.asarray(A, dtype=float)
    N = A.shape[0]
    zero = np.zeros(N, dtype=np.int64)
    return ConstraintSet(A=A, B=np.asarray(B, dtype=float), kind=kind, rhs=rhs,
                         seq=np.arange(N), query=zero, pref=zero, comp=zero + 1, n=N, K=1,
                         T=2)  # fmt: skip


def _rows(
    data: TokenData, A: np.ndarray, i: np.ndarray, k: np.ndarray, pref: np.ndarray,
    comp: np.ndarray, rhs: np.ndarray,
) -> ConstraintSet:  # fmt: skip
    N = A.shape[0]
    return ConstraintSet(
        A=np.ascontiguousarray(A, dtype=float).reshape(N, data.d),
        B=np.ascontiguousarray(data.queries[i, k], dtype=float).reshape(N, data.d),
        kind=np.full(N, MARGIN, dtype=np.int8),
        rhs=np.asarray(rhs, dtype=float),
        seq=np.asarray(i, dtype=np.int64),
        query=np.asarray(k, dtype=np.int64),
        pref=np.asarray(pref, dtype=np.int64),
        comp=np.asarray(comp, dtype=np.int64),
        n=data.n,
        K=data.K,
        T=data.T,
        tokens=None,  # rows are not token differences: exact proofs read A itself
    )


def map_svm_constraints(data: TokenData, attention: str, pattern: Any = None) -> ConstraintSet:
    r"""Rows of the SVM an attention map's gradient descent is predicted to reach.

    With :math:`Y_{ik} f_{ik}(W) = \sum_t \gamma_{ikt}\,\varphi_t(X_i W z_{ik})` (linear head):

    * ``"linear"`` (:math:`\varphi(u) = u`): one row per query,
      :math:`(\sum_t \gamma_{ikt} x_{it})^\top W z_{ik} \ge 1` (``pref = comp = -1``).
      :math:`Y f` is linear in W, so this is the hard-margin SVM of a separable linear model.
      On separable data, GD on the logistic or exponential loss converges in direction to it
      (a theorem: Soudry et al. 2018, for plain GD with a small step :math:`\eta < 2/\beta`,
      :math:`\beta` the smoothness constant of the risk; normalized GD: Nacson et al. 2019,
      for their step rule). svmgeo's constant-step normalized GD is neither rule: measured in
      docs/attention-maps.md.
    * ``"sigmoid"``: one row per key with :math:`\pi_{ikt}\ne 0`,
      :math:`\pi_{ikt}\, x_{it}^\top W z_{ik} \ge 1` (:func:`attention_pattern`;
      ``pref = t`` for +1, ``comp = t`` for -1, the other -1). svmgeo's conjecture, measured
      in docs/attention-maps.md: since :math:`1 - \sigma(u) \approx e^{-u}`, the direction
      tends to this SVM of the final sign pattern.
    * ``"relu"``: at the active pattern :math:`A_{ik}` (keys with :math:`\pi = +1`),
      :math:`Y f` is linear on the cone where the pattern holds, so the KKT points of
      :math:`\min \tfrac12\|W\|^2` s.t. :math:`Y_{ik} f_{ik}(W) \ge 1` with that pattern solve
      the convex QP with rows :math:`(\sum_{t\in A_{ik}} \gamma_{ikt} x_{it})^\top W z_{ik}
      \ge 1` and :math:`\pm x_{it}^\top W z_{ik} \ge 0` (+ on :math:`A_{ik}`, - off it:
      margin rows with right-hand side 0). For a positively homogeneous model and an
      exponential-type loss, once the loss is below a threshold, limit points of the direction
      are KKT points of :math:`\min \tfrac12\|W\|^2` s.t. :math:`Y_{ik} f_{ik}(W) \ge 1` (a
      theorem: Lyu & Li 2020, for gradient flow, and for GD with small steps on smooth models)
      and the direction converges (Ji & Telgarsky 2020, for gradient flow). ReLU attention is
      positively 1-homogeneous in W but not smooth, and svmgeo runs discrete normalized GD:
      its runs fall outside those hypotheses, so for them this is a conjecture, measured in
      docs/attention-maps.md.

    Parameters
    ----------
    data : TokenData
        With a linear head (``v`` or ``scores``): :math:`\gamma_{ikt} = Y_{ik} v^\top u_{it}`.
    attention : {"linear", "sigmoid", "relu"}
    pattern : optional
        The sign / active pattern of ``"sigmoid"`` and ``"relu"`` (see
        :func:`attention_pattern`); not taken by ``"linear"``.

    Returns
    -------
    ConstraintSet
        ``tokens`` is None (the rows are not token differences).
    """
    check_map_svm(attention, "map_svm_constraints")
    gamma = scores_full(check_data(data, "map_svm_constraints"))
    X = np.asarray(data.X)
    vis = data.visible
    if attention == "linear":
        if pattern is not None:
            raise ProblemError(
                "attention='linear' has one SVM (Y f is linear in W); got pattern=. Drop it."
            )
        i, k = (a.reshape(-1) for a in np.indices((data.n, data.K)))
        A = np.einsum("nkt,ntd->nkd", np.where(vis, gamma, 0.0), X).reshape(-1, data.d)
        none = np.full(i.size, NO_TOKEN)
        return _rows(data, A, i, k, none, none, np.ones(i.size))
    pi = attention_pattern(data, attention, pattern)
    i, k, t = np.nonzero(pi)
    sign = pi[i, k, t]
    pref = np.where(sign > 0, t, NO_TOKEN)
    comp = np.where(sign > 0, NO_TOKEN, t)
    A = sign[:, None] * X[i, t]
    if attention == "sigmoid":
        return _rows(data, A, i, k, pref, comp, np.ones(i.size))
    qi, qk = (a.reshape(-1) for a in np.indices((data.n, data.K)))
    active = np.where(vis & (pi > 0), gamma, 0.0)
    Aq = np.einsum("nkt,ntd->nkd", active, X).reshape(-1, data.d)
    none = np.full(qi.size, NO_TOKEN)
    return _rows(
        data,
        np.vstack([Aq, A]),
        np.concatenate([qi, i]),
        np.concatenate([qk, k]),
        np.concatenate([none, pref]),
        np.concatenate([none, comp]),
        np.concatenate([np.ones(qi.size), np.zeros(i.size)]),
    )
