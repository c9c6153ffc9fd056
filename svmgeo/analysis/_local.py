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

from .._errors import ProblemError, SolverError
from .._summary import summarized
from ..constraints import MARGIN, att_svm_constraints
from ..data import TokenData
from ..selection import check_data as _check_data
from ..selection import check_selection, first_five, query_label, score_sides, sizes_full
from ..selection import scores_full as _scores_full
from ..solvers import SVMResult, minimizer_margin_reach, solve_for
from ._support import (
    SUPPORT_DUAL_TOL,
    SUPPORT_TOL,
    SupportTokens,
    check_lot_norm,
    check_tolerances,
    support_from_result,
)

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

    A verdict is *decided* (a LOT or not) or *undecided*: undecided verdicts are falsy, with
    ``decided`` False and ``locally_optimal`` False, and mean neither "LOT" nor "not a LOT".

    Attributes
    ----------
    locally_optimal : bool
        True only for a decided LOT.
    reason : str
        Why, in words (infeasible, violating support tokens, all support tokens lower, or
        what leaves the verdict undecided).
    violations : tuple of LOTViolation
        ``(seq, query, token, score_selected, score_token)`` for every support token with
        :math:`\gamma_{ikt} \ge \gamma_{ik\alpha_{ik}}` (active margin and positive
        multiplier: both witnesses agree). Empty when locally optimal or infeasible.
    support : SupportTokens
        The support tokens (and the Att-SVM solve, or its Farkas certificate).
    alpha : ndarray of int, shape (n,) or (n, K)
    decided : bool, default True
        False when the verdict depends on what the solve cannot settle: a token scoring at
        least as high as the selected one whose two witnesses disagree (active margin with a
        zero multiplier, or a positive multiplier with a slack margin; floats cannot tell a
        margin of exactly 1 from :math:`1 + 10^{-7}` in general), when no such token is a
        certain support token; or, for Att-SVM⋆, an optimum that is not unique
        (:func:`~svmgeo.solvers.optimum_uniqueness` finds a face of optima) while some
        token scores at least as high as the selected one, so that its support status, and
        the verdict, may differ over the face; or, for ``("lp", p)``, a returned W certified in
        value but not shown to be the unique minimizer (``support.argmin_doubt``) while some
        token scores at least as high as the selected one. ``reason`` names the tokens.
        For ``("lp", p)`` also a token scoring at least as high as the selected one that is
        slack at W but not proved slack at the minimizer (``support.slack_unproved``: its
        slack within what the forward radius ``svm.extras["argmin"].radius`` lets the
        minimizer's margin differ by), when no certain support token violates. A decided
        *True* ``("lp", p)`` verdict therefore has every high-scoring token proved slack at
        the minimizer. A decided "not a LOT" is not covered by the radius: it rests, as for
        every norm, on a high-scoring token whose margin at W is within ``tol`` of 1 with a
        positive multiplier (the minimizer's margin may differ from W's by more than ``tol``;
        docs/analysis.md), or on Att-SVM(α)'s infeasibility certificate.
    """

    locally_optimal: bool
    reason: str
    violations: tuple[LOTViolation, ...]
    support: SupportTokens
    alpha: np.ndarray
    decided: bool = True

    def __bool__(self) -> bool:
        return self.locally_optimal

    @property
    def answer(self) -> bool | None:
        """The verdict in three values: True (a LOT), False (not a LOT) or None (undecided;
        ``reason`` says why). ``bool(verdict)`` folds undecided into False."""
        return self.locally_optimal if self.decided else None


def _per_token(data: TokenData, res: SVMResult, values: np.ndarray | None) -> np.ndarray:
    """The values of the margin rows of ``res`` (one per row) at their (i, k, t); NaN elsewhere."""
    out = np.full((data.n, data.K, data.T), np.nan)
    if values is not None:
        cs = res.constraints
        rows = cs.kind == MARGIN
        out[cs.seq[rows], cs.query[rows], cs.comp[rows]] = np.asarray(values, dtype=float)[rows]
    return out


FACE_TOL = 1e-4
r""":math:`\tau` of the optimal face measured for a LOT verdict
(:func:`~svmgeo.solvers.optimum_uniqueness`; width threshold :math:`10\sqrt\tau = 0.1`).
Its default 1e-6 face is too thin for Clarabel on nuclear problems: it failed on every one of
the 3 selections of ``random_data(2, 3, 3, seed=0)`` tried, and measured all 27 feasible
selections of seeds 0-2 at 1e-4. A face of optima as wide as 0.1 of the optimum is still
found."""


def _face_of_optima(data: TokenData, sup: SupportTokens, high: np.ndarray) -> str | None:
    """Why the verdict may differ over the optimal face, or None when the face is a point.

    ``high`` marks the visible competitors scoring at least as high as the selected token.
    """
    from ..solvers import optimum_uniqueness

    tokens = first_five([f"{query_label(data, i, k)}: token {t}" for i, k, t in np.argwhere(high)])
    try:
        face = optimum_uniqueness(sup.svm, tol=FACE_TOL)
    except (ProblemError, SolverError) as err:  # a binding rank bound, or a failed solve
        found = f"its optimal set could not be measured ({err})"
    else:
        if face.unique:
            return None
        found = (
            f"optimum_uniqueness finds a face of optima (width {face.width:.3g} > "
            f"{face.threshold:.3g})"
        )
    return (
        f"undecided: the {sup.svm.norm} optimum of Att-SVM(alpha) is not proved unique: {found}, "
        "and "
        f"whether the tokens scoring at least as high as their selected token ({tokens}) are "
        "support tokens may differ over the optimal face; the verdict at the returned "
        "optimum is not the selection's"
    )


def _not_the_optimum(data: TokenData, sup: SupportTokens, high: np.ndarray) -> str:
    """Why the verdict is undecided when ``sup.svm.W`` is not shown to be the unique optimum
    (``sup.argmin_doubt``), ``high`` marking the tokens scoring at least as high as their
    selected token."""
    tokens = first_five([f"{query_label(data, i, k)}: token {t}" for i, k, t in np.argwhere(high)])
    return (
        f"undecided: the returned W is not shown to be the unique {sup.svm.norm} optimum of "
        f"Att-SVM(alpha) ({sup.argmin_doubt}), and whether the tokens scoring at least as high "
        f"as their selected token ({tokens}) are support tokens is read off W: the verdict at "
        "the returned W is not the selection's"
    )


def _slack_unproved(
    data: TokenData, scores: np.ndarray, selected: np.ndarray, sup: SupportTokens,
    which: np.ndarray,
) -> str:  # fmt: skip
    """Why the verdict is undecided when the tokens ``which`` (shape (n, K, T)), scoring at
    least as high as their selected token, are slack at the returned W by less than the
    minimizer's margins can differ from W's (``sup.slack_unproved``, by the forward radius
    of ``sup.svm.extras["argmin"]``)."""
    res = sup.svm
    p = float(res.extras["p"])
    margins = _per_token(data, res, res.margins)
    reach = _per_token(data, res, minimizer_margin_reach(res))
    listed = first_five(
        [
            f"{query_label(data, i, k)}: token {t} (score {_score(scores[i, k, t])} >= selected "
            f"{_score(selected[i, k, 0])}) has slack {float(margins[i, k, t]) - 1.0:.3g} at W, "
            f"within the {float(reach[i, k, t]):.3g} by which the minimizer's margin can differ"
            for i, k, t in np.argwhere(which)
        ]
    )
    return (
        "undecided: these tokens are slack at the returned W but not proved slack at the "
        f"l_{p:g} minimizer W* (||W - W*||_p <= {res.extras['argmin'].radius:.3g} ||W||_p, "
        f"the forward bound of svm.extras['argmin'], by Clarkson's inequalities): {listed}. "
        "Each is a violation if it is a support token of W* and none otherwise"
    )


def _score(x: float) -> str:
    """A token score for a reason's text: 0 for -0.0 (a score Y h with h = 0 and Y = -1)."""
    return f"{float(x) + 0.0:.6g}"


def lot_from_support(
    data: TokenData, scores: np.ndarray, sizes: np.ndarray, sup: SupportTokens
) -> LocalOptimality:
    """Apply the LOT test to computed support tokens (``scores`` of shape (n, K, T), and
    their ``sizes``, :func:`~svmgeo.selection.score_size_table`).

    A token decides the verdict when it scores at least as high as its selected token. It
    is a support token when its margin is active and its multiplier positive, not one when
    neither; when the two disagree (``weakly_active``, ``inconsistent``) it is undecided,
    and so is the verdict unless a certain support token already violates. For a norm
    without a unique optimum, a decided verdict with such tokens is checked over the face.
    """
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
    shape = (data.n, data.K, data.T)
    mask = np.reshape(sup.mask, shape)
    alpha = np.asarray(sup.alpha).reshape(data.n, data.K)
    selected = np.take_along_axis(scores, alpha[:, :, None], axis=2)  # (n, K, 1)
    high = score_sides(scores, sizes, alpha, data.visible)[1]
    if sup.by_dual is None:  # no multipliers: the margins alone
        certain, unsure = mask, np.zeros(shape, dtype=bool)
    else:
        dual = np.reshape(sup.by_dual, shape)
        certain, unsure = mask & dual, mask ^ dual
    unproved = (
        np.zeros(shape, dtype=bool)
        if sup.slack_unproved is None
        else np.reshape(sup.slack_unproved, shape)
    )
    violations = tuple(
        LOTViolation(int(i), int(k), int(t), float(selected[i, k, 0]), float(scores[i, k, t]))
        for i, k, t in np.argwhere(certain & high)
    )
    n_support = int(mask.sum())
    decided = True
    if violations:
        listed = first_five(
            [
                f"{query_label(data, v.seq, v.query)}: support token {v.token} scores "
                f"{_score(v.score_token)} >= selected {_score(v.score_selected)}"
                for v in violations
            ]
        )
        reason = (
            f"not locally optimal: {len(violations)} of {n_support} support token(s) score at "
            f"least as high as the selected token: {listed}"
        )
    elif np.any(unsure & high):
        decided = False
        margins = _per_token(data, sup.svm, sup.svm.margins)
        multipliers = _per_token(data, sup.svm, sup.svm.dual)
        listed = first_five(
            [
                f"{query_label(data, i, k)}: token {t} (score {_score(scores[i, k, t])} >= "
                f"selected {_score(selected[i, k, 0])}) has margin {float(margins[i, k, t])!r} and "
                f"multiplier {float(multipliers[i, k, t])!r}"
                for i, k, t in np.argwhere(unsure & high)
            ]
        )
        reason = (
            "undecided: whether these tokens are support tokens is not settled (an active "
            f"margin, |m - 1| <= tol*max(1, |m|) with tol={sup.tol:g}, but a zero multiplier, or "
            f"the reverse; floats cannot tell a margin of exactly 1 from a slack below tol): "
            f"{listed}. Each is a violation if it is a support token and none otherwise"
        )
    elif np.any(unproved & high):
        decided = False
        reason = _slack_unproved(data, scores, selected, sup, unproved & high)
    else:
        reason = (
            "locally optimal: Att-SVM(alpha) is feasible and all "
            f"{n_support} support token(s) score strictly below their selected token"
        )
    if decided and not sup.unique_optimum and np.any(high):
        face = _face_of_optima(data, sup, high)
        if face is not None:
            decided, reason, violations = False, face, ()
    if sup.argmin_doubt is not None and np.any(high):  # before any reason read off that W
        decided, reason, violations = False, _not_the_optimum(data, sup, high), ()
    return LocalOptimality(
        locally_optimal=decided and not violations,
        reason=reason,
        violations=violations,
        support=sup,
        alpha=sup.alpha,
        decided=decided,
    )


def is_locally_optimal(
    data: TokenData,
    alpha: Any,
    *,
    norm: Literal["fro", "nuc"] = "fro",
    tol: float = SUPPORT_TOL,
    dual_tol: float = SUPPORT_DUAL_TOL,
    sizes: Any = None,
    **solve_kwargs: Any,
) -> LocalOptimality:
    r"""Is the selection :math:`\alpha` locally optimal (a LOT)?

    .. math::

        \alpha \text{ LOT} \iff \text{Att-SVM}(\alpha) \text{ feasible and }
        \gamma_{ik\alpha_{ik}} > \gamma_{ikt}\ \ \forall\, i, k,\ t \in \mathcal T_{ik}(\alpha),

    with :math:`\mathcal T_{ik}(\alpha)` the support tokens (:func:`support_tokens`). The score
    comparison is strict: a support token tying the selected token is a violation, ties up to
    round-off included (:func:`svmgeo.selection.at_least`, the rule of
    :func:`~svmgeo.optimal_token_sets`). Works for one query per sequence, several queries
    and masks (each query separately).

    The verdict is decided or *undecided* (``decided`` False, falsy): undecided when it
    depends on a token whose support status the solve cannot settle (its margin is within
    ``tol`` of 1 but its multiplier is zero, or the reverse), or, with ``norm="nuc"``, on
    which optimum of a face of Att-SVM⋆ optima is taken, or, with ``("lp", p)``, on a W that
    is not shown to be the minimizer (:class:`LocalOptimality`). A decided
    verdict reads the support off the certified solve; with ``norm="nuc"`` it also rests on
    :func:`~svmgeo.solvers.optimum_uniqueness`, which measures the face along random
    directions (evidence, not a proof: a face narrower than its threshold, 0.1 at
    ``tol=1e-4``, is taken as unique).

    Parameters
    ----------
    data : TokenData
        Needs scores (``v`` or explicit ``scores``).
    alpha : array of int, shape (n,) or (n, K)
    norm : {"fro", "nuc"} or ("lp", p) with 1 < p < inf, default "fro"
        Att-SVM or Att-SVM⋆, the SVMs of TF-SVM's local optimality, or the :math:`\ell_p`
        SVM of mirror descent (one optimum, as for Att-SVM; its solve's value certificate is
        not enough near p = 1 or at large p, where W is checked against the mirror image of
        its multipliers, ``svm.extras["argmin"]``, a backward-error check, and a decided
        True verdict needs its high-scoring tokens proved slack at the minimizer by W's
        forward radius, Clarkson's inequalities, ``support.slack_unproved``: near p = 1 and
        at large p, where that radius is of the order of ``||W||_p``, verdicts with a
        high-scoring slack token are undecided; a decided "not a LOT" is read off W's
        margins within ``tol`` and its multipliers, as for every norm, not covered by the
        radius);
        other norms are refused (see
        :func:`support_tokens`). With ``"nuc"`` each verdict that
        depends on the support tokens costs :func:`~svmgeo.solvers.optimum_uniqueness`'s
        four extra convex solves.
    tol, dual_tol, **solve_kwargs
        As in :func:`support_tokens`.
    sizes : array of shape (n, T) or (n, K, T), optional
        The sizes of the scores, for the round-off of the comparison (as in
        :func:`~svmgeo.optimal_token_sets`; default the data's own).

    Returns
    -------
    LocalOptimality
        Truthy when proved locally optimal; ``violations`` and ``reason`` say why not, and
        ``decided`` is False when the verdict is undecided.

    Raises
    ------
    ProblemError
        Invalid input, a norm other than "fro", "nuc" and ("lp", p) with 1 < p < inf, or a
        dataset without scores.
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
    check_lot_norm(norm, where)
    scores = _scores_full(data)  # fail early when the dataset has no scores
    score_size = sizes_full(data, sizes, where)
    res = solve_for(att_svm_constraints(data, a), where=where, norm=norm, **solve_kwargs)
    sup = support_from_result(data, a, res, tol=tol, dual_tol=dual_tol)
    return lot_from_support(data, scores, score_size, sup)
