# SPDX-License-Identifier: BSD-3-Clause
r"""Local optimality of a token selection (SPEC §5).

.. math::

    \alpha \text{ is locally optimal} \iff \text{Att-SVM}(\alpha) \text{ is feasible and }
    \gamma_{ik\alpha_{ik}} > \gamma_{ikt}\quad \forall\, i, k,\ t \in \mathcal T_{ik}(\alpha).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, NamedTuple

import numpy as np

from .._summary import summarized
from ..constraints import att_svm_constraints
from ..data import TokenData
from ..selection import check_data as _check_data
from ..selection import check_selection
from ..selection import scores_full as _scores_full
from ..solvers import solve_for
from ._support import SupportTokens, check_tolerances, support_from_result

__all__ = ["LOTViolation", "LocalOptimality", "is_locally_optimal"]


class LOTViolation(NamedTuple):
    """A support token that scores at least as high as the selected token of its query."""

    seq: int
    query: int
    token: int
    score_selected: float
    score_token: float


@summarized
@dataclass(frozen=True, eq=False)
class LocalOptimality:
    r"""Verdict of :func:`is_locally_optimal`; truthy exactly when :math:`\alpha` is a LOT.

    Attributes
    ----------
    locally_optimal : bool
    reason : str
        Why, in words (infeasible, violating support tokens, or all support tokens lower).
    violations : tuple of LOTViolation
        ``(seq, query, token, score_selected, score_token)`` for every support token with
        :math:`\gamma_{ikt} \ge \gamma_{ik\alpha_{ik}}`. Empty when locally optimal or infeasible.
    support : SupportTokens
        The support tokens (and the Att-SVM solve, or its Farkas certificate).
    alpha : ndarray of int, shape (n,) or (n, K)
    """

    locally_optimal: bool
    reason: str
    violations: tuple[LOTViolation, ...]
    support: SupportTokens
    alpha: np.ndarray

    def __bool__(self) -> bool:
        return self.locally_optimal


def lot_from_support(data: TokenData, scores: np.ndarray, sup: SupportTokens) -> LocalOptimality:
    """Apply the LOT test to computed support tokens (``scores`` of shape (n, K, T))."""
    if not sup.feasible or sup.mask is None:
        return LocalOptimality(
            locally_optimal=False,
            reason=(
                "not locally optimal: Att-SVM(alpha) is infeasible "
                f"({sup.svm.message}); the Farkas certificate is in .support.farkas"
            ),
            violations=(),
            support=sup,
            alpha=sup.alpha,
        )
    mask = sup.mask if sup.mask.ndim == 3 else sup.mask[:, None, :]
    alpha = np.asarray(sup.alpha).reshape(data.n, data.K)
    selected = np.take_along_axis(scores, alpha[:, :, None], axis=2)  # (n, K, 1)
    bad = mask & (scores >= selected)
    violations = tuple(
        LOTViolation(int(i), int(k), int(t), float(selected[i, k, 0]), float(scores[i, k, t]))
        for i, k, t in np.argwhere(bad)
    )
    n_support = int(mask.sum())
    if not violations:
        reason = (
            "locally optimal: Att-SVM(alpha) is feasible and all "
            f"{n_support} support token(s) score strictly below their selected token"
        )
    else:
        listed = "; ".join(
            (f"sequence {v.seq}" if data.single_query else f"sequence {v.seq}, query {v.query}")
            + f": support token {v.token} scores {v.score_token:.6g} >= selected "
            f"{v.score_selected:.6g}"
            for v in violations[:5]
        )
        more = f" (and {len(violations) - 5} more)" if len(violations) > 5 else ""
        reason = (
            f"not locally optimal: {len(violations)} of {n_support} support token(s) score at "
            f"least as high as the selected token: {listed}{more}"
        )
    return LocalOptimality(
        locally_optimal=not violations,
        reason=reason,
        violations=violations,
        support=sup,
        alpha=sup.alpha,
    )


def is_locally_optimal(
    data: TokenData,
    alpha: Any,
    *,
    norm: Literal["fro", "nuc"] = "fro",
    tol: float = 1e-6,
    dual_tol: float = 1e-9,
    **solve_kwargs: Any,
) -> LocalOptimality:
    r"""Is the selection :math:`\alpha` locally optimal (a LOT)?

    .. math::

        \alpha \text{ LOT} \iff \text{Att-SVM}(\alpha) \text{ feasible and }
        \gamma_{ik\alpha_{ik}} > \gamma_{ikt}\ \ \forall\, i, k,\ t \in \mathcal T_{ik}(\alpha),

    with :math:`\mathcal T_{ik}(\alpha)` the support tokens (:func:`support_tokens`). The score
    comparison is strict and exact: a support token tying the selected token is a violation.
    Works for one query per sequence, several queries and masks (each query separately).

    Parameters
    ----------
    data : TokenData
        Needs scores (``v`` or explicit ``scores``).
    alpha : array of int, shape (n,) or (n, K)
    norm, tol, dual_tol, **solve_kwargs
        As in :func:`support_tokens`.

    Returns
    -------
    LocalOptimality
        Truthy when locally optimal; ``violations`` and ``reason`` say why not.

    Raises
    ------
    ProblemError
        Invalid input, or a dataset without scores.
    SolverError
        Att-SVM(α) returned neither a solution nor an infeasibility verdict (a solver failure,
        in practice only on ill-conditioned problems): the support tokens, hence the answer,
        are undefined. ``res.status``/``res.message`` of the solve are in the error text.

    References
    ----------
    .. [1] D. A. Tarzanagh, Y. Li, C. Thrampoulidis, S. Oymak, "Transformers as Support Vector
       Machines", arXiv:2308.16898, Definition of locally optimal tokens (§5).

    Examples
    --------
    >>> import numpy as np, svmgeo as sg
    >>> X = np.array([[[1.0, 0.0], [0.0, 1.0], [-2.0, 0.0]]])
    >>> data = sg.TokenData(X, Z=np.array([[1.0, 0.0]]), scores=np.array([[3.0, 2.0, 1.0]]))
    >>> bool(sg.is_locally_optimal(data, [0])), bool(sg.is_locally_optimal(data, [2]))
    (True, False)
    """
    where = "is_locally_optimal"
    data = _check_data(data, where)
    a = check_selection(data, alpha)
    tol, dual_tol = check_tolerances(tol, dual_tol, where)
    scores = _scores_full(data)  # fail early when the dataset has no scores
    res = solve_for(att_svm_constraints(data, a), where=where, norm=norm, **solve_kwargs)
    sup = support_from_result(data, a, res, tol=tol, dual_tol=dual_tol)
    return lot_from_support(data, scores, sup)
