# SPDX-License-Identifier: BSD-3-Clause
r"""The verdict on a run's selection: token scores of its head, optimality and the LOT test.

.. math::

    \gamma_{ikt} = Y_{ik}\,h(u_{it}),\qquad
    \alpha \text{ optimal} \iff \gamma_{ik\alpha_{ik}} = \max_t \gamma_{ikt}\ \forall i, k,

and :func:`~svmgeo.is_locally_optimal` on the data scored with :math:`\gamma`.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, NamedTuple

import numpy as np

from .._errors import ProblemError
from .._validation import check_array, check_real
from ..analysis import LocalOptimality, is_locally_optimal
from ..attention_maps import gamma
from ..data import TokenData
from ..selection import optimal_token_sets, score_sizes, term_sizes, underflow_size

__all__ = ["Scored", "Verdict", "judge", "scored"]


def _weights(value: Any, name: str, size: int, where: str) -> np.ndarray:
    """A head's weight vector of shape (size,) (a (1, size) row too), or a ProblemError naming
    the argument and ``where`` (numpy's matmul error named neither)."""
    w = check_array(value, f"'{name}' of {where}", ndim=(1, 2))
    if w.ndim == 2 and w.shape[0] == 1:
        w = w[0]
    if w.shape != (size,):
        raise ProblemError(
            f"The '{name}' parameter of {where} must have shape ({size},), one weight per head "
            f"feature; got shape {np.shape(value)}."
        )
    return w


class Scored(NamedTuple):
    r""":func:`scored`'s result: the data with the head's token scores :math:`\gamma` and
    their sizes :math:`s`, which :func:`judge` reads together (a NamedTuple, so it unpacks
    as the pair ``sdata, sizes``)."""

    data: TokenData
    r"""The data with explicit ``scores`` :math:`\gamma` (queries passed as Z)."""
    sizes: np.ndarray
    """The sizes :math:`s` of the scores, shape (n, K, T)."""


def scored(
    data: TokenData,
    head: str = "linear",
    v: Any = None,
    V: Any = None,
    lam: Any = None,
    *,
    prompt: bool = False,
    where: str = "verify",
) -> Scored:
    r"""The same attention problem with the token scores of the head the run trains, and the
    sizes of those scores.

    .. math::

        \gamma_{ikt} = Y_{ik}\,h(u_{it}),\qquad
        h(u) = v^\top u\ (\text{linear}),\quad v^\top\mathrm{ReLU}(V^\top u)\ (\text{relu}),
        \quad v^\top u - \lambda\|u\|^2\ (\text{concave}),

    on the head features :math:`u_{it}` (``data.values``; the tokens when not given), with
    sizes, the sizes of the score's terms (their round-off is at most a small multiple of
    :math:`u\,s_{ikt}`), by which :func:`~svmgeo.optimal_token_sets` and
    :func:`~svmgeo.is_locally_optimal` compare them (``sizes=``):

    .. math::

        s_{ikt} = |Y_{ik}|\,m_{it},\quad
        |Y_{ik}|\,\big(|v|^\top(a_{it}\odot M_{it}) + p\,\mu\big),\quad
        |Y_{ik}|\,\big(m_{it} + \lambda(\|u_{it}\|^2 + d_u\mu) + \mu\big),

    :math:`m_{it} = |v|^\top|u_{it}| + d_u\mu`, :math:`M_{it} = |V|^\top|u_{it}| + d_u\mu`,
    with :math:`\mu = 2^{-1022}` (float64's smallest normal) for each of the products that may
    underflow (:func:`~svmgeo.selection.term_sizes`; without it scores whose products
    underflow, tokens near :math:`2^{-474}` times weights near :math:`2^{-600}`, were judged
    on their round-off: two tied exactly read untied), :math:`p` the ReLU head's width and :math:`a_{it}` its units that
    may be active exactly: those whose computed :math:`V^\top u_{it}` is at least
    :math:`-\gamma_{d_u+1} M_{it}`, its rounding bound (:math:`\gamma_k = k u/(1 - k u)`,
    Higham, *Accuracy and Stability of Numerical Algorithms*, 2nd ed., §3.1; one more than the
    :math:`d_u` terms for the rounding of :math:`M` itself); units below it are inactive
    exactly too. Without ``v``, the linear head is the data's own: its ``v``, or its given
    ``scores`` with sizes :math:`|\gamma|` (the sizes of :func:`~svmgeo.optimal_token_sets` on
    the data itself).

    Parameters
    ----------
    data : TokenData
    head : {"linear", "relu", "concave"}
    v, V, lam
        The head's parameters (``v`` defaults to ``data.v``; the ReLU head's to ones); a
        trained head's final ``v`` for joint training.
    prompt : bool
        Every query :math:`z_{ik} = e_1`, so that Att-SVM of the result is the p-SVM (its
        solution :math:`p^{\mathrm{mm}} e_1^\top`) and its LOT test that of prompt attention.
    where : str
        The function the user called, which errors name.

    Returns
    -------
    Scored
        ``data``: the data with explicit ``scores`` :math:`\gamma` (queries passed as Z);
        ``sizes``: the sizes :math:`s` of the scores, shape (n, K, T).

    Raises
    ------
    ProblemError
        The data has neither ``v`` nor scores and none was passed, a parameter of the wrong
        shape, or scores or sizes that overflow float64 (by the tie rule an infinite size
        would tie every token, and a NaN score, the ReLU head's :math:`V^\top u` of terms
        beyond float64 of both signs, has no rank; the message names the parameters to scale
        down).
    """
    scores, sizes = _head_scores(data, head, v, V, lam, where)
    if prompt:  # prompt data may have no queries (TokenData without Z or query)
        Z = np.zeros((data.n, data.K, data.d))
        Z[..., 0] = 1.0
    else:
        Z = np.asarray(data.queries)
    sdata = TokenData(
        np.asarray(data.X),
        Y=np.asarray(data.Y),
        Z=Z[:, 0] if data.single_query else Z,
        mask=None if data.mask is None else np.asarray(data.mask),
        scores=scores[:, 0] if data.single_query else scores,
    )
    return Scored(sdata, sizes)


def _head_scores(
    data: TokenData, head: str, v: Any, V: Any, lam: Any, where: str
) -> tuple[np.ndarray, np.ndarray]:
    """:func:`scored`'s scores and sizes, both (n, K, T)."""
    labels = np.asarray(data.labels)
    U = np.asarray(data.values)
    if head == "relu":
        Va = check_array(V, f"'V' of {where}", ndim=2, shape=(U.shape[2], None))
        w = np.ones(Va.shape[1]) if v is None else _weights(v, "v", Va.shape[1], where)
        with np.errstate(over="ignore", invalid="ignore"):  # overflow is refused below
            pre = U @ Va
            h = np.maximum(pre, 0.0) @ w
            mag = term_sizes(U, Va)  # |V|ᵀ|u| + d_u μ: V^T u's products may underflow
            # a unit within V^T u's rounding bound of 0 may be active exactly: count its terms
            active = np.where(pre >= -gamma(U.shape[2] + 1) * mag, mag, 0.0)
            sizes = score_sizes(labels, active, w)
            scores = labels[:, :, None] * h[:, None, :]
        _check_terms(scores, sizes, "V (or v)", "the ReLU head's terms |v|ᵀ(|V|ᵀ|u|)", where)
        return scores, sizes
    if v is None:
        if data.v is None:
            if data.scores is None:
                raise ProblemError(
                    f"{where} needs token scores for the head: build the data with v=... or "
                    "pass v=."
                )
            scores = np.asarray(data.scores)  # the data's own, as optimal_token_sets sizes them
            return scores, np.abs(scores)
        vv = np.asarray(data.v)
    else:
        vv = _weights(v, "v", U.shape[2], where)
    if head == "concave":
        lam = check_real(lam, "lam", low=0.0, high_open=True, where=where)
    with np.errstate(over="ignore", invalid="ignore"):  # overflow is refused below
        h = U @ vv
        sizes = score_sizes(labels, U, vv)
        if head == "concave":
            h = h - lam * np.sum(U * U, axis=2)
            # the squares' sizes ‖u‖² + d_u μ, and one product more, lam times them
            lam_terms = lam * term_sizes(U) + underflow_size(1)
            sizes = sizes + np.abs(labels)[:, :, None] * lam_terms[:, None, :]
        scores = labels[:, :, None] * h[:, None, :]
    names = "v" if v is not None else "the data's X or v"
    if head == "concave":
        names, terms = f"{names} or lam", "the concave head's terms |v|ᵀ|u| + λ‖u‖²"
    else:
        terms = "the linear head's terms |v|ᵀ|u|"
    _check_terms(scores, sizes, names, terms, where)
    return scores, sizes


def _check_terms(scores: np.ndarray, sizes: np.ndarray, names: str, terms: str, where: str) -> None:
    r"""Refuse a head whose scores or term sizes :math:`s` overflow float64: by the tie rule an
    infinite size would tie every token of its query, and a score that is not finite (the
    ReLU head's :math:`V^\top u` with terms beyond float64 of both signs reads NaN, whose unit
    the size rule counts inactive) has no place in the order, so no honest verdict exists;
    ``names`` are the arguments to scale down."""
    bad = np.argwhere(~(np.isfinite(sizes) & np.isfinite(scores)))
    if bad.size:
        i, _, t = (int(j) for j in bad[0])
        raise ProblemError(
            f"In {where}, {terms} overflow float64 ({len(bad)} score(s), the first at "
            f"sequence {i}, token {t}): ties cannot be judged at that scale. Scale {names} "
            "down."
        )


@dataclass(frozen=True, eq=False)
class Verdict:
    r"""A run's selection α and what the data says about it.

    Attributes
    ----------
    selection : ndarray of int, shape (n,) or (n, K)
        α, in the shape of a selection.
    is_optimal : bool
        Every selected token is an optimal token (ties: any of the tied tokens).
    lot : LocalOptimality
        :func:`~svmgeo.is_locally_optimal` of α (in the norm it was judged in).
    feasible : bool
        Whether Att-SVM(α) is feasible.
    farkas : ndarray or None
        Its Farkas vector when it is not.
    optimal_sets : ndarray of bool, shape (n, T) or (n, K, T)
        Every optimal token of each query (:func:`~svmgeo.optimal_token_sets` of the scored
        data); a query with more than one is tied.
    """

    selection: np.ndarray
    is_optimal: bool
    lot: LocalOptimality
    feasible: bool
    farkas: np.ndarray | None
    optimal_sets: np.ndarray


def judge(
    scored_data: Scored,
    selection: np.ndarray,
    norm: Any = "fro",
    *,
    prompt: bool = False,
) -> Verdict:
    r"""Judge the selection α of a run on the scored data.

    .. math::

        \alpha\ \text{optimal}\iff \forall i,k:\ \gamma_{ik\alpha_{ik}} = \max_t
        \gamma_{ikt};\qquad \alpha\ \text{LOT}\iff \texttt{is\_locally\_optimal}(\alpha)

    Parameters
    ----------
    scored_data : Scored
        The data with the run's token scores and their sizes, for ties up to round-off
        (:func:`scored`).
    selection : ndarray of int, shape (n,) or (n, K)
        The run's final argmax selection α.
    norm : "fro" or ("lp", p)
        The norm of the LOT test.
    prompt : bool
        ``scored_data`` is :func:`scored` with ``prompt=True``: its Att-SVM is the p-SVM, and the
        LOT reason names it so.

    Returns
    -------
    Verdict
    """
    sdata, sizes = scored_data
    full = np.asarray(selection).reshape(sdata.n, sdata.K)
    opt_sets = optimal_token_sets(sdata, sizes=sizes)
    opt_full = opt_sets[:, None, :] if sdata.single_query else opt_sets
    is_optimal = bool(np.all(np.take_along_axis(opt_full, full[:, :, None], axis=2)))
    lot = is_locally_optimal(sdata, selection, norm=norm, sizes=sizes)
    if prompt:  # Att-SVM of the queries e_1 is the p-SVM
        lot = replace(lot, reason=lot.reason.replace("Att-SVM(alpha)", "p-SVM(alpha)"))
    feasible = bool(lot.support.feasible)
    return Verdict(
        selection=selection,
        is_optimal=is_optimal,
        lot=lot,
        feasible=feasible,
        farkas=None if feasible else lot.support.farkas,
        optimal_sets=opt_sets,
    )
