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
(:class:`svmgeo.gd.RiskOracle`) as :math:`\nabla L = e^{M} G` with :math:`G` of order
one, so the update :math:`\hat\Theta \leftarrow \hat\Theta - \eta e^{M-c} G` never forms the
exponentially small gradient or the growing norm on its own; :math:`W` is rebuilt as
:math:`e^{c/(p-1)}\,\nabla\psi^{-1}(\hat\Theta)`.

:class:`MirrorDescent` is the update rule of ``optimizer="mirror"`` in the one training loop
(:func:`svmgeo.gd._loop.run_loop`); :func:`train_mirror` is its entry point.
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

import numpy as np

from .._errors import ProblemError
from .._linalg import entrywise_norm
from .._validation import check_array
from ..data import TokenData
from . import _xp
from ._config import CODE_OF, REFERENCE_BACKEND, RUNNING, GDConfig, StopStatus, refuse_renamed
from ._loop import Risk, run_loop
from ._oracle import RiskOracle
from ._results import GDRun, Intermediate
from ._step import weight_finals, weight_record

__all__ = ["MirrorDescent", "MirrorState", "inverse_mirror_map", "mirror_map",
           "run_mirror_descent", "sparsity", "train_mirror"]  # fmt: skip


def mirror_map(W: np.ndarray, p: float) -> np.ndarray:
    r""":math:`\nabla\psi(W) = \mathrm{sign}(W)\,|W|^{p-1}` (entrywise)."""
    W = np.asarray(W, dtype=float)
    return np.sign(W) * np.abs(W) ** (p - 1.0)


def inverse_mirror_map(Theta: np.ndarray, p: float) -> np.ndarray:
    r""":math:`(\nabla\psi)^{-1}(\Theta) = \mathrm{sign}(\Theta)\,|\Theta|^{1/(p-1)}` (entrywise)."""
    Theta = np.asarray(Theta, dtype=float)
    return np.sign(Theta) * np.abs(Theta) ** (1.0 / (p - 1.0))


def _split(Theta: np.ndarray) -> tuple[np.ndarray, float]:
    """(Θ̂, c) with Θ = e^c Θ̂ and max|Θ̂| = 1 (c = -inf for Θ = 0)."""
    top = float(np.max(np.abs(Theta), initial=0.0))
    if top == 0.0:
        return np.zeros_like(Theta), -math.inf
    return Theta / top, math.log(top)


def _mirror_split(W: np.ndarray, p: float) -> tuple[np.ndarray, float]:
    r""":func:`_split` of :math:`\nabla\psi(W)` formed in log space: :math:`\hat\Theta =
    \mathrm{sign}(W)(|W|/t)^{p-1}`, :math:`c = (p-1)\log t`, :math:`t = \max|W|`, so that
    neither :math:`|W|^{p-1}` overflowing (p = 200 with max|W| = 50) nor its underflowing
    (p = 200 with max|W| = 0.01) loses the start."""
    top = float(np.max(np.abs(W), initial=0.0))
    if top == 0.0:
        return np.zeros_like(W), -math.inf
    return mirror_map(W / top, p), (p - 1.0) * math.log(top)


def _weights(unit: np.ndarray, c: float, p: float) -> np.ndarray:
    """W = e^{c/(p-1)} (grad psi)^{-1}(unit) (zero for c = -inf)."""
    if not math.isfinite(c):
        return np.zeros_like(unit)
    return math.exp(c / (p - 1.0)) * inverse_mirror_map(unit, p)


_LOG_EXP_MAX = 709.0  # exp() overflows float64 above this exponent


class MirrorState(NamedTuple):
    r"""Iterate of a mirror-descent run (one instance).

    ``unit`` is :math:`\hat\Theta` with :math:`\max|\hat\Theta| = 1`, ``c`` the log-scale of the
    mirror coordinates :math:`\Theta = e^c\hat\Theta` (``-inf`` at zero), ``W`` the weights;
    ``step``, ``steps`` (1,) and ``status`` (1,) as in :class:`~svmgeo.gd.GDState`.
    """

    unit: np.ndarray
    c: float
    W: np.ndarray
    step: int
    steps: np.ndarray
    status: np.ndarray


class MirrorDescent:
    r"""The :math:`\ell_p` mirror step, the update rule of ``optimizer="mirror"``.

    .. math::

        \nabla\psi(W_{t+1}) = \nabla\psi(W_t) - \eta\, g_t,\qquad
        \psi(W) = \tfrac1p\|W\|_p^p

    on any risk with a log-domain gradient (``risk.log_grad(W) = (G, M)``,
    :math:`\nabla L = e^M G`; ``risk.value(W)``; ``risk.d``, ``risk.max_norm``), for the loop of
    :func:`~svmgeo.gd._loop.run_loop`.

    Parameters
    ----------
    config : GDConfig
        ``optimizer="mirror"`` with its ``exponent``.
    risk : Risk
        E.g. :class:`~svmgeo.gd.RiskOracle` (softmax attention).
    init : "zero" or array of shape (d, d)
    """

    keys: tuple[str, ...] = ("step", "loss", "W", "W_norm", "W_norm_lp", "log_theta_scale")

    def __init__(self, config: GDConfig, risk: Risk, init: Any = "zero") -> None:
        assert config.exponent is not None  # internal invariant: GDConfig checks it
        self.config = config
        self.risk = risk
        self.p = float(config.exponent)
        d = risk.d
        expected = (
            f"The 'init' parameter of {config.caller} must be 'zero' or a finite array of "
            f"shape ({d}, {d})"
        )
        if isinstance(init, str):
            if init != "zero":
                raise ProblemError(
                    f"{expected}; got the string {init!r}. Pass init='zero', or the array "
                    f"itself (e.g. init=np.eye({d}))."
                )
            W = np.zeros((d, d))
        else:
            try:
                W = check_array(init, "init", ndim=2, shape=(d, d))
            except ProblemError as exc:
                raise ProblemError(f"{expected}; {exc}") from None
        self.W0 = W

    def init_state(self) -> MirrorState:
        unit, c = _mirror_split(self.W0, self.p)
        # a start beyond the representable norms stops at once, with status OVERFLOW
        outside = float(_xp.frobenius(self.W0[None], np)[0]) > self.risk.max_norm
        status = np.full(1, CODE_OF[StopStatus.OVERFLOW] if outside else RUNNING, np.int64)
        return MirrorState(unit, c, self.W0, 0, np.zeros(1, np.int64), status)

    def advance(self, state: MirrorState, n: int) -> MirrorState:
        """Up to ``n`` mirror steps; stops with ``STATIONARY`` (an exactly zero gradient,
        ``M = -inf`` or ``G = 0``), ``GRADIENT_UNDERFLOW`` or ``OVERFLOW`` (a non-finite
        gradient, or a step that would overflow; neither is taken)."""
        cfg, p = self.config, self.p
        log_eta = math.log(cfg.step_size)
        log_limit = math.log(self.risk.max_norm)
        unit, c, W = state.unit, state.c, state.W
        code = RUNNING
        taken = 0
        for _ in range(n):
            G, M = self.risk.log_grad(W)
            if M == -math.inf or not np.any(G):
                # exactly zero: no weight (M = -inf), or the order-one direction G sums to
                # zero in float64 (as the rules of svmgeo.gd._steepest read it): a step would
                # move nothing, and a normalized one would divide by ||G|| = 0
                code = CODE_OF[StopStatus.STATIONARY]
                break
            if not math.isfinite(M) or not np.all(np.isfinite(G)):
                code = CODE_OF[StopStatus.OVERFLOW]  # the gradient overflowed: not taken
                break
            c0 = c if math.isfinite(c) else 0.0
            if cfg.normalized:
                g = G / float(np.linalg.norm(G))
                log_scale = log_eta - c0
            else:
                g = G
                log_scale = log_eta + M - c0
            if log_scale < _xp.LOG_EXP_MIN:  # exp underflows: the float64 iterate no longer moves
                code = CODE_OF[StopStatus.GRADIENT_UNDERFLOW]
                break
            # a step past exp's range (a start whose mirror coordinates are tiny) is formed
            # on the step's own scale, the base below its rounding (e^{-shift} = 0)
            shift = log_scale if log_scale > _LOG_EXP_MAX else 0.0
            base = unit if math.isfinite(c) else np.zeros_like(unit)
            new = base * math.exp(-shift) - math.exp(log_scale - shift) * g
            u2, c2 = _split(new)
            c_new = c0 + shift + c2
            if c_new / (p - 1.0) > log_limit:  # max|W| = e^{c/(p-1)} past the limit: not taken
                code = CODE_OF[StopStatus.OVERFLOW]
                break
            W_new = _weights(u2, c_new, p)
            if float(_xp.frobenius(W_new[None], np)[0]) > self.risk.max_norm:
                code = CODE_OF[StopStatus.OVERFLOW]
                break
            unit, c, W = u2, c_new, W_new
            taken += 1
        steps = state.steps + taken
        status = np.full(1, code, np.int64)
        return MirrorState(unit, c, W, state.step + n, steps, status)

    def observe(self, state: MirrorState) -> dict[str, np.ndarray]:
        return {
            **weight_record(self.risk, state.W, state.steps),
            "W_norm_lp": np.array([entrywise_norm(state.W, self.p)]),
            "log_theta_scale": np.array([state.c]),
        }

    def finals(self, state: MirrorState, obs: dict[str, np.ndarray]) -> dict[str, Any]:
        return weight_finals(state.W)

    def intermediate(
        self, obs: dict[str, np.ndarray], state: MirrorState, squeeze: bool
    ) -> Intermediate:
        raise ProblemError("optimizer='mirror' takes no callback.")  # train refuses it first


def train_mirror(
    data: TokenData,
    *,
    exponent: float | None = None,
    loss: Any = "logistic",
    head: str = "linear",
    v: Any = None,
    V: Any = None,
    lam: float | None = None,
    step_size: float = 0.1,
    normalized: bool = False,
    n_steps: int = 1000,
    record_every: int | None = None,
    init: Any = "zero",
    backend: str = REFERENCE_BACKEND,
    **renamed: Any,
) -> GDRun:
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
    exponent : float
        :math:`p > 1`, the exponent of the potential (formerly ``p``, now a ProblemError
        that names ``exponent``: ``p`` is the prompt vector of ``param="p"``).
    loss, head, v, V, lam
        As in :func:`svmgeo.train`.
    step_size : float, default 0.1
        :math:`\eta > 0`.
    normalized : bool, default False
        Plain mirror steps (the paper's algorithm) or steps with the gradient normalized in
        Frobenius norm (svmgeo's option, as normalized GD).
    n_steps : int, default 1000
        Maximum number of steps, at least 1 (as :func:`svmgeo.train`).
    record_every : int, optional
        Record cadence; default ``max(1, n_steps // 100)``.
    init : "zero" or array of shape (d, d)
    backend : {"numpy", "numba", "cupy"}, default "numpy"
        Kernels of the gradient (those of :func:`svmgeo.train`); the mirror step itself and
        the recorded losses use numpy.

    Returns
    -------
    GDRun
        ``run.W`` (d, d); ``run.history`` records ``step``, ``loss``, ``W``, ``W_norm``
        (Frobenius), ``W_norm_lp`` (:math:`\|W\|_p`) and ``log_theta_scale``; ``status`` is
        ``MAX_STEPS``, ``STATIONARY`` (the gradient is exactly zero: ``M = -inf``, or its
        order-one direction ``G`` is zero in float64, plain and normalized steps alike; W is
        the last iterate), ``GRADIENT_UNDERFLOW`` (:math:`\eta e^{M-c}`, or
        :math:`\eta e^{-c}` for normalized steps, underflowed, so no further step changes the
        mirror coordinates in float64) or ``OVERFLOW`` (the next step would take
        :math:`\|W\|_F` past the largest norm the engine represents, or the gradient itself
        is not finite; not taken).

    Notes
    -----
    The mirror coordinates are held as :math:`\Theta = e^c\hat\Theta` with
    :math:`\max|\hat\Theta| = 1` in float64: one scale for all entries, so an entry of
    :math:`\Theta` below :math:`e^{-745}` of the largest is zero, i.e. an entry of W below
    :math:`e^{-745/(p-1)}\max|W|` (1e-162 at p = 3, 2.4 % at p = 200). A start's coordinates
    are formed in log space (:math:`\hat\Theta = \mathrm{sign}(W_0)(|W_0|/t)^{p-1}`,
    :math:`c = (p-1)\log t`), so neither :math:`|W_0|^{p-1}` overflowing nor its underflowing
    loses the start.

    Raises
    ------
    ProblemError
        For ``exponent <= 1``, a non-positive step size, an init of the wrong shape, or
        the old spelling ``p=``.

    References
    ----------
    .. [1] A. K. Julistiono, D. A. Tarzanagh, N. Azizan, "Optimizing Attention with Mirror
       Descent: Generalized Max-Margin Token Selection", arXiv:2410.14581.

    Examples
    --------
    >>> import svmgeo as sg
    >>> run = sg.train_mirror(sg.random_data(3, 4, 5, seed=0), exponent=1.5, n_steps=50)
    >>> run.W.shape, run.status
    ((5, 5), <StopStatus.MAX_STEPS: 'max_steps'>)
    """
    where = "train_mirror"
    if renamed:
        refuse_renamed(renamed, where)
        raise ProblemError(
            f"{where} got unknown option(s) {', '.join(map(repr, renamed))}; it takes exponent, "
            "loss, head, v, V, lam, step_size, normalized, n_steps, record_every, init, backend."
        )
    return run_mirror_descent(
        data, caller=where, exponent=exponent, loss=loss, head=head, v=v, V=V, lam=lam,
        step_size=step_size, normalized=normalized, n_steps=n_steps,
        record_every=record_every, init=init, backend=backend,
    )  # fmt: skip


def run_mirror_descent(
    data: TokenData,
    *,
    caller: str,
    exponent: float | None,
    loss: Any,
    head: str,
    v: Any,
    V: Any,
    lam: float | None,
    step_size: float,
    normalized: bool,
    n_steps: int,
    record_every: int | None,
    init: Any,
    backend: str,
) -> GDRun:
    """:func:`train_mirror` for the entry point ``caller`` (``verify_mirror``), which its
    errors name."""
    where = caller
    if not isinstance(data, TokenData):
        raise ProblemError(f"{where} takes one svmgeo.TokenData; got {type(data).__name__}.")
    if exponent is None:
        raise ProblemError(
            f"{where} needs exponent=, the p > 1 of the potential ||W||_p^p / p; e.g. exponent=1.5."
        )
    cfg = GDConfig(
        optimizer="mirror", exponent=exponent, loss=loss, head=head, step_size=step_size,
        normalized=normalized, n_steps=n_steps, record_every=record_every, init=init,
        backend=backend, record=("loss", "W", "W_norm"), caller=where,
    )  # fmt: skip
    risk = RiskOracle(data, loss=loss, head=head, v=v, V=V, lam=lam, backend=backend)
    return run_loop(MirrorDescent(cfg, risk, init))[0]


def sparsity(W: np.ndarray, rel: float = 1e-3) -> float:
    r"""Fraction of entries with :math:`|W_{kl}| < \text{rel}\cdot\max|W|` (0 for W = 0)."""
    a = np.abs(np.asarray(W, dtype=float))
    top = float(a.max(initial=0.0))
    return 0.0 if top == 0.0 else float(np.mean(a < rel * top))
