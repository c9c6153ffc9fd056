# SPDX-License-Identifier: BSD-3-Clause
r"""Token datasets: :class:`TokenData`, the paper's random generator, and ``.npz`` I/O.

A dataset holds :math:`n` sequences :math:`X_i \in \mathbb{R}^{T\times d}`, labels, a linear
head :math:`v`, and for every sequence :math:`K` queries :math:`z_{ik}` that attend over the
tokens of :math:`X_i`:

* cross-attention: the queries :math:`Z` are given (shape ``(n, d)`` or ``(n, K, d)``);
* self-attention: ``query=q`` uses :math:`z_i = x_{iq}` (one query per sequence);
* sequence output: ``query="all"`` uses :math:`z_{ik} = x_{ik}` (:math:`K = T`);
* prompt attention (``param="p"``, logits :math:`X_i p`): neither ``Z`` nor ``query``.

A mask :math:`M \in \{0, 1\}^{K\times T}` hides keys from queries (``"causal"``:
:math:`M_{kt} = [t \le k]`).
"""

from __future__ import annotations

import os
import re
from typing import Any, Literal

import numpy as np

from ._errors import ProblemError
from ._validation import (
    check_array,
    check_int,
    check_query,
    check_real,
    check_scale,
    check_seed,
    npz_entry,
    npz_path,
    open_npz,
    read_only_state,
)

__all__ = ["TokenData", "load_data", "random_data", "save_data"]

QuerySpec = int | Literal["all"] | None
MaskSpec = Literal["causal"] | np.ndarray | None


def _frozen(arr: np.ndarray) -> np.ndarray:
    """A read-only copy: the dataset never shares (or locks) the caller's arrays."""
    out = np.array(arr, copy=True, order="C")
    out.flags.writeable = False
    return out


class TokenData:
    r"""A token dataset for attention: sequences, labels, head, queries and mask.

    Parameters
    ----------
    X : array of shape (n, T, d)
        The tokens :math:`x_{it}` of each sequence.
    Y : array of shape (n,) or (n, K), optional
        Labels in :math:`\{-1, +1\}`. Defaults to all :math:`+1`. With several queries a
        ``(n,)`` array gives every query of a sequence the same label.
    v : array of shape (d,), or (d_u,) with ``values``, optional
        Linear head. Token scores :math:`\gamma_{ikt} = Y_{ik}\, v^\top u_{it}` need it unless
        ``scores`` is given.
    Z : array of shape (n, d) or (n, K, d), optional
        Cross-attention queries. At most one of ``Z`` and ``query`` may be given; with
        neither, the data are for prompt attention (``param="p"``: logits :math:`X_i p`, no
        query, :math:`K = 1`), and what needs queries (``param="W"``, ``"KQ"``) raises.
    query : int or "all", optional
        Self-attention: ``q`` uses token ``q`` of each sequence as its query; ``"all"`` uses
        every token as a query (:math:`K = T`).
    mask : "causal" or bool array of shape (K, T) or (n, K, T), optional
        ``mask[k, t]`` is True when query ``k`` sees key ``t``. ``"causal"`` needs
        :math:`K = T`.
    values : array of shape (n, T, d_u), optional
        Head features :math:`u_{it}` (any width :math:`d_u`), read by the head while attention
        scores keys with :math:`x_{it}`: :math:`f = h(U_i^\top \mathrm{softmax}(X_i W z))`, as in
        the companion paper's prompt attention. Defaults to ``X`` (:math:`u_{it} = x_{it}`).
    scores : array of shape (n, T) or (n, K, T), optional
        Token scores :math:`\gamma` given directly (labels already included), for heads
        other than linear or value embeddings other than ``X``. A ``(n, T)`` array is shared
        by all queries of a sequence.

    Raises
    ------
    ProblemError
        For arrays of the wrong shape, non-finite or complex entries, data so large that
        :math:`\max\|x\| \max\|z\| > 10^{151}` or :math:`\max\|u\| > 10^{151}` for the
        head features (their squares, entries of the solvers' Gram matrices and of the logits,
        would overflow float64), labels outside
        :math:`\{-1, +1\}`, or a mask that hides every key from some query.

    Notes
    -----
    The dataset holds read-only copies of the arrays passed in; the caller's arrays are left
    as they were.

    Attributes
    ----------
    n, T, d, K : int
        Sizes. ``K`` is 1 for one query per sequence.
    single_query : bool
        True for one query per sequence; selections then have shape ``(n,)``.
    has_queries : bool
        False for prompt-attention data (neither ``Z`` nor ``query``).
    queries : ndarray of shape (n, K, d)
        The query vectors :math:`z_{ik}`, whatever the attention type (a ProblemError for
        prompt-attention data without queries; see ``has_queries``).
    labels : ndarray of shape (n, K)
        :math:`Y_{ik}`.
    visible : ndarray of shape (n, K, T)
        Which keys each query sees (all True without a mask).

    Examples
    --------
    >>> import numpy as np, svmgeo as sg
    >>> X = np.random.default_rng(0).normal(size=(3, 4, 5))
    >>> data = sg.TokenData(X, v=np.ones(5), query=0)
    >>> data.n, data.T, data.d, data.K
    (3, 4, 5, 1)
    """

    def __setstate__(self, state: dict[str, Any]) -> None:  # pickle: read-only again
        read_only_state(self, state)

    def __init__(
        self,
        X: Any,
        *,
        Y: Any = None,
        v: Any = None,
        Z: Any = None,
        query: QuerySpec = None,
        mask: MaskSpec | Any = None,
        values: Any = None,
        scores: Any = None,
    ) -> None:
        X = check_array(X, "X", ndim=3, hint="Use X of shape (n_sequences, T_tokens, d_features).")
        n, T, d = X.shape
        if n < 1 or T < 1 or d < 1:
            raise ProblemError(f"X must have n, T, d >= 1; got shape {X.shape}.")
        self._X = _frozen(X)

        # queries
        if Z is not None and query is not None:
            raise ProblemError(
                "Give either Z (cross-attention queries) or query (self-attention), not both; "
                f"got Z with shape {np.shape(Z)} and query={query!r}."
            )
        queries: np.ndarray | None
        if Z is None and query is None:  # prompt attention: softmax(X_i p) reads no query
            self._single = True
            self._Z_given: np.ndarray | None = None
            queries = None
            self._query: QuerySpec = None
        elif Z is not None:
            z_hint = (
                f"Use Z of shape (n_sequences, d_features) = ({n}, {d}) for one query per "
                f"sequence, or ({n}, K, {d}) for K queries per sequence."
            )
            Zc = check_array(Z, "Z", ndim=(2, 3), shape=(n, d), hint=z_hint)
            if Zc.ndim == 3 and (Zc.shape[0] != n or Zc.shape[2] != d):
                raise ProblemError(
                    f"Z must have shape (n, K, d) = ({n}, K, {d}); got {Zc.shape}. "
                    "Its first axis indexes sequences and its last matches X's features."
                )
            if Zc.ndim == 3 and Zc.shape[1] < 1:
                raise ProblemError(f"Z must hold at least one query per sequence; got {Zc.shape}.")
            self._single = Zc.ndim == 2
            self._Z_given = _frozen(Zc)
            queries = Zc[:, None, :] if Zc.ndim == 2 else Zc
            self._query = None
        elif query == "all":
            self._single = False
            self._Z_given = None
            queries = X
            self._query = "all"
        else:
            q = int(check_query(query, T, "TokenData"))  # not "all": handled above
            self._single = True
            self._Z_given = None
            queries = X[:, q : q + 1, :]
            self._query = q
        # each factor on its own, and with the queries their product: the Gram matrices hold
        # ||x||^2 and ||z||^2 apart, the logits x^T W z
        check_scale(X, "X", "TokenData")
        if queries is None:
            self._queries: np.ndarray | None = None
            K = 1
        else:
            if Z is not None:
                check_scale(queries, "Z", "TokenData")
            check_scale(X, "X", "TokenData", times=(queries, "Z" if Z is not None else "X"))
            self._queries = _frozen(np.ascontiguousarray(queries))
            K = int(self._queries.shape[1])
        self._K = K

        # labels
        if Y is None:
            labels = np.ones((n, K))
        else:
            Yc = check_array(Y, "Y", ndim=(1, 2), hint="Labels are one per sequence or per query.")
            y_fix = (
                f"Give one label per sequence, shape ({n},), or one per query, shape ({n}, {K}) "
                f"(K = {K} per sequence)."
            )
            if Yc.ndim == 1:
                if Yc.shape[0] != n:
                    raise ProblemError(
                        f"Y must have shape ({n},) or ({n}, {K}); got {Yc.shape}. {y_fix}"
                    )
                labels = np.repeat(Yc[:, None], K, axis=1)
            else:
                if Yc.shape != (n, K):
                    raise ProblemError(
                        f"Y must have shape ({n},) or ({n}, {K}); got {Yc.shape}. {y_fix}"
                    )
                labels = Yc
            bad = ~np.isin(labels, (-1.0, 1.0))
            if np.any(bad):
                where = tuple(int(b) for b in np.argwhere(bad)[0])
                raise ProblemError(
                    f"Y must hold labels in {{-1, +1}}; found {float(labels[where])!r} at index "
                    f"{where}. "
                    "Map 0/1 labels with 2 * y - 1."
                )
        self._Y_given = None if Y is None else _frozen(np.array(Y, dtype=float))
        self._labels = _frozen(np.ascontiguousarray(labels, dtype=float))

        # head features and head
        if values is None:
            self._values_given: np.ndarray | None = None
        else:
            U = check_array(
                values, "values", ndim=3, hint="values are head features of shape (n, T, d_u)."
            )
            if U.shape[:2] != (n, T) or U.shape[2] < 1:
                raise ProblemError(
                    f"values must have shape (n, T, d_u) = ({n}, {T}, d_u) with d_u >= 1, one "
                    f"head feature vector per token of X; got {U.shape}."
                )
            check_scale(U, "values", "TokenData")
            self._values_given = _frozen(U)
        d_u = self.values.shape[2]
        width = "values' last axis" if values is not None else "X's d_features"
        v_hint = (
            f"v is the linear head, one weight per head feature: use v of shape ({d_u},) ({width})."
        )
        self._v = (
            None if v is None else _frozen(check_array(v, "v", ndim=1, shape=(d_u,), hint=v_hint))
        )
        if self._v is not None:
            with np.errstate(over="ignore", invalid="ignore"):
                head = self.values @ self._v
            if not np.all(np.isfinite(head)):  # the scores would be inf: argmax misread
                raise ProblemError(
                    "v makes token scores v.u_it that leave float64 (largest |v| = "
                    f"{float(np.abs(self._v).max()):.3g}, largest |u| = "
                    f"{float(np.abs(self.values).max()):.3g}). Scale v (or the head features) "
                    "down: the scores' argmax and the SVMs do not depend on v's scale."
                )

        # mask
        if mask is None:
            self._mask: np.ndarray | None = None
        elif isinstance(mask, str):
            if mask != "causal":
                raise ProblemError(
                    f"mask must be None, 'causal' or a boolean array; got the string {mask!r}."
                )
            if K != T:
                raise ProblemError(
                    f"mask='causal' needs one query per token (K = T = {T}); got K = {K}. "
                    "Use query='all' or Z of shape (n, T, d) (random_data: query='all' or "
                    "n_queries=T)."
                )
            causal = np.tril(np.ones((T, T), dtype=bool))
            self._mask = _frozen(np.ascontiguousarray(np.broadcast_to(causal, (n, K, T))))
        else:
            m_hint = (
                f"mask[k, t] says whether query k sees key t: use shape (K, T) = ({K}, {T}) for "
                f"every sequence, or ({n}, {K}, {T}) per sequence (K = {K} queries, T = {T} tokens)."
            )
            M = check_array(mask, "mask", ndim=(2, 3), dtype=bool, hint=m_hint)
            if M.ndim == 2:
                if M.shape != (K, T):
                    raise ProblemError(
                        f"mask must have shape ({K}, {T}) or ({n}, {K}, {T}); got {M.shape}. "
                        f"{m_hint}"
                    )
                M = np.broadcast_to(M, (n, K, T))
            elif M.shape != (n, K, T):
                raise ProblemError(
                    f"mask must have shape ({K}, {T}) or ({n}, {K}, {T}); got {M.shape}. {m_hint}"
                )
            empty = ~M.any(axis=2)
            if np.any(empty):
                i, k = (int(x) for x in np.argwhere(empty)[0])
                raise ProblemError(
                    f"mask hides every key from query {k} of sequence {i}; each query must see "
                    "at least one token."
                )
            self._mask = _frozen(np.ascontiguousarray(M))

        # explicit scores
        if scores is None:
            self._scores: np.ndarray | None = None
        else:
            s_hint = (
                f"Give one score per token: shape (n, T) = ({n}, {T}), shared by a sequence's "
                f"queries, or ({n}, {K}, {T}), one row per query (K = {K})."
            )
            S = check_array(scores, "scores", ndim=(2, 3), hint=s_hint)
            if S.ndim == 2:
                if S.shape != (n, T):
                    raise ProblemError(
                        f"scores must have shape ({n}, {T}) or ({n}, {K}, {T}); got {S.shape}. "
                        f"{s_hint}"
                    )
                S = np.repeat(S[:, None, :], K, axis=1)
            elif S.shape != (n, K, T):
                raise ProblemError(
                    f"scores must have shape ({n}, {T}) or ({n}, {K}, {T}); got {S.shape}. {s_hint}"
                )
            if self._v is not None:  # one source of truth for the scores gamma
                linear = self._labels[:, :, None] * (self.values @ self._v)[:, None, :]
                # each query on its own scale: one of small scores can be reversed far below
                # the dataset's largest score
                scale = np.maximum(np.abs(linear).max(axis=2), np.abs(S).max(axis=2))
                scale = np.maximum(scale, 1e-300)[:, :, None]
                if not np.all(np.abs(S - linear) <= 1e-9 * scale):
                    raise ProblemError(
                        "scores and v disagree: the linear head v gives the scores Y v^T u, which "
                        "differ from the scores given (the selection would follow one and "
                        "gradient descent the other). Give scores alone (selections only) or v "
                        "alone, or scores equal to Y v^T u (u = values, else X)."
                    )
            self._scores = _frozen(np.ascontiguousarray(S))

    # -- sizes -----------------------------------------------------------------------------
    @property
    def X(self) -> np.ndarray:
        """Tokens, shape (n, T, d)."""
        return self._X

    @property
    def n(self) -> int:
        return int(self._X.shape[0])

    @property
    def T(self) -> int:
        return int(self._X.shape[1])

    @property
    def d(self) -> int:
        return int(self._X.shape[2])

    @property
    def K(self) -> int:
        return self._K

    @property
    def single_query(self) -> bool:
        return self._single

    @property
    def selection_shape(self) -> tuple[int, ...]:
        """Shape of a token selection for this dataset: ``(n,)`` or ``(n, K)``."""
        return (self.n,) if self._single else (self.n, self.K)

    # -- data ------------------------------------------------------------------------------
    @property
    def has_queries(self) -> bool:
        """False for prompt-attention data, built with neither ``Z`` nor ``query``."""
        return self._queries is not None

    def _need_queries(self) -> np.ndarray:
        if self._queries is None:
            raise ProblemError(
                "this TokenData has no queries: it was built without Z or query, as data for "
                "prompt attention (param='p', attention softmax(X_i p)), which reads none. "
                "The computation asked for (the query-dependent W of Att-SVM, train/verify with "
                "param='W' or 'KQ', study, ...) needs the queries z_ik: build the data with "
                "Z=... (cross-attention) or query=... (self-attention), or use param='p'."
            )
        return self._queries

    @property
    def queries(self) -> np.ndarray:
        """Query vectors :math:`z_{ik}`, shape (n, K, d).

        Raises
        ------
        ProblemError
            For prompt-attention data built without queries (see :attr:`has_queries`).
        """
        return self._need_queries()

    @property
    def Z(self) -> np.ndarray:
        """Queries in the user's shape: (n, d) for one query per sequence, else (n, K, d);
        a ProblemError, as :attr:`queries`, for prompt-attention data without queries."""
        queries = self._need_queries()
        return queries[:, 0, :] if self._single else queries

    @property
    def query(self) -> QuerySpec:
        """The self-attention query position, ``"all"``, or None for cross-attention."""
        return self._query

    @property
    def is_self_attention(self) -> bool:
        return self._query is not None

    @property
    def labels(self) -> np.ndarray:
        """Labels :math:`Y_{ik}`, shape (n, K)."""
        return self._labels

    @property
    def Y(self) -> np.ndarray:
        """Labels in the user's shape: (n,) for one query per sequence, else (n, K)."""
        return self._labels[:, 0] if self._single else self._labels

    @property
    def values(self) -> np.ndarray:
        """Head features :math:`u_{it}`, shape (n, T, d_u): ``values`` if given, else ``X``."""
        return self._X if self._values_given is None else self._values_given

    @property
    def has_values(self) -> bool:
        """True when head features were given apart from the attention tokens ``X``."""
        return self._values_given is not None

    @property
    def d_values(self) -> int:
        """Width :math:`d_u` of the head features (``d`` without ``values``)."""
        return int(self.values.shape[2])

    @property
    def v(self) -> np.ndarray | None:
        """The linear head, shape (d_u,), or None."""
        return self._v

    @property
    def mask(self) -> np.ndarray | None:
        """Visibility mask of shape (n, K, T), or None when every query sees every key."""
        return self._mask

    @property
    def visible(self) -> np.ndarray:
        """Which keys each query sees, shape (n, K, T)."""
        if self._mask is None:
            return np.ones((self.n, self.K, self.T), dtype=bool)
        return self._mask

    @property
    def scores(self) -> np.ndarray | None:
        """Explicit token scores of shape (n, K, T), or None when derived from ``v``."""
        return self._scores

    def __repr__(self) -> str:
        kind = (
            "prompt attention (no queries)"
            if self._queries is None
            else "cross-attention"
            if self._query is None
            else (
                "sequence self-attention"
                if self._query == "all"
                else f"self-attention (query={self._query})"
            )
        )
        extras = []
        if self._mask is not None:
            extras.append("masked")
        if self._values_given is not None:
            extras.append(f"values d_u={self.d_values}")
        if self._scores is not None:
            extras.append("explicit scores")
        extra = (", " + ", ".join(extras)) if extras else ""
        return f"TokenData(n={self.n}, T={self.T}, d={self.d}, K={self.K}, {kind}{extra})"

    # -- I/O -------------------------------------------------------------------------------
    def save(self, path: str | os.PathLike[str]) -> None:
        """Write the dataset to a ``.npz`` file (no pickle). See :func:`load_data`."""
        save_data(self, path)

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> TokenData:
        """Read a dataset written by :meth:`save`."""
        return load_data(path)


_FORMAT_VERSION = 1

#: The format-version entry of each kind of svmgeo data file -> (what the file holds, the
#: method and the function that write it, the function that reads it): a loader given the
#: other kind's file names the right reader.
ARCHIVE_KINDS = {
    "svmgeo_format": ("a token dataset (TokenData)", "TokenData.save", "save_data", "load_data"),
    "svmgeo_next_token_format": (
        "a next-token dataset (NextTokenData)",
        "NextTokenData.save",
        "save_next_token_data",
        "load_next_token_data",
    ),
}


def write_archive(
    arrays: dict[str, np.ndarray], path: str | os.PathLike[str], writer: str, reader: str
) -> None:
    """Write ``arrays`` to ``path`` with :func:`numpy.savez` (plain arrays, no pickle), every
    bad path a ProblemError naming ``writer`` (and ``reader``, which reads the file back):
    the file format of :func:`save_data`, shared by
    :func:`~svmgeo.ntp.save_next_token_data` (an internal helper, not in ``__all__``)."""
    if not isinstance(path, (str, os.PathLike)):
        raise ProblemError(
            f"{writer} takes a file path (str or os.PathLike), as {reader} does; got "
            f"{type(path).__name__}."
        )
    if not os.fspath(path):
        raise ProblemError(
            f"The 'path' parameter of {writer} must be a file name; got '' (numpy would write "
            "'.npz' in the working directory). Give a name, e.g. 'data.npz'."
        )
    if os.path.isdir(path):
        raise ProblemError(
            f"{writer}({os.fspath(path)!r}): is a directory (numpy would write "
            f"{os.fspath(path)!r}.npz beside it, which {reader} of the same path does not "
            "read); give a file name, e.g. os.path.join(path, 'data.npz')."
        )
    try:
        np.savez(path, **arrays)  # type: ignore[arg-type]
    except OSError as exc:
        raise ProblemError(
            f"{writer} cannot write {os.fspath(path)!r}: {exc.strerror or exc}. Give a path in "
            "an existing, writable directory."
        ) from exc


def read_archive(
    path: str | os.PathLike[str],
    marker: str,
    version: int,
    required: tuple[str, ...],
    optional: tuple[str, ...] = (),
) -> tuple[str, dict[str, np.ndarray]]:
    """The entries of an svmgeo data file, checked as :func:`load_data` checks a dataset file
    (an internal helper, not in ``__all__``, shared by
    :func:`~svmgeo.ntp.load_next_token_data`).

    The file (``path``, or ``path.npz`` as ``numpy.savez`` wrote it) must be an ``.npz``
    archive of plain arrays holding the integer format version ``marker`` (from 1 to
    ``version``; :data:`ARCHIVE_KINDS` names its writer and reader), every entry of
    ``required`` and no entry outside ``required`` and ``optional``. Returns the opening of
    the reader's messages (``"load_data('file.npz')"``) and the entries but ``marker``; every
    failure is a ProblemError that the reader opens.
    """
    _, method, writer, reader = ARCHIVE_KINDS[marker]
    if not isinstance(path, (str, os.PathLike)):
        raise ProblemError(f"{reader} takes a file path; got {type(path).__name__}.")
    if not os.fspath(path):
        raise ProblemError(
            f"The 'path' parameter of {reader} must be a file name; got '' (it read '.npz' in "
            f"the working directory). Give the file written by {writer}, e.g. 'data.npz'."
        )
    name = npz_path(os.fsdecode(path))  # numpy.savez appends .npz; load the file it wrote
    what = f"{reader}({name!r})"
    if not os.path.exists(name):
        raise ProblemError(f"{what}: no such file. Write a dataset with {method} first.")
    if os.path.isdir(name):
        raise ProblemError(f"{what}: is a directory; give the .npz file written by {writer}.")
    noun = "dataset" if marker == "svmgeo_format" else "next-token dataset"
    kind = f"an svmgeo {noun} (an .npz archive written by {method} / svmgeo.{writer})"
    archive = open_npz(name, what, kind)
    with archive as f:
        if marker not in f.files or any(key not in f.files for key in required):
            expected = ", ".join((marker, *required)) + (" and more" if optional else "")
            said = f"{what}: not {kind}: keys {sorted(f.files)}, expected {expected}."
            for other, (holds, _, _, other_reader) in ARCHIVE_KINDS.items():
                if other != marker and other in f.files:
                    said += f" It holds {holds}: read it with svmgeo.{other_reader}."
            raise ProblemError(said)

        def entry(key: str) -> np.ndarray:
            return npz_entry(f, key, what)

        found = entry(marker)
        if found.shape != () or not np.issubdtype(found.dtype, np.integer):
            raise ProblemError(
                f"{what}: {marker} must be an integer; got {found!r}. The file is damaged."
            )
        if int(found) > version:
            raise ProblemError(
                f"{what}: dataset format version {int(found)}, written by a newer svmgeo; "
                f"this svmgeo reads version {version}. Upgrade svmgeo (pip install -U "
                "svmgeo) to read it."
            )
        if int(found) < 1:  # the first format is 1: no svmgeo wrote a lower one
            raise ProblemError(
                f"{what}: dataset format version {int(found)}, which no svmgeo writes (the "
                f"formats start at 1; this svmgeo reads version {version}): the file "
                f"is damaged or was not written by svmgeo. Write it again with {method} "
                f"(svmgeo.{writer})."
            )
        known = (marker, *required, *optional)
        unknown = sorted(set(f.files) - set(known))
        if unknown:  # a misspelt entry ('y') would be dropped without a word
            raise ProblemError(
                f"{what}: unknown entries {unknown}; a dataset file holds {list(known)}. "
                "Rename them (entries are case-sensitive), or write the file with "
                f"{method}."
            )
        return what, {key: entry(key) for key in f.files if key != marker}


def save_data(data: TokenData, path: str | os.PathLike[str]) -> None:
    """Write ``data`` to ``path`` as a ``.npz`` archive of plain arrays (no pickle).

    The archive holds the integer ``svmgeo_format`` (the format version, 1), ``X``, ``Y``
    and, where the dataset has them, ``v``, ``values``, ``Z`` (cross-attention), ``query``
    (the text ``"all"`` or the token index, e.g. ``"0"``), ``mask`` (bool, shape (n, K, T):
    ``"causal"`` is written as its array) and ``scores``. A file written by hand in this
    layout is read too; there ``mask`` may also be the text ``"causal"``.

    Parameters
    ----------
    data : TokenData
    path : path-like
        Output file (numpy appends ``.npz`` when missing).

    Returns
    -------
    None

    Raises
    ------
    ProblemError
        When ``path`` cannot be written (missing directory, a directory, no permission).
    """
    if not isinstance(data, TokenData):
        raise ProblemError(f"save_data takes a svmgeo.TokenData; got {type(data).__name__}.")
    arrays: dict[str, np.ndarray] = {
        "svmgeo_format": np.array(_FORMAT_VERSION),
        "X": np.asarray(data.X),
        "Y": np.asarray(data.Y),
    }
    if data.v is not None:
        arrays["v"] = np.asarray(data.v)
    if data.has_values:
        arrays["values"] = np.asarray(data.values)
    if data.query is None and data.has_queries:
        arrays["Z"] = np.asarray(data.Z)
    elif data.query is not None:
        arrays["query"] = np.array(str(data.query))
    if data.mask is not None:
        arrays["mask"] = np.asarray(data.mask)
    if data.scores is not None:
        arrays["scores"] = np.asarray(data.scores if not data.single_query else data.scores[:, 0])
    write_archive(arrays, path, "save_data", "load_data")


_OPTIONAL_ENTRIES = ("Y", "v", "Z", "mask", "values", "scores")
"""The arrays of a dataset file passed to :class:`TokenData` as they are (besides X and the
format version; ``query`` is read from its text, ``mask`` from its text where it is one)."""


def load_data(path: str | os.PathLike[str]) -> TokenData:
    """Read a :class:`TokenData` written by :func:`save_data`.

    Parameters
    ----------
    path : path-like
        The ``.npz`` file; as with :func:`save_data`, ``.npz`` may be left out (``path.npz``
        is then read when it exists, as :func:`save_data` wrote it). A file written by hand
        in :func:`save_data`'s layout is read too, ``mask`` the text ``"causal"`` included.

    Returns
    -------
    TokenData

    Raises
    ------
    ProblemError
        When the file is missing or unreadable, is not an svmgeo dataset (not an ``.npz``
        archive, a truncated one, pickled objects, missing or malformed entries, or a
        next-token dataset, which :func:`~svmgeo.load_next_token_data` reads), or carries
        a format version this svmgeo does not read: above this one's (a newer svmgeo wrote
        it), or below 1 (no svmgeo writes it).
    """
    what, entries = read_archive(
        path,
        "svmgeo_format",
        _FORMAT_VERSION,
        required=("X",),
        optional=(*_OPTIONAL_ENTRIES, "query"),
    )
    X = entries.pop("X")
    kwargs: dict[str, Any] = entries
    if "query" in kwargs:
        q = str(kwargs["query"])
        if q != "all" and re.fullmatch(r"-?[0-9]+", q) is None:
            raise ProblemError(f"{what}: entry 'query' must be an integer or 'all'; got {q!r}.")
        kwargs["query"] = "all" if q == "all" else int(q)
    mask = kwargs.get("mask")
    if mask is not None and mask.dtype.kind in "US":  # text, as TokenData(mask="causal") takes
        text = str(mask) if mask.shape == () else None
        if text != "causal":
            raise ProblemError(
                f"{what}: entry 'mask' must be a bool array of shape (K, T) or (n, K, T), or "
                f"the text 'causal'; got {mask!r}. Write it as numpy.savez(..., "
                "mask='causal') or as a bool array (mask[k, t]: query k sees key t)."
            )
        kwargs["mask"] = text
    try:
        return TokenData(X, **kwargs)
    except ProblemError as exc:
        raise ProblemError(f"{what}: {exc}") from exc


def _unit_sphere(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    x = rng.standard_normal(shape)
    return x / np.linalg.norm(x, axis=-1, keepdims=True)


_MAX_RANDOM_FLOATS = 2**33
"""Most float64 entries :func:`random_data` builds (64 GiB): beyond, a clear error instead
of numpy's MemoryError or "array is too big"."""


def random_data(
    n: int,
    T: int,
    d: int,
    *,
    seed: int | np.random.Generator | None = None,
    query: QuerySpec = None,
    n_queries: int = 1,
    mask: MaskSpec | Any = None,
    score_gap: float = 0.0,
    max_tries: int = 1000,
) -> TokenData:
    r"""Draw a random dataset as in the paper's experiments.

    Tokens :math:`x_{it}`, cross-attention queries :math:`z_{ik}` and the head :math:`v` are
    uniform on the unit sphere :math:`S^{d-1}`; labels are uniform in :math:`\{-1, +1\}`.

    Parameters
    ----------
    n, T, d : int
        Number of sequences, tokens per sequence, and feature dimension.
    seed : int or Generator, optional
        Randomness; the same seed gives the same dataset.
    query : int or "all", optional
        None (default) for cross-attention with random queries; an int for self-attention
        with that token as query; ``"all"`` for sequence self-attention (:math:`K = T`).
    n_queries : int, default 1
        Cross-attention only: queries per sequence. 1 gives ``Z`` of shape ``(n, d)``.
    mask : "causal" or bool array, optional
        Passed to :class:`TokenData`.
    score_gap : float, default 0
        Resample a sequence until, for each of its queries, the best visible score exceeds the
        second best by at least ``score_gap`` (so optimal tokens are unique and well separated).
    max_tries : int, default 1000
        Resampling budget per sequence for ``score_gap``.

    Returns
    -------
    TokenData

    Raises
    ------
    ProblemError
        If a size is not positive, or ``score_gap`` cannot be met within ``max_tries``.
    """
    n = check_int(n, "n", low=1, where="random_data")
    T = check_int(T, "T", low=1, where="random_data")
    d = check_int(d, "d", low=1, where="random_data")
    n_queries = check_int(n_queries, "n_queries", low=1, where="random_data")
    score_gap = check_real(score_gap, "score_gap", low=0.0, where="random_data")
    max_tries = check_int(max_tries, "max_tries", low=1, where="random_data")
    if query is not None and n_queries != 1:
        raise ProblemError(
            "n_queries applies to cross-attention only; pass query=None with n_queries."
        )
    if query is not None and not (isinstance(query, str) and query == "all"):
        if isinstance(query, bool) or not isinstance(query, (int, np.integer)):
            raise ProblemError(
                f"The 'query' parameter of random_data must be an int in [-{T}, {T - 1}] or "
                f"'all'; got {query!r}."
            )
        check_int(query, "query", low=-T, high=T - 1, where="random_data")
    rng = check_seed(seed, where="random_data")
    K = T if query == "all" else n_queries
    floats = n * T * d + n * K * (d + 1 + T)  # X, Z, Y and the mask, at 8 bytes each
    if floats > _MAX_RANDOM_FLOATS:
        raise ProblemError(
            f"random_data(n={n}, T={T}, d={d}) would hold about {8 * floats / 2**30:.3g} GiB "
            f"of arrays, beyond the {8 * _MAX_RANDOM_FLOATS / 2**30:.0f} GiB it builds; choose "
            "smaller sizes."
        )
    v = _unit_sphere(rng, (d,))

    def draw() -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
        Xi = _unit_sphere(rng, (T, d))
        Yi = rng.choice([-1.0, 1.0], size=K)
        Zi = None if query is not None else _unit_sphere(rng, (K, d))
        return Xi, Yi, Zi

    X = np.empty((n, T, d))
    Y = np.empty((n, K))
    Z = np.empty((n, K, d))
    # the mask is checked against the data's own (n, K, T), so its errors name the right shapes
    probe = (
        TokenData(np.zeros((n, T, d)), Y=np.ones((n, K)), query=query, mask=mask)
        if (query is not None)
        else TokenData(np.zeros((n, T, d)), Y=np.ones((n, K)), Z=np.zeros((n, K, d)), mask=mask)
    )
    visible = probe.visible
    for i in range(n):
        vis_i = visible[i]
        for _ in range(max_tries):
            Xi, Yi, Zi = draw()
            if score_gap <= 0.0:
                break
            gamma = Yi[:, None] * (Xi @ v)[None, :]
            gamma = np.where(vis_i, gamma, -np.inf)
            top2 = -np.sort(-gamma, axis=1)[:, :2]
            gaps = top2[:, 0] - top2[:, 1] if T > 1 else np.full(K, np.inf)
            gaps = np.where(vis_i.sum(axis=1) < 2, np.inf, gaps)
            if np.all(gaps >= score_gap):
                break
        else:
            raise ProblemError(
                f"random_data could not meet score_gap={score_gap} for sequence {i} within "
                f"max_tries={max_tries} draws; lower score_gap (scores lie in [-1, 1]) or raise "
                "max_tries."
            )
        X[i], Y[i] = Xi, Yi
        if Zi is not None:
            Z[i] = Zi
    Yout = Y[:, 0] if (K == 1 and query != "all") else Y
    if query is not None:
        return TokenData(X, Y=Yout, v=v, query=query, mask=mask)
    return TokenData(X, Y=Yout, v=v, Z=Z[:, 0] if n_queries == 1 else Z, mask=mask)
