# SPDX-License-Identifier: BSD-3-Clause
r"""The :math:`\ell_p` Att-SVM: :math:`\min \|W\|_p` (entrywise) over token-pair rows.

.. math::

    \min_W \|W\|_p = \Big(\sum_{kl} |W_{kl}|^p\Big)^{1/p} \quad\text{s.t.}\quad
    a_j^\top W b_j \ge c_j\ (\text{margin}),\quad a_j^\top W b_j = c_j\ (\text{equality}),

the implicit bias of mirror descent with potential :math:`\psi(W) = \|W\|_p^p/p`
(Julistiono, Tarzanagh, Azizan, arXiv:2410.14581, the :math:`\ell_p`-AttSVM). Its dual is

.. math::

    \max_\lambda\ c^\top\lambda \quad\text{s.t.}\quad
    \Big\|\sum_j \lambda_j a_j b_j^\top\Big\|_q \le 1,\ \lambda_j \ge 0\ (\text{margin rows}),
    \qquad \tfrac1p + \tfrac1q = 1 .

Methods (``p`` in (1, ∞)):

* ``"fast"`` — the smooth dual of :math:`\min \tfrac1p\|W\|_p^p`,
  :math:`\min_\mu \tfrac1q\|\Lambda(\mu)\|_q^q - c^\top\mu` (:math:`\Lambda(\mu) = \sum_j \mu_j
  a_j b_j^\top`, :math:`W(\mu) = \mathrm{sign}(\Lambda)|\Lambda|^{q-1}`) by L-BFGS-B, then an
  active-set Newton polish of :math:`a_j^\top W(\mu) b_j = c_j` on the support rows; when
  that answer fails its certificate, the nearer linear program's (p = 1 or ∞) certified at
  p, if it does better (:func:`_nearer_linear_program`: the answer for p near 1 or very
  large, where the smooth dual cannot go in float64);
* ``"cvxpy"`` — the naive model with Clarabel's power cones, polished the same way;
* ``"auto"`` — ``"fast"``, and ``"cvxpy"`` when its certificate fails (the fallback of the
  table of norms, ``_norms.py``).

``p = 1`` and ``p = ∞`` are linear programs (HiGHS through :func:`scipy.optimize.linprog`);
``"cvxpy"`` solves them with the reference model, unpolished.

Scale: :func:`~svmgeo.solve_svm` hands these solvers rows of unit size (powers of two,
exactly; :func:`~._norms.on_unit_rows`, for every norm), so that the L-BFGS-B, Newton and
HiGHS tolerances see O(1) data; the answer is mapped back and certified on the caller's rows
(data from 1e-150 to 1e150).
Whatever the method, the certificate is recomputed by svmgeo: the normalized dual
:math:`\lambda = \mu / \|\Lambda(\mu)\|_q` (so :math:`\|\Lambda(\lambda)\|_q = 1`), primal
margins, complementarity and the gap :math:`\|W\|_p - c^\top\lambda`. That certificate is of
the optimal *value*; for 1 < p < ∞ every answer also carries ``extras["argmin"]``, an
:class:`ArgminCheck` of W itself against the mirror image of its multipliers
(:func:`argmin_check`): near p = 1 and at large p the norm is so flat that a W certified to
tol in value can be O(1) away from the unique minimizer.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from .._linalg import entrywise_norm
from .._summary import summarized
from ..attention_maps import gamma
from ..constraints import MARGIN, ConstraintSet
from ._backends import HiGHSBackend
from ._certificates import (
    SMALLEST_SUBNORMAL,
    UNIT_ROUNDOFF,
    dual_exponent,
    lift_onto_rows,
    lp_certificate,
    lp_geometry,
    margin_rounding,
    zero_is_feasible,
)
from ._reference import solve_reference
from ._result import SVMResult, better_answer, finish, no_solution, replaced
from ._status import Status

__all__ = [
    "ARGMIN",
    "ArgminCheck",
    "argmin_check",
    "dual_exponent",
    "forward_radius",
    "lp_certificate",
    "lp_fast",
    "lp_reference",
    "minimizer_margin_reach",
]

LP_MAX_ITER = 20000
"""L-BFGS-B iteration limit of the fast method."""


def _row_matrix(cs: ConstraintSet) -> np.ndarray:
    """Rows :math:`\\mathrm{vec}(a_j b_j^\\top)`, shape (N, d²)."""
    return np.einsum("ja,jb->jab", cs.A, cs.B).reshape(cs.N, -1)


def _mirror_inverse(Lam: np.ndarray, q: float) -> np.ndarray:
    r""":math:`\nabla\psi^*(\Lambda) = \mathrm{sign}(\Lambda)|\Lambda|^{q-1}`."""
    return np.sign(Lam) * np.abs(Lam) ** (q - 1.0)


ARGMIN = "argmin"
r"""The key of an :math:`\ell_p` answer's :class:`ArgminCheck` in ``SVMResult.extras``."""


@summarized
@dataclass(frozen=True)
class ArgminCheck:
    r"""Whether an :math:`\ell_p` answer's W is shown to be the unique minimizer (1 < p < ∞).

    .. math::

        \rho = \Big\|\frac{W}{\|W\|_p} - \frac{g(\Lambda_T)}{\|g(\Lambda_T)\|_p}\Big\|_p
        + \text{rounding} \;\le\; \mathrm{tol},\qquad g(t) = \mathrm{sign}(t)\,|t|^{q-1},
        \quad \Lambda_T = \sum_{j \in T} \lambda_j a_j b_j^\top,

    with T the rows tight at W, within tol of the bounds (svmgeo's derivation, in
    docs/analysis.md, proves what it means). An
    :math:`\ell_p` result's status certifies the optimal *value* :math:`\|W^\star\|_p`; this
    record says whether W itself is shown to be :math:`W^\star` (a backward error:
    ``shown``) and how far from it W can be (a forward error: ``radius``). Where W is not
    shown, support tokens and LOT verdicts read off W are not those of :math:`W^\star`
    (:func:`~svmgeo.support_tokens`, :func:`~svmgeo.is_locally_optimal`: undecided); where
    it is, a token slack at W by less than ``radius`` allows is not proved slack at
    :math:`W^\star` (:attr:`~svmgeo.SupportTokens.slack_unproved`: undecided too).

    Attributes
    ----------
    shown : bool
        ``residual <= tol``.
    residual : float
        :math:`\rho` above: an upper bound, float64's rounding included, on the
        :math:`\ell_p` distance of W's direction from the exact mirror image of its
        multipliers on T (inf where it cannot be computed).
    rounding : float
        The part of ``residual`` that bounds the rounding of that mirror image (about
        :math:`4(q-1)u` near p = 1: above tol = 1e-8 for :math:`p - 1 \lesssim 4 \cdot
        10^{-8}`).
    tol : float
        The tolerance (the certificate's).
    tight : int
        :math:`|T|`: the rows tight at W whose multipliers are kept (the others are set to 0).
    reason : str
        Why, in words.
    radius : float
        The *forward* error, relative: r with :math:`\|W - W^\star\|_p \le r\,N_p(W)`
        exactly, rounding included, :math:`N_p(W)` the float norm
        :func:`~svmgeo._linalg.entrywise_norm` (within :math:`\gamma_{d^2+16}` relative of
        the exact :math:`\|W\|_p`), for the exact minimizer :math:`W^\star` of the result's
        float rows ``res.constraints`` (Att-SVM's :math:`a_j = x_\alpha - x_t` is rounded
        when the :class:`~svmgeo.ConstraintSet` is built: :math:`W^\star` is that
        ConstraintSet's minimizer, not the exact-token one); by Clarkson's inequalities
        (:func:`forward_radius`); inf where there is none (no multipliers, no exactly
        feasible point known). Unlike ``shown`` it bounds the distance to :math:`W^\star`
        itself: a row whose slack at W exceeds what that distance can change it by
        (:func:`minimizer_margin_reach`) is slack at :math:`W^\star` too. Near p = 1 and at
        large p it is of the order of 1, little or no information (measured medians in
        :func:`forward_radius`).
    """

    shown: bool
    residual: float
    rounding: float
    tol: float
    tight: int
    reason: str
    radius: float = math.inf


_SPLITTER = 2.0**27 + 1.0
"""Veltkamp's splitter: ``x = hi + lo``, each with at most 26 significant bits (Dekker)."""


def _split(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Veltkamp's split of every entry: ``hi + lo == x`` exactly while ``2**27 * x`` does not
    overflow (|x| < 2^996): true of svmgeo's rows and multipliers, whose sizes
    :func:`~svmgeo._validation.check_scale` keeps within 1e±151, not of any float."""
    c = _SPLITTER * x
    hi = c - (c - x)
    return hi, x - hi


def _two_product(
    a: np.ndarray, b: np.ndarray, a_parts: tuple[np.ndarray, np.ndarray],
    b_parts: tuple[np.ndarray, np.ndarray],
) -> tuple[np.ndarray, np.ndarray]:  # fmt: skip
    """Dekker's product: ``h + l == a * b`` exactly, given the splits of ``a`` and ``b``,
    while neither the split nor ``a * b`` overflows (as in :func:`_split`: true under
    :func:`~svmgeo._validation.check_scale`); an underflowing ``l`` is off by at most a few
    subnormal spacings."""
    h = a * b
    (ah, al), (bh, bl) = a_parts, b_parts
    return h, ((ah * bh - h) + ah * bl + al * bh) + al * bl


def _accurate_sum(terms: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    r""":math:`s = \sum_i t_i` along axis 0 and a bound on the float sum's error.

    The extraction of Rump, Ogita and Oishi (*Accurate floating-point summation part I*,
    SIAM J. Sci. Comput. 31, 2008, §3): with :math:`\sigma = 2^{M+e} > 2^M\max_i|t_i|`,
    :math:`2^M \ge m + 2`, the parts :math:`q_i = \mathrm{fl}((\sigma + t_i) - \sigma)` are
    multiples of :math:`u\sigma` whose partial sums stay below :math:`\sigma` (summed
    exactly, in any order), and :math:`t_i - q_i`, the rounding error of
    :math:`\sigma + t_i`, is a float of size at most :math:`u\sigma` (computed exactly);
    their float sum is within :math:`\gamma_m \cdot 2mu\sigma`, and the last addition within
    :math:`2u|s|`: about :math:`2u|s| + 8m^3u^2\max|t|` in all (:math:`\sigma \le
    4(m+2)\max|t|`), where the plain sum's bound is :math:`\gamma_m\sum|t_i|`. Columns of zeros are exact (bound 0).
    """
    m = terms.shape[0]
    M = max(1, math.ceil(math.log2(m + 2)))
    top = np.max(np.abs(terms), axis=0)
    sigma = np.where(top > 0.0, np.ldexp(1.0, np.frexp(top)[1] + M), 0.0)  # 0: all terms 0
    high = (sigma + terms) - sigma
    total = np.sum(high, axis=0) + np.sum(terms - high, axis=0)
    return total, 2.0 * UNIT_ROUNDOFF * np.abs(total) + gamma(m) * 2.0 * m * UNIT_ROUNDOFF * sigma


def _row_q_norms(M: np.ndarray, q: float) -> np.ndarray:
    r""":math:`\|m_j\|_q` of every row, each scaled by its largest entry first (no overflow or
    underflow of :math:`|m|^q` at q up to 1e8)."""
    top = np.max(np.abs(M), axis=1)
    safe = np.where(top > 0.0, top, 1.0)
    return top * np.sum((np.abs(M) / safe[:, None]) ** q, axis=1) ** (1.0 / q)


def _plain_adjoint(cs: ConstraintSet, lam: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    r""":math:`\Lambda = \sum_j \lambda_j a_j b_j^\top` by the float sum, with the bound
    :math:`e_{kl} = \gamma_{N+2}\sum_j|\lambda_j a_{jk} b_{jl}|` (two roundings per product,
    N - 1 additions in any order; its own rounding and underflowing products included) on
    each entry's error (Higham, *Accuracy and Stability of Numerical Algorithms*, §3.1)."""
    N = cs.N
    Lam = cs.A.T @ (lam[:, None] * cs.B)
    size = np.abs(cs.A).T @ (np.abs(lam)[:, None] * np.abs(cs.B))
    underflow = N * SMALLEST_SUBNORMAL * (1.0 + float(np.max(np.abs(cs.A), initial=0.0)))
    return Lam, gamma(N + 2) * (1.0 + 2.0 * gamma(N + 3)) * size + underflow


def _accurate_adjoint(
    cs: ConstraintSet, lam: np.ndarray, K: np.ndarray, L: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    r"""The entries :math:`\Lambda_{kl} = \sum_j \lambda_j a_{jk} b_{jl}`, (k, l) = (K[i], L[i]),
    nearly correctly rounded, with a bound on each one's error: every product
    :math:`\lambda_j a_{jk} b_{jl}` is the exact sum of four floats (:func:`_two_product`
    twice) and the :math:`4N` of them are summed by :func:`_accurate_sum`; an entry with a
    nonzero product :math:`\lambda_j a_{jk}` or :math:`\lambda_j a_{jk} b_{jl}` below
    :math:`2^{-900}` (whose low parts may underflow) gets :math:`16N\max(1, \max|B|)`
    subnormal spacings more. An entry of only zero products is exactly 0, with bound 0 (a
    structural zero, e.g. every :math:`b_j = e_1`). An entry that cancels to :math:`10^{-9}`
    of its terms (measured on random data at p = 5 to 20) is known to about :math:`u`, where
    :func:`_plain_adjoint`'s bound left it unknown beyond 1e-7. (Not :mod:`._exact`'s
    integer limbs: they hold sums at one exponent, and products of three floats of any
    exponents would span some 2000 bits each, where two Dekker products and one extraction
    suffice for a bound near :math:`u`.)

    Many entries (more than ``d``) are computed row by row of Λ, on (N, e_k) arrays: one pass
    through gathered (N, E) arrays took 629 ms at d = 64, N = 250, E = d^2 (ad hoc)."""
    if K.size > cs.d:
        values = np.empty(K.size)
        err = np.empty(K.size)
        for k in np.unique(K):
            at = np.flatnonzero(K == k)
            values[at], err[at] = _accurate_adjoint(cs, lam, K[at], L[at])
        return values, err
    a = cs.A[:, K]  # (N, E)
    b = cs.B[:, L]
    lam_c = lam[:, None]
    h1, l1 = _two_product(lam_c, a, _split(lam_c), _split(a))
    b_parts = _split(b)
    h2, l2 = _two_product(h1, b, _split(h1), b_parts)
    h3, l3 = _two_product(l1, b, _split(l1), b_parts)
    values, err = _accurate_sum(np.concatenate([h2, l2, h3, l3]))
    underflow = (
        16.0 * cs.N * SMALLEST_SUBNORMAL * max(1.0, float(np.max(np.abs(cs.B), initial=0.0)))
    )
    nonzero = (lam_c != 0.0) & (a != 0.0) & (b != 0.0)
    small = (np.abs(h1) < 2.0**-900) | (np.abs(h2) < 2.0**-900)
    return values, err + np.where(np.any(nonzero & small, axis=0), underflow, 0.0)


def _mirror_image(
    Lam: np.ndarray, err: np.ndarray, q: float, p: float
) -> tuple[np.ndarray, float, np.ndarray]:
    r"""The direction :math:`g(\Lambda)`, g = :func:`_mirror_inverse`, of Λ scaled to a largest
    entry of 1 (no overflow of :math:`|x|^{q-1}`), its :math:`\ell_p` norm, and each
    entry's half-width: g is monotone, so the exact :math:`g(\Lambda_{kl})` of an entry
    known within ``err`` lies in :math:`[g(\Lambda_{kl} - e), g(\Lambda_{kl} + e)]`
    (widened by u for the power's rounding)."""
    top = float(np.max(np.abs(Lam), initial=0.0))
    x = np.abs(Lam) / top
    e = err / top + UNIT_ROUNDOFF * x
    image = _mirror_inverse(Lam / top, q)
    mid = np.abs(image)
    high = (x + e) ** (q - 1.0)
    low = np.maximum(x - e, 0.0) ** (q - 1.0)
    half = np.where(x > e, np.maximum(high - mid, mid - low), high + mid)
    return image, entrywise_norm(image, p), half


def _up(x: Any, k: float = 8.0) -> Any:
    r""":math:`x + k u |x|`: above the exact value of a quantity computed within :math:`(k -
    1) u` relative of it (a few roundings, each of at most one ulp, :math:`2u`), for either
    sign of x."""
    return x + k * UNIT_ROUNDOFF * np.abs(x)


def _norm_upper(X: np.ndarray, p: float) -> float:
    r"""An upper bound on the exact :math:`\|X\|_p` (entrywise, 1 < p < ∞) of the float
    matrix X: :func:`~svmgeo._linalg.entrywise_norm` times :math:`1 + \gamma_{n+16}`, n
    entries.

    Its scaled sum :math:`t\,(\sum_i (|x_i|/t)^p)^{1/p}`, :math:`t = \max|x_i|`: each term
    within :math:`(1 + u)^p(1 + 2u)` of its exact value (the quotient's u raised to p, the
    power's ulp), their sum (at least 1, the largest term) within :math:`1 + \gamma_{n-1}`,
    and terms that underflow lose at most :math:`n 2^{-1074}` of it; the root takes that to
    :math:`(1 + u)(1 + 2u)(1 + \gamma_n)` whatever p, and the rounded exponent :math:`1/p`
    (sum at most n), the root's ulp and the product with t add :math:`u\ln n + 3u`."""
    return entrywise_norm(X, p) * (1.0 + gamma(X.size + 16))


def _adjoint_upper(cs: ConstraintSet, lam: np.ndarray, q: float) -> float:
    r"""An upper bound on :math:`\|\Lambda\|_q`, :math:`\Lambda = \sum_j \lambda_j a_j
    b_j^\top` exactly: the float sum and its entries' error bounds :math:`e_{kl}`
    (:func:`_plain_adjoint`), :math:`\|\,|\Lambda| + e\,\|_q` (:func:`_norm_upper`); where
    those bounds weigh (more than :math:`2^{-40}` of the norm), the entries whose bound is
    above :math:`16u|\Lambda_{kl}|` are recomputed nearly exactly (:func:`_accurate_adjoint`:
    entries that cancel to :math:`10^{-9}` of their terms are known to about u there)."""
    Lam, err = _plain_adjoint(cs, lam)
    value = _norm_upper(_up(np.abs(Lam) + err, 2.0), q)
    if value > (1.0 + 2.0**-40) * entrywise_norm(Lam, q):
        K, L = np.nonzero(err > 16.0 * UNIT_ROUNDOFF * np.abs(Lam))
        if K.size:
            Lam[K, L], err[K, L] = _accurate_adjoint(cs, lam, K, L)
            value = _norm_upper(_up(np.abs(Lam) + err, 2.0), q)
    return value


def _power_excess(ratio: float, p: float) -> float:
    r"""An upper bound on :math:`x^p - 1` for the exact quotient :math:`x` of which ``ratio``
    is an upper bound (:math:`x \ge 0`): :math:`\mathrm{expm1}(p\,\mathrm{log1p}(x - 1))`,
    without the cancellation of :math:`x^p - 1` near :math:`x = 1`, each step rounded up
    (the functions are increasing; :math:`x - 1` is exact for x in [1/2, 2], Sterbenz)."""
    excess = _up(_up(ratio) - 1.0)
    with np.errstate(divide="ignore", over="ignore"):
        return float(_up(np.expm1(_up(p * _up(np.log1p(excess))))))


def _root_up(t: float, e: float) -> float:
    r"""An upper bound on :math:`t^{1/e}` (t >= 0): :math:`\exp(\log(t)/e)`, each step
    rounded up (increasing functions)."""
    if not t > 0.0:
        return 0.0
    with np.errstate(over="ignore"):
        return float(_up(np.exp(_up(_up(np.log(t)) / e))))


def forward_radius(
    cs: ConstraintSet,
    W: np.ndarray,
    lam: np.ndarray | None,
    p: float,
    margins: np.ndarray | None = None,
    rounding: np.ndarray | None = None,
) -> float:
    r"""An upper bound r on :math:`\|W - W^\star\|_p / N_p(W)`, :math:`W^\star` the exact
    minimizer of :math:`\|X\|_p` over ``cs``'s float rows (1 < p < ∞; for Att-SVM,
    :math:`a_j = x_\alpha - x_t` as rounded when ``cs`` was built, not the exact-token
    difference) and :math:`N_p(W)` the float norm
    :func:`~svmgeo._linalg.entrywise_norm`: :math:`\|W - W^\star\|_p \le r\,N_p(W)`
    exactly. The forward error that :func:`argmin_check`'s backward check does not give.

    .. math::

        r = \begin{cases}
        2\Big(\frac{A^p + U^p}{2} - L^p\Big)_+^{1/p} & p \ge 2,\\[4pt]
        2\Big(\Big(\frac{A^p + U^p}{2}\Big)^{q-1} - L^q\Big)_+^{1/q} & 1 < p < 2,
        \end{cases}
        \qquad A \ge \|W\|_p,\quad U \ge \|W^\star\|_p,\quad L \le \min_{X \in P(\delta)}
        \|X\|_p,

    returned as :math:`\min(r, A + U)/N_p(W)` (the quotient rounded up, so that
    :math:`r\,N_p(W)` bounds the distance; relative to the exact :math:`\|W\|_p` it is a
    bound within a factor :math:`1 + \gamma_{d^2+16}`, :func:`_norm_upper`). svmgeo's derivation, with
    Clarkson's inequalities (J. A. Clarkson, "Uniformly convex spaces", *Trans. AMS* 40,
    1936; the entrywise norm is the :math:`\ell_p` norm of :math:`\mathbb R^{d^2}`): for
    :math:`p \ge 2`, :math:`\|\frac{x+y}2\|_p^p + \|\frac{x-y}2\|_p^p \le \frac12(\|x\|_p^p
    + \|y\|_p^p)`; for :math:`1 < p < 2`, :math:`\|\frac{x+y}2\|_p^q + \|\frac{x-y}2\|_p^q
    \le (\frac12\|x\|_p^p + \frac12\|y\|_p^p)^{q-1}`. Take :math:`x = W`, :math:`y =
    W^\star` and :math:`P(\delta) = \{X : a_j^\top X b_j \ge c_j - \delta_j\}` (equality
    rows :math:`|a_j^\top X b_j - c_j| \le \delta_j`) with :math:`\delta_j` at least W's
    exact violation of row j (:math:`(c_j - m_j + \rho_j)_+`, :math:`\rho_j` the rounding
    of its float margin, :func:`~._certificates.margin_rounding`). W and :math:`W^\star \in
    P(0)` lie in the convex :math:`P(\delta)`, so their midpoint does, and its norm is at
    least

    .. math::

        L = \frac{\sum_j \lambda_j c_j - |\lambda_j|\delta_j}{\|\Lambda\|_q^{\mathrm{up}}},
        \qquad \Lambda = \sum_j \lambda_j a_j b_j^\top,

    for any :math:`\lambda` (:math:`\ge 0` on margin rows: W's multipliers, their negative
    parts set to 0), by :math:`\sum_j\lambda_j a_j^\top X b_j = \langle\Lambda, X\rangle \le
    \|\Lambda\|_q\|X\|_p` (the weak duality of :func:`~._certificates.lp_certificate`).
    :math:`U = A/s` with :math:`s = \min_{c_j > 0} (m_j - \rho_j)/c_j > 0`: :math:`W/s`
    meets every margin row exactly (rows :math:`c_j \le 0` checked: those of a possibly
    negative margin need :math:`s \ge (m_j - \rho_j)/c_j`), so :math:`\|W^\star\|_p \le
    \|W/s\|_p`; with equality rows, or without such an s, there is no U and the radius is
    inf. Every quantity is rounded up (:func:`_norm_upper`, :func:`_adjoint_upper`), and the
    cancelling difference is taken relative to L: :math:`(A^p + U^p)/2 - L^p = L^p\,
    \frac{(A/L)^p - 1 + (U/L)^p - 1}{2}`, each :math:`x^p - 1` by expm1 and log1p
    (:func:`_power_excess`); for p < 2, :math:`((A^p + U^p)/2)^{q-1} - L^q = L^q
    ((1 + t)^{q-1} - 1)` with :math:`t` that fraction, as :math:`p(q-1) = q`.

    What to expect: W's relative gap :math:`g` (about :math:`\rho_j`, 8du, after the
    polish, and the certificate's gap otherwise) gives :math:`r \approx 2(pg/2)^{1/p}` for
    p >= 2: 2e-5 at p = 3 and g = 1e-15, 0.06 at p = 10, about 1 from p = 30 on (no
    information: flat norms move their minimizer far for tiny changes of value), and for p <
    2 about :math:`2((q-1)pg/2)^{1/q}`, of the order of 1 near p = 1 as well (q large).
    Measured medians (``OPENBLAS_NUM_THREADS=1 PYTHONPATH=. python
    examples/lp_forward_verdicts.py``, random data, 60 instances per p): 1.5 at p = 1.01,
    0.52 at 1.05, 0.14 at 1.1, 8e-5 at 1.5, 1e-5 at 2.5, 8e-5 at 3, 0.005 at 5, 0.14 at
    10, 0.87 at 20.

    Parameters
    ----------
    cs : ConstraintSet
    W : ndarray of shape (d, d)
    lam : ndarray of shape (N,) or None
        The multipliers (any positive scale; None: inf).
    p : float
        In (1, ∞).
    margins : ndarray of shape (N,), optional
        ``cs.apply(W)`` when already computed.
    rounding : ndarray of shape (N,), optional
        The margins' rounding bounds :math:`\rho_j`
        (:func:`~._certificates.margin_rounding` of every row) when already computed.

    Returns
    -------
    float
        The relative radius: 0 for W = 0 where that meets every row; inf where no bound is
        found (no multipliers, equality rows, no exactly feasible multiple of W, values
        beyond float64).
    """
    W = np.asarray(W, dtype=float)
    size = entrywise_norm(W, p)
    if size == 0.0:
        return 0.0 if zero_is_feasible(cs) else math.inf
    if lam is None or not (np.all(np.isfinite(lam)) and math.isfinite(size)):
        return math.inf
    if np.any(~cs._margin_rows):
        return math.inf  # no exactly feasible point from W: no U
    q = dual_exponent(p)
    u = UNIT_ROUNDOFF
    c = cs.rhs
    m = cs.apply(W) if margins is None else np.asarray(margins, dtype=float)
    rho = margin_rounding(cs, W, np.ones(cs.N, dtype=bool)) if rounding is None else rounding
    # W's exact violation of each row is at most delta (the float c - m + rho within 3u of
    # |c| + |m| + rho)
    delta = np.maximum(_up(c - m + rho) + 4.0 * u * (np.abs(c) + np.abs(m) + rho), 0.0)
    lam = np.maximum(np.asarray(lam, dtype=float), 0.0)  # margin rows only (above)
    terms = lam * (c - delta)
    numerator = float(np.sum(terms)) - gamma(cs.N + 4) * float(np.sum(lam * (np.abs(c) + delta)))
    A = _norm_upper(W, p)
    # U: W/s meets every row exactly
    low = m - rho - 4.0 * u * (np.abs(m) + rho)  # below the exact margin
    positive = c > 0.0
    if np.any((c == 0.0) & (low < 0.0)):
        return math.inf
    s = float(np.min(low[positive] / c[positive])) * (1.0 - 4.0 * u) if np.any(positive) else 0.0
    negative = (c < 0.0) & (low < 0.0)
    if not s > 0.0 or np.any(s < _up(low[negative] / c[negative])):
        return math.inf
    U = float(_up(A / s))
    triangle = float(_up(A + U))
    bound = triangle
    denominator = _adjoint_upper(cs, lam, q)
    if numerator > 0.0 and 0.0 < denominator < math.inf:
        L = numerator / denominator * (1.0 - 4.0 * u)
        t = _up((_power_excess(A / L, p) + _power_excess(U / L, p)) / 2.0)  # (A^p+U^p)/(2L^p) - 1
        if p >= 2.0:
            clarkson = 2.0 * L * _root_up(t, p)
        else:
            with np.errstate(over="ignore"):
                inner = float(_up(np.expm1(_up(_up(q - 1.0) * _up(np.log1p(t))))))
            clarkson = 2.0 * L * _root_up(inner, q)
        bound = min(bound, float(_up(clarkson)))
    radius = float(_up(bound / size))
    return radius if math.isfinite(radius) else math.inf


def minimizer_margin_reach(res: SVMResult) -> np.ndarray | None:
    r"""Per row of an :math:`\ell_p` answer (1 < p < ∞), an upper bound on
    :math:`|a_j^\top W^\star b_j - m_j|`: how far the minimizer's margin can be from W's
    float margin :math:`m_j` (``res.margins``).

    .. math::

        R_j = \rho_j + \|a_j b_j^\top\|_q\, r\,\|W\|_p
        \;\ge\; |a_j^\top (W - W^\star) b_j| + |m_j - a_j^\top W b_j|

    (Hölder; :math:`\|a_j b_j^\top\|_q = \|a_j\|_q\|b_j\|_q`, r the relative
    :attr:`ArgminCheck.radius` of ``res.extras["argmin"]``, :math:`\rho_j` the margin's
    rounding, :func:`~._certificates.margin_rounding`), rounded up. A margin row with
    :math:`m_j - c_j > R_j` is slack at :math:`W^\star` (a proof); one with a smaller slack
    may be tight there. None for other norms and answers without W; inf entries where there
    is no radius.
    """
    check = res.extras.get(ARGMIN)
    p = res.extras.get("p")
    if res.norm != "lp" or res.W is None or check is None or p is None:
        return None
    cs = res.constraints
    if not math.isfinite(check.radius):
        return np.full(cs.N, math.inf)
    W = np.asarray(res.W, dtype=float)
    q = dual_exponent(float(p))
    grow = 1.0 + gamma(cs.d + 16)
    q_sizes = _row_q_norms(cs.A, q) * grow * _row_q_norms(cs.B, q) * grow
    rho = margin_rounding(cs, W, np.ones(cs.N, dtype=bool))
    reach = _up(rho + _up(q_sizes * _up(check.radius * _norm_upper(W, float(p)))))
    return np.where(np.isfinite(reach), reach, math.inf)


def argmin_check(
    cs: ConstraintSet,
    W: np.ndarray,
    lam: np.ndarray | None,
    p: float,
    tol: float,
    margins: np.ndarray | None = None,
) -> ArgminCheck:
    r"""Is W the unique minimizer of :math:`\|W\|_p` over ``cs`` (1 < p < ∞), and not only a
    W of minimal value up to ``tol``? Checked by the mirror map, on the multipliers ``lam``.

    .. math::

        T = \{j : m_j - c_j \le \mathrm{tol}\,(s_j + \|a_j b_j^\top\|_q\|W\|_p) + \rho_j\}
        \cup \{\text{equality rows}\},
        \quad \lambda'_j = [\lambda_j]_+ \mathbb 1_{j \in T},\quad
        D = \frac{g(\Lambda')}{\|g(\Lambda')\|_p},\quad
        \rho = \Big\|\frac{W}{\|W\|_p} - D\Big\|_p,

    with :math:`g(t) = \mathrm{sign}(t)|t|^{q-1}` entrywise, :math:`\Lambda' = \sum_j
    \lambda'_j a_j b_j^\top`, :math:`s_j` the rows' scales of
    :func:`~._certificates.primal_infeasibility` and :math:`\rho_j` their margins' rounding
    (:func:`~._certificates.margin_rounding`); the term :math:`\mathrm{tol}\,\|a_j
    b_j^\top\|_q\|W\|_p` is the change of row j's margin that a move of W by
    :math:`\mathrm{tol}\,\|W\|_p` (the scale of :math:`\rho`) can make: without it a row
    1.4e-8 slack, just over :math:`\mathrm{tol}\,s_j`, with 37 % of the largest multiplier, was
    dropped and a W 1.2e-9 from the minimizer got :math:`\rho = 1.07` (p = 10,
    ``tests/analysis/test_lp_argmin_review_s60.py``). W is *shown* when :math:`\rho` plus
    the rounding of D is at most ``tol``.

    What that proves (svmgeo's derivation): :math:`V = \|W\|_p D` is the exact, unique
    minimizer of :math:`\|X\|_p` over the rows with bounds :math:`\tilde c_j = a_j^\top V b_j`
    (:math:`j \in T`) and :math:`\tilde c_j = \min(c_j, a_j^\top V b_j)` (:math:`j \notin
    T`): V meets them, :math:`\lambda' \ge 0` vanishes off the rows V meets with equality,
    and :math:`\langle\Lambda', V\rangle = \|\Lambda'\|_q\|V\|_p` (Hölder's equality holds
    exactly for :math:`V \propto g(\Lambda')`): the KKT conditions, sufficient for this convex
    problem, with one minimizer since :math:`\|\cdot\|_p` is strictly convex. As
    :math:`\|W - V\|_p = \rho\|W\|_p`, W is within :math:`\rho\|W\|_p` of the exact minimizer
    of rows whose bounds moved by at most :math:`\mathrm{tol}\,s_j + \rho_j + (\mathrm{tol} +
    \rho)\|a_j b_j^\top\|_q\|W\|_p` (the slack of a row of T, and V's change of its margin)
    plus W's own violation: the backward-error meaning of the
    Frobenius certificate's :math:`\|W - \Lambda\|_F`, here in the mirror map's coordinates.

    It is a *backward* error only: no bound on :math:`\|W - W^\star\|_p`, the distance to
    the minimizer of ``cs``'s rows. Where tight rows are nearly parallel, moving their
    bounds by about tol can move the minimizer by O(1) (and :math:`|u|^p` has zero curvature
    at 0 for p > 2), so a *shown* W can still be far from :math:`W^\star`. Measured: one
    query :math:`z = e_1`, rows :math:`u_1 \ge 1`, :math:`u_1 + 10^{-10}u_2 \ge 1`,
    :math:`u_1 + 5u_2 \ge 1` (:math:`u = We_1`; closed form :math:`u^\star = (1, 0)`, all
    three margins 1): at p = 3, 10, 20, 100 the returned :math:`u_2` is 7.1e-6, 1.9e-5,
    0.017, 0.32, every one shown (it is exactly :math:`g(\Lambda')` for multipliers on the
    first two rows, the second's slack :math:`10^{-10}u_2` inside the allowance;
    ``OPENBLAS_NUM_THREADS=1 python examples/lp_backward_error.py``). The forward bound is
    the record's ``radius`` (:func:`forward_radius`, computed here too): 6.6e-5, 0.10, 0.47,
    1.5 there, each above the true distance, and the verdicts read off W use it
    (:func:`minimizer_margin_reach`).

    The value certificate (:func:`~._certificates.lp_certificate`) does not give this: its
    stationarity is the scalar :math:`|\langle\Lambda, W\rangle - \|W\|_p| / \|W\|_p`, below
    ``tol`` wherever :math:`\|W\|_p` is within ``tol`` of the optimum, and near p = 1 or at
    large p that holds for W far from :math:`W^\star` (measured: at p = 1 + 1e-8 the
    :math:`\ell_1` program's vertex (1, 0) against :math:`u^\star = (0.526, 0.474)`; at p = 1e8
    a smooth-dual W with :math:`u_2 = 1` against :math:`u_2^\star = 1/2`, both certified to
    1e-8 in value; ``tests/analysis/test_lp_extreme_s60.py``). Setting the multipliers of
    slack rows to 0 is what catches the second: its multiplier :math:`2 \cdot 10^{-36}` on a
    row of margin 4/3 maps to an entry :math:`(2\cdot 10^{-36})^{q-1} \approx 1` of
    :math:`g(\Lambda)` at :math:`q - 1 = 10^{-8}`.

    Rounding: :math:`\Lambda'` is computed by the float sum, each entry within
    :math:`e_{kl} = \gamma_{N+2}\sum_j|\lambda'_j a_{jk} b_{jl}|` of the exact one
    (:func:`_plain_adjoint`); when that does not decide (:math:`\rho` within the rounding of
    tol), the entries whose half-width (below) exceeds :math:`\theta = \mathrm{tol}\|g\|_p /
    (16 d^{2/p})` are recomputed nearly exactly (:func:`_accurate_adjoint`: exact products,
    extracted sums), the others adding at most tol/8 to the rounding. With the bound
    :math:`e_{kl}` of each entry,
    g is monotone, so the exact :math:`g(\Lambda'_{kl})` lies in
    :math:`[g(\Lambda'_{kl} - e_{kl}), g(\Lambda'_{kl} + e_{kl})]`; the :math:`\ell_p` norm
    of the half-widths, twice (the normalization by :math:`\|g(\Lambda')\|_p`), plus
    :math:`8\gamma_{d^2+4}` for the powers and norms, is the ``rounding`` added to
    :math:`\rho`. The second pass is needed: with the float sum's bound alone, entries that
    cancel to 1e-9 of their terms (random data, p = 5 to 20) gave bounds up to 9e-8 where W
    was within 1e-9 of the image. Near p = 1 the rounding is
    about :math:`4(q-1)u` (each entry of :math:`\Lambda'` is a float: :math:`u` relative,
    raised to the power :math:`q - 1`), above tol = 1e-8 for :math:`p - 1 \lesssim 4 \cdot
    10^{-8}`: there float64 cannot resolve the minimizer through its multipliers, and W is not
    shown (at the reproducer's p = 1 + 1e-8, where cvxpy returns the true :math:`u^\star`,
    the rounding is 4.4e-8).

    Parameters
    ----------
    cs : ConstraintSet
    W : ndarray of shape (d, d)
    lam : ndarray of shape (N,) or None
        The multipliers (any positive scale). None: not shown.
    p : float
        In (1, ∞).
    tol : float
    margins : ndarray of shape (N,), optional
        ``cs.apply(W)`` when already computed.

    Returns
    -------
    ArgminCheck
    """
    q = dual_exponent(p)
    W = np.asarray(W, dtype=float)
    m = cs.apply(W) if margins is None else np.asarray(margins, dtype=float)
    with np.errstate(over="ignore", under="ignore", invalid="ignore", divide="ignore"):
        rho_rows = margin_rounding(cs, W, np.ones(cs.N, dtype=bool))  # the radius's and T's
        radius = forward_radius(cs, W, lam, p, m, rho_rows)
    size = entrywise_norm(W, p)
    if size == 0.0:  # W = 0 is the one point of norm 0: the minimizer wherever it is feasible
        return ArgminCheck(
            True, 0.0, 0.0, tol, 0, "W = 0, the unique minimizer where it is feasible", radius
        )
    if lam is None:
        return ArgminCheck(
            False, math.inf, math.inf, tol, 0,
            "W has no multipliers to check it against, so it is not shown to be the unique "
            "minimizer", radius,
        )  # fmt: skip
    lam = np.asarray(lam, dtype=float)
    is_m = cs._margin_rows
    scale = cs._bound_unit if cs._bound_scales is None else cs._bound_scales
    q_sizes = _row_q_norms(cs.A, q) * _row_q_norms(cs.B, q)  # ||a_j b_j^T||_q
    allowance = tol * scale + rho_rows + tol * q_sizes * size
    tight = ~is_m | (m - cs.rhs <= allowance)
    kept = np.where(tight, lam, 0.0)
    kept[is_m] = np.maximum(kept[is_m], 0.0)
    with np.errstate(over="ignore", under="ignore", invalid="ignore", divide="ignore"):
        direction = W / size

        def distance(Lam: np.ndarray, err: np.ndarray) -> tuple[float, float, float, np.ndarray]:
            image, norm_image, half = _mirror_image(Lam, err, q, p)
            rho = entrywise_norm(direction - image / norm_image, p)
            rounding = 2.0 * entrywise_norm(half, p) / norm_image + 8.0 * gamma(W.size + 4)
            return rho, rounding, norm_image, half

        Lam, err = _plain_adjoint(cs, kept)
        top = float(np.max(np.abs(Lam), initial=0.0))
        rho, rounding, norm_image, half = distance(Lam, err)
        if not (rho + rounding <= tol or rho - rounding > tol):  # undecided by the float sum
            # exact sums where the float sum's bound weighs: the others' half-widths are
            # below theta, adding at most tol / 8 to the rounding
            theta = tol * norm_image / (16.0 * W.size ** (1.0 / p))
            K, L = np.nonzero(~(half <= theta))
            if K.size:
                Lam[K, L], err[K, L] = _accurate_adjoint(cs, kept, K, L)
                top = float(np.max(np.abs(Lam), initial=0.0))
                rho, rounding, norm_image, half = distance(Lam, err)
        residual = rho + rounding
    n_tight = int(tight.sum())
    dropped = np.flatnonzero(is_m & ~tight & (lam > 0.0))
    if dropped.size:  # what makes rho large when a row W misses by a little is truly tight
        worst = dropped[int(np.argmax(lam[dropped]))]
        share = float(lam[worst] / np.max(np.abs(lam)))
        dropped_note = (
            f" (the multipliers of its {dropped.size} row(s) slack beyond tol are set to 0, "
            f"the largest {share:.2g} of the largest multiplier at a slack of "
            f"{float(m[worst] - cs.rhs[worst]):.2g})"
        )
    else:
        dropped_note = ""
    if not (top > 0.0 and math.isfinite(top)):
        return ArgminCheck(
            False, math.inf, math.inf, tol, n_tight,
            f"the multipliers of W's {n_tight} tight row(s) give Λ = {top:g}, no direction to "
            "check W against, so W is not shown to be the unique minimizer", radius,
        )  # fmt: skip
    if not residual <= tol:  # NaN included
        residual = residual if residual == residual else math.inf
        why = (
            f"float64 cannot resolve the mirror image sign(Λ)|Λ|^(q-1) of W's multipliers to "
            f"tol {tol:.1e} (q - 1 = {q - 1.0:.3g} turns their rounding into {rounding:.2g})"
            if not rounding <= tol
            else f"W's direction is {rho:.3g} (l_{p:g}, relative) from the mirror image "
            f"sign(Λ)|Λ|^(q-1) of its multipliers on its {n_tight} tight row(s), above tol "
            f"{tol:.1e}{dropped_note}"
        )
        return ArgminCheck(
            False, float(residual), float(rounding), tol, n_tight,
            f"{why}: W is not shown to be the unique l_{p:g} minimizer", radius,
        )  # fmt: skip
    return ArgminCheck(
        True, float(residual), float(rounding), tol, n_tight,
        f"W's direction is within {residual:.2g} (rounding included) of the mirror image of "
        f"its multipliers on its {n_tight} tight row(s)", radius,
    )  # fmt: skip


def with_argmin_check(res: SVMResult, p: float, tol: float) -> SVMResult:
    r"""``res`` with its :class:`ArgminCheck` in ``extras["argmin"]`` (1 < p < ∞ and a W), the
    reason appended to the message when W is not shown to be the minimizer (with "certified
    in value only" where the status is OPTIMAL, not after a failed certificate check); the
    status is kept."""
    if res.W is None or not 1.0 < p < math.inf:
        return res
    check = argmin_check(res.constraints, res.W, res.dual, p, tol, res.margins)
    value_only = " (certified in value only)" if res.status is Status.OPTIMAL else ""
    message = res.message if check.shown else f"{res.message}; {check.reason}{value_only}"
    return replaced(res, extras={**res.extras, ARGMIN: check}, message=message)


def _normalize(cs: ConstraintSet, mu: np.ndarray, p: float) -> np.ndarray:
    r""":math:`\lambda = \mu / \|\Lambda(\mu)\|_q`, the dual of :math:`\min\|W\|_p` (norm-1 adjoint)."""
    size = entrywise_norm(cs.adjoint(mu), dual_exponent(p)) if cs.N else 0.0
    return mu / size if size > 0 else mu


def _lbfgs_dual(cs: ConstraintSet, M: np.ndarray, q: float, max_iter: int) -> np.ndarray:
    r"""Minimize :math:`\tfrac1q\|M^\top\mu\|_q^q - c^\top\mu` over :math:`\mu \ge 0` (margin rows)."""
    c = cs.rhs

    def fun(mu: np.ndarray) -> tuple[float, np.ndarray]:
        lam = mu @ M
        w = _mirror_inverse(lam, q)
        return float(np.sum(np.abs(lam) ** q) / q - c @ mu), M @ w - c

    bounds = [(0.0, None) if k == MARGIN else (None, None) for k in cs.kind]
    mu0 = np.full(cs.N, 1e-3)
    import scipy.optimize as so  # imported here: it costs 0.3 s of `import svmgeo.solvers`

    res = so.minimize(
        fun,
        mu0,
        jac=True,
        method="L-BFGS-B",
        bounds=bounds,
        options={"maxiter": max_iter, "ftol": 1e-16, "gtol": 1e-13, "maxcor": 30},
    )
    return np.asarray(res.x)


def _newton_polish(
    cs: ConstraintSet,
    M: np.ndarray,
    q: float,
    mu: np.ndarray,
    *,
    active: np.ndarray | None = None,
) -> tuple[np.ndarray, int]:
    r"""Active-set Newton on :math:`a_j^\top W(\mu) b_j = c_j` (:math:`j \in S`), :math:`\mu_j = 0`
    off :math:`S`; rows with :math:`\mu_j < 0` leave :math:`S`, the most violated row joins it.

    :math:`S` starts as ``active`` (default: equality rows and rows with
    :math:`\mu_j > 10^{-9}\max|\mu|`). Returns the polished :math:`\mu` and the number of
    Newton steps taken.
    """
    c = cs.rhs
    is_m = cs.kind == MARGIN
    mu = mu.copy()
    mu[is_m] = np.maximum(mu[is_m], 0.0)
    top = float(np.max(np.abs(mu), initial=0.0))
    active = ((~is_m) | (mu > 1e-9 * top)) if active is None else (active | ~is_m)
    steps = 0
    for _ in range(2 * cs.N + 10):
        S = np.flatnonzero(active)
        nu = mu[S].copy()
        MS = M[S]
        for _ in range(60):
            lam = nu @ MS
            F = MS @ _mirror_inverse(lam, q) - c[S]
            res = float(np.linalg.norm(F))
            if res <= 1e-15 * max(1.0, float(np.linalg.norm(c[S]))) * math.sqrt(S.size):
                break
            a = np.abs(lam)
            with np.errstate(divide="ignore"):  # |Λ|^(q-2) at Λ = 0 (q < 2): entry dropped
                curv = (q - 1.0) * np.where(a > 0, a ** (q - 2.0), 0.0)
            J = (MS * curv[None, :]) @ MS.T
            if not (np.all(np.isfinite(J)) and np.all(np.isfinite(F))):
                break  # |Λ|^(q-2) over- or underflowed (p near 1 or very large): no Newton step
            try:
                step = np.linalg.lstsq(J, -F, rcond=None)[0]
            except np.linalg.LinAlgError:  # LAPACK's SVD did not converge: no Newton step
                break
            t = 1.0
            while t > 1e-12:
                trial = nu + t * step
                Ft = MS @ _mirror_inverse(trial @ MS, q) - c[S]
                if np.linalg.norm(Ft) < res or np.linalg.norm(Ft) <= 1e-15:
                    break
                t *= 0.5
            steps += 1
            if t <= 1e-12:
                break
            nu = trial
        mu = np.zeros(cs.N)
        mu[S] = nu
        negative = is_m[S] & (nu < 0)
        if np.any(negative):
            active[S[negative]] = False
            continue
        m = M @ _mirror_inverse(mu @ M, q)
        viol = np.where(is_m & ~active, c - m, -np.inf)
        if viol.size and viol.max() > 1e-13 * max(1.0, float(np.abs(c).max())):
            active[int(np.argmax(viol))] = True
            continue
        break
    return mu, steps


def _lp_program(cs: ConstraintSet, p: float) -> tuple[np.ndarray | None, np.ndarray | None, str]:
    """p = 1 or ∞ by HiGHS: returns (W, λ, message)."""
    d2 = cs.d * cs.d
    M = _row_matrix(cs)
    is_m = cs.kind == MARGIN
    options = {"primal_feasibility_tolerance": 1e-10, "dual_feasibility_tolerance": 1e-10}
    if p == 1.0:  # W = U - V, U, V >= 0, min 1'(U + V)
        cost = np.ones(2 * d2)
        A = np.hstack([M, -M])
        bounds: Any = (0, None)
    else:  # variables (W, t): min t, -t <= W_kl <= t
        cost = np.zeros(d2 + 1)
        cost[-1] = 1.0
        A = np.hstack([M, np.zeros((cs.N, 1))])
        eye = np.eye(d2)
        box = np.vstack([np.hstack([eye, -np.ones((d2, 1))]), np.hstack([-eye, -np.ones((d2, 1))])])
        bounds = [(None, None)] * d2 + [(0, None)]
    A_ub = -A[is_m]
    b_ub = -cs.rhs[is_m]
    if p != 1.0:
        A_ub = np.vstack([A_ub, box])
        b_ub = np.concatenate([b_ub, np.zeros(2 * d2)])
    res = HiGHSBackend.linprog(
        cost,
        f"the l_{p:g} Att-SVM linear program",
        A_ub=A_ub,
        b_ub=b_ub,
        A_eq=A[~is_m] if np.any(~is_m) else None,
        b_eq=cs.rhs[~is_m] if np.any(~is_m) else None,
        bounds=bounds,
        options=options,
    )
    if res.status != 0:
        return None, None, f"HiGHS: {res.message}"
    x = np.asarray(res.x)
    W = (x[:d2] - x[d2:]) if p == 1.0 else x[:d2]
    lam = np.zeros(cs.N)
    lam[is_m] = -np.asarray(res.ineqlin.marginals)[: int(is_m.sum())]
    if np.any(~is_m):
        lam[~is_m] = np.asarray(res.eqlin.marginals)
    return W.reshape(cs.d, cs.d), lam, f"HiGHS: {res.message}"


def _certified(
    cs: ConstraintSet,
    W: np.ndarray,
    lam: np.ndarray,
    p: float,
    tol: float,
    *,
    solver: str,
    message: str,
    n_iter: int,
    extras: dict[str, Any],
) -> SVMResult:
    """Lift W onto the rows exactly (a scaling by 1 + O(eps)), certify (:func:`finish`) and,
    for 1 < p < ∞, check that W is the minimizer (:func:`with_argmin_check`)."""
    res = finish(
        cs,
        lift_onto_rows(cs, W),
        lam,
        norm=lp_geometry(p),
        tol=tol,
        status=Status.OPTIMAL,
        message=message,
        solver=solver,
        n_iter=n_iter,
        extras=dict(extras),
    )
    return with_argmin_check(res, p, tol)


def _zero_when_feasible(
    cs: ConstraintSet, p: float, tol: float, extras: dict[str, Any]
) -> SVMResult | None:
    """W = 0 with λ = 0 when W = 0 meets every row (no rows, c_j <= 0 on margin rows and
    c_j = 0 on equality rows): the optimum of every norm, certified; else None."""
    if not zero_is_feasible(cs):
        return None
    return _certified(
        cs, np.zeros((cs.d, cs.d)), np.zeros(cs.N), p, tol, solver="svmgeo-lp",
        message="W = 0 meets every row", n_iter=0, extras=extras,
    )  # fmt: skip


def lp_fast(
    cs: ConstraintSet, p: float, tol: float, extras: dict[str, Any], *, max_iter: int = LP_MAX_ITER
) -> SVMResult:
    r"""svmgeo's :math:`\ell_p` solver: HiGHS for p = 1, ∞; the smooth dual by L-BFGS-B and an
    active-set Newton polish for p in (1, ∞). Certified on ``cs`` (rows rescaled inside)."""
    zero = _zero_when_feasible(cs, p, tol, extras)
    if zero is not None:
        return zero
    if p == 1.0 or math.isinf(p):

        def program(rows: ConstraintSet) -> tuple[Any, Any, dict[str, Any]]:
            W, lam, message = _lp_program(rows, p)
            return W, None if lam is None else _normalize(rows, lam, p), {"message": message}

        W, lam, info = program(cs)
        if W is None or lam is None:
            return no_solution(
                cs, Status.SOLVER_ERROR, info["message"], norm="lp", solver="highs",
                extras=extras,
            )  # fmt: skip
        return _certified(
            cs, W, lam, p, tol, solver="highs", message=info["message"], n_iter=0,
            extras=extras,
        )  # fmt: skip
    q = dual_exponent(p)

    def smooth(rows: ConstraintSet) -> tuple[Any, Any, dict[str, Any]]:
        M = _row_matrix(rows)
        mu = _lbfgs_dual(rows, M, q, max_iter)
        mu, steps = _newton_polish(rows, M, q, mu)
        W = _mirror_inverse(mu @ M, q).reshape(rows.d, rows.d)
        return W, _normalize(rows, mu, p), {"steps": steps}

    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        W, lam, info = smooth(cs)
    if not (np.all(np.isfinite(W)) and np.all(np.isfinite(lam))):
        res = no_solution(
            cs, Status.SOLVER_ERROR,
            f"the smooth dual of p = {p:g} (q = {q:g}) left float64's range: |Λ|^(q-1) over- "
            "or underflows for p this close to 1 or this large",
            norm="lp", solver="svmgeo-lp-dual", extras=extras,
        )  # fmt: skip
    else:
        res = _certified(
            cs,
            W,
            lam,
            p,
            tol,
            solver="svmgeo-lp-dual",
            message="smooth dual by L-BFGS-B, active-set Newton polish",
            n_iter=info["steps"],
            extras=extras,
        )
    if res.success:
        return res
    return _nearer_linear_program(cs, p, tol, extras, res)


def _nearer_linear_program(
    cs: ConstraintSet, p: float, tol: float, extras: dict[str, Any], smooth: SVMResult
) -> SVMResult:
    r"""The answer of the nearer linear program, :math:`e = 1` (p < 2) or :math:`e = \infty`,
    certified at ``p``, when it beats ``smooth`` (the smooth dual's failed answer).

    .. math::

        \|W_e\|_p \;\ge\; \min_{\text{rows}} \|W\|_p \;\ge\;
        \frac{c^\top \lambda_e}{\|\Lambda(\lambda_e)\|_q} \;\ge\;
        D^{-|1/p - 1/e|}\, \|W_e\|_p \qquad (D = d^2\ \text{entries}):

    :math:`W_e` meets every row, :math:`\lambda_e` scaled to :math:`\|\Lambda\|_q = 1` is dual
    feasible, and with the program's :math:`\|W_e\|_e = c^\top\lambda_e`,
    :math:`\|\Lambda(\lambda_e)\|_{e^*} = 1` the entrywise norm bounds
    :math:`\|\cdot\|_p \le D^{1/p}\|\cdot\|_\infty`, :math:`\|\cdot\|_q \le \|\cdot\|_1`
    (:math:`e = \infty`) and :math:`\|\cdot\|_p \le \|\cdot\|_1`,
    :math:`\|\cdot\|_q \le D^{1/q}\|\cdot\|_\infty` (:math:`e = 1`) give the last inequality
    (svmgeo's derivation). The relative gap, about :math:`|1/p - 1/e| \ln D`, is within
    ``tol`` for p this close to 1 or this large: where the smooth dual cannot go in float64
    (at its optimum :math:`|\Lambda_{kl}| / \max|\Lambda| = (|W_{kl}| / \max|W|)^{p-1}`,
    :math:`2^{-(p-1)}` for an entry half the largest; near p = 1, :math:`|\Lambda|^{q-1}`
    over- or underflows). Elsewhere the certificate reports the gap: an
    ``OPTIMAL_INACCURATE`` upper bound. Of the two answers, the one whose certificate's
    largest residual is smaller is returned (``smooth`` when the program fails).
    """
    end = 1.0 if p < 2.0 else math.inf
    label = "l_1" if end == 1.0 else "l_inf"
    W, lam, message = _lp_program(cs, end)
    if W is None or lam is None:
        return replaced(smooth, message=f"{smooth.message}; the {label} program failed: {message}")
    res = _certified(
        cs, W, _normalize(cs, lam, p), p, tol, solver="highs",
        message=f"the {label} linear program's answer, certified at p = {p:g}, in place of "
        f"the smooth dual's ({smooth.message})",
        n_iter=0, extras=extras,
    )  # fmt: skip
    return better_answer(smooth, res)


def lp_reference(
    cs: ConstraintSet, p: float, tol: float, solver: str | None, extras: dict[str, Any]
) -> SVMResult:
    r"""The cvxpy reference model of the :math:`\ell_p` Att-SVM (power cones), Newton-polished
    for p in (1, ∞); certified by svmgeo on ``cs`` (rows rescaled inside)."""
    zero = _zero_when_feasible(cs, p, tol, extras)
    if zero is not None:
        return zero
    name = "CLARABEL" if solver is None else solver
    label = f"cvxpy-{name.lower()}"
    geometry = lp_geometry(p)

    def model(rows: ConstraintSet) -> tuple[Any, Any, dict[str, Any]]:
        W, lam, native, _, _ = solve_reference(rows, geometry, solver=name)
        return W, lam, {"native": native, "rows": rows}

    try:
        W, lam, info = model(cs)
    except Exception as exc:  # cvxpy raises SolverError and friends
        return no_solution(
            cs, Status.SOLVER_ERROR, f"cvxpy/{name} failed: {exc}", norm="lp", solver=label,
            extras=extras,
        )  # fmt: skip
    native = info["native"]
    if W is None or lam is None or native not in ("optimal", "optimal_inaccurate"):
        return no_solution(
            cs,
            Status.SOLVER_ERROR,
            f"cvxpy status {native!r} without a primal-dual pair",
            norm="lp",
            solver=label,
            extras=extras,
        )
    raw = lp_certificate(cs, W, _normalize(cs, lam, p), p, tol)

    def as_solved(W: np.ndarray = W, lam: np.ndarray = lam) -> SVMResult:
        return _certified(
            cs, W, _normalize(cs, lam, p), p, tol, solver=label,
            message=f"cvxpy status {native!r}", n_iter=0, extras=extras,
        )  # fmt: skip

    if p == 1.0 or math.isinf(p):  # a linear program: nothing to polish
        return as_solved()
    # polish: the multipliers of min ||W||_p/p^p are mu = lambda ||W||_p^(p-1), starting
    # from the rows that are tight at cvxpy's W (its small interior-point duals of inactive
    # rows are not zeros)
    q = dual_exponent(p)
    M = _row_matrix(cs)
    tight = cs.apply(W) - cs.rhs <= 1e-6 * max(1.0, float(np.abs(cs.rhs).max()))
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        mu0 = lam * np.float64(lp_geometry(p).value(W)) ** (p - 1.0)  # inf, not OverflowError
        mu, steps = _newton_polish(cs, M, q, np.where(tight, mu0, 0.0), active=tight)
        Wp = _mirror_inverse(mu @ M, q).reshape(cs.d, cs.d)
    if not (np.all(np.isfinite(Wp)) and np.all(np.isfinite(mu))):
        return as_solved()  # |Λ|^(q-1) left float64 (p near 1 or very large): cvxpy's answer
    polished = _certified(
        cs,
        Wp,
        _normalize(cs, mu, p),
        p,
        tol,
        solver=label,
        message=f"cvxpy status {native!r}, Newton-polished",
        n_iter=steps,
        extras={**extras, "cvxpy_certificate": raw},
    )
    # of two failed answers the better certified: a polish can break cvxpy's nearly certified W
    return polished if polished.success else better_answer(polished, as_solved())
