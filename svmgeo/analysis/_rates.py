# SPDX-License-Identifier: BSD-3-Clause
r"""Rates of a training run: norm growth against :math:`\log t` and the decay of the direction
error, with seeded bootstrap intervals and a lack-of-fit check of each line.

.. math::

    \|W(t)\| \approx a + b\,\log t,\qquad
    1 - \mathrm{corr}(W(t), \bar W) \approx c\, t^{-\kappa}
    \quad\text{and}\quad \approx c'\,(\log t)^{-\lambda}

For gradient descent with plain steps :math:`\eta < 2/\beta` (:math:`\beta` the smoothness
of the risk) on separable linear logistic regression these are theorems (Soudry, Hoffer,
Nacson, Gunasekar, Srebro 2018): :math:`w(t) = \hat w\log t +
O(\log\log t)` with :math:`\hat w` the hard-margin SVM, so :math:`b = \|\hat w\|` and the
direction error decays like a power of :math:`1/\log t` (:math:`\lambda = 2` when the
residual converges). For softmax attention they are measurements.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np

from .._errors import ProblemError
from .._linalg import correlation
from .._summary import summarized
from .._validation import check_array, check_int, check_option, check_real
from ..gd import StopStatus
from ..solvers import parse_norm

__all__ = ["LackOfFit", "Rates", "fit_rates"]

_SMALL_FIT = 10
"""Fewer fitted records than this and the verdict says how many. A percentile bootstrap of n
records draws from at most :math:`\binom{2n-1}{n}` distinct resamples (126 for n = 5; those
with a single distinct step have no slope and are dropped), so its interval is coarse, and at
such n too narrow (for a mean, the bootstrap variance is :math:`(n-1)/n` of the usual
unbiased estimate); the lack-of-fit term leaves n - 3 residual degrees of freedom
(none at n = 3). Where the reader is told, not a proved bound."""


class LackOfFit(NamedTuple):
    r"""The lack-of-fit check of one line fit :math:`y \approx a + b\,x` (:func:`fit_rates`).

    A line's local slope is constant; ``drift`` measures how far the records' is from
    constant: with the quadratic least-squares fit :math:`y \approx a' + b'x + c\,x^2` over
    the same records,

    .. math::

        \mathrm{drift} = \frac{2c\,(x_{\max} - x_{\min})}{b},

    the change of the quadratic's slope :math:`b' + 2cx` across the fitted window relative to
    the line's slope :math:`b` (+1.0: the local slope grows by 100 % of :math:`b` from the
    first fitted record to the last; negative: it falls).

    Attributes
    ----------
    drift : float
    drift_ci : tuple of float
        Its percentile bootstrap interval at ``level``, over the same resamples as the slope's
        interval (NaN with fewer than 4 records: 3 points fix a quadratic exactly, leaving
        nothing to test it on).
    detected : bool
        The line does not fit these records: the interval excludes 0 (the curvature is
        there at ``level``) and ``|drift|`` exceeds ``max_rel_width`` (the local slope moves
        across the window by more than a narrow interval may span). Measured on the fitted
        window, not a theorem about the run.
    """

    drift: float
    drift_ci: tuple[float, float]
    detected: bool


@summarized
@dataclass(frozen=True, eq=False)
class Rates:
    r"""What :func:`fit_rates` measured; truthy when the fits converged (not a verdict on
    the run's limit: see ``converged``).

    Attributes
    ----------
    norm_slope : float
        :math:`b` of :math:`\|W(t)\| \approx a + b\log t` (``growth="log"``) or
        :math:`a + b\,t` (``growth="linear"``), least squares on the fitted records.
    norm_slope_ci : tuple of float
        Its bootstrap interval at ``level``.
    norm_intercept : float
        :math:`a`.
    norm_lack_of_fit : LackOfFit
        Whether the norm model (:math:`a + b\log t` or :math:`a + b\,t`) fails to fit: the
        drift of its slope in :math:`\log t` (in :math:`t`) across the window, from an added
        :math:`(\log t)^2` (:math:`t^2`) term.
    error_power : float or None
        :math:`\kappa` of :math:`1 - \mathrm{corr} \approx c\,t^{-\kappa}` (None without a
        ``direction``).
    error_power_ci : tuple of float or None
    error_power_lack_of_fit : LackOfFit or None
        Of :math:`\log(1 - \mathrm{corr})` against :math:`\log t` (an added
        :math:`(\log t)^2` term): the drift of :math:`\kappa` across the window.
    error_log_power : float or None
        :math:`\lambda` of :math:`1 - \mathrm{corr} \approx c'(\log t)^{-\lambda}`, the
        scale on which plain GD converges.
    error_log_power_ci : tuple of float or None
    error_log_power_lack_of_fit : LackOfFit or None
        Of :math:`\log(1 - \mathrm{corr})` against :math:`\log\log t` (an added
        :math:`(\log\log t)^2` term): the drift of :math:`\lambda` across the window.
    final_corr : float or None
        :math:`\mathrm{corr}(W(t_{\max}), \bar W)`.
    converged : bool
        The norm model fits (no lack of fit detected) with a narrow slope interval (width at
        most ``max_rel_width`` times the estimate's magnitude), and, with a ``direction``,
        the direction error decays: its decay model is :math:`(\log t)^{-\lambda}` where that
        fits, else :math:`t^{-\kappa}` where that fits, and that model's interval is narrow
        and lies above 0. A fit diagnostic over the fitted window, measured: a direction
        error that levels off at a positive value (a limit other than the direction) slowly
        enough can still fit a decay over the window; ``final_corr`` says how close the run
        came.
    verdict : str
        ``"fits converged"`` followed, with a ``direction``, by what was measured of it (the
        fitted decay of the direction error and ``final_corr``, e.g. ``"fits converged; 1 -
        corr decreases like (log t)^-1.99, final corr 0.998119"``, or ``t^-1.98`` for a
        power of t), or ``"not converged: <why>"`` (a wide interval, a lack of fit with the
        drift that shows it, an error that does not decrease). With fewer than 10 fitted
        records it says how many (``"fits converged on 3 records only"``: see ``steps``);
        for a :class:`~svmgeo.GDRun` that stopped before its ``n_steps`` it ends with the
        stop (``"; the run stopped early (callback) after 600 of 3000 steps"``).
    norm : str
        The norm of :math:`\|W\|`.
    growth : str
        The norm model fitted, ``"log"`` or ``"linear"``.
    steps : ndarray
        The record steps fitted (:math:`t \ge` ``t_min``).
    n_boot : int
    seed : int
        Of the bootstrap's generator (resampling the fitted records with replacement).
    level : float
    run_status : str or None
        The :class:`~svmgeo.gd.StopStatus` value of a :class:`~svmgeo.GDRun`
        (``"max_steps"`` when it took all its steps); None for a History or a pair.
    """

    norm_slope: float
    norm_slope_ci: tuple[float, float]
    norm_intercept: float
    norm_lack_of_fit: LackOfFit
    error_power: float | None
    error_power_ci: tuple[float, float] | None
    error_power_lack_of_fit: LackOfFit | None
    error_log_power: float | None
    error_log_power_ci: tuple[float, float] | None
    error_log_power_lack_of_fit: LackOfFit | None
    final_corr: float | None
    converged: bool
    verdict: str
    norm: str
    growth: str
    steps: np.ndarray
    n_boot: int
    seed: int
    level: float
    run_status: str | None

    def __bool__(self) -> bool:
        return self.converged


def _slopes_and_drifts(
    x: np.ndarray, y: np.ndarray, idx: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    r"""For each row of resampling indices: the least-squares slope :math:`b` of y on x, and
    the drift :math:`2c\,(x_{\max} - x_{\min})/b` of :class:`LackOfFit` (:math:`c` the
    :math:`x^2` coefficient of the quadratic fit, computed as the slope of y on the part of
    :math:`x^2` orthogonal to 1 and x, in units of the window for conditioning). NaN where
    the resample has a single distinct x (slope) or fewer than 3 (drift)."""
    xs, ys = x[idx], y[idx]
    xc = xs - xs.mean(axis=-1, keepdims=True)
    yc = ys - ys.mean(axis=-1, keepdims=True)
    var = np.sum(xc * xc, axis=-1)
    span = float(x.max() - x.min())
    square = ((xs - x.mean()) / span) ** 2
    square -= square.mean(axis=-1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        slope = np.where(var > 0.0, np.sum(xc * yc, axis=-1) / var, np.nan)
        across = square - (np.sum(square * xc, axis=-1) / var)[..., None] * xc
        rest = np.sum(across * across, axis=-1)
        # a quadratic needs 3 distinct x: with 2, `across` is 0 up to rounding
        curved = rest > 1e-12 * np.sum(square * square, axis=-1)
        c = np.where(curved, np.sum(across * yc, axis=-1) / rest, np.nan)
        return slope, 2.0 * c / (slope * span)


def _fit(
    x: np.ndarray,
    y: np.ndarray,
    rng: np.random.Generator,
    n_boot: int,
    level: float,
    max_rel_width: float,
) -> tuple[float, tuple[float, float], float, LackOfFit]:
    """(slope, percentile interval, intercept, lack of fit) of the least-squares line; the
    slope's interval and the drift's come from the same resamples."""
    n = x.size
    slope_all, drift_all = _slopes_and_drifts(x, y, np.arange(n)[None])
    slope, drift = float(slope_all[0]), float(drift_all[0])
    slopes, drifts = _slopes_and_drifts(x, y, rng.integers(0, n, size=(n_boot, n)))
    q = [(1 - level) / 2, (1 + level) / 2]
    slopes, drifts = slopes[np.isfinite(slopes)], drifts[np.isfinite(drifts)]
    lo, hi = np.quantile(slopes, q) if slopes.size else (np.nan,) * 2
    d_lo, d_hi = np.quantile(drifts, q) if n > 3 and drifts.size else (np.nan,) * 2
    detected = bool((d_lo > 0.0 or d_hi < 0.0) and abs(drift) > max_rel_width)
    check = LackOfFit(drift, (float(d_lo), float(d_hi)), detected)
    return slope, (float(lo), float(hi)), float(np.mean(y) - slope * np.mean(x)), check


def _history(run: Any) -> tuple[np.ndarray, np.ndarray]:
    if isinstance(run, tuple) and len(run) == 2:
        steps, Ws = run
    else:
        history = getattr(run, "history", run)
        steps, Ws = getattr(history, "step", None), getattr(history, "W", None)
        if Ws is None:
            Ws = getattr(history, "p", None)
    if steps is None or Ws is None:
        raise ProblemError(
            "fit_rates needs the recorded iterates: a GDRun (or History) with W (or p) in its "
            "record, or a pair (steps, iterates); got "
            f"{type(run).__name__} without them. Train with record including 'W'."
        )
    steps = check_array(steps, "steps", ndim=1)
    Ws = check_array(Ws, "iterates", ndim=(2, 3))
    values, counts = np.unique(steps, return_counts=True)
    if np.any(counts > 1):
        j = int(np.argmax(counts > 1))
        raise ProblemError(
            f"The 'steps' of fit_rates must be distinct (one iterate per step); got step "
            f"{values[j]:g} {counts[j]} times. Drop the repeated records, e.g. "
            "keep the first of each step (np.unique(steps, return_index=True))."
        )
    if Ws.shape[0] != steps.shape[0]:
        raise ProblemError(
            f"fit_rates needs one iterate per step; got {steps.shape[0]} steps and "
            f"{Ws.shape[0]} iterates."
        )
    return steps, Ws


_ROUNDOFF = 16.0 * float(np.finfo(float).eps)
"""A direction error 1 - corr at or below this is round-off: the iterate is on the direction."""


def fit_rates(
    run: Any,
    direction: Any = None,
    *,
    norm: str = "fro",
    growth: str = "log",
    t_min: float | None = None,
    n_boot: int = 1000,
    seed: int = 0,
    level: float = 0.95,
    max_rel_width: float = 0.25,
) -> Rates:
    r"""Fit :math:`\|W(t)\|` against :math:`\log t` and the decay of :math:`1 - \mathrm{corr}`.

    .. math::

        \|W(t)\| \approx a + b\log t,\qquad
        \log(1 - \mathrm{corr}(W(t), \bar W)) \approx \log c - \kappa\log t
        \approx \log c' - \lambda \log\log t

    by least squares over the records with :math:`t \ge t_{\min}`, each slope with a
    percentile bootstrap interval (the records resampled with replacement, ``n_boot`` times,
    from ``numpy.random.default_rng(seed)``).

    Each line is checked for lack of fit (:class:`LackOfFit`) by the classical test of an
    added term: refit with the square of its abscissa, :math:`(\log t)^2` (:math:`t^2` for
    ``growth="linear"``, :math:`(\log\log t)^2` for :math:`\lambda`), and bootstrap the
    quadratic coefficient over the same resamples as the slope, as the relative drift of
    the local slope across the window. A line fails to fit when that interval excludes 0
    (the curvature is there at ``level``) and the drift exceeds ``max_rel_width`` (the
    local slope moves across the window by more than a narrow interval may span: the
    fitted slope is no rate). Both conditions are needed: the records of a deterministic
    run show every deviation from a model once they are many (a theorem's lower-order
    terms included), so significance alone, that of this interval or of a residual runs
    test, would in the end reject every model; the drift says whether the deviation
    matters, in the slope's own units. The check is cheap (no new resamples). A detected
    lack of fit is measured on these records, not a theorem about the run: a theorem's
    model (Soudry et al. 2018) holds as :math:`t \to \infty` and may not fit a short
    window. The decay of the direction error is read off :math:`\lambda` where its line
    fits, else off :math:`\kappa` where that one does (normalized steps: measured, e.g.
    :math:`\kappa \approx 2` in docs/optimizers.md).

    Parameters
    ----------
    run : GDRun, History, or (steps, iterates)
        A run that recorded its iterates (``history.W``, or ``history.p``), or a pair of the
        steps (R,) and the iterates (R, d, d) or (R, d) of any model (e.g. a linear one).
    direction : array, optional
        :math:`\bar W`, e.g. an Att-SVM solution; without it only the norm is fitted.
    norm : str or tuple, default "fro"
        The norm of :math:`\|W(t)\|`: any entry of :data:`svmgeo.solvers.NORMS` (``"fro"``,
        ``"nuc"``, ``"spectral"``, ``("lp", p)``); ``"nuc"`` needs matrix iterates.
    growth : {"log", "linear"}, default "log"
        The norm model: :math:`a + b\log t`, as for plain GD on separable data (a theorem of
        Soudry et al. 2018 for linear logistic regression with :math:`\eta < 2/\beta`), or
        :math:`a + b\,t`, for steps of
        a fixed length (normalized GD with a constant step size, sign and steepest descent):
        their norm grows at most linearly, and linearly on svmgeo's runs (measured,
        docs/optimizers.md).
    t_min : float, optional
        First step fitted; default :math:`\sqrt{t_{\max}}` (the second half in :math:`\log t`)
        and at least 3 (so that :math:`\log\log t > 0`).
    n_boot : int, default 1000
        Bootstrap resamples, in [10, 10^6] (each draws one index per fitted record).
    seed : int, default 0
    level : float, default 0.95
    max_rel_width : float, default 0.25
        The widest interval, relative to its estimate, still called converged, and the
        largest drift of a slope across the window (:class:`LackOfFit`) still called a fit.

    Returns
    -------
    Rates

    Raises
    ------
    ProblemError
        Without recorded iterates, with fewer than 3 records at :math:`t \ge t_{\min}`, for
        a direction of another shape, or for ``norm="nuc"`` with vector iterates (R, d);
        for repeated steps, or iterates whose fitted norm line overflows float64.

    Examples
    --------
    >>> import numpy as np, svmgeo as sg
    >>> t = np.unique(np.geomspace(1, 1e5, 40).astype(int))
    >>> Ws = np.log(t)[:, None, None] * np.eye(2) + np.array([[0.0, 1.0], [0.0, 0.0]])
    >>> r = sg.fit_rates((t, Ws), np.eye(2))  # slope sqrt(2); 1 - corr ~ 1 / (4 log^2 t)
    >>> round(r.norm_slope, 2), round(r.error_log_power, 1), bool(r)
    (1.41, 2.0, True)
    >>> r.verdict
    'fits converged; 1 - corr decreases like (log t)^-1.99, final corr 0.998119'

    A direction error that levels off (1 - corr -> 0.2) is a power of neither log t nor t:
    its fitted powers fall across the window, which the lack-of-fit checks measure (a floor
    approached slowly enough can still fit a decay over a finite window; ``final_corr``
    says how close the run came):

    >>> theta = np.arccos(0.8) + 1.0 / np.log(t + 2)  # 1 - corr -> 0.2, as 1 / log t
    >>> Ws = np.log(t + 2)[:, None] * np.stack([np.cos(theta), np.sin(theta)], axis=1)
    >>> r = sg.fit_rates((t, Ws), np.array([1.0, 0.0]))
    >>> r.verdict
    'not converged: 1 - corr is neither a power of log t nor a power of t on these records: lambda changes by -55% [-56%, -53%] and kappa by -121% [-129%, -112%] across the window'
    >>> round(r.final_corr, 3), r.error_log_power_lack_of_fit.detected
    (0.745, True)

    A norm that grows like :math:`\sqrt t` is neither :math:`a + b\log t` nor
    :math:`a + b\,t`:

    >>> t = np.arange(100, 20001, 100)
    >>> sg.fit_rates((t, np.sqrt(t)[:, None])).verdict
    'not converged: the norm is not a + b log t on these records: its slope in log t changes by +196% [+187%, +210%] across the window'
    """
    steps, Ws = _history(run)
    entry, parameter = parse_norm(norm, "fit_rates")  # any norm of the table of norms
    norm_value = entry.geometry(parameter).value
    check_int(n_boot, "n_boot", low=10, high=10**6, where="fit_rates")
    check_int(seed, "seed", low=0, where="fit_rates")
    check_real(level, "level", low=0.0, high=1.0, low_open=True, high_open=True, where="fit_rates")
    check_real(max_rel_width, "max_rel_width", low=0.0, low_open=True, where="fit_rates")
    growth = check_option(growth, "growth", ("log", "linear"), where="fit_rates")
    order = np.argsort(steps, kind="stable")  # records in the order of their steps
    steps, Ws = steps[order], Ws[order]
    if t_min is not None:
        t_min = check_real(t_min, "t_min", low=0.0, where="fit_rates")
    t_max = float(steps.max(initial=0.0))
    lo_t = max(3.0, math.sqrt(t_max)) if t_min is None else max(3.0, t_min)
    keep = steps >= lo_t
    if np.count_nonzero(keep) < 3:
        raise ProblemError(
            f"fit_rates needs at least 3 records at t >= {lo_t:g}; got "
            f"{np.count_nonzero(keep)} (steps up to {t_max:g}). Train longer or record more "
            "often (record_every), or lower t_min."
        )
    t, Wt = steps[keep].astype(float), Ws[keep]
    rng = np.random.default_rng(seed)
    # iterates whose norms overflow (entries of 1e200) are fitted in units of 2**shift (exact;
    # norms are homogeneous) and the norm fit scaled back
    top = float(np.max(np.abs(Wt), initial=0.0))
    shift = math.frexp(top)[1] if top > 1e150 else 0
    try:
        y = np.array([norm_value(W) for W in (np.ldexp(Wt, -shift) if shift else Wt)])
    except ValueError:  # numpy's refusal of a matrix norm of a vector ("nuc")
        if Wt.ndim != 2:
            raise
        raise ProblemError(
            f"The 'norm' parameter of fit_rates got {norm!r}, a matrix norm, which needs "
            f"matrix iterates of shape (R, d, d); got vector iterates of shape {Ws.shape}. "
            "Pass norm='fro' (the Euclidean norm of a vector), or the iterates as matrices."
        ) from None
    x = np.log(t) if growth == "log" else t
    slope, slope_ci, intercept, norm_misfit = _fit(x, y, rng, n_boot, level, max_rel_width)
    if shift:
        with np.errstate(over="ignore"):
            scaled = np.ldexp([slope, intercept, *slope_ci], shift)  # 2.0**1024 overflows
        slope, intercept = float(scaled[0]), float(scaled[1])
        slope_ci = (float(scaled[2]), float(scaled[3]))
        if not (math.isfinite(slope) and math.isfinite(intercept)):
            raise ProblemError(
                f"The 'iterates' of fit_rates are too large for float64: their entries reach "
                f"{top:.3g}, and the fitted norm line overflows. Rescale them (e.g. iterates / "
                "1e100): the direction is unchanged and the norm fit scales with them."
            )
    why: list[str] = []

    def narrow(name: str, value: float, ci: tuple[float, float]) -> None:
        width = ci[1] - ci[0]
        if value == 0.0 and ci[0] == ci[1] == 0.0:  # bit-equal records: no fitted rate (the
            # round-off of equal values, an interval about 0, reads "wide": not converged too)
            why.append(f"{name} is 0 [{ci[0]:.3g}, {ci[1]:.3g}]: no change on these records")
        elif not np.isfinite(width) or width > max_rel_width * abs(value):
            why.append(f"the interval of {name} [{ci[0]:.3g}, {ci[1]:.3g}] is wide")

    def drift(check: LackOfFit) -> str:
        return f"{check.drift:+.0%} [{check.drift_ci[0]:+.0%}, {check.drift_ci[1]:+.0%}]"

    narrow("the norm slope", slope, slope_ci)
    if norm_misfit.detected:
        model, scale = ("a + b log t", "log t") if growth == "log" else ("a + b t", "t")
        why.append(
            f"the norm is not {model} on these records: its slope in {scale} changes by "
            f"{drift(norm_misfit)} across the window"
        )
    power = power_ci = power_misfit = log_power = log_power_ci = log_power_misfit = None
    final = None
    decay = ""
    if direction is not None:
        D = check_array(direction, "direction", ndim=(1, 2))
        if D.shape != Wt.shape[1:]:
            raise ProblemError(
                f"fit_rates needs a direction of the iterates' shape {Wt.shape[1:]}; got {D.shape}."
            )
        if not np.any(D):
            raise ProblemError("fit_rates needs a nonzero direction: a zero matrix has none.")
        err = np.array([1.0 - correlation(W, D) for W in Wt])
        final = 1.0 - float(err[-1])
        pos = err > _ROUNDOFF
        if not np.any(pos):
            decay = "on the direction to round-off"  # nothing left to decay
        elif np.count_nonzero(pos) < 3:
            why.append("the direction error is 0 in float64 (nothing left to fit)")
        else:
            le, lt = np.log(err[pos]), np.log(t[pos])
            k, k_ci, _, power_misfit = _fit(lt, le, rng, n_boot, level, max_rel_width)
            lam, lam_ci, _, log_power_misfit = _fit(
                np.log(lt), le, rng, n_boot, level, max_rel_width
            )
            power, power_ci = -k, (-k_ci[1], -k_ci[0])
            log_power, log_power_ci = -lam, (-lam_ci[1], -lam_ci[0])
            # the verdict reads the decay off the model that fits: a power of log t (plain GD's,
            # a theorem for linear models) first, else a power of t (normalized steps')
            if not log_power_misfit.detected:
                fitted = ("the error's log-power", log_power, log_power_ci, "(log t)")
            elif not power_misfit.detected:
                fitted = ("the error's power", power, power_ci, "t")
            else:
                fitted = None
            if fitted is None and not log_power_ci[0] > 0.0:
                why.append("the direction error does not decrease")
            elif fitted is None:
                why.append(
                    "1 - corr is neither a power of log t nor a power of t on these records: "
                    f"lambda changes by {drift(log_power_misfit)} and kappa by "
                    f"{drift(power_misfit)} across the window"
                )
            else:
                name, value, ci, scale = fitted
                narrow(name, value, ci)
                if not ci[0] > 0.0:
                    why.append("the direction error does not decrease")
                decay = f"1 - corr decreases like {scale}^-{value:.3g}"
    converged = not why
    n_fitted = t.size
    count = f" on {n_fitted} records only" if n_fitted < _SMALL_FIT else ""
    if not converged:
        verdict = f"not converged{count}: " + "; ".join(why)
    else:
        final_text = "" if final is None else f"final corr {final:.6g}"
        details = ", ".join(part for part in (decay, final_text) if part)
        verdict = f"fits converged{count}" + (f"; {details}" if details else "")
    status = getattr(run, "status", None)
    run_status = status.value if isinstance(status, StopStatus) else None
    if run_status is not None and status != StopStatus.MAX_STEPS:
        verdict += (
            f"; the run stopped early ({run_status}) after {run.n_steps} of "
            f"{run.config.n_steps} steps"
        )
    return Rates(
        norm_slope=slope,
        norm_slope_ci=slope_ci,
        norm_intercept=intercept,
        norm_lack_of_fit=norm_misfit,
        error_power=power,
        error_power_ci=power_ci,
        error_power_lack_of_fit=power_misfit,
        error_log_power=log_power,
        error_log_power_ci=log_power_ci,
        error_log_power_lack_of_fit=log_power_misfit,
        final_corr=final,
        converged=converged,
        verdict=verdict,
        norm=norm,
        growth=growth,
        steps=steps[keep],
        n_boot=n_boot,
        seed=seed,
        level=level,
        run_status=run_status,
    )
