# SPDX-License-Identifier: BSD-3-Clause
r"""The selection a trained W ends on, with its ties reported, never broken (SPEC §2).

.. math::

    \alpha_{ik} = \arg\max_t u_{ikt}, \qquad u_{ikt} = x_{it}^\top W z_{ik},

over the keys visible to query k of sequence i. The query is *tied* when two or more keys
reach :math:`u_{ikt} \ge u_{ik\star} - \mathrm{tol}\cdot\max(s_{ikt}, s_{ik\star})`,
:math:`s` the logits' sizes (the magnitudes of their terms, and the products that may
underflow: :func:`svmgeo.selection.logit_sizes`; :func:`svmgeo.selection.tied_maxima`, tol =
:data:`svmgeo.selection.TIE_RTOL`): the rule by which :func:`svmgeo.verify` refuses a tied
final selection. A tied query selects no one token, and
neither does a query with a NaN or ±inf logit (a W with such entries, or logits beyond
float64, where an argmax would be a guess), so the Att-SVM of a selection is not defined
there: the experiments then solve no such SVM (NaN) and name those queries in their rows and
headlines (the ``tied`` column: ``"sequence 3: tokens [1, 4]"``, ``"sequence 3: non-finite
logits"``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from .._errors import TieError
from ..data import TokenData
from ..selection import largest_logits

__all__ = ["final_selection", "verified_or_tied"]


def final_selection(data: TokenData, W: np.ndarray) -> tuple[np.ndarray | None, str]:
    r"""The key of each query's largest logit at W (or at a prompt vector p), or the queries
    where there is no one such key (tied, or non-finite logits).

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
        The selection; None when some query is tied or has a non-finite logit (no selection
        to solve an SVM for).
    tied : str
        ``""`` when alpha is a selection, else every query without one and why: its
        non-finite logits, e.g. ``"sequence 3: non-finite logits"``, then its tied keys, e.g.
        ``"sequence 0: tokens [1, 4]"``, joined by ``"; "``
        (:func:`svmgeo.selection.largest_logits`).
    """
    alpha, tied, non_finite = largest_logits(data, W)
    return alpha, "; ".join(non_finite + tied)


def verified_or_tied(
    verify: Callable[..., Any], data: TokenData, options: dict[str, Any]
) -> tuple[Any, Any, str]:
    """``verify(data, **options)``, or where it refuses the run for a tied final selection
    (:class:`~svmgeo.TieError`), the run it refused (the error's ``run``) and its tied
    queries, for an experiment to report (SPEC §2) rather than fail on.

    Parameters
    ----------
    verify : callable
        :func:`svmgeo.verify` or :func:`svmgeo.verify_mirror`.
    data : TokenData
    options : dict
        Its keyword arguments.

    Returns
    -------
    report, run, tied : tuple
        ``(report, None, "")``; or ``(None, run, tied)`` for a tied run, ``tied`` as
        :func:`final_selection` names it.

    Raises
    ------
    TieError
        verify's, where it carries no run.
    """
    try:
        return verify(data, **options), None, ""
    except TieError as error:
        if error.run is None:  # pragma: no cover - verify's ties carry their run
            raise
        alpha, tied = final_selection(data, np.asarray(error.run.W))
        if alpha is not None:  # pragma: no cover - the same run, the same rule
            raise
        return None, error.run, tied
