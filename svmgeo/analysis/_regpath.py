# SPDX-License-Identifier: BSD-3-Clause
r"""Regularization paths: constrained risk minimization over growing balls (Theorem 2).

.. math::

    \bar W_R = \arg\min_{\|W\|_F \le R} L(W), \qquad
    (\bar K_R, \bar Q_R) = \arg\min_{\|K\|_F^2 + \|Q\|_F^2 \le 2R} L(KQ^\top), \qquad
    \bar W_R^\alpha = \arg\min_{W \in C_\varepsilon(\alpha),\ \|W\|_F = R} L(W)\ \ (\text{or } \le R).

Theorem 2 of Tarzanagh et al. (*theorem*) says :math:`\bar W_R / R \to
W^{\mathrm{mm}}/\|W^{\mathrm{mm}}\|_F` and that :math:`\bar K_R \bar Q_R^\top / R` approaches the
Att-SVM⋆ solutions in direction (under Assumption A, a linear head, unique optimal tokens and
Att-SVM(opt) feasible). The local path of §5.4 / App. E.1 is claimed to converge in direction
to :math:`W^{\mathrm{mm}}_\alpha` for a locally optimal α; read with a ball that claim is false
(a three-token counterexample, docs/regpath.md). svmgeo's default local path minimizes over
the *sphere* :math:`\|W\|_F = R` instead (*svmgeo's extension*), where :math:`L \ge L_\alpha`
holds beyond a radius :math:`R_0(\varepsilon)`; the ball path stays available
(``local_set="ball"``).

Losses, heads and gradients are those of :mod:`svmgeo.gd` (:class:`svmgeo.gd.RiskOracle`).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from .._errors import ConvergenceWarning, ProblemError
from .._linalg import correlation
from .._summary import summarized
from .._validation import check_array, check_int, check_option, check_real, check_width
from ..data import TokenData
from ..gd import HEADS, LOSSES, RiskOracle
from ..selection import score_sides

__all__ = ["RegularizationPath", "regularization_path"]

_WHERE = "regularization_path"
_EPS = float(np.finfo(np.float64).eps)


@summarized
@dataclass(frozen=True, eq=False)
class RegularizationPath:
    r"""Minimizers of the risk over balls of growing radius.

    Attributes
    ----------
    radii : ndarray of shape (r,)
        The radii R (for ``param="KQ"`` the constraint is :math:`\|K\|^2+\|Q\|^2 \le 2R`).
    W : ndarray of shape (r, d, d)
        :math:`\bar W_R` (for ``"KQ"``: :math:`\bar K_R \bar Q_R^\top`).
    K, Q : ndarray of shape (r, d, m) or None
        The factors (``param="KQ"`` only).
    loss : ndarray of shape (r,)
        :math:`L(\bar W_R)`.
    log_loss_gap : ndarray of shape (r,)
        :math:`\log(L(\bar W_R) - L_\star)` with :math:`L_\star = \frac1n\sum \ell(\gamma_{i,\mathrm{opt}_i})`
        (linear head, where :math:`L_\star` is the infimum of :math:`L`); NaN for other heads.
        It stays exact where ``loss`` no longer changes in float64.
    stationarity : ndarray of shape (r,)
        First-order residual, in [0, 1] (see :func:`regularization_path`, Notes); ``inf``
        where float64 cannot resolve the objective to ``tol`` (Notes, *Resolution*).
    converged : ndarray of bool, shape (r,)
        ``stationarity <= tol``.
    n_iter : ndarray of int, shape (r,)
        Iterations spent on each radius, all stages together (see ``max_iter`` of
        :func:`regularization_path`; for the local ball path including the unreported radii
        below it).
    correlation : ndarray of shape (r,) or None
        :math:`\langle \bar W_R, W_{\mathrm{ref}}\rangle / (\|\bar W_R\|\|W_{\mathrm{ref}}\|)`.
    reference : ndarray of shape (d, d) or None
        :math:`W_{\mathrm{ref}}`.
    cone_margin : ndarray of shape (r,) or None
        Local path: ``score_cone_margin(data, alpha, W) / ||W||`` (≥ ε inside the cone),
        on the scores of the head trained: with ``v=`` passed to
        :func:`regularization_path`, those of that v, not the data's.
    param, loss_name, head : str
    alpha : ndarray of int, shape (n,) or (n, K), or None
        Local path: the selection α, in the data's selection shape
        (``data.selection_shape``: (n,) for single-query data, as passed to
        :func:`~svmgeo.att_svm`).
    eps : float or None
    local_set : {"sphere", "ball"} or None
        Local path: the radius constraint, :math:`\|W\|_F = R` or :math:`\le R`.
    """

    radii: np.ndarray
    W: np.ndarray
    K: np.ndarray | None
    Q: np.ndarray | None
    loss: np.ndarray
    log_loss_gap: np.ndarray
    stationarity: np.ndarray
    converged: np.ndarray
    n_iter: np.ndarray
    correlation: np.ndarray | None
    reference: np.ndarray | None
    cone_margin: np.ndarray | None
    param: str
    loss_name: str
    head: str
    alpha: np.ndarray | None
    eps: float | None
    local_set: str | None = None

    def __len__(self) -> int:
        return int(self.radii.shape[0])


class _Objective:
    r"""The function the ``"KQ"`` path minimizes and its gradient (the others use
    :class:`_SelectionGap` with the linear head); every path reports its values.

    Linear head: :math:`F = \log(L - L_\star)` (same minimizers as :math:`L`, since
    :math:`L > L_\star` and log is increasing), evaluated from the GD module's exact
    log-domain gap once the softmax saturates and :math:`\nabla F = \nabla L / (L - L_\star)`
    from its log-domain gradient. Other heads: :math:`F = L`.
    """

    def __init__(
        self, data: TokenData, loss: str, head: str, v: Any, V: Any, lam: float | None
    ) -> None:
        self.oracle = RiskOracle(data, loss=loss, head=head, v=v, V=V, lam=lam)
        self.log_gap = head == "linear"

    def values(self, W: np.ndarray) -> tuple[float, float]:
        r"""``(L, log(L - L_star))`` at W (the second NaN for non-linear heads): what a path
        reports, without the gradient (whose scale :math:`e^M/(L - L_\star)` can leave
        float64 where the values do not: scores of size 1e30)."""
        loss = self.oracle.value(W)
        return loss, self.oracle.log_excess_risk(W) if self.log_gap else math.nan

    def __call__(self, W: np.ndarray) -> tuple[float, np.ndarray, float, float]:
        """``(F, grad F, L, log(L - L_star))`` at W (the last NaN for non-linear heads)."""
        r = self.oracle(W)
        if not self.log_gap:
            g = np.exp(r.M) * r.G if np.isfinite(r.M) else np.zeros_like(r.G)
            return r.loss, g, r.loss, math.nan
        F = self.oracle.log_excess_risk(W)
        if not np.isfinite(r.M) or not np.isfinite(F):
            return F, np.zeros_like(r.G), r.loss, F
        return F, _scaled_gradient(r.M - F, r.G), r.loss, F


_LOG_GRADIENT_MAX = 300.0
"""The log of the largest entry :func:`_scaled_gradient` gives (e^300 ~ 2e130: squares of
its gradients, in the projected-gradient steps, stay finite)."""


def _scaled_gradient(log_scale: float, G: np.ndarray) -> np.ndarray:
    r""":math:`e^{\text{log\_scale}} G`, capped where an entry would pass :math:`e^{300}`: the
    gradient of a log-domain objective (:math:`\nabla L/(L - L_\star)` and the like) can
    leave float64 where its direction does not (scores of size 1e30, :math:`L - L_\star \sim e^{-10^{28}}`);
    the projected-gradient steps need only that direction (the residual inside the ball reads
    1 there, and :func:`_verdict` reports such a radius as unresolved)."""
    top = float(np.max(np.abs(G), initial=0.0))
    cap = _LOG_GRADIENT_MAX - (math.log(top) if 0.0 < top < math.inf else 0.0)
    return math.exp(min(float(log_scale), cap)) * G


def _signed_logsumexp(sign: np.ndarray, logabs: np.ndarray, axis: int) -> tuple[Any, Any]:
    r"""``(sign, log|sum|)`` of :math:`\sum_j \mathrm{sign}_j e^{\mathrm{logabs}_j}` along
    ``axis``, the positive and negative parts each summed in the log domain (``-inf`` for an
    exact zero)."""
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        parts = []
        for sg_ in (1.0, -1.0):
            t = np.where(sign == sg_, logabs, -np.inf)
            hi = t.max(axis=axis, keepdims=True)
            safe = np.where(np.isfinite(hi), hi, 0.0)
            lse = safe + np.log(np.sum(np.exp(t - safe), axis=axis, keepdims=True))
            parts.append(np.squeeze(np.where(np.isfinite(hi), lse, -np.inf), axis=axis))
        lp, ln = parts
        big, small = np.maximum(lp, ln), np.minimum(lp, ln)
        diff = np.where(np.isfinite(big), small - big, -np.inf)
        out = np.where(np.isfinite(big), big + np.log(-np.expm1(diff)), -np.inf)
        out = np.where(diff == 0.0, -np.inf, out)  # equal parts: exact cancellation
        sgn = np.where(lp > ln, 1.0, -1.0)
    return sgn, out


class _SelectionGap:
    r"""The local path's objective, linear head:
    :math:`\varphi_s(L - L_\alpha) = \mathrm{sign}(g)\log(1 + |g|/s)`, :math:`g = L - L_\alpha`.

    :math:`L_\alpha = \frac1n\sum_{i,k}\ell(\gamma_{ik\alpha_{ik}})` is the risk of the
    selection α. With :math:`D_{ik} = \gamma_{ik\alpha} - Y_{ik}f_{ik}
    = \sum_t s_{ikt}(\gamma_{ik\alpha} - \gamma_{ikt})`, split into its low-score (positive) and
    high-score (negative) parts, each formed in the log domain from the log-softmax, query
    (i, k) contributes :math:`\ell(\gamma_\alpha - D) - \ell(\gamma_\alpha)`, in the log
    domain without cancellation (:meth:`~svmgeo.gd.RiskOracle.log_loss_change`), summed with
    signs in the log domain. :math:`\varphi_s`
    is increasing, so the minimizers are those of L; the scale s is reset to :math:`|g|` at
    each radius's start, so F is of order one there however small g is.
    :math:`\nabla F = \nabla L/(s + |g|)` with :math:`\nabla L = e^M G` from the GD module's
    log-domain gradient.
    """

    def __init__(self, obj: _Objective, alpha: np.ndarray) -> None:
        self.oracle = obj.oracle
        self.log_scale = 0.0
        self.select(alpha)

    def select(self, alpha: np.ndarray) -> None:
        r"""Use the selection ``alpha`` (n, K) as the reference :math:`L_\alpha`."""
        gamma = self.oracle._gamma  # (n, K, T), -inf where hidden
        assert gamma is not None  # linear head only
        vis = np.asarray(self.oracle.problem.vis[0], dtype=bool)
        ga = np.take_along_axis(gamma, alpha[:, :, None], axis=2)[:, :, 0]
        diff = np.where(vis, ga[:, :, None] - np.where(vis, gamma, 0.0), 0.0)
        self.ga = ga
        self.sign = np.sign(diff)  # +1 low-score, -1 high-score, 0 at alpha and hidden
        with np.errstate(divide="ignore"):
            self.log_diff = np.where(self.sign != 0.0, np.log(np.abs(diff)), -np.inf)

    def log_gap(self, W: np.ndarray) -> tuple[float, float]:
        """``(sign, log|L(W) - L_alpha|)``."""
        o = self.oracle
        ls = o.log_softmax(W)
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            terms = np.where(self.sign != 0.0, ls + self.log_diff, -np.inf)
            sd, log_d = _signed_logsumexp(self.sign, terms, axis=2)  # D per query
            lq = o.log_loss_change(self.ga, sd, log_d)  # log|l(ga - D) - l(ga)|
        s, lg = _signed_logsumexp(sd.ravel(), lq.ravel(), axis=0)
        return float(s), float(lg) - math.log(o.problem.n)

    def reset(self, W: np.ndarray) -> None:
        """Set the scale s to |g(W)| (kept when g(W) is exactly zero)."""
        _, lg = self.log_gap(W)
        if np.isfinite(lg):
            self.log_scale = lg

    def __call__(self, W: np.ndarray) -> tuple[float, np.ndarray]:
        sgn, lg = self.log_gap(W)
        r = self.oracle(W)
        F = sgn * float(np.logaddexp(0.0, lg - self.log_scale)) if np.isfinite(lg) else 0.0
        if not np.isfinite(r.M):
            return F, np.zeros_like(r.G)
        return F, _scaled_gradient(r.M - np.logaddexp(self.log_scale, lg), r.G)


def _reference_selection(gap: _SelectionGap, W: np.ndarray) -> None:
    r"""Set the gap's selection β (:math:`g = L - L_\beta`) at W: of the tokens W selects and
    the optimal tokens (:math:`L_\beta = L_\star`), the one whose risk is nearer L(W), the
    smaller :math:`|g|` (the optimal ones on a tie, and alone at W = 0, where every logit
    ties and W selects nothing). F's minimizers are L's for any β, but its gradient
    :math:`\nabla F = \nabla L/(s + |g|)` is not scale-free: a β whose risk is far from L
    (a tie broken by index at W = 0, or a selection away from opt at large scores, 446 apart)
    made :math:`\nabla F` underflow and pass for stationary inside the ball."""
    sets = gap.oracle.optimal_sets
    candidates = [] if sets is None else [np.argmax(sets, axis=-1)]
    if np.any(W) or not candidates:
        candidates.append(gap.oracle(W).selected)

    def log_size(beta: np.ndarray) -> float:
        gap.select(beta)
        return gap.log_gap(W)[1]

    gap.select(min(candidates, key=log_size))  # the first of equals: the optimal tokens


def _ball(x: np.ndarray, rho: float, sphere: bool = False) -> np.ndarray:
    r"""Projection onto the ball :math:`\|x\| \le \rho` (onto the sphere with ``sphere``)."""
    nx = float(np.linalg.norm(x))
    if nx == 0.0 or (nx <= rho and not sphere):
        return x
    return x * (rho / nx)


_UNIT_ROUNDOFF = 16 * np.finfo(float).eps
"""How far below 1 a product of computed unit norms may round (:func:`_gradient_unit`
reads it as 1: ``random_data``'s unit vectors give 1 - 2^-52 in 151 of 900 draws)."""


def _logit_scale(obj: _Objective) -> float:
    r""":math:`1/\ell = \max_{i,t}\|x_{it}\|\,\max_{i,k}\|z_{ik}\|` (keys x, queries z): the most
    a logit :math:`x^\top W z` moves per unit of :math:`\|W\|_F` (0 where every key or query
    is zero)."""
    P = obj.oracle.problem
    return float(np.max(np.linalg.norm(P.X, axis=-1)) * np.max(np.linalg.norm(P.Z, axis=-1)))


_BALL_LADDER_RATIO = 4.0
"""The smallest ratio of the radii that the local ball path solves, unreported, below each of
the caller's (:func:`_path_local`)."""

_BALL_LADDER_RUNGS = 8
"""The most radii the local ball path solves, unreported, below each of the caller's: the
ratio grows past :data:`_BALL_LADDER_RATIO` where the span is wider (one radius 1e30 after
1 cost 46 s in about 50 rungs, against 0.5 s without them)."""


def _gradient_unit(obj: _Objective, factored: bool = False) -> float:
    r"""The gradient norm G of the stationarity tests (:func:`_ball_residual`,
    :func:`_kkt_residual`): :math:`G = \min(1, 1/\ell)` with the logit length
    :math:`\ell = 1/(\max_{i,t}\|x_{it}\|\,\max_{i,k}\|z_{ik}\|)` (keys x, queries z;
    :math:`\sqrt\ell` for the factors K, Q of ``factored``, :math:`W = KQ^\top`), 1 where
    every key or query is zero. A change of W of norm :math:`\ell` moves no logit
    :math:`x^\top W z` by more than 1, so :math:`\|\nabla F\| \le \mathrm{tol}\,G` says
    that F changes by at most tol over a move of :math:`\max(1, \ell)`: the absolute test
    :math:`\|\nabla F\| \le \mathrm{tol}` of W's own units where :math:`\ell \le 1`,
    the same test in logit units where the keys and queries are small (keys times a give
    :math:`\ell/a`; with :math:`\ell \le 1` the two agree). G is 1 where :math:`1/\ell`
    is within ``_UNIT_ROUNDOFF`` of 1 (unit norms computed a few ulps short). Every key is
    counted, also keys that no query sees."""
    xz = _logit_scale(obj)
    if not 0.0 < xz < math.inf or xz >= 1.0 - _UNIT_ROUNDOFF:
        return 1.0  # unit tokens and queries whose norms round below 1: main's absolute test
    return min(1.0, math.sqrt(xz) if factored else xz)


def _ball_residual(
    x: np.ndarray,
    g: np.ndarray,
    rho: float,
    normalized: bool = True,
    sphere: bool = False,
    unit: float = 1.0,
) -> float:
    r"""KKT residual of :math:`\min F` over :math:`\|x\| \le \rho`:
    :math:`\min_{\mu \ge 0}\|\hat g + \mu\hat x\|` on the sphere (``normalized``; times
    :math:`\|g\|/\max(G, \|g\|)` otherwise), :math:`\|g\|/\max(G, \|g\|)` inside, G =
    ``unit`` (:func:`_gradient_unit`). With ``sphere`` (:math:`\|x\| = \rho`) the
    multiplier is free: the tangential part :math:`\min_\mu\|\hat g + \mu\hat x\|`."""
    ng = float(np.linalg.norm(g))
    if ng == 0.0:
        return 0.0
    nx = float(np.linalg.norm(x))
    if nx < rho * (1.0 - 1e-10) and not sphere:
        return ng / max(unit, ng)
    gh, xh = g / ng, x / nx
    c = float(np.vdot(gh, xh))
    sine = float(np.linalg.norm(gh - c * xh)) if (c < 0.0 or sphere) else 1.0
    return sine if normalized else sine * ng / max(unit, ng)


def _spg(
    fun: Callable[[np.ndarray], tuple[float, np.ndarray]],
    x0: np.ndarray,
    rho: float,
    tol: float,
    max_iter: int,
    feasible: Callable[[np.ndarray], bool] | None = None,
    normalized: bool = True,
    sphere: bool = False,
    unit: float = 1.0,
) -> tuple[np.ndarray, float, int]:
    r"""Spectral projected gradient on the ball :math:`\|x\| \le \rho` (Birgin, Martínez,
    Raydan 2000): Barzilai–Borwein steps, Armijo backtracking along the projection arc. With
    ``sphere`` the projection is onto :math:`\|x\| = \rho` (a retraction: the same iteration
    on the sphere).

    ``feasible``, when given, rejects trial points outside it like a failed Armijo test; after
    20 such rejections the iteration ends (the local path then switches to SLSQP). Returns ``(x, residual, n_iter)``.
    """
    x = _ball(x0, rho, sphere)
    f, g = fun(x)
    res = _ball_residual(x, g, rho, normalized, sphere, unit)
    ng = float(np.linalg.norm(g))
    t = rho / ng if ng > 0.0 else 1.0
    it = 0
    blocked = 0
    while it < max_iter and res > tol:
        it += 1
        accepted = False
        first = None
        for _ in range(60):
            xn = _ball(x - t * g, rho, sphere)
            dx = xn - x
            slope = float(np.vdot(g, dx))
            if slope >= 0.0:
                break
            if feasible is not None and not feasible(xn):
                blocked += 1
                if blocked > 20:
                    return x, res, it  # stuck on the feasible set's boundary: caller takes over
                t *= 0.5
                continue
            fn, gn = fun(xn)
            if first is None:
                first = (xn, dx, fn, gn)
            if fn <= f + 1e-4 * slope:
                accepted = True
                break
            t *= 0.5
        if not accepted and first is not None:
            # Below F's float64 resolution the Armijo test cannot see a decrease: take the
            # BB step if F stays within rounding of f and the residual improves.
            xn, dx, fn, gn = first
            accepted = (
                fn <= f + 8.0 * _EPS * max(1.0, abs(f))
                and _ball_residual(xn, gn, rho, normalized, sphere, unit) < 0.5 * res
            )
        if not accepted:
            break  # no progress left at float64 resolution
        s, y = dx, gn - g
        sy = float(np.vdot(s, y))
        x, f, g = xn, fn, gn
        ng = float(np.linalg.norm(g))
        t = float(np.vdot(s, s)) / sy if sy > 0.0 else (rho / ng if ng > 0.0 else t)
        res = _ball_residual(x, g, rho, normalized, sphere, unit)
    return x, res, it


def _check_radii(radii: Any) -> np.ndarray:
    items = radii if isinstance(radii, list | tuple) else ()
    if any(isinstance(x, bool | np.bool_) for x in items) or (
        isinstance(radii, np.ndarray) and radii.dtype == bool
    ):
        raise ProblemError(
            f"The 'radii' parameter of {_WHERE} must hold numbers; got booleans in {radii!r}. "
            "Pass e.g. radii=[1, 2, 4, 8]."
        )
    r = check_array(
        radii, "radii", ndim=1, hint="Pass the radii as a 1-D sequence, e.g. [1, 2, 4, 8]."
    ).copy()  # the path keeps it; the caller may reuse the array
    if r.size == 0:
        raise ProblemError(
            f"The 'radii' parameter of {_WHERE} must be a non-empty increasing sequence of "
            "positive numbers. Got an empty array; pass e.g. radii=[1, 2, 4, 8]."
        )
    if np.any(r <= 0.0):
        raise ProblemError(
            f"The 'radii' parameter of {_WHERE} must hold positive numbers. Got "
            f"{r.tolist()}, with {float(r[r <= 0.0][0])!r} <= 0; drop the non-positive radii."
        )
    if np.any(np.diff(r) <= 0.0):
        raise ProblemError(
            f"The 'radii' parameter of {_WHERE} must be strictly increasing (the path is "
            f"warm-started from each radius to the next). Got {r.tolist()}; pass "
            "np.unique(radii) to sort them."
        )
    return r


def _default_reference(
    data: TokenData, obj: _Objective, norm: str, rank: int | None = None
) -> np.ndarray | None:
    """Att-SVM(opt) (``norm="nuc"``, which the path passes for ``param="KQ"``: Att-SVM⋆(opt)
    with ``rank``) of the optimal tokens of the path's own scores (the linear head's, ``v`` as
    given to the path); None with ties, another head (its limit is not Att-SVM(opt):
    MATH-NOTES §2) or an infeasible SVM."""
    from ..solvers import att_svm

    sets = obj.oracle.optimal_sets
    if sets is None or np.any(sets.sum(axis=-1) > 1):
        return None
    alpha = np.argmax(sets, axis=-1)
    alpha = alpha[:, 0] if data.single_query else alpha
    res = att_svm(data, alpha, norm=norm, rank=rank)  # type: ignore[arg-type]
    return None if res.W is None else np.asarray(res.W)


def regularization_path(
    data: TokenData,
    radii: Any,
    *,
    param: str = "W",
    m: int | None = None,
    loss: str = "logistic",
    head: str = "linear",
    v: Any = None,
    V: Any = None,
    lam: float | None = None,
    alpha: Any = None,
    eps: float | None = None,
    local_set: str | None = None,
    reference: Any = None,
    init: Any = None,
    seed: int = 0,
    tol: float = 1e-6,
    max_iter: int = 20_000,
) -> RegularizationPath:
    r"""The regularization path of softmax attention (Theorem 2), one radius after the other.

    .. math::

        \bar W_R = \arg\min_{\|W\|_F \le R} L(W)
        \quad\text{or}\quad
        \bar K_R \bar Q_R^\top,\ (\bar K_R, \bar Q_R) = \arg\min_{\|K\|_F^2+\|Q\|_F^2 \le 2R}
        L(KQ^\top)
        \quad\text{or}\quad
        \arg\min_{W \in C_\varepsilon(\alpha),\ \|W\|_F = R\ (\text{or} \le R)} L(W),

    with :math:`L(W) = \frac1n\sum_{i,k}\ell(Y_{ik} f_{ik})` the risk of :func:`svmgeo.train`
    (same losses and heads, evaluated by the GD module).

    Parameters
    ----------
    data : TokenData
    radii : sequence of float, strictly increasing and positive
    param : {"W", "KQ"}, default "W"
        Optimize W on the Frobenius ball, or the factors (K, Q) on the joint ball
        :math:`\|K\|^2+\|Q\|^2 \le 2R` (:math:`\|KQ^\top\|_* \le R` on it).
    m : int, optional
        Width of K and Q (default d; ``m > d`` while the path's arrays of shape (d, m) fit in
        the available memory); ``param="KQ"`` only.
    loss : {"logistic", "exponential", "correlation"}
    head : {"linear", "relu", "concave"}
    v, V, lam
        Head parameters, as in :func:`svmgeo.train`.
    alpha : array of int, shape (n,) or (n, K), optional
        With ``eps``: the local path, restricted to the score cone :math:`C_\varepsilon(\alpha)`
        (``param="W"`` only). α must be a LOT, proved: the verdict of
        :func:`~svmgeo.is_locally_optimal` (default tolerances) decided True, read off the
        solve of Att-SVM(α), whose direction is the start.
    eps : float, optional
        Width of the score cone; must satisfy
        ``0 < eps < score_cone_margin(data, alpha, W_mm) / ||W_mm||``. The cone and the LOT
        test use the scores of the head trained, ties up to round-off counting as high
        (:func:`~svmgeo.score_cone_margin`'s rule): with ``v=``, :math:`Y_{ik} v^\top u_{it}`
        of that v, not the data's scores.
    local_set : {"sphere", "ball"}, optional
        Local path only. ``"sphere"`` (default): minimize over
        :math:`C_\varepsilon(\alpha) \cap \{\|W\|_F = R\}`, svmgeo's repair of the
        local-path statement (converges in direction to :math:`W^{\mathrm{mm}}_\alpha` on
        every tested LOT, see docs/regpath.md). ``"ball"``: the statement as read,
        :math:`\|W\|_F \le R`, which is false in general (MATH-NOTES §1.2: the cone can hold a
        finite W with :math:`L(W) < L_\alpha`, and the path then stays there). The ball path
        also solves, unreported, up to 8 radii R/4, R/16, … (a wider ratio where the span is
        wider) above the previous radius (before the first: above the logit length
        :math:`\ell` of the Notes), warm-started along them, since a solve from the radius
        alone need not reach the ball's interior minimizers; its answer can still depend on
        the radii passed. Both are local
        searches: a radius reported ``converged`` ends at a point whose KKT residual is at
        most ``tol`` (a stationary point of the restricted problem, the best of the starts
        tried), not a proved global minimizer.
    reference : array of shape (d, d), optional
        Direction to correlate with. Default: Att-SVM(α) (local path), Att-SVM(opt)
        (``"W"``) or Att-SVM⋆(opt) (``"KQ"``; with rank ≤ m when m < d,
        Theorem 2's set) of the linear head's scores (``v`` as given here) when the optimal
        tokens are unique and the SVM is feasible; otherwise, and for the other heads (whose
        limit is not Att-SVM(opt), MATH-NOTES §2), no correlation.
    init : array of shape (d, d), or a pair (K, Q), optional
        Start at the first radius (scaled onto the ball). Default: W = 0 (``"W"``), seeded
        random factors of norm √R (``"KQ"``, where K = Q = 0 is stationary), or
        :math:`R\,W^{\mathrm{mm}}_\alpha/\|W^{\mathrm{mm}}_\alpha\|` (local path; the ball
        path scales the start to its first radius solved, unreported ones included). Later radii
        start from the previous solution scaled by :math:`R_{\mathrm{new}}/R_{\mathrm{old}}`
        (each factor by the square root).
    seed : int, default 0
        Seed of the random ``"KQ"`` start.
    tol : float, default 1e-6
        Stop when the stationarity residual is at most ``tol``. Residuals below about
        1e-7 are out of reach: a step that turns W by an angle θ changes F by about
        θ², which float64 stops resolving near θ ~ 1e-8 (times problem constants). A radius
        whose log-gap float64 represents more coarsely than ``tol`` is not converged (Notes,
        *Resolution*).
    max_iter : int, default 20000
        The iteration limit of each solver run. The ``"W"`` and ``"KQ"`` paths run one
        projected-gradient solve per radius (continued while the residual, measured at the
        objective's own scale, is above ``tol``), within ``max_iter`` in all. The local path
        runs stages, each within ``max_iter``: projected gradient, up to five SLSQP passes
        (at most ``min(max_iter, 1000)`` each), a projected-gradient polish, the same again
        from each restart point (and, on the ball, at the unreported radii), and further
        solves while the residual is above ``tol`` and the radius's count is below
        ``max_iter``; its ``n_iter``, their sum, can exceed ``max_iter``.

    Returns
    -------
    RegularizationPath

    Raises
    ------
    ProblemError
        Radii not positive and strictly increasing; unknown ``param``, ``loss`` or ``head``;
        ``m < 1``, or ``m > d`` past the available memory; ``alpha`` without ``eps`` or the reverse; ``alpha`` not proved a LOT; ``eps`` outside the range above.

    Warns
    -----
    ConvergenceWarning
        A radius whose residual stayed above ``tol``, or whose objective float64 cannot
        resolve to ``tol`` (its stationarity is then ``inf``).

    Notes
    -----
    **Objective.** Far out L differs from the risk of the selected tokens by
    :math:`e^{-R\cdot\mathrm{margin}}`, far below its float64 resolution. For the linear head
    the ``"W"`` path and the local path therefore minimize
    :math:`F = \mathrm{sign}(g)\log(1 + |g|/s)` of the signed gap
    :math:`g = L - L_\beta`, :math:`L_\beta = \frac1n\sum_{i,k}\ell(\gamma_{ik\beta_{ik}})`,
    with β = α (local path) or the tokens the current W selects (``"W"``, re-chosen per
    radius, or the optimal tokens where their risk is nearer L, and at W = 0, where every
    logit ties) and :math:`s = |g|` at each radius's start. F is increasing in L, so its minimizers are
    L's; g is formed in the log domain (positive and negative parts apart) and
    :math:`\nabla F = \nabla L/(s + |g|)` from the GD module's log-domain gradient.
    ``"KQ"`` minimizes :math:`\log(L - L_\star)`
    (:math:`L_\star = \frac1n\sum_{i,k}\ell(\gamma_{ik,\mathrm{opt}})`, the infimum), other
    heads L itself.

    **Method** (``"W"``, ``"KQ"``). Spectral projected gradient on the ball (Barzilai–Borwein
    steps, Armijo backtracking on F along the projection arc), warm-started along the radii.

    **Stationarity.** The ball's KKT residual. Linear head and local path: with the gradient
    normalized, :math:`\min_{\mu \ge 0}\|\hat g + \mu\hat x\|` on the sphere
    (:math:`\hat g = \nabla F/\|\nabla F\|`, :math:`\hat x = x/\|x\|`: the sine of the angle
    between :math:`-\nabla F` and x), scale free, so meaningful where :math:`\nabla L` is
    1e-300; for the local path the same with the active cone rows' unit normals (nonnegative
    multipliers, NNLS). Other heads (F = L, whose gradient may be small at a genuine
    optimum): :math:`\min_{\mu \ge 0}\|\nabla F + \mu\hat x\| / \max(G, \|\nabla F\|)`.
    Inside the ball (and, for the local path, where no constraint is active):
    :math:`\|\nabla F\| / \max(G, \|\nabla F\|)`. Here

    .. math::

        G = \min(1, 1/\ell), \qquad
        \ell = \frac{1}{\max_{i,t}\|x_{it}\|\,\max_{i,k}\|z_{ik}\|}

    (keys x, queries z; for ``"KQ"`` the length of the factors, :math:`\sqrt\ell`, in place
    of :math:`\ell`). A change of W of norm :math:`\ell` moves no logit
    :math:`x^\top W z` by more than 1; a residual at most ``tol`` (below 1) says
    :math:`\|\nabla F\| \le \mathrm{tol}\cdot G`, i.e. F changes by at most ``tol`` to
    first order over a move of norm :math:`\max(1, \ell)` (W's unit or :math:`\ell`,
    whichever is longer). Where :math:`\ell \le 1` (keys and queries of norm 1 or more)
    G = 1, the absolute test in W's units; where the keys are small the same test in logit
    units, so keys times :math:`a \le 1` (radii divided by a) change no verdict, up to
    rounding, once :math:`\ell > 1`. (With G = 1 alone, measured on
    ``random_data(3, 4, 4, seed=0)`` with keys times :math:`2^{-20}`, every head stopped at
    W = 0 after 0 iterations, :math:`\|\nabla F\| \approx 10^{-7}` read as stationary.)
    G is not :math:`1/\ell` for large keys: :math:`\ell` is set by the largest key, and one
    sequence in units of 1e6 would make the test a million times looser for the others
    (their W = 0 read as stationary); so keys times a > 1 leave the test in W's units, where
    it asks more (it can then be out of float64's reach: a :class:`ConvergenceWarning`).

    **Resolution** (linear head). F is a function of the log-gap
    :math:`\lambda = \log|L - L_\beta|` (and of :math:`\log s`, a value of it), and the
    residual measures changes of λ (:math:`\nabla F = \tfrac12\nabla\lambda` where
    :math:`s = |g|`, as when the residual is measured). Where float64 spaces its numbers
    near λ more widely than ``tol``,
    :math:`\mathrm{ulp}(\lambda) > \mathrm{tol}` (for tol = 1e-6:
    :math:`|\lambda| \ge 2^{33} \approx 8.6\cdot 10^9`, e.g. scores of 1e30, where λ ~ -1e28,
    or radii of 1e10 on scores of order one, where λ ~ -R·margin), no change of F of the
    size ``tol`` asks for is representable, and the gradient's scale
    :math:`e^{M - \lambda}` (a difference of two such numbers) is lost (at scores of 1e100 it
    came out 0 and read as stationary). Such a radius reports ``stationarity = inf``,
    ``converged = False`` and a :class:`ConvergenceWarning` that says to rescale; it is
    measured at the radius's solution, not refused up front, since λ grows with R and a
    path's smaller radii may be resolved. Other heads (F = L): no such check.

    References
    ----------
    .. [1] D. A. Tarzanagh, Y. Li, C. Thrampoulidis, S. Oymak, "Transformers as Support Vector
       Machines", arXiv:2308.16898, Theorem 2 and Section 5.
    .. [2] E. G. Birgin, J. M. Martínez, M. Raydan, "Nonmonotone spectral projected gradient
       methods on convex sets", SIAM J. Optim. 10(4), 2000.
    """
    if not isinstance(data, TokenData):
        raise ProblemError(
            f"{_WHERE} takes a svmgeo.TokenData as data; got {type(data).__name__}. "
            "Build one with svmgeo.TokenData(X, Y=..., v=...) or svmgeo.random_data(...)."
        )
    r = _check_radii(radii)
    check_option(param, "param", ("W", "KQ"), where=_WHERE)
    check_option(loss, "loss", LOSSES, where=_WHERE)
    check_option(head, "head", HEADS, where=_WHERE)
    tol = check_real(tol, "tol", low=0.0, low_open=True, high_open=True, where=_WHERE)
    max_iter = check_int(max_iter, "max_iter", low=1, where=_WHERE)
    seed = check_int(seed, "seed", low=0, where=_WHERE)
    d = data.d
    if param == "KQ":
        # peak arrays of shape (d, m), measured with tracemalloc (d = 3, m = 10**5): 14 for the
        # solves, 6 per radius for the path's factors
        m = d if m is None else check_width(m, d, 14.0 + 6.0 * r.size, _WHERE)
    elif m is not None:
        raise ProblemError(
            f"The 'm' parameter of {_WHERE} applies to param='KQ' only; got m={m!r} with "
            "param='W'. Drop m, or pass param='KQ'."
        )
    if (alpha is None) != (eps is None):
        raise ProblemError(
            f"The local path of {_WHERE} needs both alpha and eps; got only "
            f"{'alpha' if eps is None else 'eps'}. Pass alpha=<selection> and eps=0.1, e.g."
        )
    local = alpha is not None
    if local:
        local_set = check_option(
            "sphere" if local_set is None else local_set,
            "local_set",
            ("sphere", "ball"),
            where=_WHERE,
        )
    elif local_set is not None:
        raise ProblemError(
            f"The 'local_set' parameter of {_WHERE} applies to the local path only; got "
            f"local_set={local_set!r} without alpha and eps. Drop local_set, or pass alpha and "
            "eps."
        )
    if local and param != "W":
        raise ProblemError(
            f"The local path (alpha, eps) of {_WHERE} is defined for param='W' only; got "
            f"param={param!r}."
        )
    if lam is not None:  # named here (the risk's own check names train)
        lam = check_real(lam, "lam", low=0.0, high_open=True, where=_WHERE)
    obj = _Objective(data, loss, head, v, V, lam)
    largest = float(r[-1])  # ||W||_F <= R, and ||K Q^T||_F <= (||K||^2 + ||Q||^2) / 2 = R
    if not largest <= obj.oracle.max_norm:
        raise ProblemError(
            f"The radii of {_WHERE} go up to {largest:.3g}, beyond the largest ||W||_F "
            f"the risk represents for these data ({obj.oracle.max_norm:.3g}: its logits would "
            "leave float64's range). Pass smaller radii (the direction of W_R settles long "
            "before)."
        )
    if reference is not None:
        ref = check_array(
            reference, "reference", ndim=2, shape=(d, d), hint="A (d, d) matrix."
        ).copy()  # kept on the path
        if not np.any(ref):
            raise ProblemError("reference must be nonzero: a zero matrix has no direction.")
    else:
        ref = None
    if local:
        return _path_local(
            data, r, obj, alpha, eps, ref, init, tol, max_iter, loss, head, str(local_set)
        )
    if ref is None:  # Att-SVM(opt), or Att-SVM*(opt) with the rank bound m of the factors
        binding = param == "KQ" and m is not None and m < d
        ref = _default_reference(
            data, obj, "nuc" if param == "KQ" else "fro", m if binding else None
        )
    if param == "W":
        return _path_w(r, obj, ref, init, d, tol, max_iter, loss, head)
    assert m is not None  # narrowed above
    return _path_kq(r, obj, ref, init, d, m, seed, tol, max_iter, loss, head)


def _verdict(
    radius: float, res: float, tol: float, n_iter: int, gap: _SelectionGap | None, W: np.ndarray
) -> float:
    r"""The stationarity a radius reports: ``res``, or ``inf`` where float64 cannot resolve
    the log-domain objective at W to ``tol`` (:math:`\mathrm{ulp}(\log|L(W) - L_\beta|) >`
    ``tol``: F is a function of that log-gap, and the residual measures its changes); a
    :class:`ConvergenceWarning` for either failure."""
    log_gap = -math.inf if gap is None else gap.log_gap(W)[1]
    if math.isfinite(log_gap) and math.ulp(log_gap) > tol:
        limit = math.ldexp(1.0, math.frexp(tol)[1] + 52)  # the least |x| with ulp(x) > tol
        warnings.warn(
            f"regularization_path cannot resolve its objective at radius {radius:g}: the "
            f"log-gap log|L - L_beta| = {log_gap:.3g} is represented in float64 only to "
            f"{math.ulp(log_gap):.2g}, coarser than tol={tol:g} (float64 resolves it to tol "
            f"below |log-gap| = {limit:.3g}); stationarity is reported as inf. Rescale the "
            "data (smaller scores or tokens), or pass smaller radii or a larger tol.",
            ConvergenceWarning,
            stacklevel=4,
        )
        return math.inf
    if res > tol:
        warnings.warn(
            f"regularization_path did not converge at radius {radius:g}: stationarity "
            f"residual {res:.2e} > tol={tol:g} after {n_iter} iterations; increase max_iter "
            "or tol.",
            ConvergenceWarning,
            stacklevel=4,
        )
    return res


def _result(
    r: np.ndarray,
    Ws: list[np.ndarray],
    obj: _Objective,
    res: list[float],
    its: list[int],
    tol: float,
    ref: np.ndarray | None,
    loss: str,
    head: str,
    param: str,
    Ks: list[np.ndarray] | None = None,
    Qs: list[np.ndarray] | None = None,
    cone: list[float] | None = None,
    alpha: np.ndarray | None = None,
    eps: float | None = None,
    local_set: str | None = None,
) -> RegularizationPath:
    vals = [obj.values(W) for W in Ws]
    W = np.stack(Ws)
    return RegularizationPath(
        radii=r,
        W=W,
        K=None if Ks is None else np.stack(Ks),
        Q=None if Qs is None else np.stack(Qs),
        loss=np.array([v[0] for v in vals]),
        log_loss_gap=np.array([v[1] for v in vals]),
        stationarity=np.array(res),
        converged=np.array(res) <= tol,
        n_iter=np.array(its, dtype=np.int64),
        correlation=None if ref is None else np.array([correlation(A, ref) for A in W]),
        reference=ref,
        cone_margin=None if cone is None else np.array(cone),
        param=param,
        loss_name=loss,
        head=head,
        alpha=alpha,
        eps=eps,
        local_set=local_set,
    )


def _path_w(
    r: np.ndarray,
    obj: _Objective,
    ref: np.ndarray | None,
    init: Any,
    d: int,
    tol: float,
    max_iter: int,
    loss: str,
    head: str,
) -> RegularizationPath:
    if init is None:
        x = np.zeros((d, d))
    else:
        x = check_array(init, "init", ndim=2, shape=(d, d), hint="init is a (d, d) matrix W.")

    gap = _SelectionGap(obj, obj.oracle(x).selected) if obj.log_gap else None

    def fun(w: np.ndarray) -> tuple[float, np.ndarray]:
        if gap is not None:
            F, g = gap(w.reshape(d, d))
        else:
            F, g, _, _ = obj(w.reshape(d, d))
        return F, g.ravel()

    unit = _gradient_unit(obj)
    Ws, res, its = [], [], []
    prev = None
    for R in r:
        if prev is not None:
            x = x * (R / prev)
        xv, rr, it = _on_ball(
            fun,
            x.ravel(),
            float(R),
            gap,
            lambda v: v.reshape(d, d),
            tol,
            max_iter,
            obj.log_gap,
            unit,
        )
        x = xv.reshape(d, d)
        rr = _verdict(float(R), rr, tol, it, gap, x)
        Ws.append(x.copy())
        res.append(rr)
        its.append(it)
        prev = R
    return _result(r, Ws, obj, res, its, tol, ref, loss, head, "W")


def _on_ball(
    fun: Callable[[np.ndarray], tuple[float, np.ndarray]],
    x: np.ndarray,
    radius: float,
    gap: _SelectionGap | None,
    to_W: Callable[[np.ndarray], np.ndarray],
    tol: float,
    max_iter: int,
    log_gap: bool,
    unit: float = 1.0,
) -> tuple[np.ndarray, float, int]:
    r""":func:`_spg` of ``fun`` over :math:`\|x\| \le` ``radius`` from x: (x, KKT residual,
    iterations). With the linear head's ``gap`` (the objective :math:`\varphi_s(L -
    L_\alpha)` of the tokens :math:`W =` ``to_W(x)`` selects), its scale s is set at the start
    and the residual measured again at the gap's own scale at the end: once the gap has fallen
    ~700 e-folds below s (or the iterate saturates on a selection, where :math:`L - L^\star`
    stays of order one), the gradient underflows and looks stationary; the solve goes on from
    there while that measure says "not yet". ``unit``: the residuals' G
    (:func:`_gradient_unit`)."""
    if gap is not None:
        W = to_W(x)
        _reference_selection(gap, W)
        gap.reset(W)
    xv, rr, it = _spg(fun, x, radius, tol, max_iter, None, log_gap, unit=unit)
    while gap is not None:
        W = to_W(xv)
        _reference_selection(gap, W)
        gap.reset(W)
        rr = _ball_residual(xv, fun(xv)[1], radius, log_gap, unit=unit)
        if rr <= tol or it >= max_iter:
            break
        xn, _, more = _spg(fun, xv, radius, tol, max_iter - it, None, log_gap, unit=unit)
        it += more
        if np.array_equal(xn, xv):
            break  # no step left at float64 resolution
        xv = xn
    return xv, rr, it


def _path_kq(
    r: np.ndarray,
    obj: _Objective,
    ref: np.ndarray | None,
    init: Any,
    d: int,
    m: int,
    seed: int,
    tol: float,
    max_iter: int,
    loss: str,
    head: str,
) -> RegularizationPath:
    if init is None:
        rng = np.random.default_rng(seed)
        K0, Q0 = rng.standard_normal((d, m)), rng.standard_normal((d, m))
    else:
        if not (isinstance(init, tuple) and len(init) == 2):
            raise ProblemError(
                f"With param='KQ' the 'init' parameter of {_WHERE} must be a pair (K, Q) of "
                f"({d}, {m}) arrays; got {type(init).__name__}."
            )
        K0 = check_array(init[0], "init[0]", ndim=2, shape=(d, m), hint="K has shape (d, m).")
        Q0 = check_array(init[1], "init[1]", ndim=2, shape=(d, m), hint="Q has shape (d, m).")
    x = np.concatenate([K0.ravel(), Q0.ravel()])
    nx = float(np.linalg.norm(x))
    if nx == 0.0:
        raise ProblemError(
            "init (K, Q) must not be zero: K = Q = 0 is a stationary point of L(KQᵀ)."
        )
    x = x * (math.sqrt(2.0 * r[0]) / nx)
    dm = d * m

    def product(z: np.ndarray) -> np.ndarray:
        return z[:dm].reshape(d, m) @ z[dm:].reshape(d, m).T

    gap = _SelectionGap(obj, obj.oracle(product(x)).selected) if obj.log_gap else None

    def fun(z: np.ndarray) -> tuple[float, np.ndarray]:
        K, Q = z[:dm].reshape(d, m), z[dm:].reshape(d, m)
        if gap is not None:
            F, g = gap(K @ Q.T)
        else:
            F, g, _, _ = obj(K @ Q.T)
        return F, np.concatenate([(g @ Q).ravel(), (g.T @ K).ravel()])

    unit = _gradient_unit(obj, factored=True)
    Ws, Ks, Qs, res, its = [], [], [], [], []
    prev = None
    for R in r:
        if prev is not None:
            x = x * math.sqrt(R / prev)
        x, rr, it = _on_ball(
            fun, x, math.sqrt(2.0 * R), gap, product, tol, max_iter, obj.log_gap, unit
        )
        K, Q = x[:dm].reshape(d, m).copy(), x[dm:].reshape(d, m).copy()
        Ks.append(K)
        Qs.append(Q)
        Ws.append(K @ Q.T)
        res.append(_verdict(float(R), rr, tol, it, gap, Ws[-1]))
        its.append(it)
        prev = R
    return _result(r, Ws, obj, res, its, tol, ref, loss, head, "KQ", Ks, Qs)


class _Cone:
    r"""The score cone :math:`C_\varepsilon(\alpha)` as rows: for query q with
    :math:`\mathcal T^+_q \ne \emptyset`, witness :math:`t_q \in \mathcal T^-_q` and each
    :math:`\tau \in \mathcal T^+_q`, :math:`c(W) = (x_{t_q} - x_\tau)^\top W z_q - \varepsilon\|W\|_F`.

    :math:`\mathcal T^\pm` by :func:`svmgeo.selection.score_sides` (ties up to round-off are
    high), the rule of :func:`svmgeo.score_cone_margin`, on the scores of the head trained."""

    def __init__(
        self, data: TokenData, scores: np.ndarray, sizes: np.ndarray, alpha: np.ndarray, eps: float
    ) -> None:
        # the trained head's scores and sizes (RiskOracle.scores, .score_sizes)
        self.low, self.high = score_sides(scores, sizes, alpha, data.visible)
        self.q = np.argwhere(self.high.any(axis=2))  # (nq, 2): (i, k)
        self.X, self.Z, self.eps = data.X, data.queries, eps

    def logits(self, W: np.ndarray) -> np.ndarray:
        return np.einsum("itd,de,ike->ikt", self.X, W, self.Z)

    def margin(self, W: np.ndarray) -> float:
        """``min_q max_{t in T-} min_{tau in T+} (l_t - l_tau)`` (``score_cone_margin``)."""
        if self.q.shape[0] == 0:
            return math.inf
        lg = self.logits(W)
        lo = np.where(self.low, lg, -np.inf).max(axis=2)
        hi = np.where(self.high, lg, -np.inf).max(axis=2)
        i, k = self.q[:, 0], self.q[:, 1]
        return float(np.min(lo[i, k] - hi[i, k]))

    def contains(self, W: np.ndarray) -> bool:
        return self.margin(W) >= self.eps * float(np.linalg.norm(W))

    def rows(self, W: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Rank-one matrices ``(x_t - x_tau) z_q^T`` (witness t of W) as ``(A, B)`` pairs."""
        lg = self.logits(W)
        A, B = [], []
        for i, k in self.q:
            t = int(np.argmax(np.where(self.low[i, k], lg[i, k], -np.inf)))
            for tau in np.flatnonzero(self.high[i, k]):
                A.append(self.X[i, t] - self.X[i, tau])
                B.append(self.Z[i, k])
        return np.array(A).reshape(-1, self.X.shape[2]), np.array(B).reshape(-1, self.X.shape[2])


def _kkt_residual(
    g: np.ndarray, normals: list[np.ndarray], normalized: bool = True, unit: float = 1.0
) -> float:
    r""":math:`\min_{\lambda \ge 0}\|g - \sum_j \lambda_j \hat n_j\| / \max(G, \|g\|)`
    over the active constraints :math:`c_j \ge 0` (:math:`\hat n_j` their unit gradients),
    G = ``unit`` (:func:`_gradient_unit`); with ``normalized`` the gradient is
    :math:`\hat g = g/\|g\|` instead where a constraint is active."""
    from scipy.optimize import nnls

    ng = float(np.linalg.norm(g))
    if ng == 0.0:
        return 0.0
    if not normals:
        return ng / max(unit, ng)
    N = np.stack([nv / np.linalg.norm(nv) for nv in normals], axis=1)
    _, res = nnls(N, g / ng)
    return float(res) if normalized else float(res) * ng / max(unit, ng)


def _solve_local(
    fun: Callable[[np.ndarray], tuple[float, np.ndarray]],
    cone: _Cone,
    x0: np.ndarray,
    R: float,
    tol: float,
    max_iter: int,
    sphere: bool = False,
    unit: float = 1.0,
) -> tuple[np.ndarray, float, int]:
    """SLSQP over the ball (the sphere with ``sphere``) and the cone's rows with the witnesses
    of the current point, re-chosen until they no longer change; returns
    ``(x, residual, n_iter)``."""
    from scipy.optimize import minimize

    d = cone.X.shape[2]
    x = x0
    eps = cone.eps
    n_iter = 0
    for _ in range(5):
        A, B = cone.rows(x.reshape(d, d))
        P = np.einsum("jd,je->jde", A, B).reshape(A.shape[0], d * d)  # no rows: (0, d²)

        # scaled to the unit ball (u = W / R); the cone rows with a relative slack of 1e-9,
        # so that SLSQP's answer (feasible up to round-off) is inside the exact cone
        e2 = eps * (1.0 + 1e-9)

        def cons(u: np.ndarray, P: np.ndarray = P, e2: float = e2) -> np.ndarray:
            return P @ u - e2 * np.linalg.norm(u) - 1e-12

        def cons_jac(u: np.ndarray, P: np.ndarray = P, e2: float = e2) -> np.ndarray:
            nu = float(np.linalg.norm(u))
            un = u / nu if nu > 0.0 else np.zeros_like(u)
            return P - e2 * un[None, :]

        def fun_u(u: np.ndarray) -> tuple[float, np.ndarray]:
            f, g = fun(R * u)
            return f, R * g

        out = minimize(
            fun_u,
            x / R,
            jac=True,
            method="SLSQP",
            constraints=[
                {"type": "eq" if sphere else "ineq", "fun": _unit_gap, "jac": _unit_gap_jac},
                {"type": "ineq", "fun": cons, "jac": cons_jac},
            ],
            options={"maxiter": min(max_iter, 1000), "ftol": 1e-15},
        )
        n_iter += int(out.nit)
        xn = _ball(R * np.asarray(out.x), R, sphere)
        if not cone.contains(xn.reshape(d, d)):
            # SLSQP ended outside the cone: back off towards x (inside) by bisection; the
            # cone is invariant under scaling, so the projection onto the ball keeps it
            lo, hi = 0.0, 1.0
            for _ in range(50):
                mid = 0.5 * (lo + hi)
                if cone.contains((x + mid * (xn - x)).reshape(d, d)):
                    lo = mid
                else:
                    hi = mid
            xn = _ball(x + lo * (xn - x), R, sphere)
            if lo == 0.0 or not cone.contains(xn.reshape(d, d)) or fun(xn)[0] > fun(x)[0]:
                break
        same = np.array_equal(cone.rows(xn.reshape(d, d))[0], A)
        x = xn
        if same:
            break
    return x, _local_residual(fun, cone, x, R, sphere, unit), n_iter


def _unit_gap(u: np.ndarray) -> np.ndarray:
    """``1 - ||u||^2``: >= 0 on the unit ball, = 0 on the unit sphere."""
    return np.array([1.0 - u @ u])


def _unit_gap_jac(u: np.ndarray) -> np.ndarray:
    return -2.0 * u[None, :]


def _local_residual(
    fun: Callable[[np.ndarray], tuple[float, np.ndarray]],
    cone: _Cone,
    x: np.ndarray,
    R: float,
    sphere: bool = False,
    unit: float = 1.0,
) -> float:
    """KKT residual at x of the ball (the sphere, whose multiplier is free in sign) and the
    cone rows of x's witnesses (active within 1e-7); ``unit`` as in :func:`_kkt_residual`."""
    d = cone.X.shape[2]
    _, g = fun(x)
    A, B = cone.rows(x.reshape(d, d))
    P = np.einsum("jd,je->jde", A, B).reshape(A.shape[0], d * d)  # no rows: (0, d²)
    u = x / R
    nu = float(np.linalg.norm(u))
    un = u / nu if nu > 0.0 else np.zeros_like(u)
    c = np.concatenate([[1.0 - u @ u], P @ u - cone.eps * nu])
    J = np.vstack([-2.0 * u, P - cone.eps * un[None, :]])
    normals = [J[j] for j in range(c.size) if c[j] <= 1e-7]
    if sphere:
        normals.append(2.0 * u)  # an equality: both signs
    return _kkt_residual(g, normals, unit=unit)


def _path_local(
    data: TokenData,
    r: np.ndarray,
    obj: _Objective,
    alpha: Any,
    eps: Any,
    ref: np.ndarray | None,
    init: Any,
    tol: float,
    max_iter: int,
    loss: str,
    head: str,
    local_set: str,
) -> RegularizationPath:
    from ..selection import check_selection
    from ..solvers import att_svm
    from ._local import lot_from_support
    from ._support import support_from_result

    a = check_selection(data, alpha)
    given = a.reshape(data.selection_shape)  # the user's shape: (n,) for single-query data
    eps = check_real(eps, "eps", low=0.0, low_open=True, high_open=True, where=_WHERE)
    scores = obj.oracle.scores
    if scores is None:
        raise ProblemError(
            f"The local path of {_WHERE} (alpha= with eps=) follows the score cone "
            f"C_eps(alpha), defined by the token scores of a linear head; head={head!r} has no "
            "per-token score. Pass head='linear' (with v=), or drop alpha and eps for the "
            "global path."
        )
    svm = att_svm(data, a)
    if svm.W is None:
        raise ProblemError(
            f"The local path of {_WHERE} starts from the direction of Att-SVM(alpha), which is "
            f"infeasible for alpha={given.tolist()} ({svm.message}). Pass a selection whose "
            "Att-SVM is feasible (e.g. one of sg.locally_optimal_selections(data))."
        )
    Wmm = np.asarray(svm.W)
    if not np.any(Wmm):
        raise ProblemError(
            f"The local path of {_WHERE} starts from the direction of Att-SVM(alpha), but "
            f"W^mm_alpha = 0 for alpha={given.tolist()}: no query sees two keys (T = 1, or a "
            "mask leaving one key), so there is no direction to follow; every W selects the "
            "same tokens. Drop alpha and eps (the global path), or pass data with T >= 2."
        )
    sizes = obj.oracle.score_sizes
    assert sizes is not None  # narrowed: a head with scores has their sizes
    # The LOT test on the head's scores, read off the solve above (is_locally_optimal's
    # tolerances). A feasible alpha that is not a LOT has a support token tying or beating the
    # selected one, so W^mm_alpha's cone margin is <= 0 in exact arithmetic; computed, it can
    # come out +1e-16, which the margin test below alone would accept.
    lot = lot_from_support(data, scores, sizes, support_from_result(data, a, svm, warn=False))
    if not lot:
        verdict = "is not locally optimal" if lot.decided else "is not proved locally optimal"
        raise ProblemError(
            f"The local path of {_WHERE} needs a locally optimal selection (W^mm_alpha inside "
            f"a score cone C_eps(alpha), eps > 0), but alpha={given.tolist()} {verdict} for "
            f"the scores of this head ({lot.reason}). Pass a LOT, e.g. one of "
            "sg.locally_optimal_selections(data)."
        )
    cone = _Cone(data, scores, sizes, a, eps)  # the head trained's scores (v=, or the data's)
    eps_max = cone.margin(Wmm) / float(np.linalg.norm(Wmm))
    if not eps_max > 0.0:
        raise ProblemError(
            f"The local path of {_WHERE} needs W^mm_alpha inside a score cone C_eps(alpha), "
            f"eps > 0, but for alpha={given.tolist()} its score-cone margin over its norm is "
            f"{eps_max:.6g} <= 0: no eps works (MATH-NOTES 1.1: typically a sequence with "
            "higher-scoring tokens but no support token, where the LOT test holds vacuously). "
            "Pass another alpha, e.g. one of sg.locally_optimal_selections(data)."
        )
    if not eps < eps_max:
        raise ProblemError(
            f"The 'eps' parameter of {_WHERE} must be in (0, {eps_max:.6g}) for this alpha "
            "(the score-cone margin of W^mm_alpha over its norm, so that the start direction is "
            f"inside C_eps(alpha)). Got {eps!r} instead; pass a smaller eps."
        )
    if ref is None:
        ref = Wmm
    d = data.d
    if init is None:
        x = Wmm / float(np.linalg.norm(Wmm))
    else:
        x = check_array(init, "init", ndim=2, shape=(d, d), hint="init is a (d, d) matrix W.")
        if not cone.contains(x):
            raise ProblemError(f"init must lie in the score cone C_eps(alpha) of {_WHERE}.")
        if local_set == "sphere" and not np.any(x):
            raise ProblemError(
                f"init must be nonzero for the sphere path of {_WHERE} (it is scaled onto "
                "||W|| = R); pass a nonzero W in C_eps(alpha), or local_set='ball'."
            )

    gap = _SelectionGap(obj, a) if obj.log_gap else None

    def fun(w: np.ndarray) -> tuple[float, np.ndarray]:
        if gap is not None:
            F, g = gap(w.reshape(d, d))
        else:
            F, g, _, _ = obj(w.reshape(d, d))
        return F, g.ravel()

    def inside(w: np.ndarray) -> bool:
        return cone.contains(w.reshape(d, d))

    Ws, res, its = [], [], []
    prev: float | None = None

    sphere = local_set == "sphere"
    unit = _gradient_unit(obj)
    scale = _logit_scale(obj)

    def solve(x: np.ndarray, R: float) -> tuple[np.ndarray, float, int]:
        xv, rr, it = _spg(fun, x.ravel(), R, tol, max_iter, inside, True, sphere, unit)
        strictly = cone.margin(xv.reshape(d, d)) > eps * float(np.linalg.norm(xv)) + 1e-9 * R
        if rr > tol or not strictly:
            xv, rr, it2 = _solve_local(fun, cone, xv, R, tol, max_iter, sphere, unit)
            it += it2
            if rr > tol:  # polish: SLSQP stops near 1e-5 where the cone is not active
                xs, rs, it3 = _spg(fun, xv, R, tol, max_iter, inside, True, sphere, unit)
                it += it3
                margin = cone.margin(xs.reshape(d, d)) - eps * float(np.linalg.norm(xs))
                if rs < rr and margin > 1e-9 * R:
                    xv, rr = xs, rs
        return xv, rr, it

    # The ball path also solves, unreported, up to 8 radii R/4, R/16, ... above the previous
    # radius (or, before the first, above the logit length 1/scale, below which L hardly
    # moves), warm-started along them as along the caller's: the restricted problem has
    # interior minimizers that a solve from the radius alone need not reach (a single radius
    # 256 ended at ||W|| = 256 where the radii 0.5, 1, ..., 256 found a lower L at ||W|| = 15.5).
    steps: list[tuple[float, bool]] = []  # (radius, reported)
    for R in r:
        below = steps[-1][0] if steps else (1.0 / scale if scale > 0.0 else math.inf)
        # at most _BALL_LADDER_RUNGS of them, evenly spaced in log R: R / ratio^k > below
        # holds for k <= _BALL_LADDER_RUNGS only
        ratio = max(_BALL_LADDER_RATIO, (float(R) / below) ** (1.0 / (_BALL_LADDER_RUNGS + 1)))
        inner: list[float] = []
        t = float(R) / ratio
        while not sphere and t > below and len(inner) < _BALL_LADDER_RUNGS:
            inner.append(t)
            t /= ratio
        steps += [(u, False) for u in reversed(inner)]
        steps.append((float(R), True))
    norm0 = float(np.linalg.norm(x))
    x = x * (steps[0][0] / norm0) if norm0 > 0.0 else x
    done = 0  # iterations of the unreported radii, counted with the next reported one
    for R, reported in steps:
        x_prev = x
        if prev is not None:
            x = x * (R / prev)
        if gap is not None:
            gap.reset(x)
        xv, rr, it = solve(x, R)
        # The restricted problem is nonconvex and may have finite local minimizers inside the
        # ball. Other feasible points bound the minimum: R W^mm_alpha / ||W^mm_alpha|| and
        # (ball only) the previous minimizer; restart from any that is lower, keep the best.
        alts = [R * Wmm / float(np.linalg.norm(Wmm))]
        if prev is not None and not sphere:
            alts.insert(0, x_prev)
        for x_alt in alts:
            if fun(xv)[0] > fun(x_alt.ravel())[0]:
                xw, rw, itw = solve(x_alt, float(R))
                it += itw
                if fun(xw)[0] <= fun(xv)[0]:
                    xv, rr = xw, rw
        if not sphere and prev is not None and fun(x_prev.ravel())[0] < fun(xv)[0]:
            xv = x_prev.ravel()  # nested feasible sets: never end above the previous minimum
            rr = _local_residual(fun, cone, xv, float(R), unit=unit)
        while gap is not None:  # as the W path: measure at the gap's own scale, go on
            gap.reset(xv.reshape(d, d))
            rr = _local_residual(fun, cone, xv, float(R), sphere, unit)
            if rr <= tol or it >= max_iter:
                break
            xn, _, more = solve(xv, float(R))
            it += max(more, 1)
            if np.array_equal(xn, xv) or fun(xn)[0] > fun(xv)[0]:
                break  # no descent left at float64 resolution
            xv = xn
        x = xv.reshape(d, d)
        prev = R
        if not reported:
            done += it
            continue
        Ws.append(x.copy())
        res.append(_verdict(R, rr, tol, it, gap, x))
        its.append(it + done)
        done = 0
    cm = [cone.margin(W) / float(np.linalg.norm(W)) for W in Ws]
    return _result(
        r,
        Ws,
        obj,
        res,
        its,
        tol,
        ref,
        loss,
        head,
        "W",
        cone=cm,
        alpha=given,
        eps=eps,
        local_set=local_set,
    )
