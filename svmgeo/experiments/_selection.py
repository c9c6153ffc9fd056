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
from ..selection import largest_logits, prompt_logits

__all__ = ["final_selection"]


def final_selection(data: TokenData, W: np.ndarray) -> tuple[np.ndarray | None, str]:
    r"""The key of each query's largest logit at W (or at a prompt vector p), or the queries
    where it is tied.

    .. math::

        \alpha_{ik} = \arg\max_{t \text{ visible}} x_{it}^\top W z_{ik}
        \quad\Big(x_{it}^\top p \text{ for a prompt vector}\Big)

    Parameters
    ----------
    data : TokenData
    W : array of shape (d, d), or a prompt vector p of shape (d,)
        p scores every query's keys alike (``param="p"``, the queries unused).

    Returns
    -------
    alpha : ndarray of shape ``data.selection_shape``, or None
        The selection; None when some query is tied (no selection to solve an SVM for).
    tied : str
        ``""`` without ties, else every tied query and its tied keys, e.g.
        ``"sequence 3: tokens [1, 4]"``, joined by ``"; "``.
    """
    if np.ndim(W) == 1:
        logits = prompt_logits(data, W)
    else:
        logits = np.einsum("ntd,de,nke->nkt", np.asarray(data.X), W, np.asarray(data.queries))
        logits = np.where(np.asarray(data.visible), logits, -np.inf)
    alpha, tied = largest_logits(data, logits)
    return alpha, "; ".join(tied)
