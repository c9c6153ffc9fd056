# SPDX-License-Identifier: BSD-3-Clause
r"""Local optimality of a sigmoid-attention sign pattern: svmgeo's analogue of the LOT test.

.. math::

    \pi \text{ locally optimal} \iff W_\pi \text{ feasible and }
    \pi_{ikt}\, x_{it}^\top W_\pi z_{ik} > 1 \ \ \forall (i, k, t) \text{ with }
    \pi_{ikt} = -\mathrm{sign}\,\gamma_{ikt},

with :math:`W_\pi` the SVM of the sign pattern (rows :math:`\pi_{ikt} x_{it}^\top W z_{ik} \ge 1`):
every *support* key of :math:`W_\pi` has the sign of its pull. svmgeo's derivation of the
leading-order asymptotics and its conjecture about gradient descent (docs/attention-maps.md).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np

from .._summary import summarized
from .._validation import check_real
from ..constraints import attention_pattern
from ..data import TokenData
from ..selection import check_data as _check_data
from ..selection import first_five, query_label
from ..selection import scores_full as _scores_full
from ..solvers import Status, SVMResult, att_svm

__all__ = ["PatternOptimality", "StuckKey", "is_locally_optimal_pattern"]

PATTERN_LABEL = (
    "conjecture (svmgeo's): the test is svmgeo's derivation from the leading-order expansion "
    "of the sigmoid risk along W = R W_pi; that GD keeps a sign exactly when it passes is "
    "measured, not proved (docs/attention-maps.md)"
)
"""The label of every :class:`PatternOptimality`."""


class StuckKey(NamedTuple):
    r"""A key whose sign in the pattern is against its pull (:math:`\pi_{ikt}\gamma_{ikt} < 0`).

    ``margin``: :math:`\pi_{ikt} x_{it}^\top W_\pi z_{ik}` (the support keys of :math:`W_\pi`
    have margin 1); ``margin_correct``: the same at :math:`W_C`, the SVM of the correctly signed
    keys alone (< 1: the key's pull dominates near the ray of :math:`W_C`, predicted to flip);
    ``stays``: ``margin > 1 + tol``.
    """

    seq: int
    query: int
    token: int
    score: float
    margin: float
    margin_correct: float
    stays: bool


@summarized
@dataclass(frozen=True, eq=False)
class PatternOptimality:
    r"""Verdict of :func:`is_locally_optimal_pattern`; truthy exactly when the pattern passes.

    A verdict is *decided* or *undecided* (``decided`` False, falsy, ``locally_optimal``
    False): undecided when the SVM of the pattern was neither solved to a certificate nor
    proved infeasible, which means neither "passes" nor "fails".

    Attributes
    ----------
    locally_optimal : bool
        True only for a decided pass.
    reason : str
    pattern : ndarray of shape (n, K, T)
        :math:`\pi` in {-1, 0, +1} (0: no row: hidden key or :math:`\gamma_{ikt} = 0`).
    pull : ndarray of shape (n, K, T)
        :math:`\mathrm{sign}\,\gamma_{ikt}` on the same keys.
    stuck : tuple of StuckKey
        Every key of :math:`\pi` against its pull, with its margins; empty for the pull pattern.
    W_pattern : ndarray of shape (d, d) or None
        :math:`W_\pi`, the SVM of the pattern (None when infeasible).
    W_correct : ndarray of shape (d, d) or None
        :math:`W_C`, the SVM of the correctly signed keys alone (equal to :math:`W_\pi` when the
        pattern passes; None when infeasible or when no key is correctly signed).
    svm : SVMResult
        The solve of :math:`W_\pi` (``att_svm(data, attention="sigmoid", pattern=pi)``).
    decided : bool, default True
        False when ``svm`` is neither ``optimal`` nor a proved ``infeasible``.
    label : str
        :data:`PATTERN_LABEL`.
    """

    locally_optimal: bool
    reason: str
    pattern: np.ndarray
    pull: np.ndarray
    stuck: tuple[StuckKey, ...]
    W_pattern: np.ndarray | None
    W_correct: np.ndarray | None
    svm: SVMResult
    decided: bool = True
    label: str = PATTERN_LABEL

    def __bool__(self) -> bool:
        return self.locally_optimal


def _margins(data: TokenData, W: np.ndarray, pi: np.ndarray) -> np.ndarray:
    u = np.einsum("ntd,de,nke->nkt", np.asarray(data.X), W, np.asarray(data.queries))
    return np.asarray(pi * u)


def is_locally_optimal_pattern(
    data: TokenData, pattern: Any, *, tol: float = 1e-6, **solve_kwargs: Any
) -> PatternOptimality:
    r"""Is the sign pattern :math:`\pi` of a sigmoid-attention run locally optimal?

    .. math::

        \pi \text{ passes} \iff W_\pi \text{ feasible and }
        m_{ikt} = \pi_{ikt}\, x_{it}^\top W_\pi z_{ik} > 1 + \mathrm{tol}
        \ \ \text{for every key with } \pi_{ikt}\gamma_{ikt} < 0,

    :math:`W_\pi = \arg\min \|W\|_F` s.t. :math:`\pi_{ikt} x_{it}^\top W z_{ik} \ge 1`: no key
    against its pull is a support key of :math:`W_\pi` (the LOT test's "support tokens score
    below the selected one", for signs). Equivalently (convexity) :math:`W_\pi = W_C`, the SVM of
    the correctly signed keys alone, and :math:`W_C` gives each stuck key margin > 1.

    *svmgeo's derivation.* With :math:`\sigma(u) = [\pi > 0] - \pi\,\sigma(-\pi u)` and
    :math:`\sigma(-m) \approx e^{-m}`, along :math:`W = R\,\bar W` the risk is
    :math:`L_\infty(\pi) + \frac1n\sum_i |\ell'(F_i)| \sum_t \gamma_{it}\pi_{it}
    e^{-\pi_{it} u_{it}}` to leading order: an exponential loss on the rows
    :math:`\pi_{it} x_{it} z_i^\top` with positive weights on the correctly signed keys and
    negative ones on the stuck keys. Near the ray of :math:`W_C` a stuck key's pull
    (toward flipping) is :math:`e^{-R\, m^C_{ikt}}` against the support keys'
    :math:`e^{-R}`: negligible when :math:`m^C > 1`, dominant when :math:`m^C < 1`.
    *Conjecture (measured in docs/attention-maps.md):* GD that ends near the pattern keeps the
    stuck signs exactly when the test passes.

    Parameters
    ----------
    data : TokenData
        With a linear head (``v`` or ``scores``).
    pattern : GDRun, ndarray of shape (d, d), or sign array of shape (n, T) / (n, K, T)
        As ``att_svm(data, attention="sigmoid", pattern=...)``: a run of
        ``train(..., attention="sigmoid")``, its W, or the signs.
    tol : float, default 1e-6
        A stuck key with margin :math:`\le 1 + \mathrm{tol}` counts as a support key.
    **solve_kwargs
        Passed to :func:`~svmgeo.att_svm`.

    Returns
    -------
    PatternOptimality
        Truthy when the pattern passes; ``stuck`` lists the keys against their pull.

    Raises
    ------
    ProblemError
        ``data`` without a head, a malformed ``pattern`` or ``tol`` (negative, not finite).
    """
    data = _check_data(data, "is_locally_optimal_pattern")
    tol = check_real(tol, "tol", where="is_locally_optimal_pattern", low=0.0)
    pi = attention_pattern(data, "sigmoid", pattern)
    pull = attention_pattern(data, "sigmoid")
    gamma = _scores_full(data)
    wrong = (pi != 0.0) & (pi != pull)
    svm = att_svm(data, attention="sigmoid", pattern=pi, **solve_kwargs)
    W_pi = svm.W if svm.success and svm.W is not None else None
    correct = np.where(wrong, 0.0, pi)
    W_c: np.ndarray | None
    if not wrong.any():
        W_c = W_pi
    elif not correct.any():
        W_c = None
    else:
        res_c = att_svm(data, attention="sigmoid", pattern=correct, **solve_kwargs)
        W_c = res_c.W if res_c.success and res_c.W is not None else None
    m_pi = _margins(data, W_pi, pi) if W_pi is not None else np.full(pi.shape, np.nan)
    m_c = _margins(data, W_c, pi) if W_c is not None else np.full(pi.shape, np.nan)
    stuck = tuple(
        StuckKey(int(i), int(k), int(t), float(gamma[i, k, t]), float(m_pi[i, k, t]),
                 float(m_c[i, k, t]), bool(m_pi[i, k, t] > 1.0 + tol))
        for i, k, t in np.argwhere(wrong)
    )  # fmt: skip
    decided = svm.success or svm.status is Status.INFEASIBLE
    if not decided:
        ok = False
        reason = (
            f"undecided: the SVM of the pattern was not solved to a certificate ({svm.status}: "
            f"{svm.message})"
        )
    elif W_pi is None:
        ok = False
        reason = f"not locally optimal: the SVM of the pattern is infeasible ({svm.message})"
    elif not stuck:
        ok = True
        reason = "locally optimal: every key has the sign of its pull (the pull pattern)"
    else:
        ok = all(s.stays for s in stuck)
        listed = first_five(
            [f"{query_label(data, s.seq, s.query)}, key {s.token}: margin {s.margin:.6g}"
             + ("" if s.stays else " (support)") for s in stuck]
        )  # fmt: skip
        verdict = "locally optimal" if ok else "not locally optimal"
        reason = (
            f"{verdict}: {len(stuck)} key(s) against their pull, "
            f"{sum(not s.stays for s in stuck)} of them support keys of W_pi: {listed}"
        )
    return PatternOptimality(
        locally_optimal=ok,
        reason=reason,
        pattern=pi,
        pull=pull,
        stuck=stuck,
        W_pattern=W_pi,
        W_correct=W_c,
        svm=svm,
        decided=decided,
    )
