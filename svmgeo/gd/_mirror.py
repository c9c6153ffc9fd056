# SPDX-License-Identifier: BSD-3-Clause
r"""Mirror descent on softmax attention with the :math:`\ell_p` potential.

.. math::

    \psi(W) = \tfrac1p \|W\|_p^p = \tfrac1p \sum_{kl} |W_{kl}|^p,\qquad
    \nabla\psi(W_{t+1}) = \nabla\psi(W_t) - \eta\,\nabla L(W_t),

with :math:`\nabla\psi(W) = \mathrm{sign}(W)|W|^{p-1}` and its inverse
:math:`\nabla\psi^{-1}(\Theta) = \mathrm{sign}(\Theta)|\Theta|^{1/(p-1)}` (entrywise). This is the
":math:`\ell_p`-AttGD" of Julistiono, Tarzanagh, Azizan (arXiv:2410.14581), whose implicit bias is
the :math:`\ell_p` Att-SVM (:func:`svmgeo.att_svm` with ``norm=("lp", p)``). For ``p = 2`` it is
plain gradient descent.

Numerics. The iterate is kept in the mirror coordinates as :math:`\Theta = e^{c}\hat\Theta`
with :math:`\max|\hat\Theta| = 1`, and the gradient arrives from the numpy reference kernels
(:class:`svmgeo.gd._oracle.RiskOracle`) as :math:`\nabla L = e^{M} G` with :math:`G` of order
one, so the update :math:`\hat\Theta \leftarrow \hat\Theta - \eta e^{M-c} G` never forms the
exponentially small gradient or the growing norm on its own; :math:`W` is rebuilt as
:math:`e^{c/(p-1)}\,\nabla\psi^{-1}(\hat\Theta)`.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from .._compat import renamed
from .._errors import ProblemError
from .._validation import check_int, check_option, check_real
from ..data import TokenData
from ._backend import get_kernels
from ._config import BACKENDS, StopStatus
from ._oracle import RiskOracle

__all__ = ["MirrorRun", "inverse_mirror_map", "mirror_map", "train_mirror"]


def mirror_map(W: np.ndarray, p: float) -> np.ndarray:
    r""":math:`\nabla\psi(W) = \mathrm{sign}(W)\,|W|^{p-1}` (entrywise)."""
    W = np.asarray(W, dtype=float)
    return np.sign(W) * np.abs(W) ** (p - 1.0)


def inverse_mirror_map(Theta: np.ndarray, p: float) -> np.ndarray:
    r""":math:`(\nabla\psi)^{-1}(\Theta) = \mathrm{sign}(\Theta)\,|\Theta|^{1/(p-1)}` (entrywise)."""
    Theta = np.asarray(Theta, dtype=float)
    return np.sign(Theta) * np.abs(Theta) ** (1.0 / (p - 1.0))


@dataclass(frozen=True, eq=False)
class MirrorRun:
    r"""Result of :func:`train_mirror`.

    Attributes
    ----------
    W : ndarray of shape (d, d)
        Final weights.
    p : float
        The potential's exponent.
    step : ndarray of shape (R,)
        Steps taken at each record point.
    loss : ndarray of shape (R,)
        :math:`L(W)`.
    W_norm_p : ndarray of shape (R,)
        :math:`\|W\|_p` (entrywise).
    W_history : ndarray of shape (R, d, d)
        Snapshots of W.
    log_theta_scale : ndarray of shape (R,)
        :math:`c` with :math:`\max|\nabla\psi(W)| = e^{c}`.
    status : StopStatus
    n_steps : int
    message : str
    solve_time : float
    """

    W: np.ndarray
    p: float
    step: np.ndarray
    loss: np.ndarray
    W_norm_p: np.ndarray
    W_history: np.ndarray
    log_theta_scale: np.ndarray
    status: StopStatus
    n_steps: int
    message: str
    solve_time: float
    seconds = renamed("seconds", "solve_time", "MirrorRun")


def _split(Theta: np.ndarray) -> tuple[np.ndarray, float]:
    """(Θ̂, c) with Θ = e^c Θ̂ and max|Θ̂| = 1 (c = -inf for Θ = 0)."""
    top = float(np.max(np.abs(Theta), initial=0.0))
    if top == 0.0:
        return np.zeros_like(Theta), -math.inf
    return Theta / top, math.log(top)


def _weights(unit: np.ndarray, c: float, p: float) -> np.ndarray:
    if not math.isfinite(c):
        return np.zeros_like(unit)
    return math.exp(c / (p - 1.0)) * inverse_mirror_map(unit, p)


def train_mirror(
    data: TokenData,
    *,
    p: float,
    loss: str = "logistic",
    head: str = "linear",
    v: Any = None,
    V: Any = None,
    lam: float | None = None,
    step_size: float = 0.1,
    normalized: bool = False,
    n_steps: int = 1000,
    record_every: int | None = None,
    init: Any = "zero",
    backend: str = "numpy",
) -> MirrorRun:
    r"""Train softmax attention W by :math:`\ell_p` mirror descent.

    .. math::

        \nabla\psi(W_{t+1}) = \nabla\psi(W_t) - \eta\, g_t,\qquad
        \psi(W) = \tfrac1p\|W\|_p^p,\qquad
        g_t = \nabla L(W_t)\ \text{or}\ \nabla L(W_t)/\|\nabla L(W_t)\|_F\ (\text{normalized}),

    with :math:`L` the risk of :func:`svmgeo.train` (same losses and heads, numpy reference
    kernels). For ``p = 2`` this is :func:`svmgeo.train` with ``param="W"``.

    Parameters
    ----------
    data : TokenData
    p : float
        Exponent of the potential, ``p > 1``.
    loss, head, v, V, lam
        As in :func:`svmgeo.train`.
    step_size : float, default 0.1
        :math:`\eta > 0`.
    normalized : bool, default False
        Plain mirror steps (the paper's algorithm) or steps with the gradient normalized in
        Frobenius norm (svmgeo's option, as normalized GD).
    n_steps : int, default 1000
    record_every : int, optional
        Record cadence; default ``max(1, n_steps // 100)``.
    init : "zero" or array of shape (d, d)
    backend : {"numpy", "numba", "cupy"}, default "numpy"
        Kernels of the gradient (those of :func:`svmgeo.train`); the mirror step itself and
        the recorded losses use numpy.

    Returns
    -------
    MirrorRun
        ``status`` is ``MAX_STEPS``, ``STATIONARY`` (the gradient is exactly zero) or
        ``GRADIENT_UNDERFLOW`` (plain steps: :math:`\eta e^{M-c}` underflowed, so no
        further step changes the iterate in float64).

    Raises
    ------
    ProblemError
        For ``p <= 1``, a non-positive step size, or an init of the wrong shape.

    References
    ----------
    .. [1] A. K. Julistiono, D. A. Tarzanagh, N. Azizan, "Optimizing Attention with Mirror
       Descent: Generalized Max-Margin Token Selection", arXiv:2410.14581.

    Examples
    --------
    >>> import svmgeo as sg
    >>> run = sg.train_mirror(sg.random_data(3, 4, 5, seed=0), p=1.5, n_steps=50)
    >>> run.W.shape, run.status
    ((5, 5), <StopStatus.MAX_STEPS: 'max_steps'>)
    """
    where = "train_mirror"
    if not isinstance(data, TokenData):
        raise ProblemError(f"{where} takes one svmgeo.TokenData; got {type(data).__name__}.")
    p = check_real(p, "p", low=1.0, low_open=True, where=where)
    if math.isinf(p):
        raise ProblemError(f"The 'p' parameter of {where} must be finite; got {p}.")
    eta = check_real(step_size, "step_size", low=0.0, low_open=True, where=where)
    n_steps = check_int(n_steps, "n_steps", low=0, where=where)
    every = max(1, n_steps // 100) if record_every is None else record_every
    every = check_int(every, "record_every", low=1, where=where)
    backend = check_option(backend, "backend", BACKENDS, where=where)
    oracle = RiskOracle(data, loss=loss, head=head, v=v, V=V, lam=lam)
    kernels = get_kernels(backend, oracle.problem)

    def gradient(W: np.ndarray) -> tuple[np.ndarray, float]:
        """(G, M) with grad L = e^M G, from the backend's kernels."""
        G, M = kernels.grad(kernels.asarray(W[None]), oracle.loss_id, True)
        return kernels.to_numpy(G)[0], float(kernels.to_numpy(M)[0])

    d = data.d
    if isinstance(init, str) and init == "zero":
        W = np.zeros((d, d))
    else:
        W = np.array(init, dtype=float)
        if W.shape != (d, d) or not np.all(np.isfinite(W)):
            raise ProblemError(
                f"The 'init' parameter of {where} must be 'zero' or a finite array of shape "
                f"({d}, {d}); got {getattr(W, 'shape', init)!r}."
            )
    start = time.perf_counter()
    unit, c = _split(mirror_map(W, p))
    records: dict[str, list[Any]] = {"step": [], "loss": [], "norm": [], "W": [], "c": []}
    status = StopStatus.MAX_STEPS

    def record(t: int, value: float) -> None:
        records["step"].append(t)
        records["loss"].append(value)
        records["norm"].append(_lp_value(W, p))
        records["W"].append(W.copy())
        records["c"].append(c)

    t = 0
    while True:
        if t % every == 0 or t == n_steps:
            record(t, oracle(W).loss)
        if t == n_steps:
            break
        G, M = gradient(W)
        if not math.isfinite(M):
            status = StopStatus.STATIONARY
            break
        if normalized:
            g = G / float(np.linalg.norm(G))
            log_scale = math.log(eta) - (c if math.isfinite(c) else 0.0)
        else:
            g = G
            log_scale = math.log(eta) + M - (c if math.isfinite(c) else 0.0)
        if log_scale < -745.0:  # exp underflows: the float64 iterate no longer moves
            status = StopStatus.GRADIENT_UNDERFLOW
            break
        base = unit if math.isfinite(c) else np.zeros_like(unit)
        new = base - math.exp(log_scale) * g
        u2, c2 = _split(new)
        unit, c = u2, (c if math.isfinite(c) else 0.0) + c2
        W = _weights(unit, c, p)
        t += 1
    if status is not StopStatus.MAX_STEPS and records["step"][-1] != t:
        record(t, oracle(W).loss)
    messages = {
        StopStatus.MAX_STEPS: f"took all {t} steps",
        StopStatus.STATIONARY: f"stopped after {t} steps: the gradient is exactly zero",
        StopStatus.GRADIENT_UNDERFLOW: (
            f"stopped after {t} steps: the step eta*|grad L| fell below float64's range relative "
            "to the iterate (use normalized=True to go on)"
        ),
    }
    return MirrorRun(
        W=W,
        p=p,
        step=np.asarray(records["step"], dtype=np.int64),
        loss=np.asarray(records["loss"], dtype=float),
        W_norm_p=np.asarray(records["norm"], dtype=float),
        W_history=np.asarray(records["W"], dtype=float).reshape(-1, d, d),
        log_theta_scale=np.asarray(records["c"], dtype=float),
        status=status,
        n_steps=t,
        message=messages[status],
        solve_time=time.perf_counter() - start,
    )


def _lp_value(W: np.ndarray, p: float) -> float:
    from .._linalg import entrywise_norm

    return entrywise_norm(W, p)


def sparsity(W: np.ndarray, rel: float = 1e-3) -> float:
    r"""Fraction of entries with :math:`|W_{kl}| < \text{rel}\cdot\max|W|` (0 for W = 0)."""
    a = np.abs(np.asarray(W, dtype=float))
    top = float(a.max(initial=0.0))
    return 0.0 if top == 0.0 else float(np.mean(a < rel * top))
