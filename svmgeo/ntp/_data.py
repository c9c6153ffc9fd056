# SPDX-License-Identifier: BSD-3-Clause
r"""Next-token data: token ids over a vocabulary with embeddings, and a synthetic generator."""

from __future__ import annotations

import math
import os
from typing import Any

import numpy as np

from .._errors import ProblemError
from .._validation import (
    check_array,
    check_bool,
    check_int,
    check_scale,
    check_seed,
    max_row_norm,
)
from ..data import read_archive, write_archive

__all__ = [
    "NextTokenData",
    "check_data",
    "check_weights",
    "load_next_token_data",
    "random_next_token_data",
    "save_next_token_data",
]

_MAX_RANDOM_VOCABULARY = 2**14
"""Largest V of :func:`random_next_token_data` (its V x V table of tiers: 1 GiB at int32)."""

# the largest ||W||_F of the next-token risk (trained, or taken): logits e_x^T W e_k stay
# below 1e300 for embeddings within the data's scale check (max ||e||^2 <= 1e151)
_NORM_LIMIT = 1e149


class NextTokenData:
    r"""Next-token samples over a vocabulary with embeddings.

    Parameters
    ----------
    sequences : sequence of sequences of int, or int array of shape (n, T)
        Token ids in ``[0, V)``; the last token of each sequence is its query. Lengths may
        differ (at least 1): pass them as a list of 1-D sequences. An (n, T) array is n
        sequences of length T, without padding (the -1 padding of :attr:`tokens` is refused:
        ``[row[row >= 0] for row in data.tokens]`` gives the sequences back).
    labels : array of int, shape (n,)
        Next-token labels; each must occur in its sequence (attention can only retrieve
        tokens of the input).
    embeddings : array of shape (V, d)
        Row ``v`` embeds token ``v``; also the output layer of the cross-entropy loss.

    Attributes
    ----------
    n, V, d, T : int
        Samples, vocabulary size, embedding dimension, longest sequence.
    tokens : ndarray of int, shape (n, T)
        Sequences padded with -1 on the left (the last token stays at position T - 1).
    valid : ndarray of bool, shape (n, T)
        True on real tokens.
    last : ndarray of int, shape (n,)
        The query (last) token of each sequence.
    """

    def __init__(self, sequences: Any, labels: Any, embeddings: Any) -> None:
        expected = (
            "embeddings must be a finite float array of shape (V, d) with V >= 2 tokens and d >= 1"
        )
        fix = "Pass one row of real numbers per vocabulary token."
        try:
            E = check_array(embeddings, "embeddings", ndim=2)
        except ProblemError as exc:
            raise ProblemError(f"{expected}; {exc} {fix}") from None
        if E.shape[0] < 2 or E.shape[1] < 1:
            raise ProblemError(f"{expected}; got shape {E.shape}. {fix}")
        # logits e_x^T W e_k, the cross-entropy outputs and the Graph-SVM Gram square ||e||
        check_scale(E, "embeddings", "NextTokenData", times=(E, "embeddings"))
        V = E.shape[0]
        try:
            seqs = [np.asarray(s) for s in sequences]
        except (TypeError, ValueError) as exc:  # not iterable, or a ragged nested sequence
            raise ProblemError(
                "sequences must be a sequence of sequences of int token ids (or an int array of "
                f"shape (n, T)); got {type(sequences).__name__} ({exc}). Pass e.g. "
                "[[0, 3, 1], [2, 1]]."
            ) from None
        if not seqs:
            raise ProblemError("sequences is empty; pass at least one sequence of token ids.")
        for i, s in enumerate(seqs):
            if s.ndim != 1 or s.size == 0 or not np.issubdtype(s.dtype, np.integer):
                raise ProblemError(
                    f"sequences[{i}] must be a nonempty 1-D sequence of int token ids; got {s!r}."
                )
            if s.min() < 0 or s.max() >= V:
                padded = (
                    " -1 is the left padding of NextTokenData.tokens, which only "
                    "load_next_token_data reads back; pass sequences of different lengths "
                    "as a list of 1-D sequences without padding, e.g. "
                    "[row[row >= 0] for row in data.tokens]."
                    if np.any(s == -1)
                    else ""
                )
                raise ProblemError(
                    f"sequences[{i}] holds token ids outside [0, {V}) (V = embeddings.shape[0]): "
                    f"{s.tolist()}.{padded}"
                )
        y = np.asarray(labels)
        if y.shape != (len(seqs),) or not np.issubdtype(y.dtype, np.integer):
            raise ProblemError(
                f"labels must be an int array of shape ({len(seqs)},) (one next token per "
                f"sequence); got {y.dtype} array of shape {y.shape}."
            )
        for i, (s, lab) in enumerate(zip(seqs, y, strict=True)):
            if not np.any(s == lab):
                raise ProblemError(
                    f"labels[{i}] = {int(lab)} does not occur in sequences[{i}] = {s.tolist()}; "
                    "the token-priority graphs (and attention's retrieval) need the label among "
                    "the input tokens. Drop the sample or add the token."
                )
        T = max(s.size for s in seqs)
        tokens = np.full((len(seqs), T), -1, dtype=np.int64)
        for i, s in enumerate(seqs):
            tokens[i, T - s.size :] = s
        self.embeddings = E
        self.tokens = tokens
        self.valid = tokens >= 0
        self.labels = y.astype(np.int64)
        self.last = tokens[:, -1].copy()
        self.n, self.T = tokens.shape
        self.V, self.d = E.shape
        for a in (self.embeddings, self.tokens, self.valid, self.labels, self.last):
            a.flags.writeable = False

    def __repr__(self) -> str:
        return f"NextTokenData(n={self.n}, T={self.T}, V={self.V}, d={self.d})"

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write the samples to a ``.npz`` file (no pickle). See :func:`save_next_token_data`."""
        save_next_token_data(self, path)

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> NextTokenData:
        """Read samples written by :meth:`save`. See :func:`load_next_token_data`."""
        return load_next_token_data(path)


_FORMAT_VERSION = 1


def save_next_token_data(data: NextTokenData, path: str | os.PathLike[str]) -> None:
    """Write ``data`` to ``path`` as a ``.npz`` archive of plain arrays (no pickle), as
    :func:`svmgeo.save_data` writes a :class:`~svmgeo.TokenData`.

    The archive holds the integer ``svmgeo_next_token_format`` (the format version, 1),
    ``tokens`` (int64, shape (n, T): each sequence padded with -1 on the left, as
    :attr:`NextTokenData.tokens`), ``labels`` (int64, shape (n,)) and ``embeddings`` (float64,
    shape (V, d)); :func:`load_next_token_data` reads it back with every array equal.

    Parameters
    ----------
    data : NextTokenData
    path : path-like
        Output file (numpy appends ``.npz`` when missing).

    Returns
    -------
    None

    Raises
    ------
    ProblemError
        When ``data`` is not a NextTokenData, or ``path`` cannot be written (missing
        directory, a directory, no permission).
    """
    check_data(data, "save_next_token_data")
    arrays = {
        "svmgeo_next_token_format": np.array(_FORMAT_VERSION),
        "tokens": np.asarray(data.tokens),
        "labels": np.asarray(data.labels),
        "embeddings": np.asarray(data.embeddings),
    }
    write_archive(arrays, path, "save_next_token_data", "load_next_token_data")


def load_next_token_data(path: str | os.PathLike[str]) -> NextTokenData:
    """Read a :class:`NextTokenData` written by :func:`save_next_token_data`.

    Each row of ``tokens`` is a sequence after its left padding of -1 (the padding must be a
    prefix: a row is -1 up to its first token, then token ids); the samples are then checked
    as :class:`NextTokenData` checks them.

    Parameters
    ----------
    path : path-like
        The ``.npz`` file; ``.npz`` may be left out (``path.npz`` is then read when it exists,
        as :func:`save_next_token_data` wrote it).

    Returns
    -------
    NextTokenData

    Raises
    ------
    ProblemError
        When the file is missing or unreadable, is not an svmgeo next-token dataset (not an
        ``.npz`` archive, pickled objects, missing, unknown or malformed entries, or a token
        dataset, which :func:`svmgeo.load_data` reads), or carries a format version this
        svmgeo does not read.
    """
    what, entries = read_archive(
        path, "svmgeo_next_token_format", _FORMAT_VERSION, ("tokens", "labels", "embeddings")
    )
    tokens = entries["tokens"]
    if tokens.ndim != 2 or tokens.shape[1] < 1 or not np.issubdtype(tokens.dtype, np.integer):
        raise ProblemError(
            f"{what}: entry 'tokens' must be an int array of shape (n, T), T >= 1, one sequence "
            f"per row padded with -1 on the left; got {tokens.dtype} array of shape "
            f"{tokens.shape}. Write the file with NextTokenData.save."
        )
    real = tokens != -1
    # padding only before a row's first token: once real, a row stays real to its end
    gaps = np.flatnonzero(np.any(real[:, :-1] & ~real[:, 1:], axis=1) | ~real[:, -1])
    if gaps.size:
        i = int(gaps[0])
        raise ProblemError(
            f"{what}: row {i} of entry 'tokens' is {tokens[i].tolist()}: -1 pads a sequence "
            "on the left only, and its last entry is a token (the query). Write the file with "
            "NextTokenData.save."
        )
    sequences = [row[keep] for row, keep in zip(tokens, real, strict=True)]
    try:
        return NextTokenData(sequences, entries["labels"], entries["embeddings"])
    except ProblemError as exc:  # NextTokenData's words: sequences[i] is a row of 'tokens'
        rows = " Here sequences[i] is row i of the entry 'tokens' without its -1 padding."
        raise ProblemError(f"{what}: {exc}{rows if 'sequences[' in str(exc) else ''}") from exc


def check_data(data: Any, where: str) -> NextTokenData:
    """``data`` if it is a :class:`NextTokenData`, else a ProblemError naming ``where``."""
    if not isinstance(data, NextTokenData):
        raise ProblemError(
            f"{where} takes a svmgeo.NextTokenData; got {type(data).__name__}. Build one with "
            "sg.NextTokenData(sequences, labels, embeddings)."
        )
    return data


def check_weights(W: Any, data: NextTokenData, where: str) -> np.ndarray:
    r"""``W`` as a finite float array of shape (d, d) for ``data`` with
    :math:`\|W\|_F \le 10^{149}`, else a ProblemError naming ``where``."""
    d = data.d
    W = check_array(
        W, "W", ndim=2, shape=(d, d), hint=f"Pass a finite W of shape ({d}, {d}) (d = data.d)."
    )
    size = max_row_norm(W.reshape(1, -1))  # ||W||_F without overflow
    if not size <= _NORM_LIMIT:
        raise ProblemError(
            f"{where}: ||W||_F = {size:.3g} is beyond the largest norm of the next-token risk, "
            f"{_NORM_LIMIT:.0e} (train_ntp stops there with OVERFLOW: the logits would leave "
            "float64's range); rescale W (a positive scale changes no attention ranking)."
        )
    return W


def random_next_token_data(
    n: int,
    T: int,
    V: int,
    d: int,
    *,
    tier_size: int = 1,
    orthonormal: bool = True,
    seed: int | None = None,
) -> NextTokenData:
    r"""Synthetic next-token data with a planted priority order per last token.

    For each last token k a random permutation of the vocabulary is cut into tiers of
    ``tier_size`` tokens; a sample draws T - 1 tokens uniformly, appends k, and takes as label
    a uniformly random token among its tokens in their highest tier. ``tier_size=1`` gives
    acyclic token-priority graphs (pure retrieval); larger tiers give cycles within tiers
    once enough samples are drawn (soft composition). Embeddings are orthonormal rows (a random
    rotation; needs ``d >= V``) or, with ``orthonormal=False``, :math:`\mathcal N(0, 1/d)`
    entries. With orthonormal embeddings the cross-entropy logit of token v is the attention
    mass on v, so retrieving the label is what the loss rewards; with Gaussian ones another
    token's embedding can score the label better than its own, and GD need not retrieve it.

    Parameters
    ----------
    n, T, V, d : int
        Samples, sequence length (>= 2), vocabulary size (2 to 16,384: one priority order of
        the vocabulary per token, V² entries), embedding dimension.
    tier_size : int, default 1
    orthonormal : bool, default True
    seed : int, optional

    Returns
    -------
    NextTokenData
    """
    where = "random_next_token_data"
    n = check_int(n, "n", low=1, where=where)
    T = check_int(T, "T", low=2, where=where)
    V = check_int(V, "V", low=2, where=where)
    if V > _MAX_RANDOM_VOCABULARY:
        raise ProblemError(
            f"The 'V' parameter of {where} is at most {_MAX_RANDOM_VOCABULARY} (it draws a "
            f"priority order of the whole vocabulary for every token: V^2 = {V * V:.3g} "
            f"entries); got V={V}. Build NextTokenData(sequences, labels, embeddings) yourself "
            "for a larger vocabulary."
        )
    d = check_int(d, "d", low=1, where=where)
    tier_size = check_int(tier_size, "tier_size", low=1, where=where)
    orthonormal = check_bool(orthonormal, "orthonormal", where=where)
    if orthonormal and d < V:
        raise ProblemError(
            f"orthonormal embeddings need d >= V; got d={d}, V={V}. Raise d or pass "
            "orthonormal=False."
        )
    rng = check_seed(seed, where=where)
    tier = np.empty((V, V), dtype=np.int32)  # tier[k, v]
    for k in range(V):
        tier[k, rng.permutation(V)] = np.arange(V) // tier_size
    seqs: list[np.ndarray] = []
    labels: list[int] = []
    for _ in range(n):
        k = int(rng.integers(V))
        s = np.append(rng.integers(0, V, size=T - 1), k)
        best = tier[k, s].min()
        cands = np.unique(s[tier[k, s] == best])
        seqs.append(s)
        labels.append(int(rng.choice(cands)))
    if orthonormal:
        E = np.linalg.qr(rng.normal(size=(d, V)))[0].T
    else:
        E = rng.normal(size=(V, d)) / math.sqrt(d)
    return NextTokenData(seqs, np.asarray(labels), E)
