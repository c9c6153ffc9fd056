# SPDX-License-Identifier: BSD-3-Clause
r"""Theorem 4's good-initial-gradient condition and its cone; the step-size bound :math:`L_W`.

.. math::

    \langle \nabla L(0),\, W^{\mathrm{mm}} \rangle < 0, \qquad
    C_{\mu,R}(W^{\mathrm{mm}}) = \Big\{ W : \|W\|_F \ge R,\
    \Big\langle \frac{W}{\|W\|_F}, \frac{W^{\mathrm{mm}}}{\|W^{\mathrm{mm}}\|_F} \Big\rangle
    \ge 1 - \mu \Big\}.

Theorem 4 of Tarzanagh et al. (*theorem*, W-parameterization, linear head; the wording here is
reconstructed, MATH-NOTES §0 [R]): under Assumption A, unique optimal tokens and Att-SVM(opt)
feasible, a good initial gradient gives a cone around :math:`W^{\mathrm{mm}}` free of stationary
points at large norm, and GD with :math:`\eta \le 1/L_W` converges in direction to
:math:`W^{\mathrm{mm}}` *if its iterates stay in that cone*. GD from zero is not covered
without that proviso.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from .._errors import ProblemError
from .._linalg import correlation
from .._summary import summarized
from .._validation import check_option
from ..data import TokenData
from ..gd import LOSSES, loss_and_grad
from ..selection import scores_full
from ._cones import in_cone

__all__ = [
    "InitialGradient",
    "good_initial_gradient",
    "gradient_lipschitz_bound",
    "lipschitz_from_loss_bounds",
]

_WHERE = "good_initial_gradient"


@summarized
@dataclass(frozen=True, eq=False)
class InitialGradient:
    r"""Theorem 4's condition at :math:`W = 0` and the theorem's hypotheses.

    Attributes
    ----------
    good : bool
        :math:`\langle \nabla L(0), W^{\mathrm{mm}}\rangle < 0`, beyond the rounding bound of
        its terms (False when a hypothesis fails, Att-SVM(opt) is infeasible, or the sign is
        undecided).
    inner : float
        :math:`\langle \nabla L(0), W^{\mathrm{mm}}\rangle` (NaN without :math:`W^{\mathrm{mm}}`).
    correlation : float
        :math:`\mathrm{corr}(-\nabla L(0), W^{\mathrm{mm}})` (NaN without it, or at
        :math:`\nabla L(0) = 0`).
    mu_first_step : float
        :math:`1 - \mathrm{corr}`: the narrowest cone :math:`C_\mu` that holds GD's first step
        from zero, :math:`-\eta\nabla L(0)`.
    grad0 : ndarray of shape (d, d)
        :math:`\nabla L(0)`.
    W_mm : ndarray of shape (d, d) or None
        Att-SVM(opt) (Frobenius).
    lipschitz : float
        :math:`L_W`, an upper bound on the Lipschitz constant of :math:`\nabla L`
        (:func:`gradient_lipschitz_bound`); the theorem's steps are :math:`\eta \le 1/L_W`.
    hypotheses : tuple of str
        The theorem's hypotheses that fail (empty when all hold), and, when the sign of
        ``inner`` is undecided, why.
    loss : str
    decided : bool, default True
        False when :math:`|\langle \nabla L(0), W^{\mathrm{mm}}\rangle|` is within the
        rounding bound of its terms (:func:`_rounding_bound`): :math:`\nabla L(0)` may be 0
        (e.g. every sequence's scores balanced), and the sign computed is round-off; ``good``
        is then False and says nothing.
    """

    good: bool
    inner: float
    correlation: float
    mu_first_step: float
    grad0: np.ndarray
    W_mm: np.ndarray | None
    lipschitz: float
    hypotheses: tuple[str, ...]
    loss: str
    decided: bool = True

    @property
    def max_step(self) -> float:
        r""":math:`1/L_W`."""
        return 1.0 / self.lipschitz if self.lipschitz > 0.0 else math.inf

    def in_cone(self, W: Any, mu: float, R: float = 0.0) -> bool:
        r"""Whether W lies in :math:`C_{\mu,R}(W^{\mathrm{mm}})` (:func:`~svmgeo.in_cone`)."""
        if self.W_mm is None:
            raise ProblemError("in_cone needs W_mm: Att-SVM(opt) is infeasible for this data.")
        return in_cone(W, self.W_mm, mu, R)

    def _repr_html_(self) -> str:  # Jupyter: the field table (svmgeo._summary)
        from .._summary import html_summary

        return html_summary(self)


def _loss_bounds(loss: str, lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    r"""``(M0, M1)``: :math:`\sup|\ell'|` and :math:`\sup|\ell''|` over :math:`u \in [lo, hi]`."""
    if loss == "logistic":
        return np.ones_like(lo), np.full_like(lo, 0.25)
    if loss == "exponential":
        e = np.exp(-lo)
        return e, e
    return np.ones_like(lo), np.zeros_like(lo)  # correlation: l(u) = -u


def gradient_lipschitz_bound(data: TokenData, loss: str = "logistic") -> float:
    r"""An upper bound :math:`L_W` on the Lipschitz constant of :math:`\nabla L` (linear head).

    .. math::

        L_W = \frac1n \sum_{i,k} \|X_{ik}\|_2^2\,\|z_{ik}\|^2
        \Big(M_1 \frac{\Delta_{ik}^2}{4} + M_0 \Delta_{ik}\Big),

    with :math:`X_{ik}` the tokens query (i, k) sees, :math:`\Delta_{ik}` the spread of their
    scores :math:`\gamma_{ikt}`, and :math:`M_0, M_1` the suprema of :math:`|\ell'|,
    |\ell''|` over :math:`[\min_t\gamma_{ikt}, \max_t\gamma_{ikt}]` (which holds
    :math:`Y f`). *svmgeo's bound* (the paper states its own constant): with
    :math:`f = \mathbb E_s[\gamma]`, the first and second derivatives of f in the logits are
    the covariance and third central moment under s, bounded by :math:`\Delta/2` and
    :math:`\Delta` times the directions' norms, and :math:`\|X W z\| \le \|X\|_2 \|W\|_F
    \|z\|`. ``inf`` where the bound leaves float64 (the exponential loss on scores below
    about -709).
    """
    check_option(loss, "loss", LOSSES, where="gradient_lipschitz_bound")
    S = scores_full(data)  # (n, K, T)
    vis = np.asarray(data.visible)
    lo = np.where(vis, S, np.inf).min(axis=2)
    hi = np.where(vis, S, -np.inf).max(axis=2)
    with np.errstate(over="ignore", invalid="ignore"):  # e^{-lo} beyond float64: L_W = inf
        M0, M1 = _loss_bounds(loss, lo, hi)
        return lipschitz_from_loss_bounds(data, M0, M1, lo, hi)


def lipschitz_from_loss_bounds(
    data: TokenData, M0: np.ndarray, M1: np.ndarray, lo: np.ndarray, hi: np.ndarray
) -> float:
    r""":func:`gradient_lipschitz_bound`'s formula for given suprema ``M0, M1`` of shape (n, K)
    over the score intervals ``[lo, hi]`` (also used by :func:`~svmgeo.analysis.check_loss`);
    for prompt-attention data (no queries, logits :math:`X_i p`) the bound in p, i.e. the
    formula with :math:`\|z_{ik}\| = 1`."""
    vis = np.asarray(data.visible)
    X = np.asarray(data.X)
    Z = np.asarray(data.queries) if data.has_queries else None  # prompt data: logits X_i p
    spread = hi - lo
    total = 0.0
    for i in range(data.n):
        for k in range(data.K):
            Xv = X[i][vis[i, k]]
            x2 = float(np.linalg.norm(Xv, 2)) ** 2
            z2 = 1.0 if Z is None else float(Z[i, k] @ Z[i, k])  # p: the same bound, z = 1
            total += x2 * z2 * (M1[i, k] * spread[i, k] ** 2 / 4.0 + M0[i, k] * spread[i, k])
    return total / data.n


def _rounding_bound(data: TokenData, loss: str) -> np.ndarray:
    r"""A bound, entrywise, on the rounding error of :math:`\nabla L(0)` computed in float64.

    .. math::

        |\hat G_{ab} - G_{ab}| \le m\,\epsilon\,\frac1n \sum_{i,k} M_0(\bar\gamma_{ik})
        \sum_{t\ \mathrm{visible}} |x_{ita}|\,\frac{|\gamma_{ikt}| + |\bar\gamma_{ik}|}{T_{ik}}
        \,|z_{ikb}|,

    :math:`m\epsilon` times the sum of the absolute values of the terms that form
    :math:`G_{ab}` (:math:`M_0 \ge |\ell'|`), with :math:`m = 2T + nK + 8`: the standard bound
    :math:`\gamma_m = m\epsilon/(1 - m\epsilon)` of a sum of :math:`m` rounded terms, with room
    for the scores, their mean and the products (a few operations each, generously)."""
    S = scores_full(data)  # (n, K, T)
    vis = np.asarray(data.visible)
    count = vis.sum(axis=2)
    mean = np.where(vis, S, 0.0).sum(axis=2) / count
    weight = np.where(vis, (np.abs(S) + np.abs(mean)[:, :, None]) / count[:, :, None], 0.0)
    with np.errstate(over="ignore", invalid="ignore"):  # inf: the caller says it overflowed
        M0, _ = _loss_bounds(loss, mean, mean)
        weight = weight * M0[:, :, None]
        terms = np.einsum("ikt,ita,ikb->ab", weight, np.abs(data.X), np.abs(data.queries))
    terms = terms / data.n
    m = 2 * data.T + data.n * data.K + 8
    return m * float(np.finfo(float).eps) * terms


def good_initial_gradient(data: TokenData, *, loss: str = "logistic") -> InitialGradient:
    r"""Theorem 4's good-initial-gradient condition, :math:`\langle\nabla L(0), W^{\mathrm{mm}}
    \rangle < 0`, with the theorem's hypotheses checked.

    .. math::

        \nabla L(0) = \frac1n \sum_{i,k} \ell'(\bar\gamma_{ik})\,
        X_{ik}^\top\Big(\tfrac1{T_{ik}}\big(\gamma_{ik} - \bar\gamma_{ik}\mathbf 1\big)\Big)
        z_{ik}^\top

    (uniform attention at W = 0, :math:`\bar\gamma` the mean visible score), and
    :math:`W^{\mathrm{mm}}` = Att-SVM(opt).

    Parameters
    ----------
    data : TokenData
        With the linear head (token scores from ``v`` or ``scores``).
    loss : {"logistic", "exponential", "correlation"}

    Returns
    -------
    InitialGradient
        ``good`` is the condition; ``hypotheses`` lists what fails of the theorem's
        hypotheses (one query per sequence with every key visible, the paper's setting;
        unique optimal tokens; Att-SVM(opt) feasible), and an undecided sign:
        within the rounding bound of its terms, :math:`\langle\nabla L(0),
        W^{\mathrm{mm}}\rangle` is not decided (``decided`` False, ``good`` False). The loss and head are
        svmgeo's (Assumption A: each loss is strictly decreasing with a Lipschitz derivative
        on the bounded range of :math:`Yf`). ``in_cone(W, mu, R)`` tests
        :math:`C_{\mu,R}(W^{\mathrm{mm}})`; ``lipschitz`` is :math:`L_W`.

    Raises
    ------
    ProblemError
        ``data`` not a TokenData, data without linear-head scores, unknown loss.

    References
    ----------
    .. [1] D. A. Tarzanagh, Y. Li, C. Thrampoulidis, S. Oymak, "Transformers as Support Vector
       Machines", arXiv:2308.16898, Theorem 4.
    """
    from ..selection import optimal_token_sets
    from ..solvers import att_svm

    if not isinstance(data, TokenData):
        raise ProblemError(
            f"{_WHERE} takes a svmgeo.TokenData as data; got {type(data).__name__}. "
            "Build one with svmgeo.TokenData(X, Y=..., v=...) or svmgeo.random_data(...)."
        )
    check_option(loss, "loss", LOSSES, where=_WHERE)
    if data.scores is None and data.v is None:  # before loss_and_grad, which names train
        raise ProblemError(
            f"{_WHERE} needs the linear head's token scores, but this TokenData has neither v "
            f"nor scores. Build the data with TokenData(..., v=...) (v of shape "
            f"({data.values.shape[-1]},), one weight per value feature) or with "
            f"TokenData(..., scores=...) (shape (n, T) = ({data.n}, {data.T}), or (n, K, T))."
        )
    d = data.d
    _, G0 = loss_and_grad(data, np.zeros((d, d)), loss=loss)
    G0 = np.asarray(G0)
    failed: list[str] = []
    masked = not bool(np.all(np.asarray(data.visible)))
    if data.K > 1 or masked:
        failed.append(
            "one query per sequence, every key visible (the paper's setting; here "
            + ", ".join(
                ([f"K = {data.K} queries"] if data.K > 1 else []) + (["a mask"] if masked else [])
            )
            + ": svmgeo's extension, where the condition is measured, not the theorem's)"
        )
    sets = optimal_token_sets(data)
    W_mm = None
    if np.any(sets.sum(axis=-1) > 1):
        failed.append("unique optimal tokens (some query has tied optimal tokens)")
    else:
        svm = att_svm(data, np.argmax(sets, axis=-1))
        if svm.W is None:
            failed.append(f"Att-SVM(opt) feasible ({svm.message})")
        else:
            W_mm = np.asarray(svm.W)
    inner = corr = math.nan
    decided = True
    if W_mm is not None:
        inner = float(np.vdot(G0, W_mm))
        err = _rounding_bound(data, loss)
        # the rounding of G0 seen through |W_mm|, and that of the d^2-term inner product
        bound = float(np.vdot(err, np.abs(W_mm))) + (data.d**2 + 2) * float(
            np.finfo(float).eps
        ) * float(np.vdot(np.abs(G0) + err, np.abs(W_mm)))
        if np.any(np.abs(G0) > err):
            corr = correlation(-G0, W_mm)
        if not (math.isfinite(inner) and math.isfinite(bound)):
            decided = False  # not "may be 0": the terms overflowed
            failed.append(
                f"<grad L(0), W_mm> decided in float64: grad L(0) or its rounding bound "
                f"overflows (inner = {inner:.3g}, rounding bound {bound:.3g}; the exponential "
                "loss at scores near -710 and below), so the sign is undecided here. With "
                "loss='exponential' a shift of every score by c only scales grad L(0) by "
                "e^-c: shift the scores up (scores=S + c), or use loss='logistic'"
            )
        elif not abs(inner) > bound:
            decided = False
            failed.append(
                f"<grad L(0), W_mm> decided beyond round-off: |inner| = {abs(inner):.3g} is "
                f"within the rounding bound {bound:.3g} of its terms, so grad L(0) may be 0 "
                "(undecided)"
            )
    good = not failed and inner < 0.0
    return InitialGradient(
        good=bool(good),
        inner=inner,
        correlation=corr,
        mu_first_step=1.0 - corr,
        grad0=G0,
        W_mm=W_mm,
        lipschitz=gradient_lipschitz_bound(data, loss),
        hypotheses=tuple(failed),
        loss=loss,
        decided=decided,
    )
