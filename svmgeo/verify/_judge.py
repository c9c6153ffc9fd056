# SPDX-License-Identifier: BSD-3-Clause
r"""The verdict on a run's selection: token scores of its head, optimality and the LOT test.

.. math::

    \gamma_{ikt} = Y_{ik}\,h(u_{it}),\qquad
    \alpha \text{ optimal} \iff \gamma_{ik\alpha_{ik}} = \max_t \gamma_{ikt}\ \forall i, k,

and :func:`~svmgeo.is_locally_optimal` on the data scored with :math:`\gamma`.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from .._errors import ProblemError
from .._validation import check_array, check_real
from ..analysis import LocalOptimality, is_locally_optimal
from ..data import TokenData
from ..selection import optimal_token_sets

__all__ = ["Verdict", "judge", "scored"]


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


def _head_features(
    data: TokenData, head: str, v: Any, V: Any, lam: Any, where: str
) -> tuple[np.ndarray, np.ndarray]:
    r"""Features :math:`\tilde u_{it}` and weights :math:`w` with :math:`h(u_{it}) = w^\top
    \tilde u_{it}` for a head given its parameters: :math:`(u, v)` (linear),
    :math:`(\mathrm{ReLU}(V^\top u), v)` (relu), :math:`([u; \|u\|^2], [v; -\lambda])`
    (concave)."""
    U = np.asarray(data.values)
    if head == "relu":
        Va = check_array(V, f"'V' of {where}", ndim=2, shape=(U.shape[2], None))
        w = np.ones(Va.shape[1]) if v is None else _weights(v, "v", Va.shape[1], where)
        return np.maximum(U @ Va, 0.0), w
    if v is None:
        if data.v is None:
            raise ProblemError(
                f"{where} needs the head's weights v for head={head!r}: build the data with "
                "v=... or pass v=."
            )
        vv = np.asarray(data.v)
    else:
        vv = _weights(v, "v", U.shape[2], where)
    if head == "concave":
        lam = check_real(lam, "lam", low=0.0, high_open=True, where=where)
        squares = np.sum(U * U, axis=2, keepdims=True)
        return np.concatenate([U, squares], axis=2), np.append(vv, -lam)
    return U, vv


def scored(
    data: TokenData,
    head: str = "linear",
    v: Any = None,
    V: Any = None,
    lam: Any = None,
    *,
    prompt: bool = False,
    where: str = "verify",
) -> TokenData:
    r"""The same attention problem, its tokens scored by the head the run trains.

    .. math::

        \gamma_{ikt} = Y_{ik}\,h(u_{it}),\qquad
        h(u) = v^\top u\ (\text{linear}),\quad v^\top\mathrm{ReLU}(V^\top u)\ (\text{relu}),
        \quad v^\top u - \lambda\|u\|^2\ (\text{concave}),

    each written as a linear head :math:`w^\top \tilde u_{it}` on features
    :math:`\tilde u_{it}` (:math:`u_{it}`; :math:`\mathrm{ReLU}(V^\top u_{it})`;
    :math:`[u_{it}; \|u_{it}\|^2]` with :math:`w = [v; -\lambda]`), so that
    :func:`~svmgeo.optimal_token_sets` and :func:`~svmgeo.is_locally_optimal` of the result
    compare the scores on their own rule: sizes
    :math:`|Y_{ik}|\,|w|^\top|\tilde u_{it}|`, the sizes of the score's terms (the ReLU
    features are taken as the head features, as given ``values`` are). Without ``v``, the
    linear head is the data's own (its ``v``, or its given ``scores``, compared on their own
    :math:`|\gamma|`): the result's optimal tokens and LOT verdicts are the data's.

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
    TokenData

    Raises
    ------
    ProblemError
        The data has neither ``v`` nor scores and none was passed, or a parameter of the
        wrong shape.
    """
    scores = None
    if head == "linear" and v is None:  # the data's own head: its scores and their sizes
        if data.v is None and data.scores is None:
            raise ProblemError(
                f"{where} needs token scores for the head: build the data with v=... or pass v=."
            )
        values, w = (np.asarray(data.values) if data.has_values else None), data.v
        scores = data.scores
    else:
        values, w = _head_features(data, head, v, V, lam, where)
    if prompt:  # prompt data may have no queries (TokenData without Z or query)
        Z = np.zeros((data.n, data.K, data.d))
        Z[..., 0] = 1.0
    else:
        Z = np.asarray(data.queries)
    return TokenData(
        np.asarray(data.X),
        Y=np.asarray(data.Y),
        Z=Z[:, 0] if data.single_query else Z,
        mask=None if data.mask is None else np.asarray(data.mask),
        values=values,
        v=w,
        scores=scores,
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
    sdata: TokenData, selection: np.ndarray, norm: Any = "fro", *, prompt: bool = False
) -> Verdict:
    r"""Judge the selection α of a run on the scored data.

    .. math::

        \alpha\ \text{optimal}\iff \forall i,k:\ \gamma_{ik\alpha_{ik}} = \max_t
        \gamma_{ikt};\qquad \alpha\ \text{LOT}\iff \texttt{is\_locally\_optimal}(\alpha)

    Parameters
    ----------
    sdata : TokenData
        The data with the run's token scores (:func:`scored`).
    selection : ndarray of int, shape (n,) or (n, K)
        The run's final argmax selection α.
    norm : "fro" or ("lp", p)
        The norm of the LOT test.
    prompt : bool
        ``sdata`` is :func:`scored` with ``prompt=True``: its Att-SVM is the p-SVM, and the
        LOT reason names it so.

    Returns
    -------
    Verdict
    """
    full = np.asarray(selection).reshape(sdata.n, sdata.K)
    opt_sets = optimal_token_sets(sdata)
    opt_full = opt_sets[:, None, :] if sdata.single_query else opt_sets
    is_optimal = bool(np.all(np.take_along_axis(opt_full, full[:, :, None], axis=2)))
    lot = is_locally_optimal(sdata, selection, norm=norm)
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
