# SPDX-License-Identifier: BSD-3-Clause
r"""A loss against the hypotheses of the max-margin limit, on the interval where it is evaluated.

.. math::

    Y_{ik} f_{ik}(W) = \gamma_{ik}^\top \mathrm{softmax}(X_i W z_{ik})
    \in I_{ik} = [\min_t \gamma_{ikt},\ \max_t \gamma_{ikt}]
    \quad\text{(linear head: a convex combination of the scores)},

so :math:`\ell` is only evaluated on :math:`I_{ik}`: the directional limit can only need
:math:`\ell' < 0` there, and :math:`\sup|\ell'|`, :math:`\mathrm{Lip}(\ell')` on it enter only the
step-size bound :math:`L_W`. *svmgeo's derivation* (MATH-NOTES §6), part of its
reconstruction from the abstract of Chen, Guo, Li, Song, Zhou (ICLR 2024 submission 4416,
withdrawn), which claims convergence under weaker assumptions on the loss's derivative.
A stationary minimum of :math:`\ell` inside :math:`I_{ik}` changes the limit (measured by
``examples/square_loss_limit.py``: the square loss holds such sequences at :math:`Y f`
0.981-1.001, seeds 0-9, docs/attention-maps.md).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.optimize import brentq

from .._summary import summarized
from .._validation import check_int, check_real
from ..data import TokenData
from ..losses import LOSS_SPECS, LossSpec, check_user_loss, get_loss, is_builtin
from ..selection import check_data as _check_data
from ..selection import scores_full as _scores_full
from ._initial_gradient import lipschitz_from_loss_bounds
from ._stability import RECONSTRUCTION

__all__ = ["LOSS_SPECS", "LossCheck", "LossSpec", "check_loss", "get_loss"]


@summarized
@dataclass(frozen=True, eq=False)
class LossCheck:
    r"""A loss on the attained intervals :math:`I_{ik}` of :math:`Y f`.

    Attributes
    ----------
    loss : str
    lo, hi : ndarray of shape (n, K)
        :math:`I_{ik} = [\min_t\gamma_{ikt}, \max_t\gamma_{ikt}]` over the visible keys.
    interval : tuple of float
        Their hull.
    decreasing : ndarray of bool, shape (n, K)
        :math:`\ell' < 0` shown on :math:`I_{ik}`: on a grid of spacing h, every cell has
        :math:`\max(\ell'(u_j), \ell'(u_{j+1})) + M_2 h / 2 < 0` with :math:`M_2` a bound on
        :math:`|\ell''|` over :math:`I_{ik}`.
    proved : bool
        True when :math:`M_2` is an exact bound (built-ins, or ``d2_bound`` given); False
        when it was estimated on the grid (then ``decreasing`` is a measurement).
    stationary : ndarray of shape (n, K)
        An interior stationary point :math:`u^\star \in (lo, hi)` with :math:`\ell'(u^\star) = 0`
        (NaN when none was found): there the pure SVM limit is not expected. The message
        counts those that are minima of :math:`\ell` (:math:`\ell'` from negative to
        positive), where GD holds :math:`Y f` near :math:`u^\star` (measured for the square
        loss); a maximum repels it instead.
    sup_d1, lip_d1 : ndarray of shape (n, K)
        :math:`\sup|\ell'|` and :math:`\sup|\ell''|` (the Lipschitz constant of :math:`\ell'`)
        over :math:`I_{ik}`: exact for the built-ins; for a user's loss ``lip_d1`` is
        :math:`M_2` and ``sup_d1`` the grid's bound :math:`\max_j (|\ell'(u_j)| +
        |\ell'(u_{j+1})|)/2 + M_2 h/2` (upper bounds when ``proved``, else measurements).
    L_W : float
        The step-size bound of :func:`~svmgeo.analysis.gradient_lipschitz_bound`'s formula
        with these suprema (for prompt-attention data, without queries, the bound in p:
        the formula with :math:`\|z\| = 1`).
    passed : bool
        Every query decreasing and no stationary point.
    message : str
    label : str
    """

    loss: str
    lo: np.ndarray
    hi: np.ndarray
    interval: tuple[float, float]
    decreasing: np.ndarray
    proved: bool
    stationary: np.ndarray
    sup_d1: np.ndarray
    lip_d1: np.ndarray
    L_W: float
    passed: bool
    message: str
    label: str = RECONSTRUCTION


def _underflows_into_zero(spec: LossSpec, a: float, b: float) -> bool:
    r"""Whether :math:`\ell'`, nonzero at a and exactly 0 at b, becomes 0 by underflow: at the
    first exact zero u of :math:`\ell'` in (a, b] (bisection to adjacent floats), its last
    nonzero value is below :math:`2^{-1000}` in size (:math:`e^{-u}` past :math:`u \approx
    745`), where a true zero is approached through values of ordinary size (the square
    loss's :math:`-2(1 - u)` is about :math:`10^{-16}` one float before 1)."""
    with np.errstate(all="ignore"):
        for _ in range(2100):  # halves [a, b] down to adjacent floats (< 2100 halvings)
            mid = 0.5 * (a + b)
            if mid in (a, b):
                break
            if float(spec.d1(np.asarray(mid))) == 0.0:
                b = mid
            else:
                a = mid
        return abs(float(spec.d1(np.asarray(a)))) < 2.0**-1000


MAX_GRID = 2**20 + 1
"""The most grid points per interval :func:`check_loss` takes (8 MiB per query)."""


def check_loss(
    loss: Any,
    data: TokenData,
    *,
    grid: int = 2049,
    d2_bound: float | None = None,
) -> LossCheck:
    r"""Check a loss against the hypotheses on the interval where gradient descent evaluates it.

    .. math::

        I_{ik} = [\min_t \gamma_{ikt}, \max_t \gamma_{ikt}] \ni Y_{ik} f_{ik}(W)
        \ \forall W, \qquad \text{want } \ell' < 0 \text{ on } I_{ik}.

    Softmax attention with a linear head (scores :math:`\gamma`, from ``v`` or ``scores``).
    On a grid of ``grid`` points per interval, :math:`\ell' < 0` holds on a cell of width h
    when :math:`\max(\ell'(u_j), \ell'(u_{j+1})) + M_2 h/2 < 0` (:math:`\ell'` is
    :math:`M_2`-Lipschitz on the cell): a proof when :math:`M_2` is exact (built-in losses,
    their :math:`\sup|\ell''|` over each cell; or ``d2_bound``, over the intervals), else a
    measurement with :math:`M_2` estimated on the grid. A sign change
    of :math:`\ell'` inside :math:`I_{ik}` is located by bisection and flagged. *svmgeo's
    derivation*; logistic, exponential and correlation pass on any data, proved in closed form
    (:math:`\ell' = -e^{\log|\ell'|} < 0` at every u: the grid cannot prove it once the cells
    are ~1 wide, nor hold :math:`\ell'` beyond float64's range); the square loss fails where
    some :math:`\max_t\gamma_{ikt} > 1 > \min_t\gamma_{ikt}`. A query whose :math:`\ell'` or
    bound leaves float64's range on the grid is not decided (never a stationary point).

    Parameters
    ----------
    loss : str, LossSpec or tuple of callables
        A name in :data:`LOSS_SPECS` or ``(value, derivative[, second derivative])``.
    data : TokenData
    grid : int, default 2049
        Grid points per interval, in [3, ``MAX_GRID`` = 2^20 + 1] (the grid holds
        ``grid`` floats per query).
    d2_bound : float, optional
        A proved bound on :math:`|\ell''|` over the intervals (user losses), making the
        verdict a proof.

    Returns
    -------
    LossCheck

    Raises
    ------
    ProblemError
        For an unknown loss, data without scores, or a bad ``grid`` / ``d2_bound``.
    """
    spec = get_loss(loss)
    data = _check_data(data, "check_loss")
    grid = check_int(grid, "grid", low=3, high=MAX_GRID, where="check_loss")
    if d2_bound is not None:
        d2_bound = check_real(d2_bound, "d2_bound", low=0.0, where="check_loss")
    S = _scores_full(data)
    vis = np.asarray(data.visible)
    lo = np.where(vis, S, np.inf).min(axis=2)
    hi = np.where(vis, S, -np.inf).max(axis=2)
    t = np.linspace(0.0, 1.0, grid)
    U = lo[..., None] + (hi - lo)[..., None] * t  # (n, K, grid)
    if not is_builtin(spec):  # the user's callables: named errors, not theirs
        check_user_loss(spec, U, "check_loss", overflow_ok=True)
    h = (hi - lo) / (grid - 1)
    # l' and its bounds may leave float64 far out (e^{-u} for |u| > 709): inf there, and such
    # a query is not decided by the grid (below), never a false stationary point
    with np.errstate(over="ignore", under="ignore", invalid="ignore"):
        g1 = spec.d1(U)
        proved = d2_bound is not None or spec.sup_d2 is not None
        if d2_bound is not None:
            M2 = np.full_like(lo, d2_bound)
        elif spec.sup_d2 is not None:
            M2 = spec.sup_d2(lo, hi)
        elif spec.d2 is not None:
            M2 = np.abs(spec.d2(U)).max(axis=2)
        else:
            dg = np.abs(np.diff(g1, axis=2))
            M2 = np.where(h > 0, dg.max(axis=2) / np.where(h > 0, h, 1.0), 0.0)
        # each cell's own bound on |l''| where it is exact (built-ins): one bound over the
        # whole interval swamps l' where l' is small (logistic far out)
        M2_cells = (
            spec.sup_d2(U[..., :-1], U[..., 1:])
            if d2_bound is None and spec.sup_d2 is not None
            else M2[..., None]
        )
        cells = np.maximum(g1[..., :-1], g1[..., 1:]) + M2_cells * (h / 2.0)[..., None]
        if spec.sup_d1 is not None:
            sup1 = spec.sup_d1(lo, hi)
        else:  # |l'| <= (|l'(u_j)| + |l'(u_j+1)|)/2 + M2 h/2 on a cell: a bound where M2 is one
            size = np.abs(g1)
            peaks = 0.5 * (size[..., :-1] + size[..., 1:]) + M2_cells * (h / 2.0)[..., None]
            sup1 = np.nan_to_num(peaks.max(axis=2), nan=np.inf)  # inf - inf: beyond float64
    # a built-in with log|l'| in closed form (logistic, exponential, correlation) has
    # l' = -exp(log|l'|) < 0 at every u: decreasing on any interval, proved without the grid,
    # whose cells cannot prove it once h ~ 1 (e^{-h} < h/2) nor hold l' beyond float64
    closed_form = spec.log_abs_d1 is not None and is_builtin(spec)
    representable = np.all(np.isfinite(g1), axis=2) & np.all(np.isfinite(cells), axis=2)
    # an exact 0 of l' where l' also takes values within 2^-1000 of 0 on the grid is l'
    # underflowing (e^{-u} past u = 745), not a stationary point: not decided either
    magnitude = np.abs(g1)
    underflow = np.any(g1 == 0.0, axis=2) & np.any(
        (magnitude > 0.0) & (magnitude < 2.0**-1000), axis=2
    )
    representable &= ~underflow
    decreasing = closed_form | np.all(cells < 0.0, axis=2)
    undecided = ~decreasing & ~representable
    stationary = np.full(lo.shape, np.nan)
    minimum = np.zeros(lo.shape, dtype=bool)  # l' goes from - to + through u*
    for idx in zip(*np.nonzero(~decreasing & representable), strict=True):
        g = g1[idx]
        # the first zero or sign change of l' on the grid (a minimum or a maximum of l); a
        # zero of a loss that declares l' < 0 (log_abs_d1) is an underflow, not a zero
        zero = np.nonzero(g == 0.0)[0] if spec.log_abs_d1 is None else np.zeros(0, int)
        change = np.nonzero(np.sign(g[:-1]) * np.sign(g[1:]) < 0)[0]
        first = int(zero[0]) if zero.size else None
        if change.size and (first is None or int(change[0]) < first):
            j = int(change[0])
            a, b = float(U[idx][j]), float(U[idx][j + 1])
            stationary[idx] = brentq(lambda x: float(spec.d1(np.asarray(x))), a, b, xtol=1e-14)
            minimum[idx] = g[j] < 0.0
        elif first is not None:
            if first > 0 and _underflows_into_zero(
                spec, float(U[idx][first - 1]), float(U[idx][first])
            ):
                undecided[idx] = True  # l' reaches 0 through float64's last decades: no zero
            else:
                stationary[idx] = float(U[idx][first])
                after = g[first:][g[first:] != 0.0]
                minimum[idx] = (
                    (first == 0 or g[first - 1] < 0.0) and after.size > 0 and after[0] > 0
                )
    interior = np.isfinite(stationary) & (stationary > lo) & (stationary < hi)
    stationary = np.where(interior, stationary, np.nan)
    with np.errstate(over="ignore", invalid="ignore"):
        L_W = lipschitz_from_loss_bounds(data, sup1, M2, lo, hi)
    passed = bool(np.all(decreasing) and not np.any(interior))
    how = (
        "proved (l' = -exp(log|l'|) < 0 in closed form)"
        if closed_form
        else "proved (exact bound on |l''|)"
        if proved
        else "measured on the grid (|l''| estimated)"
    )
    if passed:
        message = f"l' < 0 on every attained interval, {how}; sup|l'| = {float(sup1.max()):.4g}"
        if not math.isfinite(float(sup1.max())):
            message += " (beyond float64: scores this far out make L_W infinite)"
    else:
        bad = int(np.count_nonzero(~decreasing))
        bound = "exact" if proved else "estimated"
        message = f"l' < 0 not shown on {bad} of {decreasing.size} queries (|l''| bound {bound})"
        if np.any(interior):
            u_star = float(np.nanmin(stationary))
            minima = int(np.count_nonzero(interior & minimum))
            message += (
                f"; interior stationary point l'(u*) = 0 at u* = {u_star:.6g} on "
                f"{int(np.count_nonzero(interior))} queries: the pure SVM limit is not expected "
                f"there; u* is a minimum of l (l' from - to +) on {minima} of them, where GD "
                "holds Y f near u* (measured for the square loss, docs/attention-maps.md)"
            )
        if np.any(undecided):
            message += (
                f"; on {int(np.count_nonzero(undecided))} of them l' or its bound leaves "
                f"float64's range on the grid (scores up to {float(np.abs(S[np.isfinite(S)]).max()):.4g}): "
                "not decided there"
            )
    return LossCheck(
        loss=spec.name,
        lo=lo,
        hi=hi,
        interval=(float(lo.min()), float(hi.max())),
        decreasing=decreasing,
        proved=proved,
        stationary=stationary,
        sup_d1=np.asarray(sup1, dtype=float),
        lip_d1=np.asarray(M2, dtype=float),
        L_W=float(L_W) if math.isfinite(L_W) else math.inf,
        passed=passed,
        message=message,
    )
