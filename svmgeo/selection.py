# SPDX-License-Identifier: BSD-3-Clause
r"""Token scores, optimal tokens and token selections.

The score of token :math:`t` for query :math:`k` of sequence :math:`i` is
:math:`\gamma_{ikt} = Y_{ik}\, v^\top u_{it}` (or the explicit ``scores`` of the dataset). The
optimal token is :math:`\mathrm{opt}_{ik} = \arg\max_{t\ \mathrm{visible}} \gamma_{ikt}`; ties
are reported, never broken silently. A *selection* :math:`\alpha` assigns one visible token to
each query: shape ``(n,)`` for one query per sequence, ``(n, K)`` for several.
"""

from __future__ import annotations

import math
import warnings
from typing import Any, Literal

import numpy as np

from ._errors import ProblemError, TieError
from ._validation import check_array, check_option, check_real
from .data import TokenData

__all__ = [
    "check_selection",
    "optimal_token_sets",
    "optimal_tokens",
    "token_scores",
]


def query_label(data: TokenData, i: int, k: int) -> str:
    """Query ``k`` of sequence ``i`` in a message: ``sequence i``, with ``, query k`` when the
    data have several queries per sequence (an internal helper, not in ``__all__``)."""
    return query_name(data.single_query, i, k)


def query_name(single_query: bool, i: int, k: int) -> str:
    """:func:`query_label` without the data: ``sequence i``, with ``, query k`` unless
    ``single_query`` (for results that outlive their data, such as a report read from JSON)."""
    return f"sequence {i}" if single_query else f"sequence {i}, query {k}"


def first_five(items: list[str]) -> str:
    """The first five of ``items`` joined by ``"; "``, and how many more (for messages)."""
    more = f" (and {len(items) - 5} more)" if len(items) > 5 else ""
    return "; ".join(items[:5]) + more


def check_data(data: Any, where: str) -> TokenData:
    """``data`` itself when it is a :class:`~svmgeo.TokenData`, else a :class:`ProblemError`
    naming ``where`` (an internal helper of svmgeo, not in ``__all__``)."""
    if not isinstance(data, TokenData):
        raise ProblemError(
            f"{where} expects a TokenData as 'data'; got {type(data).__name__}. "
            "Wrap arrays with svmgeo.TokenData(X, v=..., Z=... or query=...)."
        )
    return data


def scores_full(data: TokenData) -> np.ndarray:
    r"""Scores :math:`\gamma_{ikt}` of shape (n, K, T) (an internal helper, not in ``__all__``)."""
    if data.scores is not None:
        return np.asarray(data.scores)
    if data.v is None:
        raise ProblemError(
            "Token scores need the linear head v (gamma_ikt = Y_ik v.u_it), but this TokenData "
            "has none. Pass v=array of shape (d_u,) or scores=array of shape (n, T) to TokenData."
        )
    return data.labels[:, :, None] * (data.values @ data.v)[:, None, :]


# gd's mirror descent has the same number as a private _TINY (gd sits above selection, so
# selection cannot import it); gd's UNDERFLOW is another bound (tiny * 2^52)
SMALLEST_NORMAL = float(np.finfo(np.float64).tiny)
r"""float64's smallest normal number :math:`\mu = 2^{-1022}`. A product that lands below it is
rounded to the subnormal grid (spacing :math:`2u\mu`), off by up to :math:`u\mu`, not
:math:`u` times itself; sums of such are exact. So each rounded product of a score adds
:math:`\mu` to its size (:func:`underflow_size`)."""


def underflow_size(products: Any) -> Any:
    r"""The size :math:`m\mu` that :math:`m` rounded products which may underflow add to the
    size of the value they make up, :math:`\mu` = :data:`SMALLEST_NORMAL`: each is off by up
    to :math:`u\mu` more where it lands below :math:`\mu`, whatever its own size; a product
    whose rounding a later factor :math:`c` multiplies counts :math:`|c|` times. The one place
    of this rule, for :func:`term_sizes` (and so the scores' sizes), :func:`logit_sizes` and
    the concave head's :math:`\lambda\|u\|^2` in :func:`svmgeo.verify`."""
    return products * SMALLEST_NORMAL


def term_sizes(values: np.ndarray, weights: np.ndarray | None = None) -> np.ndarray:
    r"""The size of the inner products :math:`w^\top u` of ``values`` (..., d_u) with ``weights``
    (d_u,) or (d_u, p), underflow included, or with None of each :math:`u` with itself:

    .. math::

        |w|^\top|u| + d_u\,\mu, \qquad \|u\|^2 + d_u\,\mu\ \ (\text{weights None}),

    :math:`\mu` = :data:`SMALLEST_NORMAL` (:func:`underflow_size`). A computed :math:`w^\top u`
    is within :math:`\gamma_{d_u+1}` times it of the exact one (Higham, *Accuracy and Stability
    of Numerical Algorithms*, 2nd ed., §3.1, with each of the :math:`d_u` products off by up to
    :math:`u\mu` more where it underflows). Without the :math:`d_u\mu` a query whose products
    underflow would be judged on round-off: scores ``1.5 * 2**-1074`` computed as
    :math:`2^{-1073}` and :math:`2^{-1074}` would read untied. It leaves every
    :math:`|w|^\top|u|` of :math:`2^{54} d_u \mu \approx 4\cdot 10^{-292} d_u` or more as it
    was (:math:`d_u\mu` is below half its ulp); a size that multiplies these by a large
    weight (the ReLU head's :math:`|v|`, the concave head's :math:`\lambda`) changes wherever
    the products underflow, at normal sizes too."""
    exact = (
        np.sum(values * values, axis=-1) if weights is None else np.abs(values) @ np.abs(weights)
    )
    return exact + underflow_size(values.shape[-1])


def score_sizes(labels: np.ndarray, values: np.ndarray, v: np.ndarray) -> np.ndarray:
    r"""The sizes :math:`|Y_{ik}|\,(|v|^\top|u_{it}| + d_u\mu)` of the linear head's scores
    :math:`Y_{ik} v^\top u_{it}` (labels (n, K), values (n, T, d_u), v (d_u,); shape
    (n, K, T); :func:`term_sizes`), which bound their round-off up to a factor, underflow
    included: :func:`tied_maxima`'s sizes, for :func:`optimal_token_sets` and
    :class:`svmgeo.gd.RiskOracle`."""
    return np.abs(labels)[:, :, None] * term_sizes(values, v)[:, None, :]


def _score_sizes(data: TokenData) -> np.ndarray | None:
    r""":func:`score_sizes` of computed scores (shape as :func:`scores_full`); None for given
    scores (their own :math:`|\gamma|`)."""
    if data.scores is not None or data.v is None:
        return None
    return score_sizes(data.labels, data.values, data.v)


def token_scores(data: TokenData) -> np.ndarray:
    r"""Token scores :math:`\gamma_{ikt} = Y_{ik}\, v^\top u_{it}`.

    Parameters
    ----------
    data : TokenData

    Returns
    -------
    ndarray of shape (n, T), or (n, K, T) for several queries
        Scores of all tokens, masked keys included (they are never optimal).

    Raises
    ------
    ProblemError
        If the dataset has neither ``v`` nor explicit ``scores``.
    """
    data = check_data(data, "token_scores")
    S = scores_full(data)
    return S[:, 0, :] if data.single_query else S


TIE_RTOL = 1e-12
"""Default relative tie tolerance of :func:`optimal_token_sets` (about 4,500 ulps of the size)."""


def optimal_token_sets(data: TokenData, *, tol: float = TIE_RTOL, sizes: Any = None) -> np.ndarray:
    r"""All maximizers of the visible scores, up to a tolerance relative to the scores compared.

    .. math::

        \{\, t \text{ visible} : \gamma_{ikt} \ge \gamma_{ik\star}
        - \mathrm{tol}\cdot\max(s_{ikt}, s_{ik\star}) \,\},
        \qquad \gamma_{ik\star} = \max_\tau \gamma_{ik\tau},

    with :math:`\tau` over the tokens visible to query :math:`k` of sequence :math:`i`,
    :math:`s_{ikt} = |Y_{ik}|\,(|v|^\top|u_{it}| + d_u\mu)` the size of a computed score
    (its round-off is at most a small multiple of :math:`u\,s_{ikt}`; :math:`\mu = 2^{-1022}`,
    float64's smallest normal, for the products that underflow: :func:`term_sizes`;
    :math:`|\gamma_{ikt}|` for given ``scores``) and :math:`s_{ik\star}` the largest size
    among the tokens scoring :math:`\gamma_{ik\star}`. Multiplying the data by any positive
    factor (``X * 1e-13`` or ``X * 1e13``) keeps the same optimal tokens, as long as the scores'
    sizes stay far above :math:`d_u\mu` (below, scores that differ by round-off of underflowed
    products tie); only scores that agree to ``tol`` relative to
    their own sizes (round-off) count as tied, and a token far below the top (a masked key's
    score imputed as -1e9, say) widens no other token's tolerance.

    Parameters
    ----------
    data : TokenData
    tol : float in [0, 1), default 1e-12
        Relative tolerance for a tie; 0 ties exactly equal scores only.
    sizes : array of shape (n, T) or (n, K, T), optional
        The sizes :math:`s` of the scores (finite, :math:`\ge 0`), the sizes of their terms,
        e.g. :func:`svmgeo.verify`'s for a ReLU or concave head computed elsewhere; when given
        they replace the default for every score, those computed from ``v`` too. Default:
        :math:`|Y_{ik}|\,(|v|^\top|u_{it}| + d_u\mu)` for computed scores, :math:`|\gamma|`
        for given ones.

    Returns
    -------
    ndarray of bool, shape (n, T) or (n, K, T)
        True at every optimal token; more than one True in a row means a tie.
    """
    where = "optimal_token_sets"
    data = check_data(data, where)
    tol = check_real(tol, "tol", low=0.0, high=1.0, high_open=True, where=where)
    S = np.where(data.visible, scores_full(data), -np.inf)
    sets = tied_maxima(S, tol, sizes_full(data, sizes, where))
    return sets[:, 0, :] if data.single_query else sets


def tied_maxima(S: np.ndarray, tol: float = TIE_RTOL, size: np.ndarray | None = None) -> np.ndarray:
    r"""The maximizers of each row of scores ``S`` (``-inf`` where a token is not visible) up to
    ``tol`` relative to the two scores compared, bool of ``S``'s shape (the rule of
    :func:`optimal_token_sets`, which :class:`svmgeo.gd.RiskOracle` shares):

    .. math::

        S_t \ge S_\star - \mathrm{tol}\cdot\max(s_t, s_\star),

    :math:`S_\star` the row's largest score, :math:`s` the scores' sizes (``size``, e.g.
    :func:`score_sizes` for computed scores, whose round-off they bound up to a factor;
    :math:`|S_t|` when None) and :math:`s_\star` the largest size among the tokens scoring
    :math:`S_\star`. Tokens far below the top (a masked key's score imputed as -1e9, say)
    do not widen the tolerance of the others."""
    visible = np.isfinite(S)
    sizes = np.where(visible, np.abs(S) if size is None else size, 0.0)
    top = S.max(axis=-1, keepdims=True)
    top_size = np.max(np.where(visible & (S == top), sizes, 0.0), axis=-1, keepdims=True)
    return visible & (top - tol * np.maximum(sizes, top_size) <= S)


def bilinear_logits(data: TokenData, W: np.ndarray) -> np.ndarray:
    r"""The logits :math:`u_{ikt} = x_{it}^\top W z_{ik}` of every key, hidden ones included,
    of a W of shape (d, d) (shape (n, K, T)) or of a stack of them (R, d, d) (shape
    (R, n, K, T)) (an internal helper, not in ``__all__``)."""
    return logits_of_arrays(np.asarray(data.X), W, np.asarray(data.queries))


def logits_of_arrays(X: np.ndarray, W: np.ndarray, Z: np.ndarray) -> np.ndarray:
    r""":func:`bilinear_logits` of tokens X (n, T, d) and queries Z (n, K, d) given as arrays
    (rows of a dataset, without a :class:`~svmgeo.TokenData` of them): the one computation
    of these logits, so that rows give the bits they have in the whole dataset (each logit is
    its own sum) (an internal helper, not in ``__all__``)."""
    return np.einsum("ntd,...de,nke->...nkt", X, W, Z)


def weight_logits(data: TokenData, W: np.ndarray) -> np.ndarray:
    r""":func:`bilinear_logits` with ``-inf`` on hidden keys: the logits softmax attends over
    (an internal helper, not in ``__all__``)."""
    return np.where(np.asarray(data.visible), bilinear_logits(data, W), -np.inf)


def prompt_logits(data: TokenData, p: np.ndarray) -> np.ndarray:
    r"""The logits :math:`u_{ikt} = x_{it}^\top p` of a prompt vector p, the same for every
    query, shape (n, K, T), ``-inf`` on hidden keys (an internal helper, not in ``__all__``)."""
    logits = np.einsum("ntd,d->nt", np.asarray(data.X), np.asarray(p, dtype=float))
    visible = np.asarray(data.visible)
    return np.where(visible, np.broadcast_to(logits[:, None, :], visible.shape), -np.inf)


def largest_logits(
    data: TokenData, theta: np.ndarray
) -> tuple[np.ndarray | None, list[str], list[str]]:
    r"""The key of each query's largest logit at W (or at a prompt vector p), or the queries
    where there is no one such key: a tie, or logits that are not finite.

    .. math::

        \alpha_{ik} = \arg\max_{t \text{ visible}} u_{ikt}, \qquad
        u_{ikt} = x_{it}^\top W z_{ik} \quad \big(x_{it}^\top p \text{ for a prompt vector}\big),

    tied where two or more keys reach the largest logit up to :data:`TIE_RTOL` relative to
    their sizes (:func:`logit_sizes`: their terms' magnitudes, and the products that may
    underflow; :func:`tied_maxima`), undefined where a visible key's logit is NaN or ±inf (a
    W with such entries, or logits beyond float64): an argmax there would be a guess. An
    internal helper, not in ``__all__``: the one rule of a final selection, shared by
    :func:`svmgeo.verify` (which refuses both) and the experiments (which report them);
    :func:`logit_selection` applies it to logits already computed.

    Parameters
    ----------
    data : TokenData
    theta : array of shape (d, d), or a prompt vector p of shape (d,)
        p scores every query's keys alike (``param="p"``, the queries unused).

    Returns
    -------
    alpha : ndarray of int64, shape ``data.selection_shape``, or None
        The selection; None when some query is tied or has a non-finite logit.
    tied : list of str
        Every tied query (with finite logits) and its tied keys, e.g.
        ``"sequence 3: tokens [1, 4]"``; empty without ties.
    non_finite : list of str
        Every query with a non-finite visible logit, e.g. ``"sequence 3: non-finite logits"``;
        empty when all are finite.
    """
    theta = np.asarray(theta, dtype=float)
    with np.errstate(invalid="ignore", over="ignore"):  # NaN and inf are reported below
        logits = prompt_logits(data, theta) if theta.ndim == 1 else weight_logits(data, theta)
    alpha, tied, non_finite, _ = logit_selection(data, logits, theta)
    return alpha, tied, non_finite


def logit_sizes(data: TokenData, theta: np.ndarray, tol: float = 1.0) -> np.ndarray:
    r"""``tol`` times the sizes of the logits of a W (:func:`weight_logits`) or a prompt
    vector p (:func:`prompt_logits`), shape (n, K, T), by which :func:`logit_selection` calls
    them tied (with ``tol`` = :data:`TIE_RTOL`): the magnitudes of their terms, and the
    products that may underflow (:func:`underflow_size`) (an internal helper, not in
    ``__all__``):

    .. math::

        |x_{it}|^\top |W|\, |z_{ik}| + \mu\,(d\,\|z_{ik}\|_1 + d^2), \qquad
        |x_{it}|^\top |p| + d\,\mu,

    :math:`\mu` = :data:`SMALLEST_NORMAL` (the shape of :func:`term_sizes` for the scores).
    A computed logit is within :math:`\gamma_{d^2+1}` times the first term of the exact one
    (Higham, *Accuracy and Stability of Numerical Algorithms*, 2nd ed., §3.1), however its
    terms cancel, plus the underflow: :func:`bilinear_logits` sums the :math:`d^2` products
    :math:`(x_{itd} W_{de})\, z_{ike}` (``np.einsum`` without ``optimize`` multiplies its
    operands left to right), each of which may underflow, and so may each
    :math:`x_{itd} W_{de}`, whose rounding :math:`z_{ike}` then multiplies; the prompt's
    :math:`x_{it}^\top p` has :math:`d` products. With the logits' magnitudes alone, terms
    that cancel and products that underflow had logits ranked on round-off: keys
    :math:`(2^{53}, 1, -2^{53})` and :math:`(0.5, 0, 0)` under :math:`W = I`,
    :math:`z = (1, 1, 1)` (exact logits 1 and 0.5) computed 0 and 0.5, and key 1 was
    selected; keys (1.5, 0, 0, 0) and (0.46875, ...) under p = ``2**-1074`` ones computed
    :math:`2^{-1073}` and 0 (exactly :math:`1.5` and :math:`1.875` times
    :math:`2^{-1074}`), and key 0 was selected. A logit whose terms have one sign and are
    :math:`2^{54}` times the :math:`\mu` term or more has its magnitude as size.

    The sizes are computed as :math:`|Z|\,(|X|\,|W|)^\top`; where that overflows (a sum
    over :math:`d` beyond float64 before the :math:`z_{ike}`, which may be 0, or sizes
    beyond it: terms near float64's largest that cancel), they are summed again term by
    term, each term's mantissa and power of two apart (:func:`_scaled_sum`), and scaled by
    ``tol`` before their power of two, so that ``tol`` times them is finite wherever the
    logits of :func:`bilinear_logits` are (each of their terms is, and ``tol``
    :math:`d^2 < 1`). Before, keys
    :math:`(1.5, 1.5)\cdot 10^{150}` twice under :math:`W` with rows
    :math:`(\pm 10^{158}, 1)`, :math:`z = (0, 1)` had NaN sizes and no top key (an exact
    tie read as a selection), and a size beyond float64 tied every key of its query."""
    theta = np.abs(np.asarray(theta, dtype=float))
    prompt = theta.ndim == 1
    X = np.abs(np.asarray(data.X))
    Z = np.abs(np.asarray(data.queries)) if not prompt else None
    with np.errstate(over="ignore", invalid="ignore"):  # summed again below
        if Z is None:
            terms = (X @ theta)[:, None, :]  # (n, 1, T), the same for every query
        else:
            terms = Z @ np.swapaxes(X @ theta, 1, 2)
        sizes = tol * (terms + _logit_underflow(data, prompt))
    sizes = np.array(np.broadcast_to(sizes, (data.n, data.K, data.T)))
    again = np.argwhere(~np.isfinite(sizes))  # (i, k, t) of each size that overflowed
    products = data.d if prompt else data.d**2  # per size
    # about 2**20 products a chunk, at most one chunk per size (d > 1024), 0 if none
    chunks = min(len(again), -(-len(again) * products // 2**20))
    for i, k, t in (chunk.T for chunk in np.array_split(again, max(chunks, 1))[:chunks]):
        total, power = _scaled_sum(
            [X[i, t], theta] if Z is None else [X[i, t][:, :, None], theta, Z[i, k][:, None, :]]
        )
        with np.errstate(over="ignore"):  # beyond float64: tol times the size only
            size = np.ldexp(total, power) + _logit_underflow(data, prompt)[i, k, 0]
            sizes[i, k, t] = np.where(np.isfinite(size), tol * size, np.ldexp(tol * total, power))
    return sizes


def _scaled_sum(factors: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    r"""The sums :math:`\sum_j \prod_f a_{fj} = s\, 2^e` of the products of ``factors``
    (nonnegative, broadcast to shape (m, ...), summed over all axes but the first), as
    :math:`s` and the integer :math:`e` (shape (m,)), without overflow: each factor's
    mantissa and power of two apart (``np.frexp``), each product's mantissa scaled by its
    power of two over the largest (:math:`s \le` the number of products). Products below
    :math:`2^{-1074}` times the largest are lost (round-off to the sum). An internal
    helper of :func:`logit_sizes`."""
    mantissa: Any = 1.0
    power: Any = 0
    for factor in factors:
        m, e = np.frexp(factor)
        mantissa, power = mantissa * m, power + e.astype(np.int64)
    mantissa, power = np.broadcast_arrays(mantissa, power)
    mantissa = mantissa.reshape(len(mantissa), -1)
    power = np.where(mantissa > 0, power.reshape(len(mantissa), -1), np.iinfo(np.int32).min)
    top = power.max(axis=1)
    top = np.where(top == np.iinfo(np.int32).min, 0, top)  # every product 0: any power
    return np.ldexp(mantissa, power - top[:, None]).sum(axis=1), top


def _logit_underflow(data: TokenData, prompt: bool) -> np.ndarray:
    r"""The underflow term of :func:`logit_sizes`, shape (n, K, 1): :math:`\mu\,(d\,
    \|z_{ik}\|_1 + d^2)` for a W, :math:`d\,\mu` for a prompt vector."""
    d = data.d
    if prompt:
        return np.full((data.n, data.K, 1), underflow_size(d))
    z_norms = np.abs(np.asarray(data.queries)).sum(axis=2)  # (n, K)
    return underflow_size(d * z_norms + d * d)[:, :, None]


def logit_selection(
    data: TokenData,
    logits: np.ndarray,
    theta: np.ndarray | None = None,
    *,
    prompt: bool | None = None,
) -> tuple[np.ndarray | None, list[str], list[str], np.ndarray]:
    r""":func:`largest_logits` of the logits :math:`u_{ikt}` of ``theta`` (shape (n, K, T),
    ``-inf`` on hidden keys: :func:`weight_logits` of a W, :func:`prompt_logits` of a p)
    already computed, and the mask of each query's largest-logit keys (an internal helper,
    not in ``__all__``).

    .. math::

        \mathrm{top}_{ikt} = \big[\, u_{ikt} \ge u_{ik\star} - \mathrm{TIE\_RTOL}\cdot
        \max(s_{ikt}, s_{ik\star}) \,\big]

    (:func:`tied_maxima`), :math:`s` the logits' sizes (:func:`logit_sizes` of ``theta``:
    their terms' magnitudes, and the products that may underflow; ``TIE_RTOL`` times them
    finite wherever the logits are), all False at a query with a non-finite visible logit.

    Parameters
    ----------
    data : TokenData
    logits : ndarray of shape (n, K, T)
    theta : array of shape (d, d) or (d,), optional
        The W or p of the logits, for their sizes. Without it the sizes are the logits'
        magnitudes and the same underflow term, which bound the round-off only where a
        logit's terms do not cancel.
    prompt : bool, optional
        The logits are a prompt vector's (:func:`prompt_logits`), not a W's. Default: with
        ``theta``, when it is a vector (another value raises ``ValueError``); without it,
        when the data have no queries (:attr:`~svmgeo.TokenData.has_queries`).

    Returns
    -------
    alpha, tied, non_finite
        As :func:`largest_logits`.
    top : ndarray of bool, shape (n, K, T)
        The selected key of each query, or every tied top key; none at a query whose logits
        are not all finite.
    """
    visible = np.asarray(data.visible)
    undefined = np.any(visible & ~np.isfinite(logits), axis=2)
    if theta is not None:
        theta = np.asarray(theta, dtype=float)
        if prompt is not None and prompt != (theta.ndim == 1):
            raise ValueError(
                f"logit_selection: prompt={prompt}, but theta has shape {theta.shape} (a W "
                "is (d, d), a prompt vector p (d,)); leave prompt out when theta is given"
            )
        tolerances = logit_sizes(data, theta, TIE_RTOL)
    else:
        prompt = not data.has_queries if prompt is None else prompt
        tolerances = TIE_RTOL * (np.abs(logits) + _logit_underflow(data, prompt))
    # tol 1 on TIE_RTOL times the sizes: the same bits as TIE_RTOL on the sizes (rounding
    # is monotone), and no overflow where a size is beyond float64
    top = tied_maxima(np.where(undefined[:, :, None], -np.inf, logits), 1.0, tolerances)
    non_finite = [
        f"{query_label(data, i, k)}: non-finite logits" for i, k in np.argwhere(undefined)
    ]
    listed = [
        f"{query_label(data, i, k)}: tokens {np.flatnonzero(top[i, k]).tolist()}"
        for i, k in np.argwhere(top.sum(axis=2) > 1)
    ]
    if listed or non_finite:
        return None, listed, non_finite, top
    alpha = np.argmax(logits, axis=2).astype(np.int64)
    return (alpha[:, 0] if data.single_query else alpha), [], [], top


def score_size_table(data: TokenData) -> np.ndarray:
    r"""The sizes of :func:`scores_full`'s scores (shape (n, K, T)): :func:`score_sizes` of
    computed scores, :math:`|\gamma|` of given ones; what :func:`at_least` compares with."""
    sizes = _score_sizes(data)
    return np.abs(scores_full(data)) if sizes is None else sizes


def sizes_full(data: TokenData, sizes: Any, where: str) -> np.ndarray:
    r"""The sizes of :func:`scores_full`'s scores, shape (n, K, T): the caller's ``sizes``
    (shape (n, T) for one query per sequence, or (n, K, T); finite, :math:`\ge 0`), or
    :func:`score_size_table` when None."""
    if sizes is None:
        return score_size_table(data)
    full = (data.n, data.K, data.T)
    shapes = [(data.n, data.T), full] if data.single_query else [full]
    s = check_array(sizes, f"'sizes' of {where}", ndim=(2, 3))
    if s.shape not in shapes or np.any(s < 0):
        raise ProblemError(
            f"The 'sizes' of {where} must have shape {' or '.join(map(str, shapes))} (one per "
            f"score) and be non-negative; got shape {s.shape}"
            f"{', with negative entries' if s.shape in shapes else ''}. Pass the sizes of the "
            "scores' terms, or leave sizes out."
        )
    return s.reshape(full)


def at_least(
    S: np.ndarray, S_ref: np.ndarray, size: np.ndarray, size_ref: np.ndarray, tol: float = TIE_RTOL
) -> np.ndarray:
    r"""Scores that tie or beat a reference, up to round-off: :math:`S \ge S_{\mathrm{ref}} -
    \mathrm{tol}\cdot\max(s, s_{\mathrm{ref}})` (``size``/``size_ref`` as for
    :func:`tied_maxima`, broadcast). The LOT test's "scores at least as high as the selected
    token", on the rule by which :func:`optimal_token_sets` calls scores tied."""
    return np.asarray(S >= S_ref - tol * np.maximum(size, size_ref))


def score_sides(
    scores: np.ndarray, sizes: np.ndarray, alpha: np.ndarray, visible: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    r"""The low- and high-score tokens of a selection, ties up to round-off on the high side:

    .. math::

        \mathcal T^-_{ik} = \{t : \gamma_{ikt} < \gamma_{ik\alpha_{ik}}\}, \qquad
        \mathcal T^+_{ik} = \{\tau \ne \alpha_{ik} : \gamma_{ik\tau} \ge
        \gamma_{ik\alpha_{ik}}\},

    over visible tokens, with :math:`\ge` read by :func:`at_least` (``scores`` and their
    ``sizes`` of shape (n, K, T), ``alpha`` (n, K), ``visible`` (n, K, T) or broadcast; bool
    masks of shape (n, K, T)). The one rule of the score cone (:func:`svmgeo.score_cone_margin`,
    the regularization path's cone) and the LOT test (:func:`svmgeo.is_locally_optimal`)."""
    idx = alpha[:, :, None]
    at_or_above = at_least(
        scores,
        np.take_along_axis(scores, idx, axis=2),
        sizes,
        np.take_along_axis(sizes, idx, axis=2),
    )
    vis = np.asarray(visible, dtype=bool)
    low = vis & ~at_or_above  # alpha itself is at least its own score
    high = vis & at_or_above
    np.put_along_axis(high, idx, False, axis=2)
    return low, high


def optimal_tokens(
    data: TokenData, *, ties: Literal["raise", "first", "warn"] = "raise"
) -> np.ndarray:
    r"""The optimal token of every query, :math:`\mathrm{opt}_{ik} = \arg\max_t \gamma_{ikt}`.

    Parameters
    ----------
    data : TokenData
    ties : {"raise", "first", "warn"}, default "raise"
        What to do when a query has several optimal tokens (see :func:`optimal_token_sets`):
        ``"raise"`` raises :class:`~svmgeo.TieError` listing them; ``"first"`` takes the lowest
        index, explicitly; ``"warn"`` does the same and warns.

    Returns
    -------
    ndarray of int, shape (n,) or (n, K)

    Raises
    ------
    TieError
        With ``ties="raise"`` when an optimal token is not unique.
    """
    data = check_data(data, "optimal_tokens")
    check_option(ties, "ties", ("raise", "first", "warn"), where="optimal_tokens")
    sets = optimal_token_sets(data)
    full = sets[:, None, :] if data.single_query else sets
    counts = full.sum(axis=2)
    alpha = np.argmax(full, axis=2).astype(np.int64)
    tied = np.argwhere(counts > 1)
    if tied.size:
        listed = first_five(
            [f"{query_label(data, i, k)}: tokens {np.flatnonzero(full[i, k]).tolist()}"
             for i, k in tied]
        )  # fmt: skip
        text = (
            f"optimal tokens are not unique for {len(tied)} quer{'y' if len(tied) == 1 else 'ies'}: "
            f"{listed}."
        )
        if ties == "raise":
            raise TieError(
                text + " Take the lowest index with optimal_tokens(data, ties='first') (where "
                "a function chose alpha itself, pass alpha=sg.optimal_tokens(data, ties='first')), "
                "or perturb the data."
            )
        if ties == "warn":
            warnings.warn(text + " Taking the lowest index.", UserWarning, stacklevel=2)
    return alpha[:, 0] if data.single_query else alpha


def check_selection(data: TokenData, alpha: Any, name: str = "alpha") -> np.ndarray:
    r"""Validate a token selection :math:`\alpha` and return it as an int array of shape (n, K).

    Parameters
    ----------
    data : TokenData
    alpha : array of int, shape (n,) (one query per sequence) or (n, K)
        Every entry must be a visible token index in ``[0, T)``.
    name : str, default "alpha"
        The argument's name in error messages.

    Returns
    -------
    ndarray of int64, shape (n, K)

    Raises
    ------
    ProblemError
        Wrong shape, non-integer entries, out-of-range or masked tokens.
    """
    data = check_data(data, "check_selection")
    expected = "(n,)" if data.single_query else "(n, K)"
    a = check_array(
        alpha,
        name,
        ndim=(1, 2),
        dtype=np.int64,
        hint=f"A selection holds one token index per query: shape {expected} = {data.selection_shape}.",
    )
    if a.ndim == 1:
        if data.K != 1 or a.shape[0] != data.n:
            raise ProblemError(
                f"{name} must have shape {data.selection_shape} (one token per query); got {a.shape}."
            )
        a = a[:, None]
    elif a.shape != (data.n, data.K):
        raise ProblemError(
            f"{name} must have shape {data.selection_shape} (one token per query); got {a.shape}."
        )
    bad = (a < 0) | (a >= data.T)
    if np.any(bad):
        i, k = (int(x) for x in np.argwhere(bad)[0])
        raise ProblemError(
            f"{name} must hold token indices in [0, {data.T - 1}]; got {int(a[i, k])} at "
            f"{(i,) if data.single_query else (i, k)}."
        )
    seen = np.take_along_axis(data.visible, a[:, :, None], axis=2)[:, :, 0]
    if not np.all(seen):
        i, k = (int(x) for x in np.argwhere(~seen)[0])
        raise ProblemError(
            f"{name} selects token {int(a[i, k])} for query {k} of sequence {i}, but the mask hides "
            "it from that query. Select a visible token (e.g. t <= k under a causal mask)."
        )
    return np.array(a, order="C")  # a copy: results keep it, the caller may reuse alpha


def selection_space(data: TokenData) -> int:
    """The number of selections (one visible token per query), as an exact integer (it can be
    far beyond a float: 8^357 for the digits example)."""
    return math.prod(int(c) for c in np.asarray(data.visible).sum(axis=2).ravel())
