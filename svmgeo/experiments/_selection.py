# SPDX-License-Identifier: BSD-3-Clause
r"""The selection a trained W ends on, with its ties reported, never broken (SPEC §2).

.. math::

    \alpha_{ik} = \arg\max_t u_{ikt}, \qquad u_{ikt} = x_{it}^\top W z_{ik},

over the keys visible to query k of sequence i. The query is *tied* when two or more keys
reach :math:`u_{ikt} \ge u_{ik\star} - \mathrm{tol}\cdot\max(|u_{ikt}|, |u_{ik\star}|)`
(:func:`svmgeo.selection.tied_maxima`, tol = :data:`svmgeo.selection.TIE_RTOL`: the rule
by which :func:`svmgeo.verify` refuses a tied final selection and
:func:`svmgeo.optimal_tokens` calls scores tied). A tied query selects no one token, so the
Att-SVM of a selection is not defined there: the experiments then solve no such SVM (NaN) and
name the tied queries in their rows and headlines.
"""

from __future__ import annotations

import numpy as np

from ..data import TokenData
from ..selection import query_label, tied_maxima

__all__ = ["final_selection"]


def final_selection(data: TokenData, W: np.ndarray) -> tuple[np.ndarray | None, str]:
    r"""The key of each query's largest logit at W, or the queries where it is tied.

    .. math::

        \alpha_{ik} = \arg\max_{t \text{ visible}} x_{it}^\top W z_{ik}

    Parameters
    ----------
    data : TokenData
    W : array of shape (d, d)

    Returns
    -------
    alpha : ndarray of shape ``data.selection_shape``, or None
        The selection; None when some query is tied (no selection to solve an SVM for).
    tied : str
        ``""`` without ties, else every tied query and its tied keys, e.g.
        ``"sequence 3: tokens [1, 4]"``, joined by ``"; "``.
    """
    logits = np.einsum("ntd,de,nke->nkt", np.asarray(data.X), W, np.asarray(data.queries))
    logits = np.where(np.asarray(data.visible), logits, -np.inf)
    tied = tied_maxima(logits)
    where = np.argwhere(tied.sum(axis=2) > 1)
    text = "; ".join(
        f"{query_label(data, i, k)}: tokens {np.flatnonzero(tied[i, k]).tolist()}" for i, k in where
    )
    if text:
        return None, text
    alpha = np.argmax(logits, axis=2)
    return (alpha[:, 0] if data.single_query else alpha), ""
