# SPDX-License-Identifier: BSD-3-Clause
r"""Cones around SVM directions: the correlation cone :math:`C_{\mu,R}` and the score cone :math:`C_\varepsilon(\alpha)`.

.. math::

    C_{\mu,R}(W_{\mathrm{ref}}) = \Big\{W : \|W\|_F \ge R,\
    \Big\langle \tfrac{W}{\|W\|_F}, \tfrac{W_{\mathrm{ref}}}{\|W_{\mathrm{ref}}\|_F}\Big\rangle
    \ge 1 - \mu\Big\},
    \qquad
    C_\varepsilon(\alpha) = \Big\{W : \forall (i, k) \text{ with } \mathcal T^+_{ik} \ne
    \emptyset:\ \max_{t \in \mathcal T^-_{ik}} \min_{\tau \in \mathcal T^+_{ik}}
    (x_{it} - x_{i\tau})^\top W z_{ik} \ge \varepsilon \|W\|_F\Big\}.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .._errors import ProblemError
from .._linalg import correlation, frobenius_norm
from .._validation import check_array, check_real
from ..data import TokenData
from ..selection import check_data as _check_data
from ..selection import check_selection, score_sides, score_size_table
from ..selection import scores_full as _scores_full

__all__ = ["in_cone", "in_score_cone", "score_cone_margin"]


def _check_square(W: Any, name: str, d: int | None, where: str) -> np.ndarray:
    M = check_array(W, name, ndim=2, hint="Pass the (d, d) attention matrix W.")
    if M.shape[0] != M.shape[1] or (d is not None and M.shape[0] != d):
        want = "(d, d)" if d is None else f"({d}, {d})"
        raise ProblemError(
            f"{name} must be a square matrix of shape {want} in {where}; got {M.shape}."
        )
    return M


_CORR_ULPS = 8.0 * float(np.finfo(float).eps)
"""The rounding :func:`in_cone` allows in a correlation (a few ulps of 1)."""


def in_cone(W: Any, W_ref: Any, mu: float, R: float = 0.0) -> bool:
    r"""Is :math:`W` in the correlation cone :math:`C_{\mu,R}` around :math:`W_{\mathrm{ref}}`?

    .. math::

        \|W\|_F \ge R \quad\text{and}\quad
        \frac{\langle W, W_{\mathrm{ref}}\rangle}{\|W\|_F\,\|W_{\mathrm{ref}}\|_F} \ge 1 - \mu .

    Parameters
    ----------
    W, W_ref : array of shape (d, d)
        The matrix to test and the cone's axis (e.g. ``att_svm(data, alpha).W``).
    mu : float in (0, 2]
        Angular width: 1 − μ is the least correlation (μ = 2 admits every direction).
    R : float, default 0
        Least Frobenius norm.

    Returns
    -------
    bool
        The correlation of a zero matrix is taken as 0 (no direction).

    Raises
    ------
    ProblemError
        Shapes differ, ``W_ref`` is zero, ``mu`` outside (0, 2] or ``R`` negative.

    References
    ----------
    .. [1] D. A. Tarzanagh, Y. Li, C. Thrampoulidis, S. Oymak, "Transformers as Support Vector
       Machines", arXiv:2308.16898: the cone :math:`C_{\mu,R}` around
       :math:`W^{\mathrm{mm}}` of Theorem 4 (good initial gradient; its wording reconstructed,
       see :mod:`svmgeo.analysis._initial_gradient`) and around :math:`W^{\mathrm{mm}}_\alpha`
       of Theorem 5 (local convergence, W-GD with :math:`\eta \le 1/L_W` and
       :math:`\mu = \mu(\alpha)`): their cones and hypotheses differ (MATH-NOTES §5).
    """
    where = "in_cone"
    A = _check_square(W, "W", None, where)
    B = _check_square(W_ref, "W_ref", A.shape[0], where)
    mu = check_real(mu, "mu", low=0.0, high=2.0, low_open=True, where=where)
    R = check_real(R, "R", low=0.0, where=where)
    if not np.any(B):
        raise ProblemError("W_ref must be nonzero in in_cone: a zero matrix has no direction.")
    # the correlation is computed to a few ulps: a matrix is in its own cone for every mu
    return bool(frobenius_norm(A) >= R and correlation(A, B) >= 1.0 - mu - _CORR_ULPS)


def score_cone_margin(data: TokenData, alpha: Any, W: Any) -> float:
    r"""The quantity that defines the score cone :math:`C_\varepsilon(\alpha)` (SPEC §5).

    .. math::

        \min_{(i,k):\ \mathcal T^+_{ik} \ne \emptyset}\ \max_{t \in \mathcal T^-_{ik}}\
        \min_{\tau \in \mathcal T^+_{ik}} (x_{it} - x_{i\tau})^\top W z_{ik},
        \qquad
        \begin{aligned}
        \mathcal T^-_{ik} &= \{t : \gamma_{ikt} < \gamma_{ik\alpha_{ik}}\},\\
        \mathcal T^+_{ik} &= \{\tau \ne \alpha_{ik} : \gamma_{ik\tau} \ge \gamma_{ik\alpha_{ik}}\},
        \end{aligned}

    over visible tokens only, with ties up to round-off in :math:`\mathcal T^+`
    (:func:`svmgeo.selection.at_least`, the rule of :func:`~svmgeo.optimal_token_sets`).
    :math:`W \in C_\varepsilon(\alpha)` iff the value is
    :math:`\ge \varepsilon\|W\|_F` (see :func:`in_score_cone`). With logits
    :math:`\ell_t = x_{it}^\top W z_{ik}` the inner term is
    :math:`\max_{t\in\mathcal T^-}\ell_t - \max_{\tau\in\mathcal T^+}\ell_\tau`.

    Parameters
    ----------
    data : TokenData
        Needs scores.
    alpha : array of int, shape (n,) or (n, K)
    W : array of shape (d, d)

    Returns
    -------
    float
        ``+inf`` when no query has a high-score token (:math:`\mathcal T^+ = \emptyset`
        everywhere: the cone is the whole space). ``-inf`` when some query has high-score
        tokens but no low-score one (α selects its lowest-scoring token: the cone is empty).
    """
    return _score_cone_margin(data, alpha, W, "score_cone_margin")


def _score_cone_margin(data: TokenData, alpha: Any, W: Any, where: str) -> float:
    """:func:`score_cone_margin`, with errors naming ``where`` (the function called)."""
    data = _check_data(data, where)
    a = check_selection(data, alpha)
    M = _check_square(W, "W", data.d, where)
    # ties up to round-off count as high (as the LOT test)
    low, high = score_sides(_scores_full(data), score_size_table(data), a, data.visible)
    logits = np.einsum("itd,de,ike->ikt", data.X, M, data.queries)
    has_high = high.any(axis=2)
    if not np.any(has_high):
        return float("inf")
    best_low = np.where(low, logits, -np.inf).max(axis=2)[has_high]
    best_high = np.where(high, logits, -np.inf).max(axis=2)[has_high]  # finite here
    return float(np.min(best_low - best_high))


def in_score_cone(data: TokenData, alpha: Any, W: Any, eps: float) -> bool:
    r"""Is :math:`W \in C_\varepsilon(\alpha)`, i.e. ``score_cone_margin(data, alpha, W) >= eps * ||W||_F``?

    Parameters
    ----------
    data : TokenData
    alpha : array of int, shape (n,) or (n, K)
    W : array of shape (d, d)
    eps : float in (0, inf)

    Returns
    -------
    bool

    Raises
    ------
    ProblemError
        ``eps`` not a positive finite number, or invalid input.
    """
    eps = check_real(eps, "eps", low=0.0, low_open=True, high_open=True, where="in_score_cone")
    margin = _score_cone_margin(data, alpha, W, "in_score_cone")
    return bool(margin >= eps * frobenius_norm(np.asarray(W, dtype=float)))
