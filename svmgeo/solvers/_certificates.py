# SPDX-License-Identifier: BSD-3-Clause
r"""Certificates recomputed by svmgeo from the problem data, never trusted from a backend.

The shared machinery lives here: primal residuals of a constraint set and judging residuals
against a tolerance. Norm-specific KKT checks (Frobenius, nuclear, :math:`\ell_p`) and the
Farkas check build on these; :class:`NormGeometry` bundles a norm with its dual and its KKT
check (the part of an entry of the table of norms, ``_norms.py``, that a result needs).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from .._linalg import entrywise_norm, frobenius_norm
from ..constraints import MARGIN, ConstraintSet
from ._factored import cached_compress
from ._result import Certificate

__all__ = [
    "BARE",
    "DECADES",
    "FARKAS_TOL",
    "FRO",
    "NUC",
    "RESTORE_LIMIT",
    "ROUNDING_SHARE",
    "SPAN_RESIDUAL_TOL",
    "SPECTRAL",
    "ULPS",
    "UNIT_ROUNDOFF",
    "NormGeometry",
    "adjoint_nuclear_norm",
    "adjoint_singular_values",
    "adjoint_spectral_norm",
    "dual_exponent",
    "farkas_residual",
    "frobenius_certificate",
    "judge",
    "lift_factor",
    "lift_onto_rows",
    "lp_certificate",
    "lp_geometry",
    "margin_rounding",
    "negative_part",
    "nuclear_certificate",
    "nuclear_norm_on_rows",
    "point_violations",
    "primal_certificate",
    "primal_infeasibility",
    "relative",
    "restore_factor",
    "spectral_certificate",
    "unit_farkas",
    "zero_is_feasible",
    "zero_row_farkas",
]


def point_violations(cs: ConstraintSet, margins: np.ndarray) -> np.ndarray:
    r"""Each row's violation at margins :math:`m`: :math:`\max(c_j - m_j, 0)` on margin rows,
    :math:`|m_j - c_j|` on equality rows (the ``residual`` of a feasible point is the largest)."""
    return np.where(cs._margin_rows, np.maximum(cs.rhs - margins, 0.0), np.abs(margins - cs.rhs))


UNIT_ROUNDOFF = 2.0**-53
r"""The unit round-off u of float64: :math:`|\mathrm{fl}(x) - x| \le u|x|` (no underflow)."""

SMALLEST_SUBNORMAL = 2.0**-1074
"""η, float64's smallest subnormal: the absolute error of a product that underflows is at most
half of it."""


def primal_infeasibility(
    cs: ConstraintSet, margins: np.ndarray, W: np.ndarray | None = None
) -> float:
    r"""Largest violation, relative to the row's bound.

    .. math::

        \max_j \frac{v_j}{s_j},\qquad v_j = (c_j - m_j)_+\ \text{(margin rows)},
        \quad |m_j - c_j|\ \text{(equality rows)},\qquad s_j = |c_j|,

    with :math:`s_j = \max_k|c_k|` when :math:`c_j = 0` (the problem's scale, 1 when every
    :math:`c_k` is 0), and, given the point ``W``, the smaller of that and
    :math:`\|a_j\|\,\|b_j\|\,\|W\|_F` (a bound on :math:`|a_j^\top W b_j|`; a violation at
    W's round-off stays at round-off). Scaling every bound and W by one factor changes no
    residual. Att-SVM's rows (:math:`c_j = 1`) count their violation as it is. A bound
    :math:`0 < |c_j| < 1` counts it as a fraction of :math:`|c_j|`, so that a W missing a row
    :math:`c_j = 10^{-9}` by half of it fails the certificate (an absolute violation of
    :math:`5 \cdot 10^{-10}` passed any tolerance above it), and a row :math:`c_j = 0` beside
    bounds :math:`10^{-12}` counts it as a fraction of :math:`10^{-12}`. The size of W matters
    where the bounds that set W's scale are not the largest: bounds (-0.5, 1e-9, 0), the first
    slack, gave a W of norm 6e-11 whose c = 0 row was missed by half of its size, a violation
    of 1.1e-10 of 0.5. Before session 46 the scale was :math:`\min(1, s_j)`: bounds times
    :math:`2^{30}` were judged absolutely, and the float rounding of margins of size
    :math:`2^{30}` (~1e-7) failed ``tol = 1e-8`` at the optimum.

    Given ``W``, a row whose scale is below the largest, :math:`s_j < \max_k|c_k|`, counts only
    its violation beyond the rounding of its margin, :math:`(v_j - \min(\rho_j, \kappa
    s_j))_+` with :math:`\rho_j = 8d\,u\,|a_j|^\top |W|\,|b_j|` (u the unit round-off; a
    float :math:`a_j^\top W b_j` is within :math:`\gamma_{2d}|a_j|^\top|W||b_j|` of the exact
    margin in any order of its sums; :func:`margin_rounding`) and :math:`\kappa` =
    :data:`ROUNDING_SHARE` = 1e-5: a bound :math:`c_j = 10^{-9}` beside :math:`c_k = 1` rows is
    at the margin's round-off relative to :math:`|c_j|`, and the exact optimum, evaluated in
    floats, failed the certificate (session 45's fuzz: 21 of 85 feasible instances with such a
    bound not certified by the Frobenius solve). The cap keeps a row whose bound the float
    margin cannot resolve (rounding above :math:`10^{-5}` of it: :math:`10^6(W_{12} - W_{11})
    \ge 10^{-9}` next to :math:`W_{11} \ge 1`) judged as before, so that a W missing it by
    all of its bound fails; a W that passes misses a row in exact arithmetic by at most
    :math:`(\mathrm{tol} + \kappa) s_j + \rho_j`. Rows at the largest scale count every
    violation.
    """
    if cs.N == 0:
        return 0.0
    viol = point_violations(cs, np.asarray(margins))
    unit = cs._bound_unit
    scale = cs._bound_scales
    if W is None:
        return float((viol / (unit if scale is None else scale)).max())
    zero = cs.rhs == 0.0
    if np.any(zero):
        na, nb = cs._row_norms
        size = na * nb * frobenius_norm(W)
        scale = np.full(cs.N, unit) if scale is None else scale.copy()
        tighter = zero & (size > 0.0) & (size < scale)
        scale[tighter] = size[tighter]
    if scale is None:
        return float(viol.max() / unit)
    below = (scale < unit) & (viol > 0.0)
    if np.any(below):
        viol = viol.copy()
        allowance = np.minimum(margin_rounding(cs, W, below), ROUNDING_SHARE * scale[below])
        viol[below] = np.maximum(viol[below] - allowance, 0.0)
    return float((viol / scale).max())


def margin_rounding(cs: ConstraintSet, W: np.ndarray, rows: np.ndarray) -> np.ndarray:
    r""":math:`\rho_j = 8d\,u\,|a_j|^\top |W|\,|b_j|` for the rows selected by the boolean
    mask ``rows``: a bound on the rounding of a float margin :math:`a_j^\top W b_j` of d x d
    rows (:math:`\gamma_{2d} \le 4du`, times 2 for the margins' other evaluations, e.g. in
    compressed coordinates), the allowance of :func:`primal_infeasibility`. Through the
    distinct queries when the rows share them, as :meth:`~svmgeo.ConstraintSet.apply`."""
    A = np.abs(cs.A[rows])
    groups = cs.query_groups
    if groups is None:
        size = np.einsum("jk,jk->j", A @ np.abs(W), np.abs(cs.B[rows]))
    else:
        Q, inv = groups
        used, position = np.unique(inv[rows], return_inverse=True)
        R = np.abs(Q[used]) @ np.abs(W).T  # row s: (|W| |q_s|)^T
        size = np.einsum("jk,jk->j", A, R[position])
    return 8.0 * cs.d * UNIT_ROUNDOFF * size


ROUNDING_SHARE = 1e-5
"""The largest share of a row's scale :math:`s_j` that :func:`primal_infeasibility` forgives as
the rounding of its margin."""


def zero_is_feasible(cs: ConstraintSet) -> bool:
    """Whether W = 0 meets every row (c_j <= 0 on margin rows, c_j = 0 on equality rows): then
    it is the optimum of every norm, certified by λ = 0."""
    return primal_infeasibility(cs, np.zeros(cs.N)) == 0.0


_EPS = float(np.finfo(float).eps)

ULPS: tuple[float, ...] = tuple(4.0 * k * _EPS for k in range(1, 6))
"""Relative increments of a few ulps: enough when the margins are well conditioned."""
DECADES: tuple[float, ...] = tuple(10.0**-p for p in range(15, 0, -1))
"""Relative increments 1e-15, 1e-14, ..., 1e-1: for cancelling rows, where the rounding of
:math:`a_j^\top W b_j` exceeds a few ulps."""
BARE: tuple[float, ...] = (0.0,)
"""The bare factor :math:`f`, used without recomputing the margins."""


def lift_factor(
    cs: ConstraintSet,
    margins: np.ndarray,
    *,
    max_factor: float,
    increments: tuple[float, ...],
    recompute: Callable[[float], np.ndarray] | None = None,
    rows: Literal["positive", "all"] = "positive",
) -> tuple[float, np.ndarray] | None:
    r"""The least tried factor :math:`g \ge 1` with which :math:`gW` meets the rows exactly.

    .. math::

        f = \max\Bigl(1,\ \max_{j:\,c_j > 0} \frac{c_j}{a_j^\top W b_j}\Bigr), \qquad
        g = f\,(1 + \delta), \quad \delta \in \text{increments},\ g \le \text{max\_factor},

    each :math:`g` checked on the margins ``recompute(g)`` of :math:`gW` (rounding can leave
    a row a few ulps short, or more on cancelling rows); with ``recompute=None`` the first
    :math:`g` is taken unchecked (margins :math:`g\,m`). ``rows`` says which rows must hold:
    ``"positive"`` the margin rows with :math:`c_j > 0`, ``"all"`` every row (primal
    infeasibility exactly 0).

    Returns
    -------
    (g, margins of gW), or None
        ``(1.0, margins)`` when the rows already hold; None when no tried factor works or
        scaling cannot help (an equality row with :math:`c_j \ne 0`, or a positive bound
        facing a nonpositive margin).
    """
    pos = cs._positive_rows

    def holds(m: np.ndarray) -> bool:
        if rows == "all":
            return primal_infeasibility(cs, m) == 0.0
        return bool(np.all(m[pos] >= cs.rhs[pos]))

    if holds(margins):
        return 1.0, margins
    if np.any(cs.rhs[~cs._margin_rows] != 0.0) or np.any(margins[pos] <= 0.0):
        return None
    f = max(1.0, float(np.max(cs.rhs[pos] / margins[pos], initial=1.0)))
    for delta in increments:
        g = f * (1.0 + delta)
        if g > max_factor:
            break
        if recompute is None:
            return g, g * margins
        new = recompute(g)
        if holds(new):
            return g, new
    return None


def lift_kkt_pair(
    cs: ConstraintSet,
    W: np.ndarray,
    lam: np.ndarray,
    tol: float,
    values: Callable[[np.ndarray], np.ndarray] | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    r"""A Frobenius KKT pair :math:`(W, \lambda)` scaled by the least tried
    :math:`f \in [1, 1 + \max(10^{-9}, \mathrm{tol}/8)]` (a few ulps) with every margin row met
    exactly, and the margins of :math:`fW` (``values``, default ``cs.apply``). Scaling both keeps
    stationarity; it moves the duality gap by about tol/4. Unchanged when no factor works."""
    apply = cs.apply if values is None else values
    margins = apply(W)
    lifted = lift_factor(
        cs,
        margins,
        max_factor=1.0 + max(1e-9, tol / 8),
        increments=ULPS,
        recompute=lambda g: apply(W * g),
    )
    if lifted is None:
        return W, lam, margins
    f, margins = lifted
    return W * f, lam * f, margins


def lift_onto_rows(cs: ConstraintSet, W: np.ndarray) -> np.ndarray:
    r""":math:`gW` for the least tried :math:`g \in [1, 1 + 10^{-9}]` (:data:`DECADES`) with every
    row met exactly (primal infeasibility 0, margins recomputed), or ``W`` when none works: the
    lift of a conic or LP answer (a scaling by :math:`1 + O(\epsilon)`) before it is certified."""
    lifted = lift_factor(
        cs,
        cs.apply(W),
        max_factor=1.0 + 1e-9,
        increments=DECADES,
        recompute=lambda g: cs.apply(W * g),
        rows="all",
    )
    return W if lifted is None else W * lifted[0]


RESTORE_LIMIT = 1.0 + 1e-6
"""Largest factor by which an iterative method's W is scaled up to meet its rows."""


def restore_factor(cs: ConstraintSet, margins: np.ndarray) -> float:
    """:func:`lift_factor` with the bare factor (margins not recomputed) up to
    :data:`RESTORE_LIMIT`; 1.0 when there is none."""
    lifted = lift_factor(cs, margins, max_factor=RESTORE_LIMIT, increments=BARE)
    return 1.0 if lifted is None else lifted[0]


def relative(residual: float, scale: float) -> float:
    r"""A residual relative to the size of what it measures: :math:`r / \sigma`, with 0 when
    :math:`r = 0` and :math:`\infty` when :math:`r > 0 = \sigma` (NaN stays NaN).

    No absolute floor: the certificates' residuals are invariant under a rescaling of the
    data (SPEC §6), so that a tolerance proves the same thing at every scale.
    """
    if residual == 0.0:
        return 0.0
    if scale > 0.0:
        return residual / scale
    return residual if math.isnan(residual) else math.inf


def negative_part(cs: ConstraintSet, lam: np.ndarray, lam_max: float | None = None) -> float:
    r"""Dual infeasibility of the signs, relative: :math:`\max_{j \in \mathcal M}
    (-\lambda_j)_+ / \max_j |\lambda_j|` (margin rows need :math:`\lambda_j \ge 0`);
    ``lam_max`` is :math:`\max_j |\lambda_j|` when the caller has it already."""
    if cs.N == 0:
        return 0.0
    lam = np.asarray(lam, dtype=float)
    worst = float(np.maximum(-lam[cs._margin_rows], 0.0).max(initial=0.0))
    return relative(worst, float(np.abs(lam).max()) if lam_max is None else lam_max)


_RESIDUAL_NAMES = (
    "primal infeasibility",
    "dual infeasibility",
    "stationarity",
    "complementarity",
    "duality gap",
)
"""The residuals of a :class:`Certificate` as its failure messages name them, in order."""


def judge(
    *,
    tol: float,
    primal_infeasibility: float = 0.0,
    dual_infeasibility: float = 0.0,
    stationarity: float = 0.0,
    complementarity: float = 0.0,
    duality_gap: float = 0.0,
) -> Certificate:
    """Build a :class:`Certificate`, listing every residual above ``tol`` (NaN always fails)."""
    failures: tuple[str, ...] = ()
    if not (  # `not <=` catches NaN; every residual within tol: no list of failures built
        primal_infeasibility <= tol
        and dual_infeasibility <= tol
        and stationarity <= tol
        and complementarity <= tol
        and duality_gap <= tol
    ):
        values = (
            primal_infeasibility,
            dual_infeasibility,
            stationarity,
            complementarity,
            duality_gap,
        )
        failures = tuple(
            f"{name} {value:.3g} > tol {tol:.1e}"
            for name, value in zip(_RESIDUAL_NAMES, values, strict=True)
            if not (value <= tol)
        )
    return Certificate(
        primal_infeasibility=float(primal_infeasibility),
        dual_infeasibility=float(dual_infeasibility),
        stationarity=float(stationarity),
        complementarity=float(complementarity),
        duality_gap=float(duality_gap),
        tol=float(tol),
        failures=failures,
    )


def primal_certificate(
    cs: ConstraintSet, W: np.ndarray, margins: np.ndarray, tol: float, why: str
) -> Certificate:
    r"""The certificate of a W without multipliers: its primal infeasibility
    (:func:`primal_infeasibility`, judged by :func:`judge`), every residual that needs
    :math:`\lambda` NaN (not computed) and a failure saying so and ``why``: it never passes.
    Before session 52 those residuals read 0 and such a certificate passed on W's rows alone
    (rows of 1e-160, whose Frobenius multipliers are beyond float64)."""
    primal = judge(tol=tol, primal_infeasibility=primal_infeasibility(cs, margins, W))
    unknown = _RESIDUAL_NAMES[1:]
    return dataclasses.replace(
        primal,
        dual_infeasibility=math.nan,
        stationarity=math.nan,
        complementarity=math.nan,
        duality_gap=math.nan,
        failures=(
            *primal.failures,
            f"{', '.join(unknown[:-1])} and {unknown[-1]} not computed: {why}",
        ),
    )


_SQUARE_SAFE_EXPONENT = 256
r""":func:`frobenius_certificate` rescales W (by a power of two) only when
:math:`\|W\|_F` is beyond :math:`2^{\pm 256}`: within, its square and :math:`c^\top\lambda`
stay far inside float64's range."""


def frobenius_certificate(
    cs: ConstraintSet,
    W: np.ndarray,
    lam: np.ndarray,
    tol: float,
    *,
    margins: np.ndarray | None = None,
) -> Certificate:
    r"""KKT residuals of :math:`\min \tfrac12\|W\|_F^2` over ``cs`` at ``(W, lam)``.

    .. math::

        \text{stationarity} = \frac{\|W - \Lambda\|_F}{\max(\|W\|_F, \|\Lambda\|_F)},
        \quad
        \text{complementarity} = \frac{\max_{j \in \mathcal M} |\lambda_j (m_j - c_j)|}
        {\max_j |\lambda_j|\,\max_j |c_j|},
        \quad
        \text{gap} = \frac{|\tfrac12\|W\|_F^2 - (c^\top\lambda - \tfrac12\|W\|_F^2)|}
        {\tfrac12\|W\|_F^2},

    with :math:`\Lambda = \sum_j \lambda_j a_j b_j^\top`, :math:`m_j = a_j^\top W b_j`, primal
    infeasibility from :func:`primal_infeasibility` and dual infeasibility
    :func:`negative_part`; :math:`\max_j|c_j|` read as 1 when every bound is 0. Every
    residual is scale-invariant (:func:`relative`): scaling the tokens :math:`a_j` by
    :math:`s` scales :math:`W^\star` by :math:`1/s` and :math:`\lambda^\star` by
    :math:`1/s^2`, and scaling the bounds by :math:`t` scales both by :math:`t`, and leaves
    each ratio unchanged, so that a wrong answer fails at every scale (an absolute floor such
    as :math:`\max(1, \|W\|_F)` would certify any W of norm below tol). Before session 46
    complementarity was not divided by :math:`\max_j|c_j|`: bounds times :math:`2^{30}` failed
    it at the optimum (the margins' rounding, ~1e-7). The residuals other than the primal one
    are computed on :math:`(tW, t\lambda, tc)`, :math:`t = 2^e` making :math:`\|tW\|_F` about
    1, when :math:`\|W\|_F` is beyond :math:`2^{\pm 256}` (the same residuals wherever nothing
    overflows or underflows; :math:`t = 1` within): before
    session 51 :math:`\tfrac12\|W\|_F^2` and :math:`c^\top\lambda` overflowed at a W of 1e200
    (NaN residuals: rhs=1e200 left the optimum ``OPTIMAL_INACCURATE``) and underflowed to 0 at
    a W of 1e-200 (every residual 0: a W 1 % too large passed).

    Parameters
    ----------
    cs : ConstraintSet
    W : ndarray of shape (d, d)
    lam : ndarray of shape (N,)
    tol : float
    margins : ndarray of shape (N,), optional
        ``cs.apply(W)`` when already computed.

    Returns
    -------
    Certificate
    """
    W = np.asarray(W, dtype=float)
    lam = np.asarray(lam, dtype=float)
    m = cs.apply(W) if margins is None else np.asarray(margins, dtype=float)
    primal = primal_infeasibility(cs, m, W)
    # (t W, t lam, t c) has the same residuals: with t = 2^e making ||W||_F about 1, neither
    # ||W||^2 nor c^T lam (of W's size squared) overflows, at W of 1e200 say, nor underflows.
    # Taken only where ||W||_F is beyond 2^±256 (its square then nears float64's limits), so
    # that ordinary certificates are the same numbers, bit for bit, and cost nothing more
    norm_w = frobenius_norm(W)  # numpy's ||W||_F wherever |e| <= 256 below
    e = -math.frexp(norm_w)[1]
    rhs, unit = cs.rhs, float(cs._bound_unit)
    if abs(e) > _SQUARE_SAFE_EXPONENT:
        with np.errstate(over="ignore", under="ignore"):
            W, lam, m, rhs = (np.ldexp(x, e) for x in (W, lam, m, rhs))
            unit = float(np.ldexp(unit, e))  # math.ldexp would raise on overflow
        norm_w = float(np.linalg.norm(W))
    is_m = cs._margin_rows
    Lam = cs.adjoint(lam) if cs.N else np.zeros_like(W)
    half = 0.5 * norm_w**2
    stat = relative(float(np.linalg.norm(W - Lam)), max(norm_w, float(np.linalg.norm(Lam))))
    lam_max = float(np.abs(lam).max(initial=0.0))  # |λ| >= 0: the max without initial too
    dual_inf = negative_part(cs, lam, lam_max)
    slack = np.abs(lam[is_m] * (m[is_m] - rhs[is_m]))
    comp = relative(float(slack.max(initial=0.0)), lam_max * unit)
    gap = relative(abs(half - (float(rhs @ lam) - half)), half)
    return judge(
        tol=tol,
        primal_infeasibility=primal,
        dual_infeasibility=dual_inf,
        stationarity=stat,
        complementarity=comp,
        duality_gap=gap,
    )


FARKAS_TOL = 1e-9
"""Largest relative Farkas residual (:func:`farkas_residual`) of a certified INFEASIBLE."""


def zero_row_farkas(cs: ConstraintSet) -> np.ndarray | None:
    r"""The Farkas vector :math:`e_j / c_j` of a row with :math:`a_j b_j^\top = 0` whose
    right-hand side cannot be met (:math:`c_j > 0` on a margin row, :math:`c_j \ne 0` on an
    equality row), or None when there is none. It verifies exactly:
    :math:`\sum_k \lambda_k a_k b_k^\top = 0`, :math:`c^\top\lambda = 1`.

    Of several such rows, the one with the largest :math:`|c_j|` (the first on ties), whose
    :math:`1/c_j` is the likeliest to be a float: :math:`1/c_j` overflows to inf for
    :math:`|c_j| < 2^{-1024}` (subnormal bounds), and then so does every row's when this
    one's does."""
    unmet = cs._zero_rows & np.where(cs._margin_rows, cs.rhs > 0.0, cs.rhs != 0.0)
    if not np.any(unmet):
        return None
    candidates = np.flatnonzero(unmet)
    return unit_farkas(cs, int(candidates[np.argmax(np.abs(cs.rhs[candidates]))]))


def unit_farkas(cs: ConstraintSet, j: int) -> np.ndarray:
    r""":math:`e_j / c_j`: the Farkas vector that blames row ``j`` alone."""
    lam = np.zeros(cs.N)
    lam[j] = 1.0 / cs.rhs[j]
    return lam


def farkas_residual(cs: ConstraintSet, lam: np.ndarray) -> float:
    r"""Relative size of :math:`\sum_j \lambda_j a_j b_j^\top` for a Farkas vector ``lam``.

    .. math::

        \frac{\|\sum_j \lambda_j a_j b_j^\top\|_F}{\sum_j |\lambda_j|\,\|a_j\|\,\|b_j\|}

    (0 when the numerator is exactly 0). Together with :math:`\lambda_j \ge 0` on margin
    rows and :math:`c^\top\lambda = 1` it certifies that no :math:`W` satisfies the rows.
    """
    lam = np.asarray(lam, dtype=float)
    num = frobenius_norm(cs.adjoint(lam))
    if num == 0.0:
        return 0.0
    den = float(np.abs(lam) @ (cs._row_norms[0] * cs._row_norms[1]))
    return num / den if den > 0 else float("inf")


def adjoint_singular_values(cs: ConstraintSet, lam: np.ndarray) -> np.ndarray:
    r"""Singular values of :math:`\sum_j \lambda_j a_j b_j^\top = A^\top \mathrm{diag}(\lambda) B`,
    descending, through thin QR factors :math:`A^\top = Q_a R_a`, :math:`B^\top = Q_b R_b` when
    :math:`d > N` (those of :math:`R_a \mathrm{diag}(\lambda) R_b^\top`: :math:`Q_a, Q_b` have
    orthonormal columns)."""
    if cs.N == 0:
        return np.zeros(0)
    if cs.d <= cs.N:
        return np.linalg.svd(cs.adjoint(lam), compute_uv=False)
    Ra = np.linalg.qr(cs.A.T).R
    Rb = np.linalg.qr(cs.B.T).R
    return np.linalg.svd((Ra * np.asarray(lam)[None, :]) @ Rb.T, compute_uv=False)


def adjoint_spectral_norm(cs: ConstraintSet, lam: np.ndarray) -> float:
    r""":math:`\|\sum_j \lambda_j a_j b_j^\top\|_2` (:func:`adjoint_singular_values`)."""
    s = adjoint_singular_values(cs, lam)
    return float(s[0]) if s.size else 0.0


def adjoint_nuclear_norm(cs: ConstraintSet, lam: np.ndarray) -> float:
    r""":math:`\|\sum_j \lambda_j a_j b_j^\top\|_*` (:func:`adjoint_singular_values`): the dual
    norm of the spectral Att-SVM's multipliers."""
    return float(adjoint_singular_values(cs, lam).sum())


def nuclear_certificate(
    cs: ConstraintSet,
    W: np.ndarray,
    lam: np.ndarray,
    tol: float = 1e-8,
    *,
    nuc: float | None = None,
    margins: np.ndarray | None = None,
) -> Certificate:
    r"""KKT certificate of Att-SVM⋆ (:math:`\min \|W\|_*` over the rows), recomputed from the data.

    With margins :math:`m_j = a_j^\top W b_j` and :math:`\Lambda = \sum_j \lambda_j a_j b_j^\top`:

    .. math::

        \text{primal: } \max_j (c_j - m_j)_+ \ (\text{margin}),\ |m_j - c_j|\ (\text{equality});\quad
        \text{dual: } (\|\Lambda\|_2 - 1)_+ + \frac{\max_{j\,\text{margin}} (-\lambda_j)_+}
        {\max_j |\lambda_j|};

        \text{stationarity: } \frac{|\langle\Lambda, W\rangle - \|W\|_*|}{\|W\|_*};\quad
        \text{complementarity: } \frac{\max_{j\,\text{margin}} |\lambda_j (m_j - c_j)|}
        {\|W\|_*};\quad
        \text{gap: } \frac{|c^\top\lambda - \|W\|_*|}{\|W\|_*}

    (:func:`relative`: scale-invariant, as scaling the tokens by :math:`s` scales both
    :math:`W^\star` and :math:`\lambda^\star` by :math:`1/s`).

    Complementarity is relative like the gap: :math:`\sum_j \lambda_j (m_j - c_j) =
    \langle\Lambda, W\rangle - c^\top\lambda` is a difference of two quantities of size
    :math:`\|W\|_*`, so a row rounded at one ulp of its margin costs :math:`\lambda_j\,
    \epsilon`, which can be large in absolute terms when :math:`\|W\|_*` is.

    Dual feasibility and a zero gap make :math:`\lambda` a proof that no feasible :math:`W`
    has a smaller nuclear norm (weak duality: :math:`c^\top\lambda \le \langle\Lambda, W'\rangle
    \le \|\Lambda\|_2 \|W'\|_*`); stationarity says :math:`\Lambda` is a subgradient of the
    nuclear norm at :math:`W`.

    Parameters
    ----------
    cs : ConstraintSet
    W : array of shape (d, d)
    lam : array of shape (N,)
        Row multipliers.
    tol : float, default 1e-8
    nuc : float, optional
        :math:`\|W\|_*` when the caller has it already (from :func:`nuclear_norm_on_rows`, as
        its objective); else computed here.
    margins : ndarray of shape (N,), optional
        ``cs.apply(W)`` when already computed.

    Returns
    -------
    Certificate
    """
    W = np.asarray(W, dtype=float)
    if nuc is None:
        nuc = nuclear_norm_on_rows(cs, W)
    lam = np.asarray(lam, dtype=float)
    return norm_certificate(cs, W, lam, nuc, adjoint_spectral_norm(cs, lam), tol, margins)


SPAN_RESIDUAL_TOL = 1e-11
r"""Largest :math:`\sqrt{k}\,\|W - U U^\top W V V^\top\|_F / \|W\|_F` at which
:func:`nuclear_norm_on_rows` takes :math:`\|U^\top W V\|_*` for :math:`\|W\|_*`."""


def nuclear_norm_on_rows(cs: ConstraintSet, W: np.ndarray) -> float:
    r""":math:`\|W\|_*`, from the small :math:`U^\top W V` when :math:`W` lies in the rows' spans.

    With orthonormal bases :math:`U, V` of :math:`\mathrm{span}\{a_j\}, \mathrm{span}\{b_j\}`
    (:func:`~._factored.compress`, used only when already cached on ``cs``) and
    :math:`R = W - U U^\top W V V^\top`,

    .. math::

        \|U^\top W V\|_* \le \|W\|_* \le \|U^\top W V\|_* + \sqrt{k}\,\|R\|_F,
        \qquad k = \min(d_1, d_2),

    so when :math:`\sqrt{k}\,\|R\|_F \le` :data:`SPAN_RESIDUAL_TOL` :math:`\|W\|_F` (a
    :math:`W = U M V^\top` of a solver, up to rounding) the singular values of the
    :math:`r_1 \times r_2` matrix stand for those of :math:`W` (equal in exact arithmetic);
    otherwise, or when the bases would not be smaller than :math:`W`, the full SVD of
    :math:`W`. :math:`\|R\|_F^2 = \|W - U G\|_F^2 + \|G - U^\top W V V^\top\|_F^2`
    with :math:`G = U^\top W` is computed explicitly, not as a difference of squares.
    """
    if W.size == 0:
        return 0.0
    comp = cached_compress(cs)
    if comp is not None and W.shape == (comp.U.shape[0], comp.V.shape[0]):
        U, V = comp.U, comp.V
        if 2 * max(U.shape[1], V.shape[1]) <= min(W.shape):
            G = U.T @ W
            M = G @ V
            residual = math.hypot(frobenius_norm(W - U @ G), frobenius_norm(G - M @ V.T))
            if math.sqrt(min(W.shape)) * residual <= SPAN_RESIDUAL_TOL * frobenius_norm(W):
                return float(np.linalg.svd(M, compute_uv=False).sum()) if M.size else 0.0
    return float(np.linalg.svd(W, compute_uv=False).sum())


def norm_certificate(
    cs: ConstraintSet,
    W: np.ndarray,
    lam: np.ndarray,
    value: float,
    dual_value: float,
    tol: float,
    margins: np.ndarray | None = None,
) -> Certificate:
    r"""KKT certificate of :math:`\min \|W\|` over the rows for a norm whose value at W is
    ``value`` and whose dual norm of :math:`\Lambda = \sum_j \lambda_j a_j b_j^\top` is
    ``dual_value`` (the nuclear and :math:`\ell_p` certificates; formulas in
    :func:`nuclear_certificate`, with :math:`\langle\Lambda, W\rangle = \lambda^\top m`);
    ``margins`` is ``cs.apply(W)`` when the caller has it."""
    margins = cs.apply(W) if margins is None else np.asarray(margins, dtype=float)
    margin = cs.kind == MARGIN
    slack = np.abs(lam[margin] * (margins[margin] - cs.rhs[margin]))
    return judge(
        tol=tol,
        primal_infeasibility=primal_infeasibility(cs, margins, W),
        dual_infeasibility=max(dual_value - 1.0, 0.0) + negative_part(cs, lam),
        stationarity=relative(abs(float(lam @ margins) - value), value),
        complementarity=relative(float(np.max(slack, initial=0.0)), value),
        duality_gap=relative(abs(float(cs.rhs @ lam) - value), value),
    )


def dual_exponent(p: float) -> float:
    r"""The Hölder conjugate :math:`q = p/(p-1)` (1 ↔ ∞)."""
    if p == 1.0:
        return math.inf
    if math.isinf(p):
        return 1.0
    return p / (p - 1.0)


def lp_certificate(
    cs: ConstraintSet,
    W: np.ndarray,
    lam: np.ndarray,
    p: float,
    tol: float = 1e-8,
    margins: np.ndarray | None = None,
) -> Certificate:
    r"""KKT certificate of the :math:`\ell_p` Att-SVM at ``(W, lam)``, recomputed from the data.

    With :math:`m_j = a_j^\top W b_j`, :math:`\Lambda = \sum_j \lambda_j a_j b_j^\top` and
    :math:`q` the dual exponent:

    .. math::

        \text{dual: } (\|\Lambda\|_q - 1)_+ + \frac{\max_{j\,\text{margin}} (-\lambda_j)_+}
        {\max_j |\lambda_j|},\quad
        \text{stationarity: } \frac{|\langle\Lambda, W\rangle - \|W\|_p|}{\|W\|_p},

        \text{complementarity: } \frac{\max_{j\,\text{margin}} |\lambda_j (m_j - c_j)|}
        {\|W\|_p},\quad
        \text{gap: } \frac{|\|W\|_p - c^\top\lambda|}{\|W\|_p}

    (scale-invariant, :func:`relative`).

    Dual feasibility and a zero gap prove that no feasible W has a smaller
    :math:`\ell_p` norm (weak duality: :math:`c^\top\lambda \le \langle\Lambda, W'\rangle \le
    \|\Lambda\|_q\|W'\|_p`).

    Parameters
    ----------
    cs : ConstraintSet
    W : array of shape (d, d)
    lam : array of shape (N,)
    p : float
        In [1, ∞].
    tol : float, default 1e-8
    margins : ndarray of shape (N,), optional
        ``cs.apply(W)`` when already computed.

    Returns
    -------
    Certificate
    """
    W = np.asarray(W, dtype=float)
    lam = np.asarray(lam, dtype=float)
    Lam = cs.adjoint(lam) if cs.N else np.zeros_like(W)
    dual = entrywise_norm(Lam, dual_exponent(p))
    return norm_certificate(cs, W, lam, entrywise_norm(W, p), dual, tol, margins)


@dataclass(frozen=True)
class NormGeometry:
    r"""A norm :math:`\|W\|` with its dual :math:`\|\Lambda\|_\star` and its KKT check.

    .. math::

        \min_W \|W\| \ \text{s.t. rows} \quad\text{has the dual}\quad
        \max_\lambda c^\top\lambda\ \text{s.t.}\ \Big\|\sum_j \lambda_j a_j b_j^\top\Big\|_\star \le 1 .

    What :func:`~svmgeo.solvers._result.finish` and the reference model need of a norm; one
    per entry of the table of norms (``_norms.py``).

    Attributes
    ----------
    name : str
        The result's ``norm`` (``"fro"``, ``"nuc"``, ``"lp"``).
    value : callable ``W -> float``
        The norm (a result's ``objective``).
    dual : callable ``Lambda -> float``
        The dual norm.
    kkt : callable ``(cs, W, lam, tol, margins) -> Certificate``
        svmgeo's certificate at ``(W, lam)``.
    cvxpy_objective : callable ``(cvxpy, W) -> expression``
        The objective of the cvxpy reference model (minimised by the same W).
    from_cvxpy_value : callable ``float -> float``
        The norm from the reference model's optimal value.
    p : float or None
        The exponent of an :math:`\ell_p` norm.
    dual_degree : int
        How the multipliers scale with the rows: scaling every :math:`a_j b_j^\top` by
        :math:`s` maps the solution :math:`(W, \lambda)` to :math:`(W/s, \lambda/s^k)`, with
        :math:`k = 2` for the Frobenius dual (:math:`W = \sum_j \lambda_j a_j b_j^\top`) and
        :math:`k = 1` for a norm's dual (:math:`\|\sum_j \lambda_j a_j b_j^\top\|_\star \le 1`).
    """

    name: str
    value: Callable[[np.ndarray], float]
    dual: Callable[[np.ndarray], float]
    kkt: Callable[[ConstraintSet, np.ndarray, np.ndarray, float, np.ndarray | None], Certificate]
    cvxpy_objective: Callable[[Any, Any], Any]
    from_cvxpy_value: Callable[[float], float] = float
    p: float | None = None
    dual_degree: int = 1

    def certificate(
        self,
        cs: ConstraintSet,
        W: np.ndarray,
        lam: np.ndarray,
        tol: float,
        margins: np.ndarray | None = None,
    ) -> Certificate:
        """svmgeo's KKT certificate of this norm's SVM at ``(W, lam)``."""
        return self.kkt(cs, W, lam, tol, margins)


def _nuclear_value(W: np.ndarray) -> float:
    return float(np.linalg.norm(W, "nuc"))


FRO = NormGeometry(
    name="fro",
    value=frobenius_norm,
    dual=frobenius_norm,
    kkt=lambda cs, W, lam, tol, margins: frobenius_certificate(cs, W, lam, tol, margins=margins),
    # ½‖W‖_F² (a QP: Clarabel solves it to ~1e-11 in W, the cone form only to ~1e-6)
    cvxpy_objective=lambda cp, W: 0.5 * cp.sum_squares(W),
    from_cvxpy_value=lambda v: float(np.sqrt(2.0 * max(v, 0.0))) if np.isfinite(v) else v,
    dual_degree=2,
)
"""The Frobenius norm (self-dual): Att-SVM."""

NUC = NormGeometry(
    name="nuc",
    value=_nuclear_value,
    dual=lambda Lam: float(np.linalg.norm(Lam, 2)),
    kkt=lambda cs, W, lam, tol, margins: nuclear_certificate(cs, W, lam, tol, margins=margins),
    cvxpy_objective=lambda cp, W: cp.normNuc(W),
)
"""The nuclear norm (dual: spectral): Att-SVM⋆."""


def _lp_objective(p: float) -> Callable[[Any, Any], Any]:
    def objective(cp: Any, W: Any) -> Any:
        w = cp.vec(W, order="C")
        if p == 1.0:
            return cp.norm1(w)
        if math.isinf(p):
            return cp.norm_inf(w)
        # exact power cones (cvxpy's default approximates rational p by SOCs)
        return cp.pnorm(w, p, approx=False)

    return objective


def lp_geometry(p: float) -> NormGeometry:
    r"""The entrywise :math:`\ell_p` norm (dual: :math:`\ell_q`, :math:`1/p + 1/q = 1`)."""
    q = dual_exponent(p)
    return NormGeometry(
        name="lp",
        value=lambda W: entrywise_norm(W, p),
        dual=lambda Lam: entrywise_norm(Lam, q),
        kkt=lambda cs, W, lam, tol, margins: lp_certificate(cs, W, lam, p, tol, margins),
        cvxpy_objective=_lp_objective(p),
        p=p,
    )


def spectral_certificate(
    cs: ConstraintSet,
    W: np.ndarray,
    lam: np.ndarray,
    tol: float = 1e-8,
    margins: np.ndarray | None = None,
) -> Certificate:
    r"""KKT certificate of the spectral Att-SVM (:math:`\min \|W\|_2` over the rows).

    The residuals of :func:`nuclear_certificate` with the roles of the norms exchanged:
    value :math:`\|W\|_2 = \sigma_1(W)` and dual norm :math:`\|\Lambda\|_*` of
    :math:`\Lambda = \sum_j \lambda_j a_j b_j^\top`, both by SVD
    (:func:`adjoint_nuclear_norm`). Dual feasibility and a zero gap prove that no feasible
    :math:`W'` has a smaller spectral norm: :math:`c^\top\lambda \le \langle\Lambda, W'\rangle
    \le \|\Lambda\|_*\|W'\|_2`.
    """
    W = np.asarray(W, dtype=float)
    value = float(np.linalg.norm(W, 2)) if W.size else 0.0
    lam = np.asarray(lam, dtype=float)
    return norm_certificate(cs, W, lam, value, adjoint_nuclear_norm(cs, lam), tol, margins)


SPECTRAL = NormGeometry(
    name="spectral",
    value=lambda W: float(np.linalg.norm(W, 2)) if W.size else 0.0,
    dual=_nuclear_value,
    kkt=lambda cs, W, lam, tol, margins: spectral_certificate(cs, W, lam, tol, margins),
    cvxpy_objective=lambda cp, W: cp.sigma_max(W),
)
"""The spectral norm (dual: nuclear): the spectral Att-SVM (steepest descent's, issue #23)."""
