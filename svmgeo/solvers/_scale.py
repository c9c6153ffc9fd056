# SPDX-License-Identifier: BSD-3-Clause
r"""Scale: rows and bounds of unit size, and the float64 range of what is solved on them.

Every problem of svmgeo is scale-covariant. With powers of two :math:`\alpha, \beta, \gamma`
(exact) and :math:`s = \alpha\beta`,

.. math::

    a'_j = a_j/\alpha,\quad b'_j = b_j/\beta,\quad c'_j = c_j/\gamma
    \quad\Longrightarrow\quad
    W = \frac{\gamma}{s}\,W',\qquad \lambda = \frac{\gamma^{k-1}}{s^k}\,\lambda',\qquad
    \lambda_{\mathrm{Farkas}} = \lambda'_{\mathrm{Farkas}}/\gamma,

with :math:`k` the degree of the multipliers (2 for the Frobenius dual
:math:`W = \sum_j \lambda_j a_j b_j^\top`, 1 for a norm's dual). The SVM solvers
(:func:`~._norms.on_unit_rows`) and the feasibility check
(:func:`~._feasibility.decide_feasibility`) decide on the rows of unit size
(:func:`unit_rows`); what they found is mapped back by :class:`Scale`, which refuses, with a
:class:`~svmgeo.ProblemError` naming ``rhs`` and the rows ``A``, ``B``, an answer that float64
cannot hold. The optimal-face problems map the caller's W the other way
(:meth:`Scale.inverse`): one too far from the size of an answer to fit on the unit rows is
refused naming the caller's rows too (before session 52 it named the unit rows' sizes).

What float64 holds: finite numbers below :math:`2^{1024} \approx 1.8\cdot 10^{308}`, with all
their digits from the smallest normal :math:`2^{-1022} \approx 2.2\cdot 10^{-308}` up. So

* the rows: the entries :math:`a_{jk} b_{jl}` of the constraint matrices
  :math:`a_j b_j^\top` (from which the Gram matrix, the compressed features and every
  :math:`\sum_j \lambda_j a_j b_j^\top` are formed) reach :math:`\max|a|\max|b|`, which must lie
  in :math:`[2^{-1022}, 2^{1024})`;
* the answer: :math:`W` (its entries, its norm) scales like
  :math:`\max_j|c_j| / (\max|a|\max|b|)`, the margins :math:`a_j^\top W b_j` like
  :math:`\max_j|c_j|`, the multipliers like :math:`\max_j|c_j|^{k-1}/(\max|a|\max|b|)^k`
  (:math:`1/\max_j|c_j|` for a Farkas vector); each must be finite, and :math:`W` and the
  multipliers (when not 0) must keep a largest entry of at least :math:`2^{-1022}`. Which
  bounds that allows depends on the rows (on the optimum at unit scale): the message says
  what to rescale, and which way. An SVM's W that fits with multipliers that do not (the
  Frobenius dual, :math:`1/(\max|a|\max|b|)^2`, at rows of 1e-200) is returned uncertified
  (``OPTIMAL_INACCURATE``, ``dual`` None, the reason in its message) rather than refused.

The certificates are relative (scale-invariant) and are computed without squaring W's size
(:func:`~._certificates.frobenius_certificate`), so they hold wherever the answer does.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from .._errors import ProblemError
from ..constraints import ConstraintSet
from ._certificates import NormGeometry, point_violations, primal_certificate
from ._result import Certificate, FeasibilityResult, SVMResult, finish, replaced

__all__ = [
    "LARGEST_EXPONENT",
    "SCALE_BAND",
    "SMALLEST_EXPONENT",
    "Scale",
    "check_rows",
    "unit_rows",
    "unit_size",
]

FactoredCheck = Callable[
    [ConstraintSet, np.ndarray, np.ndarray, np.ndarray, np.ndarray], Certificate
]
"""``(cs, K, Q, lam, margins) -> Certificate``: the certificate of a binding rank bound."""

MULTIPLIERS = "the multipliers lambda"
"""What the messages call the SVM's multipliers (:meth:`Scale.dual`)."""

SCALE_BAND = 2.0**20
r"""Rows are rescaled when :math:`\max|a|\max|b|` lies outside [1/SCALE_BAND, SCALE_BAND], and
right-hand sides when :math:`\max_j|c_j| > 0` does (see :func:`_bound_exponent`)."""

LARGEST_EXPONENT = 1024
r"""Every finite float64 is below :math:`2^{1024}` in size."""
SMALLEST_EXPONENT = -1022
r"""The smallest normal float64 is :math:`2^{-1022}`: below it a number loses digits."""
SUBNORMAL_EXPONENT = -1074
r"""The smallest positive (subnormal) float64 is :math:`2^{-1074}`: below it a number is 0."""
_RANGE = (
    "float64's range (finite and below 2^1024 = 1.8e308, with all digits from 2^-1022 = 2.2e-308)"
)
"""float64's range as the messages say it."""


def _bound_exponent(cs: ConstraintSet) -> int:
    r"""The exponent of the power of two :math:`\gamma` nearest :math:`\max_j|c_j|` (in log
    scale) when that lies outside [1/:data:`SCALE_BAND`, :data:`SCALE_BAND`] and is not 0; else
    0. Large bounds are divided by no more than keeps every nonzero bound at least
    1/:data:`SCALE_BAND` (the largest such power of two, and 1 when there is none above 1):
    bounds 2e6, 1 and 1e-9, divided by 2^21, drowned the c = 1 rows in the SDP solver's
    tolerances. At most 1023: :math:`2^{1023}` is float64's largest power of two (bounds up to
    1.8e308 are divided to below 2)."""
    size = cs._largest_bound
    exponent = min(_nearest_exponent(size, SCALE_BAND), LARGEST_EXPONENT - 1)
    if size > SCALE_BAND:
        bounds = np.abs(cs.rhs)
        smallest = float(bounds[bounds > 0.0].min())  # gamma <= smallest * SCALE_BAND keeps all
        room = math.floor(math.log2(smallest) + math.log2(SCALE_BAND))
        exponent = max(min(exponent, room), 0)
    return exponent


def _nearest_exponent(size: float, band: float) -> int:
    r"""The exponent of the power of two nearest ``size`` > 0 (in log scale) when ``size``
    lies outside [1/``band``, ``band``]; 0 when it lies inside or is 0."""
    if size == 0.0 or 1.0 / band <= size <= band:
        return 0
    return round(math.log2(size))


def unit_size(x: np.ndarray, band: float = SCALE_BAND) -> np.ndarray:
    r"""``x`` divided by the power of two nearest its largest entry :math:`\max|x|` when that
    lies outside [1/``band``, ``band``] (exact); ``x`` itself otherwise. For an input whose
    scale does not matter (a direction), so that a solver with absolute tolerances sees O(1)
    data."""
    exponent = _nearest_exponent(float(np.abs(x).max(initial=0.0)), band)
    return x if exponent == 0 else _ldexp(x, -exponent)


@dataclass(frozen=True)
class Scale:
    r"""The powers of two :math:`s = 2^{\texttt{rows}}` (:math:`\alpha\beta`) and
    :math:`\gamma = 2^{\texttt{bounds}}` that took ``cs`` to rows and bounds of unit size
    (:func:`unit_rows`), and the maps of an answer on those back to ``cs``.

    Each map is one :func:`numpy.ldexp` by the total exponent (exact, no intermediate power
    that overflows), after checking that float64 holds the result: a
    :class:`~svmgeo.ProblemError` (:meth:`error`) otherwise, ``where`` naming the function
    called.
    """

    cs: ConstraintSet
    unit: ConstraintSet
    rows: int
    bounds: int
    where: str
    to_unit: bool = False
    """Whether the maps take the caller's rows to rows of unit size (:meth:`inverse`): its
    ``cs`` is then the unit rows, ``unit`` the caller's, which :meth:`error` names."""

    @property
    def identity(self) -> bool:
        return self.rows == 0 and self.bounds == 0

    def inverse(self) -> Scale:
        """The maps from ``cs`` to ``unit``, its rows of unit size."""
        return Scale(self.unit, self.cs, -self.rows, -self.bounds, self.where, not self.to_unit)

    def tagged(self, extras: dict[str, Any]) -> dict[str, Any]:
        r"""``extras`` of an answer mapped back to ``cs``, with ``row_scale`` (s) and, where
        the bounds were scaled, ``rhs_scale`` (:math:`\gamma`)."""
        out = {**extras, "row_scale": self.s}
        if self.bounds != 0:
            out["rhs_scale"] = self.gamma
        return out

    @property
    def s(self) -> float:
        r""":math:`s = \alpha\beta`, a normal float64 (:func:`unit_rows`)."""
        return math.ldexp(1.0, self.rows)

    @property
    def gamma(self) -> float:
        return math.ldexp(1.0, self.bounds)

    def w(self, x: Any, what: str = "W") -> Any:
        r"""A quantity of W's degree (W, its norm, a bound on it, a feasible point) on ``cs``:
        :math:`\gamma x / s`."""
        return self._map(x, self.bounds - self.rows, what, (1, 1))

    def dual(self, x: Any, degree: int) -> Any:
        r"""Multipliers of ``degree`` k on ``cs``: :math:`\gamma^{k-1}\lambda/s^k`."""
        return self._map(x, self._dual_exponent(degree), MULTIPLIERS, (degree - 1, degree))

    def dual_hint(self, x: Any, degree: int) -> Any:
        r"""Multipliers used only as a hint (a warm start, the feasibility QP's
        ``extras["qp_dual"]``) on ``cs``, as :meth:`dual`; None where float64 cannot hold them
        (a solve then starts without them) rather than an error."""
        if self._beyond(x, self._dual_exponent(degree)) is not None:
            return None
        return self.dual(x, degree)

    def _dual_exponent(self, degree: int) -> int:
        return (degree - 1) * self.bounds - degree * self.rows

    def farkas(self, x: Any) -> Any:
        r"""A Farkas vector on ``cs`` (:math:`c^\top\lambda = 1`): :math:`\lambda/\gamma`.

        Entries below :math:`2^{-1022}` are kept as subnormal floats (at bounds near
        :math:`10^{308}`, :math:`\lambda \approx 1/c` is subnormal and still a certificate:
        the exact proof re-solves it on its support); refused (:meth:`error`) only when the
        largest entry would overflow or every entry vanish (bounds below :math:`2^{-1022}`)."""
        return self._map(x, -self.bounds, "the Farkas vector", (-1, 0), SUBNORMAL_EXPONENT)

    def verdict(self, res: FeasibilityResult) -> FeasibilityResult:
        r"""A feasibility verdict decided on ``unit`` as the verdict on ``cs``, not proved
        again: the point :math:`W = \gamma W'/s` (:meth:`w`) with its worst residual on
        ``cs``, the Farkas vector :math:`\lambda'/\gamma` (:meth:`farkas`; its residual is
        relative, the same on both sets of rows), the max-margin QP's multipliers
        ``extras["qp_dual"]`` (degree 2, a hint: :meth:`dual_hint`). The verdict is the same
        at every scale; refused (:meth:`error`) where float64 cannot hold the point or the
        Farkas vector."""
        extras = self.tagged(res.extras)
        if extras.get("qp_dual") is not None:
            extras["qp_dual"] = self.dual_hint(extras["qp_dual"], 2)
        point = self.w(res.point, "the feasible point W")
        farkas = self.farkas(res.farkas)
        residual = res.residual
        if res.point is not None:
            residual = float(point_violations(self.cs, self.margins(res.point)).max(initial=0.0))
        return replaced(
            res, constraints=self.cs, point=point, farkas=farkas, residual=residual, extras=extras
        )

    def verdict_on_unit(self, res: FeasibilityResult) -> FeasibilityResult:
        r"""A feasibility verdict on ``cs`` handed to a solve on ``unit``, not proved again:
        the point :math:`W' = sW/\gamma` and the max-margin QP's multipliers
        ``extras["qp_dual"]`` (degree 2, a hint) mapped by :meth:`inverse`, the rest as
        given. Refused (:meth:`error`) where float64 cannot hold the point."""
        to_unit = self.inverse()
        extras = dict(res.extras)
        if extras.get("qp_dual") is not None:
            extras["qp_dual"] = to_unit.dual_hint(extras["qp_dual"], 2)
        point = to_unit.w(res.point, "the feasible point")
        return replaced(res, constraints=self.unit, point=point, extras=extras)

    def _extras(self, extras: dict[str, Any]) -> dict[str, Any]:
        """``extras`` of an answer on ``unit`` on ``cs``: :meth:`tagged`, and a feasibility
        verdict in ``extras["feasibility"]`` decided on ``unit`` mapped to ``cs``
        (:meth:`verdict`)."""
        out = self.tagged(extras)
        feas = out.get("feasibility")
        if isinstance(feas, FeasibilityResult) and feas.constraints is self.unit:
            out["feasibility"] = self.verdict(feas)
        return out

    def factor(self, x: Any) -> Any:
        r"""A factor of W (K or Q, :math:`W = KQ^\top`) on ``cs``: :math:`x\sqrt{\gamma/s}`
        (within float64's range whenever W is: :math:`|K_{kl}|^2 \le \|W\|` for balanced
        factors)."""
        if x is None:
            return None
        e = self.bounds - self.rows
        return _ldexp(np.asarray(x) * (math.sqrt(2.0) if e % 2 else 1.0), e // 2)

    def result(
        self,
        res: SVMResult,
        norm: NormGeometry,
        tol: float,
        factored: FactoredCheck | None = None,
    ) -> SVMResult:
        r"""``res``, solved on the rows of unit size, as the result on ``cs``: W, the
        multipliers (of the norm's ``dual_degree``), K, Q, the objective and its lower bound
        and the prompt vector p mapped back, the margins recomputed on ``cs``, and the result
        certified again there (:func:`~._result.finish`; by ``factored(cs, K, Q, lam,
        margins)`` when given and the factors are there); a Farkas vector of an answer without
        W is :math:`\lambda'/\gamma`, and a feasibility verdict on the unit rows in
        ``extras["feasibility"]`` the verdict on ``cs`` (:meth:`verdict`). Refused (:meth:`error`) where float64 cannot hold it;
        multipliers it cannot hold beside a W it holds leave W uncertified instead
        (``OPTIMAL_INACCURATE``, ``dual`` None, a certificate of W's rows alone whose other
        residuals are NaN, :func:`~._certificates.primal_certificate`; the reason appended to
        the message, their :math:`\log_2` size in ``extras["dual_beyond_float64"]``: no
        fallback is tried)."""
        cs = self.cs
        extras = self._extras(res.extras)
        if res.W is None:  # a Farkas vector is the same on both sets of rows, up to c^T lam = 1
            return replaced(res, constraints=cs, extras=extras, farkas=self.farkas(res.farkas))
        W = self.w(res.W)
        k = norm.dual_degree
        beyond = self._beyond(res.dual, self._dual_exponent(k))
        # W fits and its multipliers do not: W returned, its certificate on cs primal only
        lam = self.dual(res.dual, k) if beyond is None else None
        K, Q = self.factor(res.K), self.factor(res.Q)
        margins = self.margins(res.W)
        certificate = None
        if lam is None:
            why = f"{MULTIPLIERS} are beyond float64 (dual None)"
            certificate = primal_certificate(cs, W, margins, tol, why)
        elif factored is not None and K is not None and Q is not None:
            certificate = factored(cs, K, Q, lam, margins)
        out = finish(
            cs,
            W,
            lam,
            norm=norm,
            tol=tol,
            status=res.status,
            message=res.message,
            solver=res.solver,
            margins=margins,
            certificate=certificate,
            objective=self.w(res.objective, "the objective ||W||"),
            rank=res.rank,
            n_iter=res.n_iter,
            solve_time=res.solve_time,
            farkas=res.farkas,
            K=K,
            Q=Q,
            lower_bound=self.w(res.lower_bound, "the lower bound on ||W||"),
            extras=extras,
            proof=res.proof,
            p=self.w(res.p, "p"),
        )
        if beyond is None:
            return out
        return replaced(  # finish downgraded it: its certificate fails (not computed)
            out,
            extras={**out.extras, "dual_beyond_float64": beyond},  # no fallback does better
            message=f"{out.message}; {_beyond_text(self.cs, MULTIPLIERS, beyond, (k - 1, k))}",
        )

    def _beyond(self, x: Any, exponent: int, smallest: int = SMALLEST_EXPONENT) -> float | None:
        r""":math:`\log_2` of the largest entry of ``x`` times 2^exponent when that, not 0 and
        finite, leaves [2^smallest, 2^1024) (``smallest``: 2^-1022, all digits kept, unless a
        caller keeps subnormal entries); None when float64 holds it (or ``x`` is None)."""
        if x is None:
            return None
        top = float(np.abs(np.asarray(x, dtype=float)).max(initial=0.0))
        if not 0.0 < top < math.inf:
            return None
        size = math.log2(top) + exponent
        return None if smallest <= size < LARGEST_EXPONENT else size

    def _map(
        self,
        x: Any,
        exponent: int,
        what: str,
        degree: tuple[int, int],
        smallest: int = SMALLEST_EXPONENT,
    ) -> Any:
        """``x`` times 2^exponent, refused (:meth:`error`) when float64 cannot hold it
        (:meth:`_beyond`); None stays None."""
        size = self._beyond(x, exponent, smallest)
        if size is not None:
            raise self.error(what, size, degree)
        return None if x is None else _ldexp(x, exponent)

    def margins(self, W_unit: np.ndarray) -> np.ndarray:
        r"""The margins :math:`a_j^\top W b_j` on ``cs`` of :math:`W = \gamma W'/s`, from those
        of :math:`W'` on ``unit`` times :math:`\gamma` (``cs.apply(W)`` up to rounding, where
        that does not overflow on the way: :math:`AW` can, at margins within float64);
        refused (:meth:`error`) when a margin is beyond float64."""
        return self.bound(self.unit.apply(W_unit))

    def bound(self, x: Any, what: str = "the margins a_j^T W b_j") -> Any:
        r"""A quantity of the bounds' degree on ``unit`` (the margins, a row's violation) on
        ``cs``: :math:`\gamma x`; refused (:meth:`error`) when it is beyond float64 (one
        below 2^-1022 keeps what digits it has)."""
        out = _ldexp(x, self.bounds)
        if not np.all(np.isfinite(out)) and np.all(np.isfinite(x)):
            raise self.error(what, math.inf, (1, 0))
        return out

    def error(self, what: str, size: float, degree: tuple[int, int]) -> ProblemError:
        r"""The :class:`~svmgeo.ProblemError` of an answer ``what`` of size :math:`2^{size}`
        that float64 cannot hold (:func:`_beyond_text`); on the maps to the unit rows
        (:meth:`inverse`), of a ``what`` given on the caller's rows ``unit`` that is of no
        answer's size there (:func:`_off_scale_text`, naming the caller's rows)."""
        if self.to_unit:
            return ProblemError(
                f"{self.where} cannot solve on these rows: "
                + _off_scale_text(self.unit, what, size, degree)
            )
        return ProblemError(
            f"{self.where} cannot return its answer on these rows: "
            + _beyond_text(self.cs, what, size, degree)
        )


def _beyond_text(cs: ConstraintSet, what: str, size: float, degree: tuple[int, int]) -> str:
    r"""Why float64 cannot hold ``what``, of size :math:`2^{size}` on ``cs`` and scaling like
    :math:`\max|c|^p/(\max|a|\max|b|)^q`, ``degree`` = (p, q), and how to rescale ``rhs``
    or the rows ``A``, ``B``."""
    too_large = size >= LARGEST_EXPONENT
    p, q = degree
    fix = []
    if p:
        fix.append(f"{'divide' if too_large == (p > 0) else 'multiply'} 'rhs' by a power of two")
    if q:
        fix.append(f"{'multiply' if too_large else 'divide'} the rows 'A' or 'B' by one")
    reached = "beyond 2^1024 = 1.8e308" if math.isinf(size) else f"2^{size:.1f}"
    return (
        f"{what} (scaling like {_law(p, q)}) would reach {reached}, "
        f"{'beyond' if too_large else 'below'} {_RANGE}; here {_sizes(cs)}. The problem is "
        f"scale-covariant: {' or '.join(fix)} until it fits, solve, and scale the answer back "
        "(W scales exactly like rhs / (|a_j| |b_j|))."
    )


def _off_scale_text(cs: ConstraintSet, what: str, size: float, degree: tuple[int, int]) -> str:
    r"""Why ``what``, given on the caller's rows ``cs`` and of size :math:`2^{size}` on their
    rows of unit size (where an answer is of order 1), cannot be solved with: it is of no
    answer's size on ``cs``, which rescaling ``cs`` does not change (the unit rows, and
    ``what`` on them, are the same for ``cs`` times any power of two)."""
    p, q = degree
    return (
        f"{what} given would reach 2^{size:.1f} on their rows of unit size, where this is "
        f"solved, {'beyond' if size > 0 else 'below'} {_RANGE}: far from the size of an "
        f"answer on these rows ({what} scales like {_law(p, q)}; here {_sizes(cs)}), which "
        "rescaling the rows does not change. Pass the answer of a solve of these rows."
    )


def _sizes(cs: ConstraintSet) -> str:
    """The sizes of the bounds and the rows of ``cs``, in the words of the messages."""
    top_a, top_b = cs._largest_entries
    return (
        f"max|c_j| = {cs._largest_bound:.3g} in 'rhs', max|a_j| = {top_a:.3g} in 'A' and "
        f"max|b_j| = {top_b:.3g} in 'B'"
    )


def _law(p: int, q: int) -> str:
    """``rhs^p / (|a_j| |b_j|)^q`` in words."""
    top = {0: "1", 1: "rhs", -1: "1 / rhs"}.get(p, f"rhs^{p}")
    if q == 0:
        return top
    bottom = "(|a_j| |b_j|)" if q == 1 else f"(|a_j| |b_j|)^{q}"
    return f"{top} / {bottom}"


def _ldexp(x: Any, exponent: int) -> Any:
    r""":math:`x\,2^{e}`, exact within float64's range (:meth:`Scale._map` checks it); a
    number stays a number."""
    with np.errstate(over="ignore", under="ignore"):
        out = np.ldexp(np.asarray(x, dtype=float), exponent)
    return float(out) if out.ndim == 0 else out


def unit_rows(
    cs: ConstraintSet, where: str, band: float = SCALE_BAND
) -> tuple[ConstraintSet, Scale]:
    r"""Rows and bounds of unit size, :math:`a_j/\alpha`, :math:`b_j/\beta`, :math:`c_j/\gamma`,
    and the :class:`Scale` that maps an answer on them back to ``cs``.

    :math:`\alpha, \beta, \gamma` are powers of two (exact). :math:`\alpha, \beta` are the
    ones nearest :math:`\max|a|, \max|b|`, or 1 when :math:`\max|a|\max|b|` is within a factor
    ``band`` of 1 (:data:`SCALE_BAND` by default; the norm entry's ``scale_band`` in
    :func:`~._norms.on_unit_rows`). :math:`\gamma` is the one nearest :math:`\max_j|c_j|` when
    that lies outside [1/:data:`SCALE_BAND`, :data:`SCALE_BAND`] (and is not 0; large bounds
    by no more than keeps every nonzero bound above 1/:data:`SCALE_BAND`,
    :func:`_bound_exponent`), else 1: the solvers' inner tolerances are absolute, so bounds
    such as :math:`c_j = 10^{-10}` drowned in them (answers missing every row by most of its
    bound), and with bounds such as :math:`2^{30}` the SDP backends failed (and the factored
    nuclear path raised). The certificate judges a violation as a fraction of its row's bound
    (:func:`~._certificates.primal_infeasibility`), which scaling by :math:`\gamma` does not
    change. ``cs`` itself and the identity when nothing is scaled.

    Raises
    ------
    ProblemError
        When :math:`\max|a|\max|b|`, the largest entry of the constraint matrices
        :math:`a_j b_j^\top`, is not in :math:`[2^{-1022}, 2^{1024})` (:func:`check_rows`).
    """
    check_rows(cs, where)
    top_a, top_b = cs._largest_entries
    scale = Scale(cs, cs, 0, _bound_exponent(cs), where)
    rows_unit = top_a == 0.0 or top_b == 0.0 or 1.0 / band <= top_a * top_b <= band
    if rows_unit and scale.bounds == 0:
        return cs, scale
    fields: dict[str, Any] = {"tokens": None}
    if not rows_unit:
        alpha = round(math.log2(top_a))
        # beta nearest max|b|, within one step so that s = alpha beta is a normal float64
        beta = round(math.log2(top_b))
        beta = min(max(beta, SMALLEST_EXPONENT - alpha), LARGEST_EXPONENT - 1 - alpha)
        fields.update(A=_ldexp(cs.A, -alpha), B=_ldexp(cs.B, -beta))
        scale = dataclasses.replace(scale, rows=alpha + beta)
    if scale.bounds != 0:
        fields["rhs"] = _ldexp(cs.rhs, -scale.bounds)
    unit = dataclasses.replace(cs, **fields)
    return unit, dataclasses.replace(scale, unit=unit)


def check_rows(cs: ConstraintSet, where: str) -> None:
    r"""A :class:`~svmgeo.ProblemError` naming ``where`` and the rows ``A``, ``B`` unless
    :math:`\max|a|\max|b|`, the largest entry of the constraint matrices :math:`a_j b_j^\top`,
    is in :math:`[2^{-1022}, 2^{1024})` (or a row set is zero): the Gram matrix, the features
    and the certificates are formed from those entries."""
    top_a, top_b = cs._largest_entries
    if top_a == 0.0 or top_b == 0.0:
        return
    size = math.log2(top_a) + math.log2(top_b)
    if SMALLEST_EXPONENT <= size < LARGEST_EXPONENT:
        return
    raise ProblemError(
        f"{where} cannot solve on these rows: the entries a_jk b_jl of the constraint matrices "
        f"a_j b_j^T reach max|a_j| max|b_j| = 2^{size:.1f} (max|a_j| = {top_a:.3g} in 'A', "
        f"max|b_j| = {top_b:.3g} in 'B'), {'beyond' if size >= LARGEST_EXPONENT else 'below'} "
        "float64's range [2^-1022, 2^1024) = [2.2e-308, 1.8e308), in which the Gram matrix, "
        "the features and the certificates are formed. Scale the tokens (the rows A or B) by "
        "a power of two towards 1, and W back (it scales like 1 / (|a_j| |b_j|))."
    )
