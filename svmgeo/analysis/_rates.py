# SPDX-License-Identifier: BSD-3-Clause
r"""Rates of a training run: norm growth against :math:`\log t` and the decay of the direction
error, with seeded bootstrap intervals.

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
from typing import Any

import numpy as np

from .._errors import ProblemError
from .._linalg import correlation
from .._summary import summarized
from .._validation import check_array, check_int, check_option, check_real
from ..solvers import parse_norm

__all__ = ["Rates", "fit_rates"]


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
    error_power : float or None
        :math:`\kappa` of :math:`1 - \mathrm{corr} \approx c\,t^{-\kappa}` (None without a
        ``direction``).
    error_power_ci : tuple of float or None
    error_log_power : float or None
        :math:`\lambda` of :math:`1 - \mathrm{corr} \approx c'(\log t)^{-\lambda}`, the
        scale on which plain GD converges.
    error_log_power_ci : tuple of float or None
    final_corr : float or None
        :math:`\mathrm{corr}(W(t_{\max}), \bar W)`.
    converged : bool
        Every interval is narrow (width at most ``max_rel_width`` times the estimate's
        magnitude) and the direction error decreases (the interval of :math:`\lambda` lies
        above 0). A fit diagnostic over the fitted window, measured: a direction error that
        levels off at a positive value (a limit other than the direction) can still decrease
        over the window; ``final_corr`` says how close the run came.
    verdict : str
        ``"fits converged"`` followed, with a ``direction``, by what was measured of it (the
        fitted decay of the direction error and ``final_corr``, e.g. ``"fits converged; 1 -
        corr decreases like (log t)^-0.301, final corr 0.744934"``: a small power with a final
        correlation far from 1 is the signature of an error levelling off), or ``"not
        converged: <why>"``.
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
    """

    norm_slope: float
    norm_slope_ci: tuple[float, float]
    norm_intercept: float
    error_power: float | None
    error_power_ci: tuple[float, float] | None
    error_log_power: float | None
    error_log_power_ci: tuple[float, float] | None
    final_corr: float | None
    converged: bool
    verdict: str
    norm: str
    growth: str
    steps: np.ndarray
    n_boot: int
    seed: int
    level: float

    def __bool__(self) -> bool:
        return self.converged


def _slopes(x: np.ndarray, y: np.ndarray, idx: np.ndarray) -> np.ndarray:
    """Least-squares slopes of y on x for each row of resampling indices (NaN where the
    resample has a single distinct x)."""
    xs, ys = x[idx], y[idx]
    xc = xs - xs.mean(axis=-1, keepdims=True)
    yc = ys - ys.mean(axis=-1, keepdims=True)
    var = np.sum(xc * xc, axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(var > 0.0, np.sum(xc * yc, axis=-1) / var, np.nan)


def _fit(
    x: np.ndarray, y: np.ndarray, rng: np.random.Generator, n_boot: int, level: float
) -> tuple[float, tuple[float, float], float]:
    """(slope, percentile interval, intercept) of the least-squares line."""
    n = x.size
    slope = float(_slopes(x, y, np.arange(n)[None])[0])
    boot = _slopes(x, y, rng.integers(0, n, size=(n_boot, n)))
    boot = boot[np.isfinite(boot)]
    lo, hi = np.quantile(boot, [(1 - level) / 2, (1 + level) / 2]) if boot.size else (np.nan,) * 2
    return slope, (float(lo), float(hi)), float(np.mean(y) - slope * np.mean(x))


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
        The widest interval, relative to its estimate, still called converged.

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

    A direction error that levels off is still "fits converged" over a finite window (no
    finite window tells a slow decay from a floor); the verdict shows the evidence:

    >>> theta = np.arccos(0.8) + 1.0 / np.log(t + 2)  # 1 - corr -> 0.2, as 1 / log t
    >>> Ws = np.log(t + 2)[:, None] * np.stack([np.cos(theta), np.sin(theta)], axis=1)
    >>> sg.fit_rates((t, Ws), np.array([1.0, 0.0])).verdict
    'fits converged; 1 - corr decreases like (log t)^-0.301, final corr 0.744934'
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
    slope, slope_ci, intercept = _fit(np.log(t) if growth == "log" else t, y, rng, n_boot, level)
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
        if not np.isfinite(width) or width > max_rel_width * abs(value):
            why.append(f"the interval of {name} [{ci[0]:.3g}, {ci[1]:.3g}] is wide")

    narrow("the norm slope", slope, slope_ci)
    power = power_ci = log_power = log_power_ci = final = None
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
            pass  # every fitted record along the direction to round-off: nothing left to decay
        elif np.count_nonzero(pos) < 3:
            why.append("the direction error is 0 in float64 (nothing left to fit)")
        else:
            le, lt = np.log(err[pos]), np.log(t[pos])
            k, k_ci, _ = _fit(lt, le, rng, n_boot, level)
            lam, lam_ci, _ = _fit(np.log(lt), le, rng, n_boot, level)
            power, power_ci = -k, (-k_ci[1], -k_ci[0])
            log_power, log_power_ci = -lam, (-lam_ci[1], -lam_ci[0])
            narrow("the error's log-power", log_power, log_power_ci)
            if not log_power_ci[0] > 0.0:
                why.append("the direction error does not decrease")
    converged = not why
    if not converged:
        verdict = "not converged: " + "; ".join(why)
    elif final is None:
        verdict = "fits converged"
    elif log_power is None:
        verdict = f"fits converged; on the direction to round-off, final corr {final:.6g}"
    else:
        verdict = (
            f"fits converged; 1 - corr decreases like (log t)^-{log_power:.3g}, final corr "
            f"{final:.6g}"
        )
    return Rates(
        norm_slope=slope,
        norm_slope_ci=slope_ci,
        norm_intercept=intercept,
        error_power=power,
        error_power_ci=power_ci,
        error_log_power=log_power,
        error_log_power_ci=log_power_ci,
        final_corr=final,
        converged=converged,
        verdict=verdict,
        norm=norm,
        growth=growth,
        steps=steps[keep],
        n_boot=n_boot,
        seed=seed,
        level=level,
    )
