# SPDX-License-Identifier: BSD-3-Clause
r"""Losses :math:`\ell` of the risk as a table, and a user's own loss.

.. math::

    L(W) = \frac1n \sum_{i,k} \ell(Y_{ik} f_{ik}(W)), \qquad
    \nabla L(W) = \frac1n \sum_{i,k} \ell'(Y_{ik} f_{ik})\, Y_{ik}\, \nabla f_{ik}(W),

so training needs :math:`\ell` (the recorded risk) and :math:`\ell'` (the step); the kernels
form each query's weight as :math:`\mathrm{sign}(\ell')\, e^{\log|\ell'|}` so that normalized
steps go on after :math:`\ell'` itself underflows. A loss is a :class:`LossSpec`: the built-ins
of :data:`LOSS_SPECS` (``"logistic"``, ``"exponential"``, ``"correlation"`` are the ones
:func:`svmgeo.train` has compiled kernels for; ``"square"`` is here for
:func:`svmgeo.check_loss`), or a user's own, given as a :class:`LossSpec` or as a tuple
``(value, derivative[, second derivative])`` of callables ``u -> array``
(:func:`get_loss` turns either into a :class:`LossSpec`). The same object goes to
:func:`svmgeo.check_loss` (the hypotheses on the attained interval) and to
:func:`svmgeo.train` / :func:`svmgeo.train_batch` / :func:`svmgeo.loss_and_grad`
(``loss=my_loss``, every backend: see docs/attention-maps.md, "A user's own loss").
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from ._errors import LossWarning, ProblemError
from ._linalg import logistic
from ._validation import check_option

__all__ = [
    "LOSS_SPECS",
    "LossSpec",
    "LossWarning",
    "check_user_loss",
    "get_loss",
    "is_numba_function",
    "raw_function",
    "warn_nonnegative_derivative",
]

Fn = Callable[[np.ndarray], np.ndarray]


def _sup_interval(f: Fn, lo: np.ndarray, hi: np.ndarray, peak: float | None) -> np.ndarray:
    """sup of a function unimodal with its maximum at ``peak`` (None: monotone) over [lo, hi]."""
    vals = np.maximum(np.abs(f(lo)), np.abs(f(hi)))
    if peak is None:
        return vals
    return np.where((lo <= peak) & (peak <= hi), np.abs(f(np.asarray(peak))), vals)


@dataclass(frozen=True)
class LossSpec:
    r"""A loss :math:`\ell` with its derivatives: the risk is
    :math:`L = \frac1n\sum_{i,k}\ell(Y_{ik} f_{ik})`.

    Attributes
    ----------
    name : str
    value, d1 : callable ``u -> array``
        :math:`\ell(u)`, :math:`\ell'(u)`, elementwise on arrays (numpy arrays; CuPy arrays
        on ``backend="cupy"``). On ``backend="numba"`` they must also compile with numba
        for a float ``u`` (``numba.njit`` functions, or plain ones numba can compile).
    d2 : callable or None
        :math:`\ell''(u)` (used by :func:`~svmgeo.check_loss`; training does not need it).
    sup_d1, sup_d2 : callable ``(lo, hi) -> array`` or None
        Exact :math:`\sup|\ell'|` and :math:`\sup|\ell''|` over :math:`[lo, hi]` (built-ins), so
        the grid check of :func:`~svmgeo.check_loss` is a proof.
    log_abs_d1 : callable or None
        :math:`\log|\ell'(u)|` without underflow, for losses with :math:`\ell' < 0`
        everywhere (normalized steps far out, :meth:`~svmgeo.analysis.TensorData.direction`).
        Training uses it, with :math:`\mathrm{sign}\,\ell' = -1`, in place of
        :math:`\log|\ell'(u)|` from ``d1``: without it a normalized run stops
        (``GRADIENT_UNDERFLOW`` or ``STATIONARY``) once every :math:`\ell'(Y f)` underflows.

    Examples
    --------
    A smooth hinge, trained like a built-in (``backend="numpy"`` runs any vectorized
    callables):

    >>> import numpy as np, svmgeo as sg
    >>> hinge = sg.LossSpec("softhinge", lambda u: np.logaddexp(0.0, 4 * (1 - u)) / 4,
    ...                     lambda u: -0.5 * (1 + np.tanh(2 * (1 - u))))
    >>> run = sg.train(sg.random_data(4, 5, 6, seed=0), loss=hinge, n_steps=20,
    ...                backend="numpy")
    >>> run.status
    <StopStatus.MAX_STEPS: 'max_steps'>
    """

    name: str
    value: Fn
    d1: Fn
    d2: Fn | None = None
    sup_d1: Callable[[np.ndarray, np.ndarray], np.ndarray] | None = None
    sup_d2: Callable[[np.ndarray, np.ndarray], np.ndarray] | None = None
    log_abs_d1: Fn | None = None

    def _repr_html_(self) -> str:  # Jupyter: the field table (svmgeo._summary)
        from ._summary import html_summary

        return html_summary(self)

    def __reduce_ex__(self, protocol: Any) -> Any:
        """A built-in pickles by its name and unpickles as the same object of
        :data:`LOSS_SPECS` (its callables are lambdas; a copy would also lose the compiled
        kernels, which only the table's own objects select)."""
        if is_builtin(self):
            return (_builtin_loss, (self.name,))
        return super().__reduce_ex__(protocol)


LOSS_SPECS: dict[str, LossSpec] = {
    "logistic": LossSpec(
        "logistic",
        lambda u: np.logaddexp(0.0, -u),
        lambda u: -logistic(-u),
        lambda u: logistic(u) * logistic(-u),
        lambda lo, hi: logistic(-lo),  # |l'| = sigma(-u) decreases
        lambda lo, hi: _sup_interval(lambda u: logistic(u) * logistic(-u), lo, hi, 0.0),
        lambda u: -np.logaddexp(0.0, u),
    ),
    "exponential": LossSpec(
        "exponential",
        lambda u: np.exp(-u),
        lambda u: -np.exp(-u),
        lambda u: np.exp(-u),
        lambda lo, hi: np.exp(-lo),
        lambda lo, hi: np.exp(-lo),
        lambda u: -u,
    ),
    "correlation": LossSpec(
        "correlation",
        lambda u: -u,
        lambda u: -np.ones_like(u),
        lambda u: np.zeros_like(u),
        lambda lo, hi: np.ones_like(lo),
        lambda lo, hi: np.zeros_like(lo),
        lambda u: np.zeros_like(u),
    ),
    "square": LossSpec(
        "square",
        lambda u: (1.0 - u) ** 2,
        lambda u: 2.0 * (u - 1.0),
        lambda u: np.full_like(u, 2.0),
        lambda lo, hi: 2.0 * np.maximum(np.abs(lo - 1.0), np.abs(hi - 1.0)),
        lambda lo, hi: np.full_like(lo, 2.0),
    ),
}
"""Built-in losses with exact derivative bounds: the three of :func:`~svmgeo.train` and the
square loss (1 - u)², whose stationary point u = 1 check_loss flags when it is attained."""


def get_loss(loss: Any, where: str = "check_loss") -> LossSpec:
    """A :class:`LossSpec` from a built-in name, a LossSpec, or ``(value, d1[, d2])`` callables
    (numba functions among them mapped over arrays, see :func:`raw_function`)."""
    if isinstance(loss, LossSpec):
        numba_fields: dict[str, Any] = {
            name: _vectorized(f)
            for name in ("value", "d1", "d2", "log_abs_d1")
            if is_numba_function(f := getattr(loss, name))
        }  # numba functions of a float, mapped over arrays
        return replace(loss, **numba_fields) if numba_fields else loss
    if isinstance(loss, str):
        check_option(loss, "loss", tuple(LOSS_SPECS), where=where)
        return LOSS_SPECS[loss]
    if isinstance(loss, tuple) and len(loss) in (2, 3) and all(callable(f) for f in loss):
        fns = [_vectorized(f) for f in loss]
        return LossSpec("user", fns[0], fns[1], fns[2] if len(fns) == 3 else None)
    raise ProblemError(
        f"The 'loss' parameter of {where} must be a built-in name "
        f"({', '.join(repr(k) for k in LOSS_SPECS)}), a LossSpec, or a tuple (value, "
        f"derivative[, second derivative]) of callables u -> array; got {loss!r}."
    )


def _builtin_loss(name: str) -> LossSpec:
    """The built-in loss ``name`` of :data:`LOSS_SPECS` (what a pickled built-in loads as)."""
    return LOSS_SPECS[name]


def is_builtin(spec: LossSpec) -> bool:
    """Whether ``spec`` is one of :data:`LOSS_SPECS` itself (not the user's callables, nor a
    copy of a built-in under another name)."""
    return LOSS_SPECS.get(spec.name) is spec


def is_numba_function(f: Any) -> bool:
    """Is ``f`` a numba dispatcher (``numba.njit``), without importing numba?"""
    return hasattr(f, "py_func") and hasattr(f, "signatures")


def raw_function(f: Any) -> Any:
    """The user's own callable behind a wrapper of :func:`get_loss`."""
    return getattr(f, "__wrapped__", f)


def _vectorized(f: Callable[..., Any]) -> Fn:
    """``f`` elementwise on numpy arrays: a constant output is broadcast, a numba function of
    a float is mapped over the entries; arrays of another namespace (CuPy) pass through."""
    if is_numba_function(f):
        mapped = np.vectorize(f, otypes=[float])

        def g(u: np.ndarray) -> np.ndarray:
            return np.asarray(mapped(u), dtype=float)

    else:

        def g(u: np.ndarray) -> np.ndarray:
            out = f(u)
            if not isinstance(u, np.ndarray | float | int):
                return out  # CuPy arrays: the user's own
            out = np.asarray(out, dtype=float)
            if out.shape != np.shape(u):
                out = np.vectorize(lambda x: float(f(x)))(u)
            return out

    g.__wrapped__ = f  # type: ignore[attr-defined]
    return g


def check_user_loss(
    spec: LossSpec, probe: np.ndarray, where: str, *, overflow_ok: bool = False
) -> None:
    """Raise a ProblemError unless the callables of a user loss run on ``probe`` (numpy,
    float) and give arrays of its shape: ``value`` and ``d1`` finite (with ``overflow_ok``,
    :func:`svmgeo.check_loss`'s reading, ±inf allowed: a loss past float64's range there is
    undecided, not wrong), ``d2`` and ``log_abs_d1`` (when given) without NaN."""
    fields = (
        ("value", spec.value),
        ("d1", spec.d1),
        ("d2", spec.d2),
        ("log_abs_d1", spec.log_abs_d1),
    )
    for field, fn in fields:
        if fn is None:
            continue
        what = f"the loss's {field} callable ({spec.name!r})"
        try:
            with np.errstate(all="ignore"):  # a NaN or inf is reported below, by value
                out = np.asarray(fn(probe.copy()), dtype=float)
        except Exception as exc:  # the user's code: say which callable failed, and on what
            raise ProblemError(
                f"The 'loss' parameter of {where}: {what} failed on a float64 array of shape "
                f"{probe.shape} ({type(exc).__name__}: {exc}). Each callable takes an array u "
                "and returns l(u), l'(u) or log|l'(u)| elementwise, e.g. "
                "lambda u: np.logaddexp(0.0, -u)."
            ) from exc
        if out.shape != probe.shape:
            raise ProblemError(
                f"The 'loss' parameter of {where}: {what} must return an array of the input's "
                f"shape {probe.shape}; got shape {out.shape}. Write it elementwise (numpy ufuncs)."
            )
        bad = np.isnan(out) if overflow_ok or field in ("d2", "log_abs_d1") else ~np.isfinite(out)
        if np.any(bad):
            u = float(probe.ravel()[np.argmax(bad.ravel())])
            got = float(out.ravel()[np.argmax(bad.ravel())])
            raise ProblemError(
                f"The 'loss' parameter of {where}: {what} is not finite at u = {u:.6g} "
                f"(got {got}); a loss and its derivatives must be numbers on the real line, "
                "finite where float64 holds them."
            )


def warn_nonnegative_derivative(
    spec: LossSpec, lo: float, hi: float, where: str, grid: int = 257, stacklevel: int = 4
) -> None:
    r"""Warn (:class:`LossWarning`) when :math:`\ell'(u) \ge 0` at a point of a grid of
    ``grid`` points on :math:`[lo, hi]`, the hull of the intervals :math:`Y f` can attain.

    A measurement on the grid (no derivative bound; :func:`svmgeo.check_loss` checks each
    query's own interval and proves it with ``d2_bound``): gradient descent still runs, but
    where :math:`\ell'` vanishes inside the attained interval the pure max-margin limit is not
    expected (GD holds :math:`Y f` near the stationary point).
    """
    u = np.linspace(lo, hi, grid)
    g = np.asarray(spec.d1(u), dtype=float)
    if np.all(g < 0.0):
        return
    import warnings

    first = float(u[np.argmax(g >= 0.0)])
    warnings.warn(
        f"{where}: loss {spec.name!r} has l'(u) >= 0 at u = {first:.6g}, inside [{lo:.6g}, "
        f"{hi:.6g}], the hull of the intervals that Y f attains (a grid of {grid} points). "
        "Gradient descent still runs, but where l' vanishes on a query's interval the "
        "max-margin limit is not expected; svmgeo.check_loss(loss, data) checks each query.",
        LossWarning,
        stacklevel=stacklevel,
    )
